"""The API server's checks of a ``default`` in a CRD schema, run before the CRD is built.

A CustomResourceDefinition is refused when a default has fields that pruning would remove
(``must not have unknown fields``) or does not validate under the schema it sits in; the
API server validates the default as written, without filling in nested defaults first.
``manifests.structural`` calls :func:`default_problems` on every converted node that has
a default, so the bundle author hears about it from oper8d, naming the schema path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oper8d.bundle.spec_schema import validate_instance
from oper8d.manifests.openapi import EMBEDDED, PRESERVE


def default_problems(node: Mapping[str, Any]) -> list[str]:
    """Why the API server would refuse the ``default`` of the structural node ``node``
    (messages start with "has a default ..."); empty when it is fine."""
    value = node["default"]
    found = [
        f"has a default with the field {name!r}, which the schema does not "
        "declare; the API server refuses defaults it would prune: declare the field or "
        "leave it out of the default"
        for name in pruned_fields(value, node)
    ]
    schema = {k: v for k, v in node.items() if k != "default"}
    found.extend(
        f"has a default that its own schema rejects ({problem}): fix the default"
        for problem in validate_instance(value, schema, field_prefix="default")
    )
    return found


def pruned_fields(value: Any, schema: Any, where: str = "") -> list[str]:
    """The fields inside ``value`` that the API server's pruning would remove under the
    structural ``schema``, as dotted paths (``ingress.hosts[0].name``)."""
    if not isinstance(schema, Mapping):
        return []
    found: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep_unknown = schema.get(PRESERVE) is True or extra is True
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if key in properties:
                found.extend(pruned_fields(item, properties[key], inner))
            elif isinstance(extra, Mapping):
                found.extend(pruned_fields(item, extra, inner))
            elif schema.get(EMBEDDED) is True and key in ("apiVersion", "kind", "metadata"):
                continue  # an embedded object's type and object meta are always kept
            elif not keep_unknown:
                found.append(inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(pruned_fields(item, schema.get("items"), f"{where}[{index}]"))
    return found
