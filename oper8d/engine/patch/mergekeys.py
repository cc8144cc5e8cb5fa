"""Which lists of built-in Kubernetes kinds a strategic merge patch merges, and by which key.

The API server reads this from the Go struct tags of the built-in types
(``patchStrategy:"merge" patchMergeKey:"name"``). oper8d carries no OpenAPI model:
the lists are kept as data here and resolved by their path inside the object
(``spec.template.spec.containers[].env``). ``patch.strategic`` asks
``list_rules(kind, api_version)`` once per patch and looks lists up by path. For every
kind below the rules equal the struct tags of Kubernetes 1.34 and 1.36 (an integration
test, test_smp_apimachinery.py, compares them with the test environment's 1.36),
including the one map a patch replaces whole (a PodDisruptionBudget's ``spec.selector``).

Every list not found here is replaced by a patch, and so is every list of a kind not
found here: custom resources have no merge keys (the API server refuses strategic
merge patches for them, and a JSON merge patch replaces lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

#: A list of primitives merged as an ordered set (``patchStrategy:"merge"`` without a key):
#: the patch's values are added after the original's, each value once.
SET: Final = "<set>"

#: A map a patch replaces whole (``patchStrategy:"replace"``) instead of merging into it.
REPLACE: Final = "<replace>"

#: Lists of every ObjectMeta: the object's own ``metadata``, a pod template's, and those of
#: the claim templates below.
OBJECT_META_LISTS: Final[Mapping[str, str]] = {
    "ownerReferences": "uid",
    "finalizers": SET,
}

#: Lists of a Container (also of init and ephemeral containers).
CONTAINER_LISTS: Final[Mapping[str, str]] = {
    "ports": "containerPort",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
}

#: Lists of a PodSpec. ``tolerations``, ``readinessGates`` and ``envFrom`` have no
#: merge key in Kubernetes either: a patch replaces them.
POD_SPEC_LISTS: Final[Mapping[str, str]] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
}

#: The PodSpec lists whose items are Containers.
CONTAINER_FIELDS: Final = ("containers", "initContainers", "ephemeralContainers")

#: Where a PodSpec's ephemeral volumes keep the ObjectMeta of their claim template.
EPHEMERAL_CLAIM_META: Final = "volumes[].ephemeral.volumeClaimTemplate.metadata"

#: Lists of a Pod's status (which a patch rarely sets; kept so that the rules are complete).
_CONTAINER_STATUS_LISTS: Final = {"volumeMounts": "mountPath", "allocatedResourcesStatus": "name"}
POD_STATUS_LISTS: Final[Mapping[str, str]] = {
    "conditions": "type",
    "podIPs": "ip",
    "hostIPs": "ip",
    "resourceClaimStatuses": "name",
    **{
        f"{statuses}[].{field}": key
        for statuses in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
        for field, key in _CONTAINER_STATUS_LISTS.items()
    },
}

#: Where a kind keeps its PodTemplateSpec (``metadata`` + ``spec``); ``""``: the Pod itself.
POD_TEMPLATE_AT: Final[Mapping[str, str]] = {
    "Pod": "",
    "PodTemplate": "template",
    "ReplicationController": "spec.template",
    "ReplicaSet": "spec.template",
    "Deployment": "spec.template",
    "StatefulSet": "spec.template",
    "DaemonSet": "spec.template",
    "Job": "spec.template",
    "CronJob": "spec.jobTemplate.spec.template",
}

_CONDITIONS: Final = {"status.conditions": "type"}

#: Other lists with a merge key, by kind, at their path in the object.
#: (EndpointSubset ``addresses`` has no merge key in Kubernetes: it is replaced.)
KIND_LISTS: Final[Mapping[str, Mapping[str, str]]] = {
    "Pod": {f"status.{field}": key for field, key in POD_STATUS_LISTS.items()},
    "Node": {**_CONDITIONS, "status.addresses": "type", "spec.podCIDRs": SET},
    "Namespace": _CONDITIONS,
    "PersistentVolumeClaim": _CONDITIONS,
    "Service": {"spec.ports": "port", **_CONDITIONS},
    "ServiceAccount": {"secrets": "name"},
    "ReplicationController": _CONDITIONS,
    "ReplicaSet": _CONDITIONS,
    "Deployment": _CONDITIONS,
    "StatefulSet": {
        **_CONDITIONS,
        "spec.volumeClaimTemplates[].status.conditions": "type",
        **{f"spec.volumeClaimTemplates[].metadata.{f}": k for f, k in OBJECT_META_LISTS.items()},
    },
    "DaemonSet": _CONDITIONS,
    "Job": _CONDITIONS,
    "HorizontalPodAutoscaler": _CONDITIONS,
    "PodDisruptionBudget": {**_CONDITIONS, "spec.selector": REPLACE},
    "CronJob": {f"spec.jobTemplate.metadata.{f}": k for f, k in OBJECT_META_LISTS.items()},
}

#: The API group of each built-in kind we know. With an apiVersion of another group
#: the kind is a custom resource of the same name, and its lists are replaced.
KIND_GROUPS: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        (
            "Pod",
            "PodTemplate",
            "ReplicationController",
            "Service",
            "ServiceAccount",
            "Endpoints",
            "Node",
            "Namespace",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "ConfigMap",
            "Secret",
            "LimitRange",
            "ResourceQuota",
        ),
        "",
    ),
    **dict.fromkeys(("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"), "apps"),
    "Job": "batch",
    "CronJob": "batch",
    "HorizontalPodAutoscaler": "autoscaling",
    "PodDisruptionBudget": "policy",
    "Ingress": "networking.k8s.io",
    "NetworkPolicy": "networking.k8s.io",
    **dict.fromkeys(
        ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"), "rbac.authorization.k8s.io"
    ),
}

#: A list's place in an object: map keys, with ``ITEM`` standing for "any item of a list".
Path = tuple[str | None, ...]
ITEM: Final = None


def parse_path(text: str) -> Path:
    """``"spec.containers[].ports"`` -> ``("spec", "containers", ITEM, "ports")``."""
    parts: list[str | None] = []
    for segment in text.split("."):
        if segment.endswith("[]"):
            parts += [segment[:-2], ITEM]
        else:
            parts.append(segment)
    return tuple(parts)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _rules_of(kind: str) -> dict[Path, str]:
    rules = {_join("metadata", f): key for f, key in OBJECT_META_LISTS.items()}
    template = POD_TEMPLATE_AT.get(kind)
    if template is not None:
        meta, spec = _join(template, "metadata"), _join(template, "spec")
        rules |= {_join(meta, f): key for f, key in OBJECT_META_LISTS.items()}
        rules |= {_join(spec, f): key for f, key in POD_SPEC_LISTS.items()}
        claim = _join(spec, EPHEMERAL_CLAIM_META)
        rules |= {_join(claim, f): key for f, key in OBJECT_META_LISTS.items()}
        for containers in CONTAINER_FIELDS:
            item = _join(spec, containers) + "[]"
            rules |= {_join(item, f): key for f, key in CONTAINER_LISTS.items()}
    rules |= KIND_LISTS.get(kind, {})
    return {parse_path(path): key for path, key in rules.items()}


_NO_RULES: Final[Mapping[Path, str]] = MappingProxyType({})

#: kind -> {path of a list: its merge key, or SET; of a map: REPLACE}; built once from the
#: tables above.
RULES: Final[Mapping[str, Mapping[Path, str]]] = MappingProxyType(
    {kind: MappingProxyType(_rules_of(kind)) for kind in KIND_GROUPS}
)


def list_rules(kind: str | None, api_version: str | None = None) -> Mapping[Path, str]:
    """The merge rules of ``kind``'s lists; empty for unknown kinds (custom resources).

    ``api_version`` tells a built-in kind from a custom resource of the same name;
    when it is None the kind alone decides.
    """
    if kind is None or kind not in RULES:
        return _NO_RULES
    if api_version is not None:
        group = api_version.rpartition("/")[0]
        if group != KIND_GROUPS[kind]:
            return _NO_RULES
    return RULES[kind]
