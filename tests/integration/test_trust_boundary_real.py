"""On the real apiserver: a CR author injecting YAML documents through a text template of the
stateful example gets a clean error on the CR and the operator applies none of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from test_kube_cluster import crd, install_crd, new_namespace

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.base import Obj
from oper8d.cluster.kube import KubeCluster
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "operators" / "stateful"
API_VERSION = "demo.oper8d.io/v1alpha1"
KIND = "NotesApp"

INJECTED = (
    "1Gi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
    "metadata: {name: oper8d-injected}\n"
    "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"
    "subjects: [{kind: ServiceAccount, name: default, namespace: default}]\n"
    "---\napiVersion: v1\nkind: Secret\nmetadata: {name: oper8d-injected, namespace: kube-system}\n"
    "stringData: {k: v}\n"
)


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s)


@pytest.fixture
def injected_cr(cluster: KubeCluster, k8s: client.ApiClient) -> Iterator[Obj]:
    install_crd(k8s, cluster, crd("demo.oper8d.io", KIND, "notesapps", version="v1alpha1"))
    ns = new_namespace(cluster)
    sample = yaml.safe_load((EXAMPLE / "samples" / "notes.yaml").read_text())
    sample["metadata"]["namespace"] = ns
    sample["spec"].setdefault("database", {})["storage"] = INJECTED
    yield cluster.apply(sample, field_manager="test")
    cluster.delete("v1", "Namespace", ns)


def test_documents_injected_through_a_text_template_are_never_applied(
    cluster: KubeCluster, injected_cr: Obj
) -> None:
    bundle = load_bundle(EXAMPLE)
    (controller,) = bundle.controllers
    reconciler = Reconciler(bundle, controller, cluster, ReconcilerOptions(field_manager="oper8d"))
    ns = injected_cr["metadata"]["namespace"]
    for _ in range(3):
        reconciler.reconcile(ns, "notes")

    rbac = "rbac.authorization.k8s.io/v1"
    assert cluster.get(rbac, "ClusterRoleBinding", "oper8d-injected") is None
    assert cluster.get("v1", "Secret", "oper8d-injected", "kube-system") is None
    # the value landed as the storage quantity, which Kubernetes' schema refuses before any
    # request: nothing of the database component is applied
    assert cluster.list("apps/v1", "StatefulSet", ns) == []
    assert [s["metadata"]["name"] for s in cluster.list("v1", "Service", ns)] == []
    cr = cluster.get(API_VERSION, KIND, "notes", ns)
    assert cr is not None
    conditions = {c["type"]: c for c in cr["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert (
        "resource 'database.manifests-statefulset' renders StatefulSet notes-db, which the API"
        in conditions["Updating"]["message"]
    )
    assert cr["status"]["componentStatus"]["failedComponents"] == ["database"]
