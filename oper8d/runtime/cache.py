"""``CachedCluster``: the ``Cluster`` the reconciler uses when running for real, reading
through the informers (``runtime.informer``) and writing to the API server.

``CachedCluster`` (created by the manager) serves ``get`` and ``list`` from a synced
informer of the same group and kind (``apps/v1`` and ``apps/v1beta1`` Deployments share
one; an exact apiVersion is preferred) when the request is within the informer's scope:

* an informer of one namespace serves only that namespace; a list across all namespaces
  only an informer of all namespaces;
* an informer with a label selector serves lists whose selector implies its own, and gets
  of objects it holds; anything else goes to the API server;
* a get that such an informer misses is answered "absent" without a request when a
  metadata-only informer of the complementary selector (``!key`` for ``key``) does not hold
  the name either: the manager watches the names of the owned kinds' unlabelled objects,
  so the first rollout of a CR does not GET each object before creating it. Not for a
  name the labelled informer held before (``held_before``): an object deleted, or its
  label removed, and at once replaced by someone else's, would not be seen in time by the
  names-only informer, so the name is read from the server (and a foreign object refused).

With sharding (``runtime.sharding``) an informer holds one slice of the hash space only,
so a read outside it must not be answered from it: an object it holds is served only when
it is in the informer's ``complete_slice``; a miss is final only when the slice decides it
(sharding by namespace, the namespace's bucket in the slice), and a list only when it is
of one namespace in the slice. Anything else goes to the API server: a template reading a
CR of another shard sees it. The controller's own read of the CR it is about to reconcile
uses ``within_shards()`` instead: a CR outside this replica's slice is not its to
reconcile, so it reads as absent without a request.

Every write goes to the API server and the object it returns is handed to the informers
of that kind (``observe_write``), so the next reconcile reads its own writes before the
watch event arrives. Deletes are not reflected until the watch reports them.

What it needs of each is declared here: ``CacheSource`` (an informer) and ``ApiServer``
(``KubeCluster``); the informers' store is ``runtime.store``.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from oper8d.cluster.base import Cluster, Method, Propagation
from oper8d.cluster.selectors import as_selector
from oper8d.kinds import group_of
from oper8d.objects import Obj
from oper8d.runtime.hashing import ShardSlice

if TYPE_CHECKING:
    from oper8d.cluster.kube.discovery import Resource

__all__ = ["ApiServer", "CacheSource", "CachedCluster"]


class CacheSource(Protocol):
    """What the cache reads through: one synced kind (``runtime.informer.Informer``)."""

    api_version: str
    kind: str
    #: None: all namespaces
    namespace: str | None
    #: None: every object of the kind
    label_selector: str | None
    #: holds names only (``runtime.store.names_only``): it tells what exists, never serves
    metadata_only: bool

    @property
    def complete_slice(self) -> ShardSlice | None:
        """The shard slice the informer holds every object of (None: not sharded)."""
        ...

    def has_synced(self) -> bool: ...

    def get(self, name: str, namespace: str | None = None) -> Obj | None: ...

    def held_before(self, name: str, namespace: str | None = None) -> bool:
        """Whether an object of this name left the informer since it started."""
        ...

    def list(
        self, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]: ...

    def observe_write(self, obj: Obj) -> None:
        """``obj`` was just written (as the API server returned it)."""
        ...


class ApiServer(Cluster, Protocol):
    """The API server behind the cache (``KubeCluster``): CRUD, POST and the scope of kinds."""

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj: ...

    def resource(self, api_version: str, kind: str) -> Resource:
        """Where a kind lives (its ``namespaced`` scope); a 404 ClusterError when unknown."""
        ...


def _decides(shard: ShardSlice, namespace: str | None) -> bool:
    """Whether every object of ``namespace`` is in ``shard`` (so the informer holding that
    slice holds them all): only when sharding by namespace, for one namespace."""
    return (
        shard.key == "namespace"
        and namespace is not None
        and shard.contains({"metadata": {"namespace": namespace}})
    )


def _requirements(selector: str | None) -> frozenset[tuple[str, str, tuple[str, ...]]]:
    return frozenset(
        (r.key, r.operator, tuple(sorted(r.values))) for r in as_selector(selector).requirements
    )


def _implies(wanted: frozenset[tuple[str, str, tuple[str, ...]]], selector: str) -> bool:
    """True when every object matching ``wanted`` also matches ``selector``: each of the
    selector's requirements is in ``wanted``, or is ``key exists`` and ``wanted`` pins the
    key to values (``key=v`` / ``key in (...)``)."""
    pinned = {key for key, op, _values in wanted if op == "In"}
    return all(
        req in wanted or (req[1] == "Exists" and req[0] in pinned)
        for req in _requirements(selector)
    )


class CachedCluster:
    """A ``Cluster`` reading through informers; see the module docstring."""

    def __init__(
        self,
        cluster: ApiServer,
        informers: Mapping[Any, CacheSource],
        *,
        within_shards: bool = False,
    ):
        """``informers``: every informer the cache may read through, under any key (the
        manager's own keys); each serves its kind and scope. ``within_shards``: what a
        sharded informer does not hold reads as absent (see ``within_shards()``)."""
        self.cluster = cluster
        self._within_shards = within_shards
        self._sources = dict(informers)
        self._informers: dict[tuple[str, str], list[CacheSource]] = {}
        #: the label key an informer selects on alone (``key`` for a labelled informer,
        #: ``!key`` for a names-only one), by id: what ``get`` pairs to know a name is free
        self._sole_key: dict[int, str] = {}
        for informer in informers.values():
            key = (group_of(informer.api_version), informer.kind)
            self._informers.setdefault(key, []).append(informer)
            wanted = "DoesNotExist" if informer.metadata_only else "Exists"
            reqs = list(_requirements(informer.label_selector))
            if len(reqs) == 1 and reqs[0][1] == wanted:
                self._sole_key[id(informer)] = reqs[0][0]

    def within_shards(self) -> CachedCluster:
        """This cache, but reads of objects outside a sharded informer's slice answer
        "absent" without asking the API server: the controller's read of a queued CR,
        which another replica reconciles when it is not in ours."""
        return CachedCluster(self.cluster, self._sources, within_shards=True)

    # -- reads ---------------------------------------------------------------------------
    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        namespaced = self.cluster.resource(api_version, kind).namespaced
        if namespaced and not namespace:
            return self.cluster.get(api_version, kind, name, namespace)  # the API's 400
        scope = namespace if namespaced else None
        #: label keys whose informer holds every object of this scope having the key, and
        #: never held this name
        missed: set[str] = set()
        for informer in self._readers(api_version, kind):
            if informer.namespace is not None and informer.namespace != scope:
                continue
            obj = informer.get(name, scope)
            shard = informer.complete_slice
            if obj is not None and (shard is None or shard.contains(obj)):
                return obj
            holds_scope = shard is None or _decides(shard, scope)
            if not informer.label_selector:
                if holds_scope or self._within_shards:
                    return None
                continue
            key = self._sole_key.get(id(informer))
            if key is not None and holds_scope and not informer.held_before(name, scope):
                missed.add(key)
        if missed and self._absent(api_version, kind, name, scope, missed):
            return None
        return self.cluster.get(api_version, kind, name, namespace)

    def _absent(
        self, api_version: str, kind: str, name: str, scope: str | None, missed: set[str]
    ) -> bool:
        """Whether no object ``name`` exists, known without a request: an informer holding
        every object with label ``k`` does not hold it (``missed``), and a names-only one
        holding every object without ``k`` does not either. So the rollout's read of an
        object it is about to create costs nothing, and one of the same name that this
        operator did not label (not ours to take over) is still read from the server."""
        for informer in self._informers.get((group_of(api_version), kind), []):
            if not informer.metadata_only or self._sole_key.get(id(informer)) not in missed:
                continue
            if not informer.has_synced():
                continue
            if informer.namespace is not None and informer.namespace != scope:
                continue
            shard = informer.complete_slice
            if shard is not None and not _decides(shard, scope):
                continue
            return informer.get(name, scope) is None
        return False

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        scope = namespace if self.cluster.resource(api_version, kind).namespaced else None
        wanted = _requirements(label_selector)
        for informer in self._readers(api_version, kind):
            if informer.namespace is not None and informer.namespace != scope:
                continue
            if informer.label_selector and not _implies(wanted, informer.label_selector):
                continue
            shard = informer.complete_slice
            if shard is not None and not _decides(shard, scope):
                if self._within_shards:
                    return [o for o in informer.list(scope, label_selector) if shard.contains(o)]
                continue
            return informer.list(scope, label_selector)
        return self.cluster.list(api_version, kind, namespace, label_selector)

    def _readers(self, api_version: str, kind: str) -> builtins.list[CacheSource]:
        """Synced informers of the group and kind: the exact apiVersion first, then those
        without a label selector."""
        candidates = self._informers.get((group_of(api_version), kind), [])
        return sorted(
            (i for i in candidates if i.has_synced() and not i.metadata_only),
            key=lambda i: (i.api_version != api_version, bool(i.label_selector)),
        )

    # -- writes --------------------------------------------------------------------------
    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        return self._observe(
            self.cluster.apply(obj, field_manager=field_manager, method=method, force=force)
        )

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        return self._observe(self.cluster.create(obj, field_manager=field_manager))

    def update(self, obj: Obj) -> Obj:
        return self._observe(self.cluster.update(obj))

    def update_status(self, obj: Obj) -> Obj:
        return self._observe(self.cluster.update_status(obj))

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
    ) -> bool:
        return self.cluster.delete(api_version, kind, name, namespace, propagation=propagation)

    def _observe(self, written: Obj) -> Obj:
        if isinstance(written, dict) and written.get("apiVersion") and written.get("kind"):
            key = (group_of(written["apiVersion"]), written["kind"])
            for informer in self._informers.get(key, []):
                informer.observe_write(written)
        return written

    # -- discovery ---------------------------------------------------------------------
    def resource(self, api_version: str, kind: str) -> Resource:
        return self.cluster.resource(api_version, kind)
