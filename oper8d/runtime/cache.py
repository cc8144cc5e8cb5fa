"""The runtime's cache: the informers' indexed object store, and ``CachedCluster``, the
``Cluster`` the reconciler uses when running for real.

``ObjectStore`` (used by ``runtime.informer.Informer``) holds one kind's objects by
(namespace, name) with indexes by uid, by the ``oper8d.io/owner-uid`` label and by
ownerReference uid. It is not locked: its informer locks around it.

``CachedCluster`` (created by the manager) serves ``get`` and ``list`` from a synced
informer of the same group and kind (``apps/v1`` and ``apps/v1beta1`` Deployments share
one; an exact apiVersion is preferred) when the request is within the informer's scope:

* an informer of one namespace serves only that namespace; a list across all namespaces
  only an informer of all namespaces;
* an informer with a label selector serves lists whose selector implies its own, and gets
  of objects it holds; anything else goes to the API server.

Every write goes to the API server and the object it returns is handed to the informers
of that kind (``observe_write``), so the next reconcile reads its own writes before the
watch event arrives. Deletes are not reflected until the watch reports them.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from oper8d.cluster.base import Method, Propagation
from oper8d.cluster.selectors import as_selector
from oper8d.kinds import group_of
from oper8d.objects import OWNER_LABEL, Obj

if TYPE_CHECKING:
    from collections import Counter

    from oper8d.cluster.kube import KubeCluster
    from oper8d.cluster.kube_discovery import Resource
    from oper8d.runtime.informer import Informer

__all__ = ["CachedCluster", "ObjectStore", "copy_obj", "key_of", "newer", "resource_version"]

Key = tuple[str, str]


def copy_obj(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); several times faster than
    ``copy.deepcopy`` on API objects."""
    if isinstance(value, dict):
        return {k: copy_obj(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_obj(v) for v in value]
    return value


def key_of(obj: Obj) -> Key:
    """(namespace, name); the namespace is "" for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def newer(a: Obj, b: Obj) -> bool | None:
    """Whether ``a``'s resourceVersion is greater than ``b``'s; None when they cannot be
    compared (resourceVersions are opaque; the API server's are integers, so comparing
    them as such is what every client that orders them does)."""
    try:
        return int(resource_version(a)) > int(resource_version(b))
    except ValueError:
        return None


class ObjectStore:
    """Objects by (namespace, name), with indexes; see the module docstring."""

    def __init__(self) -> None:
        self._objects: dict[Key, Obj] = {}
        self._by_uid: dict[str, Key] = {}
        self._by_owner_label: dict[str, set[Key]] = {}
        self._by_owner_ref: dict[str, set[Key]] = {}

    def __len__(self) -> int:
        return len(self._objects)

    def get(self, key: Key) -> Obj | None:
        return self._objects.get(key)

    def keys(self) -> list[Key]:
        return list(self._objects)

    def items(self) -> Iterator[tuple[Key, Obj]]:
        return iter(list(self._objects.items()))

    def put(self, key: Key, obj: Obj) -> None:
        self.remove(key)
        self._objects[key] = obj
        uid, label_owner, ref_owners = _index_values(obj)
        if uid:
            self._by_uid[uid] = key
        if label_owner:
            self._by_owner_label.setdefault(label_owner, set()).add(key)
        for owner in ref_owners:
            self._by_owner_ref.setdefault(owner, set()).add(key)

    def remove(self, key: Key) -> None:
        obj = self._objects.pop(key, None)
        if obj is None:
            return
        uid, label_owner, ref_owners = _index_values(obj)
        if uid and self._by_uid.get(uid) == key:
            del self._by_uid[uid]
        if label_owner:
            _discard(self._by_owner_label, label_owner, key)
        for owner in ref_owners:
            _discard(self._by_owner_ref, owner, key)

    def by_uid(self, uid: str) -> Obj | None:
        key = self._by_uid.get(uid)
        return self._objects.get(key) if key is not None else None

    def by_owner_label(self, uid: str) -> list[Obj]:
        return [self._objects[k] for k in sorted(self._by_owner_label.get(uid, ()))]

    def by_owner_reference(self, uid: str) -> list[Obj]:
        return [self._objects[k] for k in sorted(self._by_owner_ref.get(uid, ()))]


def _index_values(obj: Obj) -> tuple[str, str, set[str]]:
    meta = obj.get("metadata") or {}
    refs = {str(r["uid"]) for r in meta.get("ownerReferences") or [] if r.get("uid")}
    return (
        str(meta.get("uid") or ""),
        str((meta.get("labels") or {}).get(OWNER_LABEL) or ""),
        refs,
    )


def _discard(index: dict[str, set[Key]], owner: str, key: Key) -> None:
    keys = index.get(owner)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[owner]


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

    def __init__(self, cluster: KubeCluster, informers: Mapping[tuple[str, str], Informer]):
        self.cluster = cluster
        self._informers: dict[tuple[str, str], list[Informer]] = {}
        for (api_version, kind), informer in informers.items():
            self._informers.setdefault((group_of(api_version), kind), []).append(informer)

    # -- reads ---------------------------------------------------------------------------
    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        namespaced = self.cluster.resource(api_version, kind).namespaced
        if namespaced and not namespace:
            return self.cluster.get(api_version, kind, name, namespace)  # the API's 400
        scope = namespace if namespaced else None
        for informer in self._readers(api_version, kind):
            if informer.namespace is not None and informer.namespace != scope:
                continue
            obj = informer.get(name, scope)
            if obj is not None or not informer.label_selector:
                return obj
        return self.cluster.get(api_version, kind, name, namespace)

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
            return informer.list(scope, label_selector)
        return self.cluster.list(api_version, kind, namespace, label_selector)

    def _readers(self, api_version: str, kind: str) -> builtins.list[Informer]:
        """Synced informers of the group and kind: the exact apiVersion first, then those
        without a label selector."""
        candidates = self._informers.get((group_of(api_version), kind), [])
        return sorted(
            (i for i in candidates if i.has_synced()),
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

    # -- the underlying client's accounting ---------------------------------------------
    @property
    def requests(self) -> Counter[str]:
        """HTTP requests per verb of the underlying ``KubeCluster`` (cache hits are none)."""
        return self.cluster.requests

    @property
    def writes(self) -> int:
        return self.cluster.writes

    def reset_requests(self) -> None:
        self.cluster.reset_requests()

    def resource(self, api_version: str, kind: str) -> Resource:
        return self.cluster.resource(api_version, kind)
