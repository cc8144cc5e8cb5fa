"""The operator end to end: the Manager (informers, queue, workers, TemporaryPatch
controller, events) running the example bundles against the real control plane."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from harness import (
    EXAMPLES,
    condition,
    copy_example,
    is_ready,
    new_namespace,
    running_operator,
    wait_for,
)
from kubernetes import client

from oper8d.cluster.kube import KubeCluster

pytestmark = pytest.mark.integration

WEBAPP = ("demo.oper8d.io/v1alpha1", "WebApp")
NOTES = ("demo.oper8d.io/v1alpha1", "NotesApp")


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s, field_manager="test")


@pytest.fixture
def ns(cluster: KubeCluster) -> Iterator[str]:
    name = new_namespace(cluster)
    yield name
    cluster.delete("v1", "Namespace", name)


def sample(name: str, file: str, namespace: str, **spec: object) -> dict:
    cr = yaml.safe_load((EXAMPLES / name / "samples" / file).read_text())
    cr["metadata"]["namespace"] = namespace
    cr["spec"].update(spec)
    return cr


def get(cluster: KubeCluster, api_version: str, kind: str, name: str, ns: str):
    return cluster.get(api_version, kind, name, ns)


def test_a_webapp_cr_becomes_ready_through_the_real_controllers(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    with running_operator(k8s, EXAMPLES / "webapp", ns) as manager:
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        cr = wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        deployment = get(cluster, "apps/v1", "Deployment", "hello-app", ns)
        assert deployment["status"]["availableReplicas"] == 3
        owners = deployment["metadata"]["ownerReferences"]
        assert owners[0]["uid"] == cr["metadata"]["uid"] and owners[0]["controller"] is True
        assert condition(cr, "Updating")["status"] == "False"
        assert cr["status"]["versions"]["reconciled"] == "1.0.0"
        assert cr["status"]["observedGeneration"] == cr["metadata"]["generation"]
        assert get(cluster, "networking.k8s.io/v1", "Ingress", "hello-web", ns) is not None
        ok, why = manager.ready()
        assert ok, why


def test_the_stateful_example_becomes_ready_with_its_database_claim_bound(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    """PostgreSQL mounts its claim template; the test environment's default StorageClass
    provisions the claim (testenv/README.md), so the StatefulSet, and then the migration
    Job, the app and the CR, become ready."""
    with running_operator(k8s, EXAMPLES / "stateful", ns):
        cluster.apply(sample("stateful", "notes.yaml", ns), field_manager="test")
        cr = wait_for("NotesApp Ready", lambda: _ready(cluster, *NOTES, "notes", ns), 150)
        statefulset = get(cluster, "apps/v1", "StatefulSet", "notes-db", ns)
        assert statefulset["status"]["readyReplicas"] == 1
        (mount,) = statefulset["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        assert mount == {"name": "data", "mountPath": "/var/lib/postgresql/data"}
        claim = get(cluster, "v1", "PersistentVolumeClaim", "data-notes-db-0", ns)
        assert claim["status"]["phase"] == "Bound"
        assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
        volume = cluster.get("v1", "PersistentVolume", claim["spec"]["volumeName"])
        assert volume["status"]["phase"] == "Bound"
        assert cr["status"]["databaseReady"] is True
        assert condition(cr, "Updating")["status"] == "False"


def test_a_spec_change_rewrites_only_the_objects_it_changes(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    with running_operator(k8s, EXAMPLES / "webapp", ns) as manager:
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        before = manager.api.requests
        cluster.apply(sample("webapp", "webapp.yaml", ns, message="changed"), field_manager="test")
        wait_for(
            "the ConfigMap to change",
            lambda: (
                get(cluster, "v1", "ConfigMap", "hello-config", ns)["data"]["MESSAGE"] == "changed"
            ),
        )
        wait_for("WebApp Ready again", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        applied = manager.api.requests["apply"] - before["apply"]
        # the ConfigMap and the Deployment (its pod template carries the config hash)
        assert applied == 2


def test_disabling_a_component_deletes_its_objects(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    with running_operator(k8s, EXAMPLES / "webapp", ns):
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        assert get(cluster, "networking.k8s.io/v1", "Ingress", "hello-web", ns) is not None
        cr = sample("webapp", "webapp.yaml", ns, ingress={"enabled": False})
        cluster.apply(cr, field_manager="test")
        wait_for(
            "the Ingress to be deleted",
            lambda: get(cluster, "networking.k8s.io/v1", "Ingress", "hello-web", ns) is None,
        )


def test_a_component_removed_from_the_bundle_is_pruned(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str, tmp_path: Path
) -> None:
    bundle = copy_example("webapp", tmp_path)
    with running_operator(k8s, bundle, ns, cleanup=False):
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
    hpa = ("autoscaling/v2", "HorizontalPodAutoscaler", "hello-app", ns)
    assert cluster.get(*hpa) is not None
    text = (bundle / "operator.yaml").read_text()
    start = text.index("      - name: autoscaler")
    end = text.index("    status:")
    (bundle / "operator.yaml").write_text(text[:start] + text[end:])
    with running_operator(k8s, bundle, ns):
        wait_for("the HPA to be pruned", lambda: cluster.get(*hpa) is None)


def test_a_paused_cr_is_not_reconciled_until_the_pause_is_removed(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    with running_operator(k8s, EXAMPLES / "webapp", ns):
        cr = sample("webapp", "webapp.yaml", ns)
        cluster.apply(cr, field_manager="test")
        wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        paused = sample("webapp", "webapp.yaml", ns, message="while paused")
        paused["metadata"]["annotations"] = {"oper8.org/pause-execution": "True"}
        cluster.apply(paused, field_manager="test")
        # give the operator every chance to react (a reconcile takes milliseconds here)
        time.sleep(3)
        data = get(cluster, "v1", "ConfigMap", "hello-config", ns)["data"]
        assert data["MESSAGE"] == "hello from oper8d"
        paused["metadata"]["annotations"] = {}
        cluster.apply(paused, field_manager="test")
        wait_for(
            "the paused change to be applied",
            lambda: (
                get(cluster, "v1", "ConfigMap", "hello-config", ns)["data"]["MESSAGE"]
                == "while paused"
            ),
        )


def test_deleting_the_cr_finalizes_and_removes_its_children(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    with running_operator(k8s, EXAMPLES / "webapp", ns):
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        cr = wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        assert "finalizers.webapp.demo.oper8d.io" in cr["metadata"]["finalizers"]
        cluster.delete(*WEBAPP, "hello", ns)
        wait_for("the CR to be gone", lambda: get(cluster, *WEBAPP, "hello", ns) is None)
        for kind, name in (("Service", "hello-web"), ("ConfigMap", "hello-config")):
            obj = get(cluster, "v1", kind, name, ns)
            assert obj is None or obj["metadata"].get("deletionTimestamp"), kind


def test_a_temporary_patch_is_applied_and_removed_again(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    with running_operator(k8s, EXAMPLES / "webapp", ns):
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        patch = {
            "apiVersion": "oper8.org/v1",
            "kind": "TemporaryPatch",
            "metadata": {"name": "debug", "namespace": ns},
            "spec": {
                "apiVersion": WEBAPP[0],
                "kind": WEBAPP[1],
                "name": "hello",
                "patchType": "patchStrategicMerge",
                "patch": {"app": {"deployment": {"metadata": {"labels": {"debug": "on"}}}}},
            },
        }
        cluster.apply(patch, field_manager="test")

        def labels():
            return get(cluster, "apps/v1", "Deployment", "hello-app", ns)["metadata"]["labels"]

        wait_for("the patch on the Deployment", lambda: labels().get("debug") == "on")
        cr = get(cluster, *WEBAPP, "hello", ns)
        assert "debug" in json.loads(cr["metadata"]["annotations"]["oper8.org/temporary-patches"])
        cluster.delete("oper8.org/v1", "TemporaryPatch", "debug", ns)
        wait_for("the patch to be removed", lambda: "debug" not in labels())
        wait_for(
            "the TemporaryPatch to be gone",
            lambda: get(cluster, "oper8.org/v1", "TemporaryPatch", "debug", ns) is None,
        )


def test_the_apiserver_restarting_does_not_stop_the_operator(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str, envtest
) -> None:
    with running_operator(k8s, EXAMPLES / "webapp", ns):
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))
        envtest.restart_apiserver()
        cluster.apply(
            sample("webapp", "webapp.yaml", ns, message="after restart"), field_manager="test"
        )
        wait_for(
            "the change made after the restart",
            lambda: (
                get(cluster, "v1", "ConfigMap", "hello-config", ns)["data"]["MESSAGE"]
                == "after restart"
            ),
        )
        wait_for("WebApp Ready", lambda: _ready(cluster, *WEBAPP, "hello", ns))


def _ready(cluster: KubeCluster, api_version: str, kind: str, name: str, ns: str):
    cr = cluster.get(api_version, kind, name, ns)
    return cr if is_ready(cr) else None
