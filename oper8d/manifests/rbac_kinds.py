"""Where a kind lives for RBAC: its API group, its resource (plural) name and its scope.

RBAC rules name resources by plural (``deployments``), not by kind; the manifests the
operator is deployed with are generated without a cluster to ask (no discovery), so
built-in kinds come from a table, a bundle's own CR kinds from the bundle (their CRD's
plural), and anything else is guessed as the lower-case kind plus ``s`` and flagged so
the output can say so. Used by ``manifests.rbac``.
"""

from __future__ import annotations

from dataclasses import dataclass

from oper8d.bundle.model import Bundle
from oper8d.kinds import CLUSTER_SCOPED, group_of
from oper8d.manifests.crd import (
    TEMPORARY_PATCH_GROUP,
    TEMPORARY_PATCH_KIND,
    TEMPORARY_PATCH_PLURAL,
)

#: (group, kind) -> plural of the built-in kinds an operator plausibly deploys or reads
BUILTIN_PLURALS: dict[tuple[str, str], str] = {
    ("", "ConfigMap"): "configmaps",
    ("", "Endpoints"): "endpoints",
    ("", "Event"): "events",
    ("", "LimitRange"): "limitranges",
    ("", "Namespace"): "namespaces",
    ("", "Node"): "nodes",
    ("", "PersistentVolume"): "persistentvolumes",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("", "Pod"): "pods",
    ("", "PodTemplate"): "podtemplates",
    ("", "ReplicationController"): "replicationcontrollers",
    ("", "ResourceQuota"): "resourcequotas",
    ("", "Secret"): "secrets",
    ("", "Service"): "services",
    ("", "ServiceAccount"): "serviceaccounts",
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): (
        "mutatingwebhookconfigurations"
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): "validatingadmissionpolicies",
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (
        "validatingadmissionpolicybindings"
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): (
        "validatingwebhookconfigurations"
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "customresourcedefinitions",
    ("apiregistration.k8s.io", "APIService"): "apiservices",
    ("apps", "ControllerRevision"): "controllerrevisions",
    ("apps", "DaemonSet"): "daemonsets",
    ("apps", "Deployment"): "deployments",
    ("apps", "ReplicaSet"): "replicasets",
    ("apps", "StatefulSet"): "statefulsets",
    ("autoscaling", "HorizontalPodAutoscaler"): "horizontalpodautoscalers",
    ("batch", "CronJob"): "cronjobs",
    ("batch", "Job"): "jobs",
    ("certificates.k8s.io", "CertificateSigningRequest"): "certificatesigningrequests",
    ("coordination.k8s.io", "Lease"): "leases",
    ("discovery.k8s.io", "EndpointSlice"): "endpointslices",
    ("events.k8s.io", "Event"): "events",
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): "flowschemas",
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): ("prioritylevelconfigurations"),
    ("networking.k8s.io", "Ingress"): "ingresses",
    ("networking.k8s.io", "IngressClass"): "ingressclasses",
    ("networking.k8s.io", "NetworkPolicy"): "networkpolicies",
    ("node.k8s.io", "RuntimeClass"): "runtimeclasses",
    ("policy", "PodDisruptionBudget"): "poddisruptionbudgets",
    ("rbac.authorization.k8s.io", "ClusterRole"): "clusterroles",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "clusterrolebindings",
    ("rbac.authorization.k8s.io", "Role"): "roles",
    ("rbac.authorization.k8s.io", "RoleBinding"): "rolebindings",
    ("scheduling.k8s.io", "PriorityClass"): "priorityclasses",
    ("storage.k8s.io", "CSIDriver"): "csidrivers",
    ("storage.k8s.io", "CSINode"): "csinodes",
    ("storage.k8s.io", "StorageClass"): "storageclasses",
    ("storage.k8s.io", "VolumeAttachment"): "volumeattachments",
}

#: groups whose objects grant permissions: creating them needs more than RBAC on them
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True, order=True)
class KindResource:
    """The RBAC view of one kind: ``apiGroups: [group]``, ``resources: [plural]``."""

    group: str
    plural: str
    kind: str
    namespaced: bool
    #: the plural is a guess (lower-case kind + "s"): not built in, not in the bundle
    guessed: bool = False


def kind_resource(bundle: Bundle, api_version: str, kind: str) -> KindResource:
    """Resolve ``(apiVersion, kind)``: the bundle's CR kinds, TemporaryPatch, built-ins,
    else a guess (``guessed=True``; namespaced unless a known cluster-scoped kind)."""
    group = group_of(api_version)
    for controller in bundle.controllers:
        cr = controller.resource
        if (cr.group, cr.kind) == (group, kind):
            return KindResource(group, cr.plural, kind, cr.namespaced)
    if (group, kind) == (TEMPORARY_PATCH_GROUP, TEMPORARY_PATCH_KIND):
        return KindResource(group, TEMPORARY_PATCH_PLURAL, kind, True)
    namespaced = (group, kind) not in CLUSTER_SCOPED
    plural = BUILTIN_PLURALS.get((group, kind))
    if plural is not None:
        return KindResource(group, plural, kind, namespaced)
    return KindResource(group, kind.lower() + "s", kind, namespaced, guessed=True)
