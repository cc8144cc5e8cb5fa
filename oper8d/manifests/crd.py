"""CustomResourceDefinitions (apiextensions.k8s.io/v1): the one a controller's CR kind
needs, built from the bundle, and oper8's TemporaryPatch.

``crd_for(controller)`` gives the CRD that installs a bundle's kind: one served, stored
version with a status subresource, printer columns (Ready, Reason, Version, the bundle's
own, Age) and a schema whose ``spec`` is the bundle's spec schema in structural form
(``manifests.structural``), beside a top-level ``configOverrides`` of what the bundle's
``resource.configSchema`` declares (empty without one) and a free-form ``status``. A
``forEach`` with ``maxItems`` over a plain spec path (``spec.workers``) also bounds that
array in the schema, so the API server refuses a longer list up front. A CR
without ``spec`` gets ``spec: {}`` from the API server, and so the schema's defaults,
exactly as the engine treats it, unless the schema requires fields: then ``spec`` is
required. ``temporary_patch_crd()`` is the CRD of ``oper8.org/v1
TemporaryPatch`` that oper8 users already have. Both are plain dicts, ready to apply.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from oper8d.bundle.model import ControllerSpec, CRKind
from oper8d.bundle.spec_schema import validate_instance
from oper8d.errors import BundleError, Problem
from oper8d.manifests.openapi import PRESERVE
from oper8d.manifests.structural import structural_schema

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"

TEMPORARY_PATCH_GROUP = "oper8.org"
TEMPORARY_PATCH_VERSION = "v1"
TEMPORARY_PATCH_KIND = "TemporaryPatch"
TEMPORARY_PATCH_PLURAL = "temporarypatches"
TEMPORARY_PATCH_TYPES = ("patchStrategicMerge", "patchJson6902")

_READY = '.status.conditions[?(@.type=="Ready")]'
#: a ``forEach.items`` the CRD can bound: a bare dotted path of identifiers into the spec
_PLAIN_SPEC_PATH = re.compile(r"spec(\.[A-Za-z_][A-Za-z0-9_]*)+")


def crd_for(controller: ControllerSpec) -> dict[str, Any]:
    """The CustomResourceDefinition of the kind ``controller`` reconciles.

    Raises BundleError when the spec schema cannot be expressed in a CRD; each Problem
    names the schema path (``resource.schema.properties...``) and carries the
    controller's position in operator.yaml.
    """
    resource = controller.resource
    spec, spec_required = _spec_schema(controller)
    root: dict[str, Any] = {
        "type": "object",
        "description": f"{resource.kind}: reconciled by the oper8d controller {controller.name!r}.",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "configOverrides": _config_schema(controller),
            "status": {"type": "object", PRESERVE: True},
        },
    }
    if spec_required:
        root["required"] = ["spec"]
    return _crd(resource, root, printer_columns(resource))


def printer_columns(resource: CRKind) -> list[dict[str, Any]]:
    """``kubectl get`` columns: Ready, Reason, Version, the bundle's own, Age.

    A bundle column named like a built-in one replaces it.
    """
    own = [dict(column) for column in resource.printer_columns]
    names = {column.get("name") for column in own}
    version_path = "." + resource.version_path
    builtin_head = [
        _column("Ready", _READY + ".status", "Whether the last rollout made the CR Ready"),
        _column("Reason", _READY + ".reason", "Why the CR is (not) Ready"),
        _column("Version", version_path, f"The version the CR asks for ({version_path})"),
    ]
    age = _column("Age", ".metadata.creationTimestamp", None, type_="date")
    head = [c for c in builtin_head if c["name"] not in names]
    tail = [age] if "Age" not in names else []
    return head + own + tail


def temporary_patch_crd() -> dict[str, Any]:
    """The CRD of ``oper8.org/v1 TemporaryPatch`` (namespaced, ``temporarypatches``).

    Its spec names the target CR (apiVersion, kind, name: required) and carries the
    patch: ``patchType`` is ``patchStrategicMerge`` (the default, as in the engine) or
    ``patchJson6902``; ``patch`` is any value (a mapping, or a list of operations).
    """
    kind = CRKind(
        group=TEMPORARY_PATCH_GROUP,
        version=TEMPORARY_PATCH_VERSION,
        kind=TEMPORARY_PATCH_KIND,
        plural=TEMPORARY_PATCH_PLURAL,
    )
    string = {"type": "string"}
    spec = {
        "type": "object",
        "description": "A patch oper8d applies to the objects one CR deploys, until deleted.",
        "required": ["apiVersion", "kind", "name"],
        "properties": {
            "apiVersion": {**string, "description": "apiVersion of the target CR"},
            "kind": {**string, "description": "kind of the target CR"},
            "name": {**string, "description": "name of the target CR (same namespace)"},
            "patchType": {
                **string,
                "default": TEMPORARY_PATCH_TYPES[0],
                "enum": list(TEMPORARY_PATCH_TYPES),
            },
            "patch": {
                "description": "patchStrategicMerge: {component: {resource: body}}; "
                "patchJson6902: a list of operations",
                PRESERVE: True,
            },
        },
    }
    root = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": string,
            "kind": string,
            "metadata": {"type": "object"},
            "spec": spec,
            "status": {"type": "object", PRESERVE: True},
        },
    }
    columns = [
        _column("Target", ".spec.name", "The CR the patch applies to (of .spec.kind)"),
        _column("Age", ".metadata.creationTimestamp", None, type_="date"),
    ]
    return _crd(kind, copy.deepcopy(root), columns)


def _config_schema(controller: ControllerSpec) -> dict[str, Any]:
    """``configOverrides``: what ``resource.configSchema`` lets a CR override, in
    structural form (the API server checks the types and prunes undeclared keys); with no
    such schema, an object that must stay empty, so the API server refuses any override
    (it keeps unknown fields only to refuse them: pruned, they would vanish unsaid)."""
    described = {
        "description": "Config values of highest precedence, merged over the operator's "
        "defaults and the oper8.org/config-defaults ConfigMap; only what the operator's "
        "bundle declares (resource.configSchema).",
    }
    declared = controller.resource.config_schema
    if declared is None:
        return {"type": "object", "maxProperties": 0, PRESERVE: True, **described}
    converted = _object_schema(controller, declared, "resource.configSchema", "configOverrides")
    return {**described, **converted}


def _spec_schema(controller: ControllerSpec) -> tuple[dict[str, Any], bool]:
    """The structural spec schema, and whether ``spec`` must be present in a CR."""
    converted = _object_schema(controller, controller.resource.schema, "resource.schema", "spec")
    _bound_for_each_arrays(controller, converted)
    if "default" in converted:
        return converted, False
    if validate_instance({}, converted):
        return converted, True  # {} is not a valid spec: make the CR say what it wants
    converted["default"] = {}
    return converted, False


def _object_schema(
    controller: ControllerSpec, schema: Any, where: str, field: str
) -> dict[str, Any]:
    """The structural form of ``schema`` (written at ``where``), which must describe an
    object: ``field`` of a CR is one."""
    converted: dict[str, Any] = structural_schema(schema, where=where, pos=controller.pos).schema
    if converted.get("type", "object") != "object":
        problem = Problem(
            f"{where} has type {converted['type']!r}; {field} of a CR is an object: use "
            "`type: object`",
            pos=controller.pos,
            field=field,
        )
        raise BundleError(problem)
    return converted


def _bound_for_each_arrays(controller: ControllerSpec, spec: dict[str, Any]) -> None:
    """Give ``spec``'s array properties the ``maxItems`` of the forEaches over them.

    Only a ``forEach.items`` that is a plain path (``spec.a.b``) names one property; the
    bundle's own smaller ``maxItems`` there stays. A path the schema does not declare as
    an array is left alone: render still enforces the bound.
    """
    for comp in controller.components:
        fe = comp.for_each
        if fe is None or fe.max_items is None:
            continue
        source = fe.items.source.strip()
        if not _PLAIN_SPEC_PATH.fullmatch(source):
            continue
        node: Any = spec
        for name in source.split(".")[1:]:
            properties = node.get("properties") if isinstance(node, dict) else None
            node = properties.get(name) if isinstance(properties, dict) else None
        if not isinstance(node, dict) or node.get("type") != "array":
            continue
        current = node.get("maxItems")
        if not isinstance(current, int) or current > fe.max_items:
            node["maxItems"] = fe.max_items


def _crd(kind: CRKind, schema: Mapping[str, Any], columns: list[dict[str, Any]]) -> dict[str, Any]:
    names: dict[str, Any] = {
        "plural": kind.plural,
        "singular": kind.kind.lower(),
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {"name": f"{kind.plural}.{kind.group}"},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": kind.scope,
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": dict(schema)},
                }
            ],
        },
    }


def _column(
    name: str, json_path: str, description: str | None, *, type_: str = "string"
) -> dict[str, Any]:
    column = {"name": name, "type": type_, "jsonPath": json_path}
    if description:
        column["description"] = description
    return column
