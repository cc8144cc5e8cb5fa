"""The stateful example operator (examples/operators/stateful) reconciled against a real
control plane through KubeCluster: the real StatefulSet, Job and Deployment controllers
and kwok's pod stages make the workloads ready, the CR ends Ready, and a reconcile of the
stable CR writes nothing, by KubeCluster's count and by the apiserver's own metrics.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from test_kube_cluster import crd, install_crd, new_namespace, request_totals

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.base import Obj
from oper8d.cluster.kube import KubeCluster
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions
from oper8d.envtest import Environment

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "operators" / "stateful"
API_VERSION = "demo.oper8d.io/v1alpha1"
KIND = "NotesApp"
DEADLINE = 180.0

#: what the operator writes; controllers' own status writes to workloads are not ours
MANAGED_RESOURCES = {
    "configmaps",
    "secrets",
    "services",
    "statefulsets",
    "jobs",
    "deployments",
    "notesapps",
}
CONTROLLER_STATUS = {"statefulsets", "jobs", "deployments"}
WRITE_VERBS = {"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s)


@pytest.fixture
def reconciler(k8s: client.ApiClient, cluster: KubeCluster) -> Reconciler:
    install_crd(k8s, cluster, crd("demo.oper8d.io", KIND, "notesapps", version="v1alpha1"))
    bundle = load_bundle(EXAMPLE)
    (controller,) = bundle.controllers
    return Reconciler(bundle, controller, cluster, ReconcilerOptions(field_manager="oper8d"))


@pytest.fixture
def notes(cluster: KubeCluster, reconciler: Reconciler) -> Iterator[Obj]:
    """The sample CR in a fresh namespace; finalized and removed afterwards."""
    ns = new_namespace(cluster)
    sample = yaml.safe_load((EXAMPLE / "samples" / "notes.yaml").read_text())
    sample["metadata"]["namespace"] = ns
    yield cluster.apply(sample, field_manager="test")
    # the CR carries the operator's finalizer: let the reconciler remove it
    cluster.delete(API_VERSION, KIND, "notes", ns)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if reconciler.reconcile(ns, "notes").requeue_after is None:
            break
        time.sleep(1)
    cluster.delete("v1", "Namespace", ns)


def reconcile_until_stable(reconciler: Reconciler, ns: str) -> ReconcileResult:
    """Reconcile until no requeue is asked for; between rounds wait at most one second
    (never longer than the requeue interval) for the controllers to make progress."""
    deadline = time.monotonic() + DEADLINE
    history: list[str] = []
    while True:
        result = reconciler.reconcile(ns, "notes")
        if result.requeue_after is None:
            return result
        history.append(f"requeue {result.requeue_after}s, error: {result.error}")
        if time.monotonic() > deadline:
            raise AssertionError(
                f"CR not stable after {DEADLINE}s; last rounds:\n" + "\n".join(history[-5:])
            )
        time.sleep(min(result.requeue_after, 1.0))


def condition(obj: Obj, kind: str) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), {})


def wait_until_no_namespace_terminates(cluster: KubeCluster, timeout: float = 90.0) -> None:
    """Poll until no Namespace is Terminating: the namespace controller's deletes count
    in the same (namespace-less) metric as the operator's writes."""
    deadline = time.monotonic() + timeout
    while True:
        terminating = [
            n["metadata"]["name"]
            for n in cluster.list("v1", "Namespace")
            if (n.get("status") or {}).get("phase") == "Terminating"
        ]
        if not terminating:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"namespaces still terminating after {timeout}s: {terminating}")
        time.sleep(0.5)


def operator_writes(totals: Counter[tuple[str, str, str]]) -> Counter[tuple[str, str, str]]:
    """Write requests to the kinds the operator manages, without the workload
    controllers' status writes."""
    return Counter(
        {
            key: count
            for key, count in totals.items()
            if key[0] in WRITE_VERBS
            and key[1] in MANAGED_RESOURCES
            and not (key[1] in CONTROLLER_STATUS and key[2] == "status")
        }
    )


def test_stateful_example_becomes_ready_and_a_stable_reconcile_writes_nothing(
    envtest: Environment, cluster: KubeCluster, reconciler: Reconciler, notes: Obj
) -> None:
    ns = notes["metadata"]["namespace"]
    reconcile_until_stable(reconciler, ns)

    cr = cluster.get(API_VERSION, KIND, "notes", ns)
    assert cr is not None
    uid = cr["metadata"]["uid"]
    owned = {
        kind: cluster.list(api_version, kind, ns)
        for api_version, kind in (
            ("v1", "Secret"),
            ("v1", "Service"),
            ("apps/v1", "StatefulSet"),
            ("batch/v1", "Job"),
            ("apps/v1", "Deployment"),
        )
    }
    for kind, objects in owned.items():
        mine = [
            o
            for o in objects
            if any(r["uid"] == uid for r in o["metadata"].get("ownerReferences", []))
        ]
        assert mine, f"no {kind} owned by the CR in {ns}"

    (statefulset,) = owned["StatefulSet"]
    assert statefulset["status"].get("readyReplicas") == 1
    (deployment,) = owned["Deployment"]
    assert deployment["status"].get("readyReplicas") == 2
    (job,) = owned["Job"]
    assert job["status"].get("succeeded", 0) >= 1
    assert condition(job, "Complete").get("status") == "True"

    assert condition(cr, "Ready")["status"] == "True"
    assert condition(cr, "Updating")["status"] == "False"
    assert cr["status"]["versions"]["reconciled"] == "2.1.0"
    assert cr["status"]["observedGeneration"] == cr["metadata"]["generation"]

    # the stable CR: one more reconcile sends no write, as counted by us and the server;
    # the metric is cluster-wide, so first let earlier tests' namespaces finish deleting
    wait_until_no_namespace_terminates(cluster)
    writes_before = cluster.writes
    server_before = operator_writes(request_totals(envtest))
    # the metric does see the operator's writes (the rollout applied the StatefulSet)
    assert server_before[("APPLY", "statefulsets", "")] >= 1, server_before
    result = reconciler.reconcile(ns, "notes")
    server_after = operator_writes(request_totals(envtest))

    assert result.requeue_after is None and result.error is None
    assert cluster.writes == writes_before, cluster.requests
    assert server_after == server_before, server_after - server_before
