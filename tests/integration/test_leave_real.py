"""The webapp example against a real control plane: its HorizontalPodAutoscaler owns the
Deployment's ``spec.replicas`` (``leaveToOthers``). Scaled through the scale subresource,
as an autoscaler does, the Deployment keeps its new count over three reconciles, and
those reconciles send no write, by KubeCluster's count and by the apiserver's metrics.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from test_kube_cluster import crd, install_crd, new_namespace, request_totals
from test_reconcile_real import DEADLINE, WRITE_VERBS, wait_until_no_namespace_terminates

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.base import Obj
from oper8d.cluster.kube import KubeCluster
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.envtest import Environment

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "operators" / "webapp"
API_VERSION = "demo.oper8d.io/v1alpha1"
KIND = "WebApp"
NAME = "hello"
#: what the webapp operator writes (the controllers' status writes are theirs, not ours)
MANAGED = {"configmaps", "services", "deployments", "ingresses", "horizontalpodautoscalers"}


def operator_writes(totals: Counter[tuple[str, str, str]]) -> Counter[tuple[str, str, str]]:
    return Counter(
        {
            key: n
            for key, n in totals.items()
            if key[0] in WRITE_VERBS
            and (key[1] == "webapps" or (key[1] in MANAGED and key[2] != "status"))
        }
    )


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s)


@pytest.fixture
def reconciler(k8s: client.ApiClient, cluster: KubeCluster) -> Reconciler:
    install_crd(k8s, cluster, crd("demo.oper8d.io", KIND, "webapps", version="v1alpha1"))
    bundle = load_bundle(EXAMPLE)
    (controller,) = bundle.controllers
    return Reconciler(bundle, controller, cluster, ReconcilerOptions(field_manager="oper8d"))


@pytest.fixture
def webapp(cluster: KubeCluster, reconciler: Reconciler) -> Iterator[Obj]:
    """The sample WebApp (autoscaling on by default) in a fresh namespace."""
    ns = new_namespace(cluster)
    sample = yaml.safe_load((EXAMPLE / "samples" / "webapp.yaml").read_text())
    sample["metadata"]["namespace"] = ns
    yield cluster.apply(sample, field_manager="test")
    cluster.delete(API_VERSION, KIND, NAME, ns)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if reconciler.reconcile(ns, NAME).requeue_after is None:
            break
        time.sleep(1)
    cluster.delete("v1", "Namespace", ns)


def settle(reconciler: Reconciler, ns: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while (result := reconciler.reconcile(ns, NAME)).requeue_after is not None:
        if time.monotonic() > deadline:
            raise AssertionError(f"WebApp not stable after {DEADLINE}s: {result.error}")
        time.sleep(min(result.requeue_after, 1.0))


def wait_for_ready_replicas(cluster: KubeCluster, name: str, ns: str, count: int) -> Obj:
    deadline = time.monotonic() + DEADLINE
    while True:
        live = cluster.get("apps/v1", "Deployment", name, ns)
        assert live is not None
        status = live.get("status") or {}
        if (
            status.get("observedGeneration") == live["metadata"]["generation"]
            and status.get("readyReplicas") == count
            and status.get("updatedReplicas") == count
        ):
            return live
        if time.monotonic() > deadline:
            raise AssertionError(f"Deployment {ns}/{name} never had {count} ready: {status}")
        time.sleep(0.5)


def test_replicas_scaled_by_an_autoscaler_are_kept_and_cost_no_write(
    envtest: Environment, k8s: client.ApiClient, cluster: KubeCluster, reconciler: Reconciler,
    webapp: Obj,
) -> None:  # fmt: skip
    ns = webapp["metadata"]["namespace"]
    settle(reconciler, ns)
    deployment_name = f"{NAME}-app"
    created = cluster.get("apps/v1", "Deployment", deployment_name, ns)
    assert created is not None and created["spec"]["replicas"] == 3  # the CR's count on create
    assert cluster.get("autoscaling/v2", "HorizontalPodAutoscaler", deployment_name, ns)

    # what the HPA controller does: a write to the scale subresource under its own manager
    client.AppsV1Api(k8s).patch_namespaced_deployment_scale(
        deployment_name, ns, {"spec": {"replicas": 4}}, field_manager="autoscaler"
    )
    wait_for_ready_replicas(cluster, deployment_name, ns, 4)
    wait_until_no_namespace_terminates(cluster)
    writes_before = cluster.writes
    server_before = operator_writes(request_totals(envtest))
    for _ in range(3):
        result = reconciler.reconcile(ns, NAME)
        assert result.error is None, result.error
    server_after = operator_writes(request_totals(envtest))
    assert server_before[("APPLY", "deployments", "")] >= 1, server_before  # the metric sees us

    live = cluster.get("apps/v1", "Deployment", deployment_name, ns)
    assert live is not None and live["spec"]["replicas"] == 4
    assert cluster.writes == writes_before, cluster.requests
    assert server_after == server_before, server_after - server_before

    # a change of the operator's own (the image) is applied and still keeps the count
    cr = cluster.get(API_VERSION, KIND, NAME, ns)
    assert cr is not None
    cr["spec"]["image"] = "nginx:1.28"
    cluster.update(cr)
    reconciler.reconcile(ns, NAME)
    live = cluster.get("apps/v1", "Deployment", deployment_name, ns)
    assert live is not None
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert live["spec"]["replicas"] == 4
