"""Facts about built-in Kubernetes kinds shared by the engine and the in-memory cluster."""

from __future__ import annotations

import functools
import re
from typing import Any

#: built-in kinds that live outside namespaces, by (API group, kind); every other kind is
#: namespaced unless its CRD says otherwise. Kept equal to the shipped schemas' scopes by a test.
CLUSTER_SCOPED = frozenset(
    {
        ("", "ComponentStatus"),
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("authentication.k8s.io", "SelfSubjectReview"),
        ("authentication.k8s.io", "TokenReview"),
        ("authorization.k8s.io", "SelfSubjectAccessReview"),
        ("authorization.k8s.io", "SelfSubjectRulesReview"),
        ("authorization.k8s.io", "SubjectAccessReview"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("networking.k8s.io", "IPAddress"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("node.k8s.io", "RuntimeClass"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "VolumeAttributesClass"),
    }
)


def is_cluster_scoped(api_version: str, kind: str) -> bool:
    """Whether a built-in kind lives outside namespaces: by group and kind, so a custom
    ``example.com/v1 ClusterRole`` is namespaced like any custom kind without a CRD saying
    otherwise."""
    return (group_of(api_version), kind) in CLUSTER_SCOPED


#: a DNS-1123 label (namespaces, most names' parts) and subdomain (most object names)
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(rf"{DNS_LABEL.pattern}(\.{DNS_LABEL.pattern})*")


def is_dns_subdomain(name: str) -> bool:
    """Whether ``name`` is a valid name for most kinds: at most 253 characters of
    lower-case letters, digits, '-' and '.'."""
    return len(name) <= 253 and DNS_SUBDOMAIN.fullmatch(name) is not None


def path_segment_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name or namespace in a request path, or None. A name
    reaches the URL as one path segment: ``..`` or a ``/`` would make it another path
    (``../../kube-system/secrets/x`` reads a Secret elsewhere), and ``?`` or ``#`` would end
    the path (``x?watch=true``), so such names are refused before any request, as client-go
    refuses ``/`` and ``%``; no Kubernetes object has one."""
    if value in (".", ".."):
        return f"{value!r} may not be a name"
    for bad in ("/", "%", "?", "#"):
        if bad in value:
            return f"{value!r} may not contain {bad!r}"
    return None


#: a version as the API server accepts one: a DNS-1035 label (CRD ``versions[].name`` and
#: APIService ``spec.version`` are validated so): ``v1``, ``v1beta2``, ``v2alpha1``
_VERSION = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
#: a group of 253 characters, a slash and a version of 63
_LONGEST = 253 + 1 + 63


def parse_api_version(api_version: object) -> tuple[str, str]:
    """``apps/v1`` -> ``("apps", "v1")``; ``v1`` -> ``("", "v1")`` (the core group).

    The one reading of an apiVersion: every read, write, URL and RBAC rule goes through
    it, so no two places can disagree on a kind's group. A group is a DNS-1123 subdomain
    and a version a DNS-1035 label of at most 63 characters, as the API server requires of
    the groups and versions it serves; anything else (``../api/v1``, ``apps/v1/x``, ``V1``,
    an empty string) raises ValueError saying why, so it never reaches a request path,
    where ``/apis/../api/v1`` would become the core group's."""
    if not isinstance(api_version, str):
        raise ValueError(f"apiVersion must be a string, got {type(api_version).__name__}")
    if len(api_version) > _LONGEST:  # (not kept in the cache: a CR may send megabytes)
        raise ValueError(f"invalid apiVersion {api_version[:60]!r}...: too long")
    parsed = _parse_api_version(api_version)
    if isinstance(parsed, str):
        raise ValueError(parsed)
    return parsed


def api_version_problem(api_version: object) -> str | None:
    """Why ``api_version`` is not an apiVersion (see :func:`parse_api_version`), or None."""
    try:
        parse_api_version(api_version)
    except ValueError as err:
        return str(err)
    return None


@functools.lru_cache(maxsize=4096)
def _parse_api_version(text: str) -> tuple[str, str] | str:
    """``(group, version)``, or why ``text`` is not an apiVersion (cached: every object
    read and written asks, with a handful of distinct values)."""
    group, slash, version = text.rpartition("/")
    why = None
    if not _VERSION.fullmatch(version) or len(version) > 63:
        why = f"{version!r} is not a version (a DNS-1035 label: v1, v1beta2, v2alpha1)"
    elif slash and not is_dns_subdomain(group):
        why = f"{group!r} is not an API group (a DNS subdomain: lower case, digits, '-', '.')"
    if why is not None:
        return f"invalid apiVersion {text!r}: {why}; write `v1` or `<group>/<version>`"
    return group, version


def group_of(api_version: str) -> str:
    """``apps/v1`` -> ``apps``; ``v1`` -> ``""`` (the core group). Raises ValueError for
    what is not an apiVersion (:func:`parse_api_version`)."""
    return parse_api_version(api_version)[0]


def ref_of(obj: dict[str, Any]) -> str:
    """``Kind ns/name`` (or ``Kind name``) for messages."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return (
        f"{obj.get('kind')} {ns}/{meta.get('name')}"
        if ns
        else f"{obj.get('kind')} {meta.get('name')}"
    )
