"""Deletion in the in-memory API server: finalizers, garbage collection, namespaces.

Part of ``cluster.memory.store.Store`` (mixed in), used only through ``MemoryCluster.delete``
and the store's write path. What it models is described in ``cluster.memory``'s
docstring: deletionTimestamp and finalizers, synchronous garbage collection through
ownerReferences (Background, Foreground with the ``foregroundDeletion`` finalizer,
Orphan), and namespaces that terminate once their contents are gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oper8d.cluster import fields
from oper8d.cluster.base import Propagation
from oper8d.cluster.memory import admission
from oper8d.cluster.memory.index import Key, ObjectIndex
from oper8d.errors import ClusterError
from oper8d.objects import Obj

FOREGROUND = "foregroundDeletion"


class DeletionMixin:
    """Deletion and garbage collection over the store's objects. The store provides the
    attributes and write methods declared here."""

    if TYPE_CHECKING:  # provided by cluster.memory.store.Store
        _objects: dict[Key, Any]  # Key -> entry with obj, owners, propagation
        _index: ObjectIndex
        _by_uid: dict[str, Key]

        def _write_internal(self, key: Key, new: Obj) -> None: ...
        def _write_status(self, key: Key, status: Any) -> Obj: ...
        def _emit(self, event: str, obj: Obj) -> None: ...
        def _timestamp(self) -> str: ...
        def _next_resource_version(self) -> str: ...

    def _request_deletion(self, key: Key, propagation: Propagation) -> None:
        entry = self._objects[key]
        meta = entry.obj["metadata"]
        if meta.get("deletionTimestamp"):
            return  # already being deleted: a second delete changes nothing
        entry.propagation = propagation
        uid = meta["uid"]
        if propagation == "Orphan":
            self._orphan_dependents(uid)
        finalizers = list(meta.get("finalizers") or [])
        dependents = self._dependents(uid)
        if propagation == "Foreground" and dependents and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        is_namespace = key[:2] == ("", "Namespace")
        if not finalizers and not (is_namespace and self._in_namespace(key[3])):
            self._remove(key)
            return
        new = fields.clone(entry.obj)
        new["metadata"].update(deletionTimestamp=self._timestamp(), deletionGracePeriodSeconds=0)
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        self._write_internal(key, new)
        if is_namespace:
            self._write_status(key, {**entry.obj.get("status", {}), "phase": "Terminating"})
            for content_key in self._in_namespace(key[3]):
                if content_key in self._objects:
                    self._request_deletion(content_key, "Background")
            self._finish_namespace(key[3])
        if propagation == "Foreground":
            for dependent in dependents:
                if dependent in self._objects:
                    self._request_deletion(dependent, "Foreground")

    def _remove(self, key: Key) -> None:
        entry = self._objects.pop(key)
        obj = entry.obj
        self._index.remove(key, obj)
        uid = obj["metadata"]["uid"]
        self._by_uid.pop(uid, None)
        obj["metadata"]["resourceVersion"] = self._next_resource_version()
        self._emit("DELETED", obj)
        if entry.propagation == "Orphan":
            self._orphan_dependents(uid)
        for dependent in self._dependents(uid):
            if dependent not in self._objects:
                continue
            refs = self._objects[dependent].obj["metadata"].get("ownerReferences") or []
            if any(r.get("uid") != uid and r.get("uid") in self._by_uid for r in refs):
                self._drop_owner_reference(dependent, uid)  # another owner keeps it alive
            else:
                self._request_deletion(dependent, "Background")
        for ref in obj["metadata"].get("ownerReferences") or []:
            self._release_foreground_owner(str(ref.get("uid")))
        if key[2]:
            self._finish_namespace(key[2])

    def _release_foreground_owner(self, uid: str) -> None:
        """Remove ``foregroundDeletion`` from an owner once no dependent blocks it."""
        owner_key = self._by_uid.get(uid)
        if owner_key is None:
            return
        owner = self._objects[owner_key].obj
        if FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        for dependent in self._dependents(uid):
            refs = self._objects[dependent].obj["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in refs):
                return
        new = fields.clone(owner)
        new["metadata"]["finalizers"] = [
            f for f in new["metadata"]["finalizers"] if f != FOREGROUND
        ]
        self._write_internal(owner_key, new)

    def _finish_namespace(self, namespace: str) -> None:
        key: Key = ("", "Namespace", "", namespace)
        entry = self._objects.get(key)
        if entry and self._removable(key, entry.obj):
            self._remove(key)

    def _orphan_dependents(self, uid: str) -> None:
        for dependent in self._dependents(uid):
            self._drop_owner_reference(dependent, uid)

    def _drop_owner_reference(self, key: Key, uid: str) -> None:
        new = fields.clone(self._objects[key].obj)
        refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        self._write_internal(key, new)

    def _dependents(self, uid: str) -> list[Key]:
        return self._index.dependents(uid)

    def _in_namespace(self, namespace: str) -> list[Key]:
        return self._index.in_namespace(namespace)

    def _removable(self, key: Key, obj: Obj) -> bool:
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return False
        return key[:2] != ("", "Namespace") or not self._in_namespace(key[3])

    def _check_namespace_open(self, key: Key, obj: Obj) -> None:
        namespace = self._objects.get(("", "Namespace", "", key[2])) if key[2] else None
        if namespace and namespace.obj["metadata"].get("deletionTimestamp"):
            raise ClusterError(
                f"{admission.describe(obj)}: unable to create new content in namespace "
                f"{key[2]} because it is being terminated",
                status=403,
            )
