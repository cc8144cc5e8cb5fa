"""The in-memory cluster: an embedded stand-in for the Kubernetes API server.

Used by ``oper8d render`` / dry runs (offline rollout simulation), bundle tests and the
engine's own tests; it implements the ``Cluster`` protocol (``cluster.base``) and behaves
like the API server wherever an operator could notice:

* Objects are keyed by (API group, kind, namespace, name): ``apps/v1`` and
  ``apps/v1beta1`` name the same object, returned in the version asked for. Kinds are
  namespaced unless built-in cluster-scoped (``oper8d.kinds``) or registered with
  ``register_kind`` (creating a CustomResourceDefinition registers its kind too).
* On create the server sets ``uid``, ``creationTimestamp``, ``resourceVersion`` and
  ``generation: 1``; they are never taken from a client and never regenerated.
  ``resourceVersion`` (a global counter) moves on every change and only on a change: a
  write that changes nothing is a no-op. ``generation`` moves when anything outside
  metadata and status changes; kinds the API server keeps without a generation
  (ConfigMap, Secret, Service, ...) have none (see ``cluster.memory.scheme``).
* ``status`` is written only through ``update_status`` (and the readiness simulator);
  ``apply``/``update``/``patch`` never change it. ``update``, ``apply`` and ``patch`` with
  a stale ``metadata.resourceVersion`` fail with 409.
* Writes: ``apply(method="apply")`` is server-side apply, approximated per field manager
  as ``cluster.fields`` documents (fields a manager stops applying are removed, other
  managers' fields stay, conflicts are 409 unless ``force``); ``method="update"`` is a
  read-modify-write (our fields merged into the live object, maps recurse);
  ``method="replace"`` and ``update()`` are PUTs of everything but status and system
  metadata; ``patch`` is a JSON merge patch; ``create`` is a POST (``generateName``
  works for POSTs; server-side apply needs a name, as on a real server).
* Admission (``cluster.memory.admission``): invalid names, labels, annotations, workload
  selectors that do not match their pod template and forbidden changes of immutable
  fields are refused with 422/400; Secret ``stringData`` is folded into ``data``;
  Services get ``spec.clusterIP`` 10.96.0.N in creation order; Namespaces report
  ``status.phase: Active``.
* Deletion: an object with finalizers gets ``deletionTimestamp`` (once) and stays until
  a write leaves its finalizers empty; no finalizer may be added meanwhile (422).
  ``delete`` returns False when the object is not there.
* Garbage collection (synchronous): when an object is removed, its dependents (objects
  whose ``ownerReferences`` name its uid) are deleted in turn, honouring their own
  finalizers; a dependent with another owner that still exists only loses the reference.
  ``propagation="Orphan"`` removes the references at once instead. ``"Foreground"``
  adds the ``foregroundDeletion`` finalizer to an owner with dependents, deletes them, and
  removes the owner when no dependent with ``blockOwnerDeletion`` is left. Deleting a
  Namespace marks it Terminating, deletes its contents and removes it once empty; no new
  object may be created in it (403). Unlike the real garbage collector, an object whose
  owner never existed is not collected (dry runs need not create the owning CR).
* Watches: ``watch(handler)`` calls ``handler(event_type, object)`` after every change,
  in commit order, outside the store lock (so a handler may read and write the cluster).
  Events are delivered by one thread at a time; a handler must not wait for another
  thread that writes to this cluster. An exception from a handler reaches the writer
  whose call delivered the event (the write itself is already done).
* Readiness: an optional ``Simulator`` (``cluster.memory.simulate``) is told about every
  spec/metadata change and may report a status, written like ``update_status`` right
  after the write (the write's own response is the object before that status, as from a
  real server); ``tick()`` advances the simulation one step.
* Accounting: ``requests`` counts client requests per verb (a read-modify-write
  ``apply(method="update")`` is one request here, although a real client also sends a
  GET), ``writes`` counts the mutating ones. Simulator and garbage-collector writes are
  not client requests and are not counted.

Schemas (``cluster.listtypes``, from ``oper8d.kubeschema``: the shipped built-in kinds,
and the CRDs created in this cluster): every write, status included, is checked against
its kind's schema as the API server checks it (types, required fields, enums, formats,
base64 Secret data; 400 for a built-in body of the wrong JSON types, else 422; a kind not
served in a served group is refused, a kind of an unknown group is not checked), which a
differential test holds to the real apiserver's verdicts. Server-side apply merges lists
by their list type and map keys, a server-side apply with a field the schema lacks fails,
other writes drop such fields (a custom resource is pruned to its structural schema).
``schemas=`` gives another ``KubeSchemas``.

Defaults (``cluster.memory.defaults``): every write gets the defaults the apiserver fills in, on
the object the write makes (a create's, or an update's, patch's or server-side apply's
merged result): a custom resource its CRD schema's ``default:`` values, a built-in kind
Kubernetes' defaulting functions (a Deployment's ``replicas: 1``, a pod template's
``restartPolicy``, a container's ``imagePullPolicy``, a Service port's ``targetPort``...),
then what the kind's registry sets (a Job's selector, a new object's status: see
``cluster.memory.defaults_server``). A server-side apply does not own the defaults it gets; a
create or update does. A differential test holds the result to a real apiserver's.

The value check includes the common rules the apiserver keeps in Go code
(``kubeschema.semantic``: restart policies, probe handlers, requests within limits, ...)
and refuses duplicate keys in associative lists on every write, as server-side apply does
(a real POST takes duplicate env vars with a warning).

Not modelled: the rest of the apiserver's Go validation, CEL rules, field selectors, the
NamespaceLifecycle check that a namespace exists, ``managedFields`` in objects (see
``managed_fields``), pods and ReplicaSets created by controllers. Thread-safe: one
``threading.RLock`` guards the store.

Where the rules live, in ``cluster.memory``: ``store`` (writes), ``entries`` (what is kept
per object, versions) and ``deletion`` (finalizers, garbage collection), ``apply_create`` (a
create by server-side apply), ``admission`` (refusals, server-side rewrites), ``defaults*``
(defaults), ``scheme`` (scope, generation), ``simulate`` / ``workload_status``; in
``cluster``: ``fields`` (merges, field ownership) and ``selectors``.

Speed: an offline render creates hundreds of objects through this class, so the write
path has shortcuts (a create by server-side apply in one walk that also makes the
store's copy, defaulting planned per schema node, ownership trimmed when read, copies
made only at the edges, ``DefaultSimulator`` shown stored objects without a copy, a
status write leaving a built-in kind's order as stored); each is held to the general
path or to sharing nothing by a test (``tests/unit/test_cluster_fast_paths.py``,
``test_memory_cluster.py``, ``test_simulate.py``).
"""

