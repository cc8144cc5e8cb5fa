"""A quick check that a CR's spec is valid under a simple spec schema, without jsonschema.

``spec_schema.validate_instance`` calls :func:`plainly_valid` first: when it says True the
spec is valid and jsonschema is never imported (about 50 ms of every ``oper8d render`` and
``validate``); otherwise jsonschema checks the spec as before and writes every message.

It answers True only when it is sure: it knows exactly what ``spec_schema``'s validator
(JSON Schema draft 4 with ``nullable``, the draft 6 type checker and the ``x-kubernetes-*``
keywords) does for ``type``, ``properties``, ``additionalProperties``, ``required``,
``items`` (one schema), ``enum`` (of a string), ``minimum``/``maximum`` (with draft 4's
boolean ``exclusiveMinimum``/``exclusiveMaximum``), ``minLength``/``maxLength``,
``minItems``/``maxItems``, ``format`` (not checked there either) and
``x-kubernetes-int-or-string``. A schema node with any other keyword that validator checks
(``pattern``, ``$ref``, ``oneOf``, list types ...), a value that fails, or anything unusual
gives False. Keywords that validator ignores (``description``, ``default``,
``x-kubernetes-validations`` ...) are ignored here too. ``tests/unit/test_plain_schema.py``
holds it to the validator on generated schemas and values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CHECKED_KEYWORDS", "plainly_valid"]

#: every keyword ``spec_schema``'s validator checks (draft 4's and oper8d's own); a test
#: compares this with the installed jsonschema
CHECKED_KEYWORDS = frozenset(
    {
        "$ref", "additionalItems", "additionalProperties", "allOf", "anyOf", "dependencies",
        "enum", "format", "items", "maxItems", "maxLength", "maxProperties", "maximum",
        "minItems", "minLength", "minProperties", "minimum", "multipleOf", "not", "oneOf",
        "pattern", "patternProperties", "properties", "required", "type", "uniqueItems",
        "x-kubernetes-int-or-string", "x-kubernetes-list-type",
    }
)  # fmt: skip
#: the checked keywords this module decides on itself
_KNOWN = frozenset(
    {
        "type", "properties", "additionalProperties", "required", "items", "enum", "minimum",
        "maximum", "minLength", "maxLength", "minItems", "maxItems", "format",
        "x-kubernetes-int-or-string",
    }
)  # fmt: skip
_UNKNOWN = CHECKED_KEYWORDS - _KNOWN


def plainly_valid(instance: Any, schema: Any) -> bool:
    """True when ``instance`` is certainly valid under ``schema``; False when it is not or
    when this check cannot tell (then jsonschema decides)."""
    stack: list[tuple[Any, Any]] = [(instance, schema)]
    while stack:
        value, node = stack.pop()
        if not isinstance(node, Mapping) or not _UNKNOWN.isdisjoint(node):
            return False
        if value is None and node.get("nullable") is True:
            continue  # null passes every keyword of a nullable schema
        if not _node_holds(value, node, stack):
            return False
    return True


def _node_holds(value: Any, node: Mapping[str, Any], stack: list[tuple[Any, Any]]) -> bool:
    """Whether ``value`` passes ``node``'s own keywords; its children go onto ``stack``."""
    if "type" in node and not _has_type(value, node["type"]):
        return False
    if node.get("x-kubernetes-int-or-string") is True and (
        isinstance(value, bool) or not isinstance(value, int | str)
    ):
        return False
    if "enum" in node:
        enum = node["enum"]
        if not isinstance(value, str) or not isinstance(enum, list):
            return False
        if not any(isinstance(e, str) and e == value for e in enum):
            return False
    if isinstance(value, dict):
        return _object_holds(value, node, stack)
    if isinstance(value, list):
        return _array_holds(value, node, stack)
    if isinstance(value, str):
        return _bounds_hold(len(value), node, "minLength", "maxLength")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number_holds(value, node)
    return True


def _object_holds(value: dict[Any, Any], node: Mapping[str, Any], stack: list[Any]) -> bool:
    properties = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    required = node.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return False
    if not all(isinstance(key, str) for key in required):
        return False
    if any(key not in value for key in required):
        return False
    for key, item in value.items():
        if key in properties:
            stack.append((item, properties[key]))
        elif extra is False:
            return False
        elif isinstance(extra, Mapping):
            stack.append((item, extra))
        elif extra is not True:
            return False
    return True


def _array_holds(value: list[Any], node: Mapping[str, Any], stack: list[Any]) -> bool:
    if "items" in node:
        items = node["items"]
        if not isinstance(items, Mapping):
            return False  # draft 4's list of schemas: left to jsonschema
        stack.extend((item, items) for item in value)
    return _bounds_hold(len(value), node, "minItems", "maxItems")


def _bounds_hold(size: int, node: Mapping[str, Any], low: str, high: str) -> bool:
    least, most = node.get(low), node.get(high)
    for bound in (least, most):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            return False
    return (least is None or size >= least) and (most is None or size <= most)


def _number_holds(value: int | float, node: Mapping[str, Any]) -> bool:
    for key, flag in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if key not in node:
            continue
        bound, exclusive = node[key], node.get(flag, False)
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            return False
        if not isinstance(exclusive, bool):
            return False
        if key == "minimum" and (value <= bound if exclusive else value < bound):
            return False
        if key == "maximum" and (value >= bound if exclusive else value > bound):
            return False
    return True


def _has_type(value: Any, types: Any) -> bool:
    """``type`` as the draft 6 type checker reads it (``2.0`` is an integer)."""
    names = types if isinstance(types, list) else [types]
    if not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        return False  # an unknown type: jsonschema reports it
    return any(_TYPES[n](value) for n in names)


_TYPES = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}
