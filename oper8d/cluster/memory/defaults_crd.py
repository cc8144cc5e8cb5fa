"""A custom resource's defaults, from the ``default:`` values of its CRD's schema.

Used by ``cluster.memory.defaults`` on every write of a custom resource, as the apiextensions
apiserver defaults a structural schema: first a ``null`` is dropped where the property is
not ``nullable`` and has no default; then, in every object the write holds (at any depth,
in list items and in ``additionalProperties`` values too), each property with a
``default`` that is absent, or ``null`` but not ``nullable``, gets a copy of its default;
a default put in this way is itself walked, so the defaults inside it apply as well. A
property whose parent object is absent gets nothing. Fields under
``x-kubernetes-preserve-unknown-fields`` without a schema are left as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def default_custom(obj: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """Fill in, in place, the schema defaults of a custom resource (or a part of one
    with the part of the schema it sits at)."""
    _drop_nulls(obj, schema)
    _default(obj, schema)


def _property(schema: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    props = schema.get("properties")
    if isinstance(props, Mapping) and isinstance(props.get(key), Mapping):
        sub: Mapping[str, Any] = props[key]
        return sub
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _drop_nulls(value: Any, schema: Mapping[str, Any]) -> None:
    if type(value) is dict:
        for key in list(value):
            sub = _property(schema, key)
            if sub is None:
                continue
            if value[key] is None:
                if not sub.get("nullable") and sub.get("default") is None:
                    del value[key]
            else:
                _drop_nulls(value[key], sub)
    elif type(value) is list:
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                _drop_nulls(item, items)


def _default(value: Any, schema: Mapping[str, Any]) -> None:
    if type(value) is dict:
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, sub in props.items():
                if not isinstance(sub, Mapping) or sub.get("default") is None:
                    continue
                if key not in value or (value[key] is None and not sub.get("nullable")):
                    value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            sub = _property(schema, key)
            if sub is not None and type(item) in (dict, list):
                _default(item, sub)
    elif type(value) is list:
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                if type(item) in (dict, list):
                    _default(item, items)