from __future__ import annotations

import builtins
import hashlib
import itertools
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from oper8d.cluster.base import Method, Propagation, check_propagation
from oper8d.cluster.fields import clone
from oper8d.cluster.memory.entries import out, outlined, shaped
from oper8d.cluster.memory.simulate import Simulator
from oper8d.cluster.memory.store import Store
from oper8d.cluster.selectors import as_selector
from oper8d.errors import ClusterError
from oper8d.kubeschema import KubeSchemas
from oper8d.objects import Obj

__all__ = ["MUTATING_VERBS", "MemoryCluster", "WatchHandler", "sequential_uids"]

WatchHandler = Callable[[str, Obj], None]

#: the verbs ``MemoryCluster.writes`` counts
MUTATING_VERBS = ("create", "apply", "update", "update_status", "delete", "patch")


def sequential_uids(seed: str = "oper8d") -> Callable[[], str]:
    """A uid factory for deterministic runs: uuid-shaped strings derived from ``seed`` and
    a counter, the same sequence every time: ``str(uuid.uuid5(uuid.NAMESPACE_OID,
    f"{seed}/{n}"))``, worked out here without building a ``UUID`` (an offline render
    makes one per object it creates; a test holds the two to the same text)."""
    counter = itertools.count(1)
    namespace = hashlib.sha1(uuid.NAMESPACE_OID.bytes, usedforsecurity=False)

    def next_uid() -> str:
        digest = namespace.copy()
        digest.update(f"{seed}/{next(counter)}".encode())
        raw = bytearray(digest.digest()[:16])
        raw[6] = (raw[6] & 0x0F) | 0x50  # version 5
        raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
        h = raw.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    return next_uid


