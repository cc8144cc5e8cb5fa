"""What the in-memory API server keeps of each object, and the rules between one stored
version of an object and the next that need nothing else of the store.

Used by ``cluster.memory.store`` (and ``cluster.memory.cluster``, for the copies in and out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oper8d.cluster import fields
from oper8d.cluster.base import Propagation
from oper8d.cluster.memory import admission
from oper8d.cluster.memory.index import Key
from oper8d.cluster.memory.scheme import ANNOTATIONS_BUMP_GENERATION
from oper8d.errors import ClusterError
from oper8d.objects import Obj


class Entry:
    """A stored object and who owns its fields. The owners a write hands over may name
    paths the stored object lacks (defaults, admission and the registry rewrite it after
    ownership is worked out); they are trimmed to the object's paths the first time
    someone reads them, not at every write: most objects a render creates are never
    written again, and the trim costs as much as the rest of the write's bookkeeping.
    Deferring it is exact because the paths are those of ``obj``'s content, which changes
    only with a new ``owners`` (``Store._write``); status writes keep the content."""

    __slots__ = ("_owners", "_trimmed", "obj", "propagation")

    def __init__(self, obj: Obj, owners: fields.Owners) -> None:
        self.obj = obj
        self._owners: fields.Owners = owners
        self._trimmed = False
        self.propagation: Propagation = "Background"  # what happens to dependents on removal

    @property
    def owners(self) -> fields.Owners:
        if not self._trimmed:
            self._owners = fields.present_only(self._owners, fields.content(self.obj))
            self._trimmed = True
        return self._owners

    @owners.setter
    def owners(self, owners: fields.Owners) -> None:
        """Set the owners of the content ``obj`` has now (set ``obj`` first)."""
        self._owners, self._trimmed = owners, False


def out(obj: Obj, api_version: str) -> Obj:
    """A caller's copy of a stored object, in the API version it asked for."""
    copy: Obj = fields.clone(obj)
    copy["apiVersion"] = api_version
    return copy


def shaped(obj: Any) -> Obj:
    """A private copy of a client's object, after checking it has apiVersion, kind, metadata."""
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise ClusterError(f"expected an object (a map), got {type(obj).__name__}", status=400)
    return _checked(fields.clone(obj))


def outlined(obj: Any) -> Obj:
    """``shaped`` without the deep copy: new top-level and ``metadata`` maps (a mapping
    there made a dict), everything below them still the client's. Only for a server-side
    apply: ``Store.server_side_apply`` copies the rest before it changes or keeps any of
    it (a create as ``apply_create`` walks it, anything else all at once)."""
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise ClusterError(f"expected an object (a map), got {type(obj).__name__}", status=400)
    copy: Obj = dict(obj)
    meta = copy.get("metadata")
    if type(meta) is not dict and isinstance(meta, Mapping):
        copy["metadata"] = dict(meta)
    elif type(meta) is dict:
        copy["metadata"] = meta.copy()
    return _checked(copy)


def _checked(copy: Obj) -> Obj:
    for name in ("apiVersion", "kind"):
        if not copy.get(name) or not isinstance(copy[name], str):
            raise ClusterError(f"object {copy.get('metadata')!r} has no {name}", status=400)
    copy.setdefault("metadata", {})
    if not isinstance(copy["metadata"], dict):
        raise ClusterError(f"{copy['kind']}: metadata must be a map", status=400)
    return copy


def check_preconditions(obj: Obj, live: Obj | None) -> None:
    """409 when ``obj`` names a resourceVersion or uid that is not the live one's."""
    meta = obj["metadata"]
    version, uid = meta.get("resourceVersion"), meta.get("uid")
    if live is None:
        if version:
            raise ClusterError(
                f"{admission.describe(obj)} was deleted (resourceVersion {version} is gone); "
                "read it again",
                status=409,
            )
        return
    live_meta = live["metadata"]
    if uid and uid != live_meta["uid"]:
        raise ClusterError(
            f"{admission.describe(obj)}: precondition failed: uid {uid} is not the live "
            f"object's uid {live_meta['uid']} (it was deleted and recreated); read it again",
            status=409,
        )
    if version and str(version) != live_meta["resourceVersion"]:
        raise ClusterError(
            f"Operation cannot be fulfilled on {admission.describe(obj)}: the object has been "
            f"modified (resourceVersion {version}, live {live_meta['resourceVersion']}); "
            "read it again and retry",
            status=409,
        )


def compose(content: Obj, key: Key, source: Obj) -> Obj:
    """A full object from ``content``, the identity of ``key`` and ``source``'s apiVersion."""
    meta = {"name": key[3], **({"namespace": key[2]} if key[2] else {})}
    meta.update(content.pop("metadata", {}))
    return {"apiVersion": source["apiVersion"], "kind": key[1], "metadata": meta, **content}


def refuse_new_finalizers(old: Obj, new: Obj) -> None:
    before = set(old["metadata"].get("finalizers") or [])
    added = set(new["metadata"].get("finalizers") or []) - before
    if added:
        raise ClusterError(
            f"{admission.describe(new)} is invalid: metadata.finalizers: Forbidden: no new "
            f"finalizers can be added if the object is being deleted, found new finalizers "
            f"{sorted(added)}",
            status=422,
        )


def generation_moves(key: Key, old: Obj, new: Obj) -> bool:
    def desired(obj: Obj) -> dict[str, Any]:
        return {k: v for k, v in obj.items() if k not in ("apiVersion", "metadata", "status")}

    if desired(old) != desired(new):
        return True
    if key[:2] in ANNOTATIONS_BUMP_GENERATION:
        return bool(old["metadata"].get("annotations") != new["metadata"].get("annotations"))
    return False
