"""Kubernetes' own schemas, offline: check a rendered object as the apiserver would.

Sits beside ``template`` and ``bundle`` (no ``kubernetes`` import, no I/O but reading its
package data and CRD files); the engine and the CLI call it on every rendered object::

    schemas = KubeSchemas.builtin()                 # the shipped Kubernetes version
    schemas = schemas.with_crds([crd_for(ctrl)])    # + the bundle's CRDs
    schemas = schemas.with_crds(load_crd_dir(Path("crds/")))   # + the user's (--crds DIR)

    coerced = schemas.coerce(obj)        # 3 -> "3" where the schema says string, 3.0 -> 3
    result = schemas.validate(coerced.obj)
    for f in result.errors:              # Finding(path, segments, message)
        print(f"{f.path}: {f.message}")  # spec.template.spec.containers[0].env[0].value: ...
    if result.warning: ...               # a kind without a known schema: not checked

What ``validate`` checks: the apiVersion/kind is served (``extensions/v1beta1 Ingress``
is not), unknown fields at any depth (strict field validation), types (Go's decoder for
built-in kinds: no float for an integer, no number for a string), int32/int64 ranges,
required fields, enums, int-or-string, quantities, RFC 3339 times, base64 for ``byte``
fields (Secret ``data``), ObjectMeta rules (name form per kind, labels, annotations,
finalizer names), ConfigMap/Secret keys, duplicate keys of associative lists and
duplicate items of sets (as server-side apply refuses them), pod template labels, and for
built-in kinds the common cross-field rules of the apiserver's Go validation
(``kubeschema.semantic``: restart policies, HPA bounds, Ingress hosts, node ports, a
Service's ports, requests within limits, ...; ``bounds``, ``rbac``, ``kindrules``: integer
bounds, RBAC rules, webhooks and more); for custom kinds also bounds, lengths,
patterns, list types, junctors, ``x-kubernetes-preserve-unknown-fields``, embedded
resources and CEL rules (``x-kubernetes-validations``, ``kubeschema.cel``: ``validate(obj,
old)`` runs transition rules on update; a rule it cannot evaluate is in
``Validation.unchecked``). Admission webhooks and policies are not checked. See
docs/kubernetes-schemas.md.
"""

from oper8d.kubeschema.catalog import (
    DEFAULT_VERSION,
    Coerced,
    Coercion,
    Finding,
    KindInfo,
    KubeSchemas,
    SchemaDataError,
    Validation,
    shipped_versions,
)
from oper8d.kubeschema.crds import CRDError, CustomKind, custom_kinds, load_crd_dir

__all__ = [
    "DEFAULT_VERSION",
    "CRDError",
    "Coerced",
    "Coercion",
    "CustomKind",
    "Finding",
    "KindInfo",
    "KubeSchemas",
    "SchemaDataError",
    "Validation",
    "custom_kinds",
    "load_crd_dir",
    "shipped_versions",
]
