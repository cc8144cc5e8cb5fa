"""JSON Patch (RFC 6902) over Kubernetes objects, with the ``jsonpatch`` library.

Used by the rollout for a component's ``patches:`` of type ``json6902`` and for
TemporaryPatch objects of type ``patchJson6902`` (through ``patch.route``).

``jsonpatch`` either deep-copies the whole document or changes it in place. Neither
suits a path that runs on every reconcile, so before each operation we copy only the
maps and lists on its ``path`` (and ``from``) and let ``jsonpatch`` change those
copies in place. The result shares untouched subtrees with ``original`` and nothing
with ``operations`` (operation values are copied; they are small).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from oper8d.errors import ConfigError

# ``jsonpatch`` (with ``jsonpointer`` and ``difflib``) is imported by the functions that use
# it, when a bundle or a TemporaryPatch has a JSON patch: most renders never load it.


def json_patch(original: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """``original`` with the JSON Patch ``operations`` applied, as a new dict.

    Raises ConfigError naming the index, op and path of the first operation that fails
    (a ``test`` that does not hold, a path that does not exist, a malformed op).
    """
    import jsonpatch
    import jsonpointer

    if not isinstance(operations, list):
        raise ConfigError(
            f"a JSON 6902 patch must be a list of operations, got {type(operations).__name__}: "
            "write it as [{op: replace, path: /spec/replicas, value: 2}, ...]"
        )
    doc: Any = dict(original)
    owned: dict[int, Any] = {id(doc): doc}  # containers we copied; keeps their ids alive
    for index, op in enumerate(operations):
        if not isinstance(op, Mapping):
            raise ConfigError(f"JSON patch operation {index} must be a map, got {op!r}")
        try:
            doc = _apply_op(doc, op, owned)
        except (
            jsonpatch.JsonPatchException,
            jsonpointer.JsonPointerException,
            KeyError,
            IndexError,
            TypeError,
            ValueError,
        ) as err:
            raise ConfigError(
                f"JSON patch operation {index} ({op.get('op')} {op.get('path')!r}) failed: "
                f"{err or type(err).__name__}; check that the path exists in the rendered "
                "object (`oper8d render` shows it)"
            ) from err
    if not isinstance(doc, dict):
        raise ConfigError(
            f"a JSON patch turned the object into {type(doc).__name__}; it must stay a map"
        )
    return doc


def _apply_op(doc: Any, op: Mapping[str, Any], owned: dict[int, Any]) -> Any:
    kind, path, source = op.get("op"), op.get("path"), op.get("from")
    if kind == "test":  # changes nothing
        return _apply(doc, op)
    if kind == "move" and isinstance(source, str) and isinstance(path, str):
        return _move(doc, source, path, owned)
    # add, remove, replace; copy deep-copies its source, so only its target changes
    return _apply(_own_path(doc, path, owned), _owned_op(op))


def _move(doc: Any, source: str, target: str, owned: dict[int, Any]) -> Any:
    """A move is a remove and an add. List positions shift in between, so each step
    gets its own copy-on-write walk."""
    import jsonpatch
    import jsonpointer

    parent, _ = jsonpointer.JsonPointer(source).to_last(doc)
    value = jsonpointer.JsonPointer(source).resolve(doc)
    if source == target:
        return doc
    # as jsonpatch does: within a list the target is read after the removal shifted it
    if isinstance(parent, Mapping) and target.startswith(source + "/"):
        raise jsonpatch.JsonPatchConflict(f"cannot move {source} into its own child {target}")
    doc = _apply(_own_path(doc, source, owned), {"op": "remove", "path": source})
    return _apply(_own_path(doc, target, owned), {"op": "add", "path": target, "value": value})


def _apply(doc: Any, op: Mapping[str, Any]) -> Any:
    import jsonpatch

    return jsonpatch.JsonPatch([op]).apply(doc, in_place=True)


def _owned_op(op: Mapping[str, Any]) -> dict[str, Any]:
    """The op with its value copied, so the result never aliases the caller's patch."""
    out = dict(op)
    if isinstance(out.get("value"), Mapping | list):
        out["value"] = copy.deepcopy(out["value"])
    return out


def _own_path(doc: Any, pointer: Any, owned: dict[int, Any]) -> Any:
    """Copy the containers from the root down to the parent of ``pointer`` that are not
    ours yet, so an in-place change there leaves the original untouched."""
    if not isinstance(pointer, str) or not isinstance(doc, dict | list):
        return doc  # jsonpatch reports the malformed op or the scalar document
    import jsonpointer

    parts = jsonpointer.JsonPointer(pointer).parts
    if id(doc) not in owned:
        doc = _copy(doc, owned)
    parent = doc
    for part in parts[:-1]:
        if isinstance(parent, dict):
            if part not in parent:
                break
            key: Any = part
        elif isinstance(parent, list):
            if not part.isdigit() or int(part) >= len(parent):
                break
            key = int(part)
        else:
            break
        child = parent[key]
        if isinstance(child, dict | list) and id(child) not in owned:
            child = parent[key] = _copy(child, owned)
        parent = child
    return doc


def _copy(container: Any, owned: dict[int, Any]) -> Any:
    copied = dict(container) if isinstance(container, dict) else list(container)
    owned[id(copied)] = copied
    return copied