class MemoryCluster:
    """An in-process API server implementing ``Cluster``. See the module docstring."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] | None = None,
        uid_factory: Callable[[], str] | None = None,
        simulator: Simulator | None = None,
        schemas: KubeSchemas | None = None,
    ):
        self._store = Store(
            clock=clock or (lambda: datetime.now(UTC)),
            new_uid=uid_factory or (lambda: str(uuid.uuid4())),
            simulator=simulator,
            schemas=schemas or KubeSchemas.builtin(),
        )
        self._lock = threading.RLock()
        self._handlers: list[WatchHandler] = []
        self._delivery = threading.Lock()
        self._local = threading.local()
        #: client requests per verb: get, list, create, apply, update, update_status, delete, patch
        self.requests: Counter[str] = Counter()

    # -- accounting, kinds, watches -----------------------------------------------------
    @property
    def writes(self) -> int:
        """Mutating client requests since creation or ``reset_requests()``."""
        with self._lock:
            return sum(self.requests[v] for v in MUTATING_VERBS)

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def register_kind(self, api_version: str, kind: str, namespaced: bool) -> None:
        """Declare a custom kind's scope (kinds not known are namespaced)."""
        self._store.kinds.register(api_version, kind, namespaced)

    def watch(self, handler: WatchHandler) -> Callable[[], None]:
        """Call ``handler("ADDED" | "MODIFIED" | "DELETED", object)`` after every change,
        with a copy of the object. Returns a function that unsubscribes."""
        with self._lock:
            self._handlers.append(handler)
            self._store.record_events = True

        def unsubscribe() -> None:
            with self._lock:
                if handler in self._handlers:
                    self._handlers.remove(handler)
                self._store.record_events = bool(self._handlers)

        return unsubscribe

    # -- reads --------------------------------------------------------------------------
    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        with self._lock:
            self.requests["get"] += 1
            return self._store.read(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | Mapping[str, Any] | None = None,
    ) -> list[Obj]:
        selector = as_selector(label_selector)
        with self._lock:
            self.requests["list"] += 1
            return self._store.select(api_version, kind, namespace, selector)

    def objects(self, namespace: str | None = None) -> builtins.list[Obj]:
        """Every object (or those in ``namespace``), sorted by group, kind, namespace, name.
        Not counted as a request."""
        with self._lock:
            return self._store.objects(namespace)

    def managed_fields(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, builtins.list[str]]:
        """Field manager -> dotted paths it owns (what ``managedFields`` would say)."""
        with self._lock:
            owners = self._store.owners(self._store.key(api_version, kind, name, namespace))
        return {m: sorted(".".join(p) for p in paths) for m, paths in sorted(owners.items())}

    # -- writes -------------------------------------------------------------------------
    def create(self, obj: Obj, *, field_manager: str = "oper8d") -> Obj:
        """POST: create ``obj`` (``generateName`` supported); 409 when it exists."""
        obj = shaped(obj)
        with self._lock:
            self.requests["create"] += 1
            result = self._store.create(obj, field_manager)
        self._deliver()
        return out(result, obj["apiVersion"])

    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        """Server-side apply (``apply``), read-modify-write (``update``) or PUT
        (``replace``); ``update`` and ``replace`` create the object when it is missing."""
        # (server-side apply copies what it keeps as it walks it: see ``outlined``)
        obj = outlined(obj) if method == "apply" else shaped(obj)
        if method not in ("apply", "update", "replace"):
            raise ClusterError(
                f"unknown apply method {method!r}: use apply, update or replace", status=400
            )
        with self._lock:
            if method == "apply":
                self.requests["apply"] += 1
                result = self._store.server_side_apply(obj, field_manager, force)
            elif not obj["metadata"].get("name") or not self._store.exists(obj):
                self.requests["create"] += 1
                result = self._store.create(obj, field_manager)
            else:
                self.requests["update"] += 1
                result = self._store.put(obj, field_manager, merge=method == "update")
        self._deliver()
        return out(result, obj["apiVersion"])

    def update(self, obj: Obj, *, field_manager: str = "oper8d") -> Obj:
        obj = shaped(obj)
        with self._lock:
            self.requests["update"] += 1
            result = self._store.put(obj, field_manager, merge=False)
        self._deliver()
        return out(result, obj["apiVersion"])

    def update_status(self, obj: Obj) -> Obj:
        obj = shaped(obj)
        with self._lock:
            self.requests["update_status"] += 1
            result = self._store.update_status(obj)
        self._deliver()
        return out(result, obj["apiVersion"])

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        patch: Obj,
        field_manager: str = "oper8d",
    ) -> Obj:
        """JSON merge patch (RFC 7386: maps recurse, ``None`` deletes, lists replace) of
        everything but status."""
        if not isinstance(patch, Mapping):
            raise ClusterError(
                f"a merge patch must be a map, got {type(patch).__name__}", status=400
            )
        meta = {"name": name, **({"namespace": namespace} if namespace else {})}
        target: Obj = {"apiVersion": api_version, "kind": kind, "metadata": meta}
        with self._lock:
            self.requests["patch"] += 1
            result = self._store.merge_patch(target, patch, field_manager)
        self._deliver()
        return out(result, api_version)

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
    ) -> bool:
        check_propagation(propagation)
        with self._lock:
            self.requests["delete"] += 1
            deleted = self._store.delete(
                self._store.key(api_version, kind, name, namespace), propagation
            )
        self._deliver()
        return deleted

    def tick(self) -> int:
        """Advance the readiness simulation one step; returns how many statuses changed."""
        with self._lock:
            changed = self._store.tick()
        self._deliver()
        return changed

    # -- watch delivery -----------------------------------------------------------------
    def _deliver(self) -> None:
        """Hand queued events to the handlers, in commit order, outside the store lock.
        A handler that writes to the cluster queues more events: the loop already running
        on this thread delivers them after the current one."""
        if getattr(self._local, "delivering", False):
            return
        with self._delivery:
            self._local.delivering = True
            try:
                while True:
                    with self._lock:
                        if not self._store.events:
                            return
                        event, obj = self._store.events.popleft()
                        handlers = list(self._handlers)
                    for handler in handlers:
                        handler(event, clone(obj))
            finally:
                self._local.delivering = False
