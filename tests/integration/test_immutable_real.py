"""onImmutableChange against a real kube-apiserver and its controllers: ``fail`` leaves a
Deployment whose selector changed as it was and says why on the CR; ``recreate`` deletes
and creates it again; a StatefulSet whose claim template changed is recreated with its
pods and claims kept (propagation Orphan, the garbage collector, adoption by the new one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from test_kube_cluster import crd, install_crd, new_namespace

from oper8d.bundle.model import Bundle
from oper8d.cluster.base import Obj
from oper8d.cluster.kube import KubeCluster
from oper8d.diff import diff_cr
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from tests.unit.bundles import API_VERSION, KIND, build, condition
from tests.unit.immutable_corpus import BUNDLE, STATEFUL

pytestmark = pytest.mark.integration

DEADLINE = 120.0


@pytest.fixture
def cluster(k8s: client.ApiClient) -> Iterator[KubeCluster]:
    kube = KubeCluster(k8s)
    install_crd(k8s, kube, crd("demo.oper8d.io", KIND, "demos", version="v1alpha1"))
    yield kube


@pytest.fixture
def namespace(cluster: KubeCluster) -> Iterator[str]:
    ns = new_namespace(cluster)
    yield ns
    cluster.delete("v1", "Namespace", ns)


def _reconciler(bundle: Bundle, cluster: KubeCluster) -> Reconciler:
    (controller,) = bundle.controllers
    return Reconciler(bundle, controller, cluster, ReconcilerOptions(field_manager="oper8d"))


def _create(cluster: KubeCluster, ns: str, **spec: Any) -> None:
    cr = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "demo", "namespace": ns}}
    cluster.apply({**cr, "spec": spec}, field_manager="test")


def _set_spec(cluster: KubeCluster, ns: str, **spec: Any) -> None:
    live = cluster.get(API_VERSION, KIND, "demo", ns)
    assert live is not None
    cluster.update({**live, "spec": {**live["spec"], **spec}})


def _until(reconciler: Reconciler, ns: str, done: Callable[[], bool]) -> None:
    """Reconcile the CR until ``done()`` (the controllers act in between)."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        reconciler.reconcile(ns, "demo")
        if done():
            return
        time.sleep(0.5)
    raise AssertionError("not done in time")


def _uid(obj: Obj | None) -> str:
    assert obj is not None
    return str(obj["metadata"]["uid"])


def test_a_changed_deployment_selector_fails_then_is_recreated(
    tmp_path: Path, cluster: KubeCluster, namespace: str
) -> None:
    def deployment() -> Obj | None:
        return cluster.get("apps/v1", "Deployment", "demo-web", namespace)

    fail_bundle = build(tmp_path / "fail", BUNDLE.format(policy=""))
    failing = _reconciler(fail_bundle, cluster)
    _create(cluster, namespace, track="a")
    _until(failing, namespace, lambda: deployment() is not None)
    uid = _uid(deployment())
    _set_spec(cluster, namespace, track="b")

    def stalled() -> bool:
        cr = cluster.get(API_VERSION, KIND, "demo", namespace) or {}
        return "cannot change" in (condition(cr, "Ready") or {}).get("message", "")

    _until(failing, namespace, stalled)
    cr = cluster.get(API_VERSION, KIND, "demo", namespace)
    assert cr is not None
    message = condition(cr, "Ready")["message"]
    assert f"Deployment {namespace}/demo-web: spec.selector cannot change" in message
    assert "onImmutableChange: recreate` on resource 'app.deployment'" in message
    assert condition(cr, "Stalled")["status"] == "True"
    assert _uid(deployment()) == uid  # nothing written
    assert (deployment() or {})["spec"]["selector"]["matchLabels"]["track"] == "a"

    # oper8d diff says so before anything is applied (the server's dry run refuses it)
    wanted = cluster.get(API_VERSION, KIND, "demo", namespace)
    assert wanted is not None
    report = diff_cr(fail_bundle, wanted, cluster)
    (error,) = report.errors
    assert error.startswith(f"Deployment {namespace}/demo-web: spec.selector cannot change")
    assert "`onImmutableChange: recreate` on resource 'app.deployment'" in error

    policy = "onImmutableChange: recreate"
    recreate_bundle = build(tmp_path / "recreate", BUNDLE.format(policy=policy))
    report = diff_cr(recreate_bundle, wanted, cluster)
    assert report.errors == ()
    assert any("will delete it and create it again" in w for w in report.warnings)
    assert "+      track: b" in report.text
    recreating = _reconciler(recreate_bundle, cluster)

    def recreated() -> bool:
        live = deployment()
        return live is not None and live["spec"]["selector"]["matchLabels"]["track"] == "b"

    _until(recreating, namespace, recreated)
    assert _uid(deployment()) != uid


def test_a_statefulset_is_recreated_with_its_pods_and_claims_kept(
    tmp_path: Path, cluster: KubeCluster, namespace: str
) -> None:
    def get(api_version: str, kind: str, name: str) -> Obj | None:
        return cluster.get(api_version, kind, name, namespace)

    reconciler = _reconciler(build(tmp_path, STATEFUL), cluster)
    _create(cluster, namespace, size="1Gi")
    _until(
        reconciler,
        namespace,
        lambda: (
            get("v1", "Pod", "demo-db-0") is not None
            and get("v1", "PersistentVolumeClaim", "data-demo-db-0") is not None
        ),
    )
    old, pod = get("apps/v1", "StatefulSet", "demo-db"), get("v1", "Pod", "demo-db-0")
    claim = get("v1", "PersistentVolumeClaim", "data-demo-db-0")
    _set_spec(cluster, namespace, size="2Gi")

    def recreated() -> bool:
        live = get("apps/v1", "StatefulSet", "demo-db")
        return live is not None and _uid(live) != _uid(old)

    _until(reconciler, namespace, recreated)
    new = get("apps/v1", "StatefulSet", "demo-db")
    assert new is not None
    template = new["spec"]["volumeClaimTemplates"][0]
    assert template["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert _uid(get("v1", "PersistentVolumeClaim", "data-demo-db-0")) == _uid(claim)

    def adopted() -> bool:
        live = get("v1", "Pod", "demo-db-0")
        refs = (live or {}).get("metadata", {}).get("ownerReferences") or []
        return any(r.get("uid") == _uid(new) for r in refs)

    _until(reconciler, namespace, adopted)
    assert _uid(get("v1", "Pod", "demo-db-0")) == _uid(pod)
