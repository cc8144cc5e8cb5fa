"""Fields a resource leaves to other controllers (``leaveToOthers:``).

An HPA writes a Deployment's ``spec.replicas`` through the scale subresource; a mutating
webhook adds a sidecar annotation. The operator sets such a field when it creates the
object (the first value) and never reverts it afterwards. Used by ``engine.deploy``:

* ``without``: the object with those fields taken out. The applied hash and the
  skip-unchanged comparison use it, so another controller changing such a field is not a
  change of ours (no write).
* ``update_body``: what is sent when the object exists and something else changed.
  Server-side apply deletes (or resets to its default) a field its manager owned and no
  longer sends unless another manager also owns it; so a field that another manager
  already owns (``metadata.managedFields`` says so) is left out, which releases our
  ownership, while a field only we own is sent with the live value, which keeps it as it
  is until another controller takes it over.

A path is a dotted list of map keys (``spec.replicas``, ``spec.template.metadata.labels``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from oper8d.objects import Obj

__all__ = ["FieldPath", "owned_by_others", "update_body", "without"]

#: a field path: the map keys from the object's root
FieldPath = tuple[str, ...]


def without(obj: Obj, paths: Sequence[FieldPath]) -> Obj:
    """``obj`` without the fields at ``paths`` (a copy where they were; ``obj`` unchanged)."""
    if not paths or not any(_get(obj, p) is not _MISSING for p in paths):
        return obj
    result = copy.deepcopy(obj)
    for path in paths:
        _remove(result, path)
    return result


def update_body(
    obj: Obj, live: Obj, paths: Sequence[FieldPath], manager: str, *, server_side: bool = True
) -> Obj:
    """What to write over ``live``: ``obj`` with each left field either taken out (another
    manager owns it, or the live object lacks it) or set to its live value (only we own it,
    so leaving it out would reset it). Without ``server_side`` (a PUT, which resets what
    it does not send) a field the live object has always keeps its live value."""
    if not paths:
        return obj
    result = copy.deepcopy(obj)
    for path in paths:
        current = _get(live, path)
        if current is _MISSING or (server_side and owned_by_others(live, path, manager)):
            _remove(result, path)
        elif not server_side or _get(result, path) is not _MISSING:
            # a PUT resets what it does not send: the live value goes in, rendered or not
            _set(result, path, copy.deepcopy(current))
    return result


def owned_by_others(live: Obj, path: FieldPath, manager: str) -> bool:
    """Whether a field manager other than our server-side apply owns ``path`` in ``live``
    (its ``managedFields``; an object without them: no)."""
    entries = (live.get("metadata") or {}).get("managedFields") or []
    for entry in entries:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            continue
        fields: Any = entry.get("fieldsV1") or {}
        for key in path:
            fields = fields.get(f"f:{key}") if isinstance(fields, dict) else None
            if fields is None:
                break
        else:
            return True
    return False


_MISSING = object()


def _get(obj: Any, path: FieldPath) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def _set(obj: dict[str, Any], path: FieldPath, value: Any) -> None:
    """Set the field at ``path``, creating the maps on the way (not through a non-map)."""
    for key in path[:-1]:
        child = obj.setdefault(key, {})
        if not isinstance(child, dict):
            return
        obj = child
    obj[path[-1]] = value


def _remove(obj: dict[str, Any], path: FieldPath) -> None:
    """Remove the field at ``path``, and the maps it leaves empty."""
    parents: list[tuple[dict[str, Any], str]] = []
    for key in path[:-1]:
        child = obj.get(key)
        if not isinstance(child, dict):
            return
        parents.append((obj, key))
        obj = child
    obj.pop(path[-1], None)
    while parents and not obj:
        parent, key = parents.pop()
        del parent[key]
        obj = parent
