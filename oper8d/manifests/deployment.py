"""The operator's own workload: its Namespace, ServiceAccount and Deployment.

The Deployment runs ``oper8d run /bundle`` (the image's entrypoint is ``oper8d``, see the
Dockerfile) with leader election, so ``replicas: 2`` gives a warm standby: both replicas
fill their informer caches and pass ``/readyz``, only the Lease holder reconciles; or with
sharding, where every replica reconciles its share of the CRs (``runtime.sharding``). The
Pod meets the ``restricted`` Pod Security profile: non-root (65532, the image's user),
read-only root filesystem (``/tmp`` is an emptyDir), no privilege escalation, every
capability dropped, the runtime's default seccomp profile.

The bundle is mounted at ``/bundle`` from a ConfigMap (``manifests.bundle_configmap``;
its digest is a pod-template annotation, so applying a changed bundle rolls the Pods), or
baked into the image (no volume). Used by ``manifests.package``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oper8d.manifests.bundle_configmap import BundleConfigMap

BUNDLE_MOUNT = "/bundle"
METRICS_PORT = 8080
PROBES_PORT = 8081
#: the image's user (Dockerfile: USER 65532:65532), the conventional "nonroot"
NONROOT_ID = 65532
CONTAINER_NAME = "operator"
BUNDLE_DIGEST_ANNOTATION = "oper8d.io/bundle-sha256"
#: graceful stop: in-flight reconciles get 30 s (docs/operations.md), then the Lease is
#: released; the kubelet's SIGKILL must come after that
TERMINATION_GRACE_SECONDS = 45


def namespace_object(name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The operator's own namespace; Pod Security admission holds every Pod in it to the
    ``restricted`` level, which the operator's Pod meets."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {**labels, "pod-security.kubernetes.io/enforce": "restricted"},
        },
    }


def service_account(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
    }


def container_args(watch_namespaces: Sequence[str], sharding: bool = False) -> list[str]:
    """``oper8d`` arguments: run the mounted bundle, watch the namespaces, elect a leader
    (or, ``sharding``, share the CRs) with the Lease(s) in the Pod's own namespace."""
    args = ["run", BUNDLE_MOUNT]
    for ns in watch_namespaces:
        args += ["--namespace", ns]
    mode = "--sharding" if sharding else "--leader-elect"
    return [*args, mode, "--leader-election-namespace", "$(POD_NAMESPACE)"]


def operator_deployment(
    *,
    name: str,
    namespace: str,
    image: str,
    service_account_name: str,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    watch_namespaces: Sequence[str] = (),
    bundle: BundleConfigMap | None = None,
    replicas: int = 2,
    sharding: bool = False,
) -> dict[str, Any]:
    """The Deployment of the operator. ``bundle`` None: the image carries it at /bundle.
    ``sharding``: the replicas share the CRs (``oper8d run --sharding``) instead of
    electing one leader.

    ``selector`` labels must be among ``labels`` and stay fixed across versions (a
    Deployment's selector cannot change).
    """
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": image,
        "args": container_args(watch_namespaces, sharding),
        "env": [
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            }
        ],
        "ports": [
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "probes", "containerPort": PROBES_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": _probe("/healthz", period=20, initial_delay=15),
        "readinessProbe": _probe("/readyz", period=10, initial_delay=5),
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_ID,
            "runAsGroup": NONROOT_ID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    annotations = {"kubectl.kubernetes.io/default-container": CONTAINER_NAME}
    if bundle is not None:
        container["volumeMounts"].insert(
            0, {"name": "bundle", "mountPath": BUNDLE_MOUNT, "readOnly": True}
        )
        volumes.insert(
            0,
            {
                "name": "bundle",
                "configMap": {
                    "name": bundle.configmap["metadata"]["name"],
                    "items": [dict(item) for item in bundle.items],
                },
            },
        )
        annotations[BUNDLE_DIGEST_ANNOTATION] = bundle.digest
    pod_spec: dict[str, Any] = {
        "serviceAccountName": service_account_name,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_ID,
            "runAsGroup": NONROOT_ID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        # the standby is only useful on another node
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": dict(selector)},
                        },
                    }
                ]
            }
        },
        "containers": [container],
        "volumes": volumes,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector)},
            "template": {
                "metadata": {"labels": dict(labels), "annotations": annotations},
                "spec": pod_spec,
            },
        },
    }


def _probe(path: str, *, period: int, initial_delay: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "probes"},
        "initialDelaySeconds": initial_delay,
        "periodSeconds": period,
        "failureThreshold": 3,
    }
