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
    _delete_namespace(cluster, ns)


def _delete_namespace(cluster: KubeCluster, ns: str) -> None:
    """Delete ``ns``; its CRs lose the operator's finalizer first (no operator runs after
    the test to remove it, and the namespace would stay Terminating)."""
    for cr in cluster.list(API_VERSION, KIND, ns):
        if cr["metadata"].get("finalizers"):
            cr["metadata"]["finalizers"] = []
            cluster.update(cr, field_manager="test")
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


@pytest.fixture
def notes_namespace(cluster: KubeCluster, k8s: client.ApiClient) -> Iterator[str]:
    install_crd(k8s, cluster, crd("demo.oper8d.io", KIND, "notesapps", version="v1alpha1"))
    ns = new_namespace(cluster)
    yield ns
    _delete_namespace(cluster, ns)


def _notes(ns: str, name: str, **annotations: str) -> Obj:
    sample = yaml.safe_load((EXAMPLE / "samples" / "notes.yaml").read_text())
    sample["metadata"].update(name=name, namespace=ns, annotations=annotations)
    return sample


def test_a_cr_reads_nothing_outside_its_namespace_and_takes_over_nothing(
    cluster: KubeCluster, notes_namespace: str
) -> None:
    """The outside tester's escapes, on the real apiserver: a config-defaults annotation
    that is another path, and a CR named so that it renders an administrator's Secret."""
    ns = notes_namespace
    admin = cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "payments-db-credentials", "namespace": ns},
            "stringData": {"password": "the admin's"},
        },
        field_manager="admin",
    )
    bundle = load_bundle(EXAMPLE)
    (controller,) = bundle.controllers
    reconciler = Reconciler(bundle, controller, cluster, ReconcilerOptions(field_manager="oper8d"))
    cluster.apply(
        _notes(ns, "reader", **{"oper8.org/config-defaults": "../../kube-system/configmaps/x"}),
        field_manager="test",
    )
    cluster.apply(_notes(ns, "payments"), field_manager="test")
    for _ in range(3):
        reconciler.reconcile(ns, "reader")
        reconciler.reconcile(ns, "payments")
    reader = cluster.get(API_VERSION, KIND, "reader", ns)
    assert reader is not None
    ready = {c["type"]: c for c in reader["status"]["conditions"]}["Ready"]
    assert "must name a ConfigMap in the CR's namespace" in ready["message"]
    payments = cluster.get(API_VERSION, KIND, "payments", ns)
    assert payments is not None
    ready = {c["type"]: c for c in payments["status"]["conditions"]}["Ready"]
    assert "Secret " + ns + "/payments-db-credentials already exists" in ready["message"]
    live = cluster.get("v1", "Secret", "payments-db-credentials", ns)
    assert live is not None
    assert live["data"] == admin["data"]
    assert not live["metadata"].get("ownerReferences")
    assert live["metadata"]["resourceVersion"] == admin["metadata"]["resourceVersion"]
