"""allOf / anyOf / oneOf / not in a structural schema: what may stay, and the type a node
without ``type`` takes from them.

The API server keeps a junctor only as value validation: inside it no branch may set
``type``, ``nullable``, ``default``, ``description``, ``title``, ``additionalProperties``
or an ``x-kubernetes-*`` extension, and every property or item a branch talks about must
be declared outside the junctor too. ``add_junctors`` makes a branch fit when that keeps
its meaning (a ``type`` equal to the node's own is removed, annotations are removed, a
property only a branch declares is declared on the node with its type alone) and leaves
the junctor out otherwise, with a note. Used by ``manifests.structural``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from oper8d.manifests.openapi import (
    ANNOTATIONS,
    DROPPED_ANNOTATIONS,
    INT_OR_STRING,
    JUNCTORS,
    PRESERVE,
    UNSUPPORTED_VALIDATIONS,
    VALUE_KEYWORDS,
    TypeSpec,
    convert_bounds,
    infer_type,
    parse_type,
    type_union,
)

#: a schema with its ``$ref`` inlined, or None when the reference cannot be followed
Resolve = Callable[[Any], Any]
Note = Callable[[str], None]

#: the one anyOf the API server accepts under ``x-kubernetes-int-or-string: true``
INT_OR_STRING_ANY_OF = ({"type": "integer"}, {"type": "string"})
# a branch nested deeper than this is a recursive $ref in disguise
_MAX_DEPTH = 32


class _NotStructural(Exception):
    """A branch cannot be made structural without changing what it accepts."""


def implied_type(schema: Mapping[str, Any], resolve: Resolve, depth: int = 0) -> TypeSpec | None:
    """The type a node without ``type`` takes from its junctors: that of its first typed
    allOf branch, else the union of its anyOf (or oneOf) branch types when every branch
    has one (``anyOf: [{type: string}, {type: 'null'}]`` is a nullable string)."""
    if depth > _MAX_DEPTH:
        return None  # branches that refer back to the node: no type to take
    for branch in _branch_list(schema.get("allOf")):
        names = _type_names(branch, resolve, depth)
        found = type_union(names) if names else None
        if isinstance(found, TypeSpec):
            return found
    for key in ("anyOf", "oneOf"):
        branches = _branch_list(schema.get(key))
        every = [_type_names(branch, resolve, depth) for branch in branches]
        if branches and all(every):
            found = type_union(name for names in every for name in names or ())
            if isinstance(found, TypeSpec):
                return found
    return None


def add_junctors(
    schema: Mapping[str, Any], out: dict[str, Any], resolve: Resolve, note: Note
) -> None:
    """Add the junctors of ``schema`` to ``out`` (its structural form, otherwise complete)
    in the form the API server accepts, declaring on ``out`` the properties branches
    need; note each junctor that has to be left out, and why."""
    for key in JUNCTORS:
        if key not in schema:
            continue
        raw = schema[key]
        branches = [raw] if key == "not" else raw
        if not isinstance(branches, list):
            note(f"`{key}` is left out: it is not a list of schemas")
            continue
        if key in ("anyOf", "oneOf"):
            # a null branch only admits null, which the node's nullable (or type) decides
            branches = [b for b in branches if _type_names(b, resolve) != ["null"]]
            if not branches:
                continue
        if out.get(INT_OR_STRING):
            if key == "anyOf" and _is_int_or_string(branches, resolve):
                out["anyOf"] = copy.deepcopy(list(INT_OR_STRING_ANY_OF))
            else:
                note(
                    f"`{key}` is left out: under x-kubernetes-int-or-string the API server "
                    "only accepts `anyOf: [{type: integer}, {type: string}]`"
                )
            continue
        trial = copy.deepcopy(out)
        try:
            cleaned = [_clean(branch, trial, resolve, 0) for branch in branches]
        except _NotStructural as reason:
            note(f"`{key}` is left out: {reason}, which a CRD cannot hold")
            continue
        if key == "allOf":
            cleaned = [branch for branch in cleaned if branch]
        if (key == "allOf" and not cleaned) or (key in ("anyOf", "oneOf") and cleaned == [{}]):
            continue  # the junctor admits every value the node admits
        if key == "anyOf" and {} in cleaned:
            continue  # one branch admits every value: so does the anyOf
        out.clear()
        out.update(trial)
        out[key] = cleaned[0] if key == "not" else cleaned


def _branch_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _type_names(branch: Any, resolve: Resolve, depth: int = 0) -> list[str] | None:
    """The JSON type names a branch allows, when it says; None when it does not."""
    schema = resolve(branch)
    if not isinstance(schema, Mapping):
        return None
    if schema.get(INT_OR_STRING) is True:
        return ["integer", "string"]
    if "type" in schema:
        value = schema["type"]
        names = [value] if isinstance(value, str) else value
        return list(names) if isinstance(names, list) and names else None
    found = infer_type(schema) or implied_type(schema, resolve, depth + 1)
    if found is None or found.any_type:
        return None
    names = ["integer", "string"] if found.int_or_string else [found.name or ""]
    return [*names, "null"] if found.nullable else names


def _is_int_or_string(branches: list[Any], resolve: Resolve) -> bool:
    found = []
    for branch in branches:
        schema = resolve(branch)
        if not isinstance(schema, Mapping):
            return False
        found.append({k: v for k, v in schema.items() if k not in ANNOTATIONS})
    return sorted(found, key=lambda b: str(b.get("type"))) == list(INT_OR_STRING_ANY_OF)


def _clean(branch: Any, outer: dict[str, Any], resolve: Resolve, depth: int) -> dict[str, Any]:
    """``branch`` as value validation under the structural node ``outer``; properties it
    declares that ``outer`` lacks are declared on ``outer`` (type only)."""
    if depth > _MAX_DEPTH:
        raise _NotStructural("it nests too deeply (a recursive $ref)")
    schema = resolve(branch)
    if schema is True:
        return {}
    if not isinstance(schema, Mapping):
        raise _NotStructural("a branch is not a schema")
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ANNOTATIONS or key in DROPPED_ANNOTATIONS or key == "default":
            continue  # annotations: no effect on which values pass
        if key == "type":
            _same_type(value, outer)
        elif key == "nullable":
            if value is True:
                raise _NotStructural("a branch sets nullable")
        elif key == "const":
            result["enum"] = [copy.deepcopy(value)]
        elif key in VALUE_KEYWORDS:
            result[key] = copy.deepcopy(value)
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            continue  # after the loop, with minimum and maximum
        elif key == "uniqueItems":
            if value is True:
                raise _NotStructural("a branch sets uniqueItems")
        elif key == "properties" and isinstance(value, Mapping):
            result["properties"] = _properties(value, outer, resolve, depth)
        elif key == "items":
            if outer.get("type") != "array" or not (isinstance(value, Mapping) or value is True):
                raise _NotStructural("a branch has items where the field is not a list")
            result["items"] = _clean(value, outer["items"], resolve, depth + 1)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            result[key] = [_clean(item, outer, resolve, depth + 1) for item in value]
        elif key == "not":
            result[key] = _clean(value, outer, resolve, depth + 1)
        elif (
            key in ("additionalProperties", "patternProperties", "$ref")
            or key in UNSUPPORTED_VALIDATIONS
            or key.startswith("x-kubernetes-")
        ):
            raise _NotStructural(f"a branch sets {key}")
        # any other keyword is unknown to JSON Schema too, and ignored by both
    convert_bounds(schema, result)
    return result


def _same_type(value: Any, outer: Mapping[str, Any]) -> None:
    found = parse_type(value)
    own = outer.get("type")
    if isinstance(found, TypeSpec) and found.name is not None and found.name == own:
        return  # the node's own type already says it
    if own is None:
        raise _NotStructural(f"a branch has type {value!r} where the field takes any value")
    raise _NotStructural(f"a branch has type {value!r} where the field has type {own!r}")


def _properties(
    declared: Mapping[str, Any], outer: dict[str, Any], resolve: Resolve, depth: int
) -> dict[str, Any]:
    if outer.get("type") != "object" or "additionalProperties" in outer:
        raise _NotStructural("a branch declares properties where the field is not an object")
    properties = outer.setdefault("properties", {})
    cleaned = {}
    for name, sub in declared.items():
        if name == "metadata":
            raise _NotStructural("a branch declares `metadata`")
        if name not in properties:
            properties[name] = _skeleton(sub, resolve, depth + 1)
        cleaned[name] = _clean(sub, properties[name], resolve, depth + 1)
    return cleaned


def _skeleton(branch: Any, resolve: Resolve, depth: int) -> dict[str, Any]:
    """The structural part of a property only a branch declares: its type, and for a list
    its items' type. Nested properties are declared as ``_clean`` meets them."""
    if depth > _MAX_DEPTH:
        raise _NotStructural("it nests too deeply (a recursive $ref)")
    schema = resolve(branch)
    if schema is True:
        return {PRESERVE: True}
    if not isinstance(schema, Mapping):
        raise _NotStructural("a branch property is not a schema")
    if schema.get(INT_OR_STRING) is True:
        return {INT_OR_STRING: True}
    found: TypeSpec | str | None
    found = parse_type(schema["type"]) if "type" in schema else None
    found = found or infer_type(schema) or implied_type(schema, resolve)
    if isinstance(found, str):
        raise _NotStructural(f"a branch property {found}")
    if found is None or found.any_type:
        return {PRESERVE: True}
    if found.int_or_string:
        return {INT_OR_STRING: True}
    node: dict[str, Any] = {"type": found.name}
    if found.nullable:
        node["nullable"] = True
    if found.name == "array":
        items = schema.get("items")
        node["items"] = (
            _skeleton(items, resolve, depth + 1) if isinstance(items, Mapping) else {PRESERVE: True}
        )
    if found.name == "object" and not isinstance(schema.get("properties"), Mapping):
        node[PRESERVE] = True
    return node
