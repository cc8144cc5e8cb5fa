"""RBAC permissions as Kubernetes objects: PolicyRules, Roles, ClusterRoles and bindings.

``rbac_objects`` turns the permissions ``manifests.rbac.required_permissions`` computed into a
ClusterRole and ClusterRoleBinding (all namespaces) or a Role and RoleBinding per watched
namespace (plus a ClusterRole for kinds outside namespaces, if any), a Role per namespace a
declared read names, and the Role of the operator's Leases in its own namespace. Used by
``manifests.package`` and ``oper8d manifests``; ``manifests.rbac`` exports these names too,
where their callers import them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from oper8d.manifests.rbac_grants import (
    Grant,
    Permissions,
    lease_grants,
    shard_lease_grants,
    uncovered,
)
from oper8d.manifests.rbac_kinds import RBAC_GROUP

__all__ = ["RBAC_API_VERSION", "policy_rules", "rbac_objects"]

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"


def policy_rules(grants: Iterable[Grant]) -> list[dict[str, Any]]:
    """RBAC PolicyRules: grants with the same group, verbs and names share one rule;
    rules sorted (group, resources, names, verbs), so the output does not depend on the
    order of ``grants``."""
    merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], set[str]] = {}
    for g in grants:
        merged.setdefault((g.group, g.verbs, g.names), set()).add(g.resource)
    rules = []
    for (group, verbs, names), resources in merged.items():
        rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
        if names:
            rule["resourceNames"] = list(names)
        rule["verbs"] = list(verbs)
        rules.append(rule)
    return sorted(
        rules,
        key=lambda r: (r["apiGroups"], r["resources"], r.get("resourceNames", []), r["verbs"]),
    )


def rbac_objects(
    permissions: Permissions,
    *,
    name: str,
    namespace: str,
    service_account: str,
    lease_name: str,
    watch_namespaces: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    sharding: bool = False,
) -> list[dict[str, Any]]:
    """The Roles, ClusterRoles and bindings that give ``service_account`` (in
    ``namespace``) ``permissions``: cluster-wide, or in each of ``watch_namespaces``; and
    in ``namespace`` the Lease Role, of leader election or (``sharding``) of the shard
    group's Leases."""
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
    labels = dict(labels or {})
    objects: list[dict[str, Any]] = []
    general = [g for g in permissions.grants if not g.namespace]
    cluster_grants = general if not watch_namespaces else list(permissions.cluster_scoped)
    if cluster_grants:
        objects += _role_and_binding("Cluster", name, None, cluster_grants, subject, labels)
    watched = set(watch_namespaces)
    for ns in sorted(watched | {g.namespace for g in permissions.pinned}):
        # everywhere the operator works, the general grants already cover a pinned one
        everywhere = list(permissions.namespaced) if ns in watched or not watched else []
        pinned = [g for g in permissions.pinned if g.namespace == ns]
        pinned = uncovered(pinned, [replace(g, namespace=ns) for g in everywhere])
        grants = [*(everywhere if ns in watched else []), *pinned]
        if grants or ns in watched:
            objects += _role_and_binding("", name, ns, grants, subject, labels)
    if sharding:
        objects += _role_and_binding(
            "", f"{name}-shards", namespace, shard_lease_grants(), subject, labels
        )
    else:
        objects += _role_and_binding(
            "", f"{name}-leader-election", namespace, lease_grants(lease_name), subject, labels
        )
    return objects


def _role_and_binding(
    prefix: str,
    name: str,
    namespace: str | None,
    grants: Iterable[Grant],
    subject: Mapping[str, str],
    labels: Mapping[str, str],
) -> list[dict[str, Any]]:
    """``prefix`` "Cluster": ClusterRole + ClusterRoleBinding; "": Role + RoleBinding."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    role = {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{prefix}Role",
        "metadata": dict(metadata),
        "rules": policy_rules(grants),
    }
    binding = {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{prefix}RoleBinding",
        "metadata": dict(metadata),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": f"{prefix}Role", "name": name},
        "subjects": [dict(subject)],
    }
    return [role, binding]
