"""Shrink the apiserver's OpenAPI v3 documents to what validation needs.

Used by ``scripts/gen_kube_schemas.py`` (which fetches ``/openapi/v3`` and discovery from a
test apiserver) to write the package data that ``kubeschema.catalog`` loads. The result is a
plain JSON-able dict::

    {"format": 1, "kubernetesVersion": "v1.34.4",
     "kinds": [[apiVersion, kind, definition, plural, namespaced], ...],   # served kinds
     "groups": [...],                                                     # built-in groups
     "defs": {definition: schema}}

Schemas keep only the keywords the validator (and server-side apply) read: descriptions,
defaults and examples go. ``allOf: [{$ref}]`` becomes ``{"$ref": name}``; IntOrString and
Quantity, whose Go types accept more than their ``oneOf`` says, become
``{"x-kubernetes-int-or-string": true}`` and ``{"format": "quantity"}``. Definitions no
served kind reaches are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FORMAT_VERSION = 1
REF_PREFIX = "#/components/schemas/"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

#: keywords kept verbatim (values are scalars or lists of scalars)
_KEPT = (
    "type",
    "format",
    "required",
    "enum",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
)


@dataclass(frozen=True)
class ServedResource:
    """One top-level resource from discovery (``/api/v1``, ``/apis/<group>/<version>``)."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool


def strip_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """One schema with only the validation keywords, refs shortened, recursively."""
    ref = _ref_of(schema)
    if ref is not None:
        return {"$ref": ref}
    out: dict[str, Any] = {k: schema[k] for k in _KEPT if k in schema}
    if "properties" in schema:
        out["properties"] = {k: strip_schema(v) for k, v in schema["properties"].items()}
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        out["additionalProperties"] = strip_schema(additional)
    elif additional is not None:
        out["additionalProperties"] = additional
    if "items" in schema:
        out["items"] = strip_schema(schema["items"])
    return out


def _ref_of(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        ref = None
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
            ref = all_of[0]["$ref"]
    if ref is None:
        return None
    return ref.removeprefix(REF_PREFIX)


def _definition(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    if name == INT_OR_STRING:
        return {"x-kubernetes-int-or-string": True}
    if name == QUANTITY:
        return {"format": "quantity"}
    return strip_schema(schema)


def _refs(schema: Any) -> Iterable[str]:
    if isinstance(schema, Mapping):
        if isinstance(schema.get("$ref"), str):
            yield schema["$ref"]
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def _kind_definition(doc: Mapping[str, Any], api_version: str, kind: str) -> str | None:
    group, _, version = api_version.rpartition("/")
    schemas: dict[str, Any] = doc.get("components", {}).get("schemas", {})
    for name, schema in schemas.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (
                group,
                version,
                kind,
            ):
                return name
    return None


def compact(
    version: str,
    documents: Mapping[str, Mapping[str, Any]],
    resources: Iterable[ServedResource],
    extra_groups: Iterable[str] = (),
) -> dict[str, Any]:
    """The package data from ``documents`` (apiVersion -> its OpenAPI v3 document).

    ``extra_groups`` names built-in groups the server does not serve (``extensions``): an
    object of such a group is an error ("not served"), not an unknown custom kind.
    """
    all_defs: dict[str, Any] = {}
    kinds: list[list[Any]] = []
    for res in sorted(resources, key=lambda r: (r.api_version, r.kind)):
        doc = documents.get(res.api_version)
        name = _kind_definition(doc, res.api_version, res.kind) if doc else None
        if name is None:
            continue  # a kind without a schema (none today) stays unknown
        kinds.append([res.api_version, res.kind, name, res.plural, res.namespaced])
    for doc in documents.values():
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            all_defs.setdefault(name, schema)
    defs: dict[str, Any] = {}
    todo = [k[2] for k in kinds]
    while todo:
        name = todo.pop()
        if name in defs or name not in all_defs:
            continue
        defs[name] = _definition(name, all_defs[name])
        todo.extend(_refs(defs[name]))
    groups = {k[0].rpartition("/")[0] for k in kinds} | set(extra_groups)
    return {
        "format": FORMAT_VERSION,
        "kubernetesVersion": version,
        "kinds": kinds,
        "groups": sorted(groups),
        "defs": dict(sorted(defs.items())),
    }
