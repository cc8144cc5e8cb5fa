"""Facts about built-in Kubernetes kinds shared by the engine and the in-memory cluster."""

from __future__ import annotations

from typing import Any

#: built-in kinds that live outside namespaces (everything else is namespaced)
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "StorageClass",
        "PriorityClass",
        "APIService",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "CSIDriver",
        "CSINode",
        "IngressClass",
        "RuntimeClass",
        "VolumeAttachment",
        "CertificateSigningRequest",
        "FlowSchema",
        "PriorityLevelConfiguration",
    }
)


def group_of(api_version: str) -> str:
    """``apps/v1`` -> ``apps``; ``v1`` -> ``""`` (the core group)."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def ref_of(obj: dict[str, Any]) -> str:
    """``Kind ns/name`` (or ``Kind name``) for messages."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return (
        f"{obj.get('kind')} {ns}/{meta.get('name')}"
        if ns
        else f"{obj.get('kind')} {meta.get('name')}"
    )
