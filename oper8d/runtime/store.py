"""The informers' object store and the helpers every cache reader shares.

``ObjectStore`` (used by ``runtime.informer.Informer``) holds one kind's objects by
(namespace, name) with indexes by uid, by the ``oper8d.io/owner-uid`` label and by
ownerReference uid. It is not locked: its informer locks around it. ``copy_obj``,
``key_of`` is used by the informer and the cache (resourceVersions: ``oper8d.objects``).

``drop_unread`` is the informers' default transform, as controller-runtime's cache
transforms do: it drops from every cached object what no reader of the cache uses
(``metadata.managedFields``, kubectl's last-applied annotation), about a third of a typical
object's memory (``benchmarks.bench_fleet`` measures it).

``share_strings`` is applied by the informers to every object they keep, after the
transform: a parsed API response holds its own copy of every string value (and, for a
watch event, of every key), yet most repeat across objects (namespaces, label keys and
values, apiVersions, kinds, owner uids, enum-like spec and status values). Interning them
makes equal strings one object, about a third less memory per cached object.

``names_only`` is the transform of the metadata-only informers: what tells that an object
of a name exists, and nothing else.

It sits below both ``runtime.informer`` and ``runtime.cache`` so that neither imports
the other.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from oper8d.objects import OWNER_LABEL, Obj

__all__ = [
    "Key",
    "ObjectStore",
    "copy_obj",
    "drop_unread",
    "key_of",
    "names_only",
    "share_strings",
]

#: kubectl's copy of what it last applied: a second copy of the object, never read here
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

#: (namespace, name); the namespace is "" for cluster-scoped objects
Key = tuple[str, str]


def copy_obj(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); several times faster than
    ``copy.deepcopy`` on API objects."""
    if isinstance(value, dict):
        return {k: copy_obj(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_obj(v) for v in value]
    return value


def drop_unread(obj: Obj) -> Obj:
    """``obj`` (changed in place) without what the engine does not read of a cached object:
    ``metadata.managedFields`` (server-side apply computes ownership on the server; the
    engine's skip-unchanged compares its own hash annotation) and kubectl's
    last-applied-configuration annotation. Not used for a bundle whose resources leave
    fields to other controllers: ``engine.leave`` reads managedFields (``runtime.manager``)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            del annotations[LAST_APPLIED]
            if not annotations:
                del meta["annotations"]
    return obj


#: what ``names_only`` keeps of an object's metadata
_NAME_FIELDS = ("name", "namespace", "uid", "resourceVersion")


def names_only(obj: Obj, *, api_version: str, kind: str) -> Obj:
    """What a metadata-only informer keeps of an object: its kind (a metadata watch names
    every object ``PartialObjectMetadata``), name, namespace, uid and resourceVersion.
    Enough to tell that an object of that name exists, and about 300 bytes each."""
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {k: meta[k] for k in _NAME_FIELDS if k in meta},
    }


#: string values up to this length are interned by ``share_strings``; longer ones (hashes,
#: messages, embedded documents) rarely repeat
SHARED_STRING_MAX = 64


def share_strings(obj: Obj, *, keys: bool = False) -> Obj:
    """``obj`` with its string values of up to ``SHARED_STRING_MAX`` characters interned
    (``sys.intern``: equal strings become one object, freed when no longer used), in place.
    With ``keys`` the dicts are rebuilt with interned keys too (a copy): for an object
    parsed alone, such as a watch event's; the objects of one list page share their keys
    already (the JSON parser reuses the keys of one document)."""
    if keys:
        copied: Obj = _share_copy(obj)
        return copied
    _share_in_place(obj)
    return obj


def _share_in_place(node: dict[str, Any] | list[Any]) -> None:
    pairs = node.items() if type(node) is dict else enumerate(node)
    for at, value in pairs:
        kind = type(value)
        if kind is str:
            if len(value) <= SHARED_STRING_MAX:
                node[at] = sys.intern(value)  # type: ignore[index]  # same size: iteration goes on
        elif kind is dict or kind is list:
            _share_in_place(value)


def _share_copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {(sys.intern(k) if type(k) is str else k): _share_copy(v) for k, v in value.items()}
    if kind is list:
        return [_share_copy(v) for v in value]
    if kind is str and len(value) <= SHARED_STRING_MAX:
        return sys.intern(value)
    return value


def key_of(obj: Obj) -> Key:
    """(namespace, name); the namespace is "" for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


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
