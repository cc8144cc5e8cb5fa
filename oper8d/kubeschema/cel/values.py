"""A schema node's value as the apiserver gives it to a CEL rule.

Absent properties with a ``default`` get it, integers stay ints (``2.0`` of an integer
field too), numbers become doubles, ``byte`` strings become bytes, fields the schema does
not keep are dropped (the apiserver prunes them first), and at the root of a custom
resource (or an embedded resource) ``metadata`` holds only ``name`` and ``generateName``,
all a rule may see of it. Integers beyond int64 raise ``Unchecked``. The CEL core takes
no timestamps or durations inside a map, so ``date``/``date-time``/``duration`` strings
(timestamps and durations to the apiserver) stay strings and are named in ``times``: a
rule that may read one is left unchecked, since comparing the strings could give another
verdict than comparing the times.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Mapping
from typing import Any

from oper8d.kubeschema.cel.runtime import Unchecked

_INT64 = (-(2**63), 2**63 - 1)
_TIME_FORMATS = frozenset({"date", "date-time", "duration"})
_META_SEEN = ("name", "generateName")


def typed(
    schema: Any, value: Any, times: set[str], *, resource: bool = False, name: str = "self"
) -> Any:
    """``value`` under ``schema`` as CEL sees it; ``resource``: the root of an object.
    A ``date``/``date-time``/``duration`` string stays a string, and the field's name
    (``name``) is added to ``times``: the caller leaves a rule that may read it unchecked."""
    if value is None:
        return None
    if not isinstance(schema, Mapping):
        return _raw(value)
    if schema.get("x-kubernetes-int-or-string"):
        return _raw(value)
    kind = schema.get("type")
    if kind == "string" and isinstance(value, str):
        fmt = schema.get("format")
        if fmt in _TIME_FORMATS:
            times.add(name)
            return value
        if fmt == "byte":
            try:
                return base64.b64decode(value, validate=True)
            except binascii.Error:
                raise Unchecked("reads a byte field that is not base64") from None
        return value
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict):
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        return _object(schema, value, times, resource or embedded)
    if isinstance(value, list):
        items = schema.get("items")
        return [typed(items, v, times, name=name) for v in value]
    return _raw(value)


def _object(
    schema: Mapping[str, Any], value: dict[str, Any], times: set[str], resource: bool
) -> dict[str, Any]:
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    keep = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    out: dict[str, Any] = {}
    for key, item in value.items():
        if resource and key == "metadata" and isinstance(item, dict):
            out[key] = {k: item[k] for k in _META_SEEN if k in item}
        elif resource and key in ("apiVersion", "kind"):
            out[key] = _raw(item)
        elif key in props:
            out[key] = typed(props[key], item, times, name=key)
        elif isinstance(extra, Mapping):
            out[key] = typed(extra, item, times, name="self")  # any key: reads unknown
        elif keep or extra is True:
            out[key] = _raw(item)
    for key, sub in props.items():
        if key not in value and isinstance(sub, Mapping) and "default" in sub:
            out[key] = typed(sub, sub["default"], times, name=key)
    return out


def with_defaults(schema: Mapping[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with the ``default`` of each absent property (the apiserver defaults an
    object before it validates it; a CR file or a rendered object may not be)."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return value
    missing = {
        k: copy.deepcopy(sub["default"])
        for k, sub in props.items()
        if k not in value and isinstance(sub, Mapping) and "default" in sub
    }
    return {**value, **missing} if missing else value


def _raw(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise Unchecked("holds an integer beyond int64")
        return value
    if isinstance(value, dict):
        return {k: _raw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_raw(v) for v in value]
    return value


def unordered_lists(schema: Any, name: str = "self", depth: int = 0) -> set[str]:
    """The names of the lists of type ``set`` or ``map`` in ``schema`` (``name`` for the
    node itself), which the apiserver compares without regard to order."""
    if not isinstance(schema, Mapping) or depth > 64:
        return set()
    found: set[str] = set()
    if schema.get("type") == "array" and schema.get("x-kubernetes-list-type") in ("set", "map"):
        found.add(name)
    for key, sub in (schema.get("properties") or {}).items():
        found |= unordered_lists(sub, key, depth + 1)
    for sub in (schema.get("items"), schema.get("additionalProperties")):
        found |= unordered_lists(sub, name, depth + 1)
    return found
