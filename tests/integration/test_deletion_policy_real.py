"""deletionPolicy and a teardown held by a foreign finalizer, against a real kube-apiserver
and its garbage collector: the CR's status names what holds it; once released, Orphan
objects are left without oper8d's marks, Retain ones survive the CR and the collector."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_immutable_real import cluster, namespace  # noqa: F401  (the fixtures)

from oper8d.cluster.kube import KubeCluster
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.objects import OWNER_LABEL
from tests.unit.bundles import API_VERSION, KIND, build, condition
from tests.unit.deletion_bundles import POLICIES

pytestmark = pytest.mark.integration

DEADLINE = 60.0


def test_teardown_waits_on_a_foreign_finalizer_then_releases_and_retains(
    cluster: KubeCluster,  # noqa: F811
    namespace: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    bundle = build(tmp_path, POLICIES)
    (controller,) = bundle.controllers
    reconciler = Reconciler(bundle, controller, cluster, ReconcilerOptions(field_manager="oper8d"))
    cr = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "demo", "namespace": namespace},
    }
    cluster.apply({**cr, "spec": {}}, field_manager="test")
    deadline = time.monotonic() + DEADLINE
    while True:
        reconciler.reconcile(namespace, "demo")
        live = cluster.get(API_VERSION, KIND, "demo", namespace)
        if condition(live, "Ready").get("status") == "True":
            break
        assert time.monotonic() < deadline, "the CR never became Ready"
        time.sleep(0.5)
    uid = cluster.get(API_VERSION, KIND, "demo", namespace)["metadata"]["uid"]  # type: ignore[index]

    held = cluster.get("v1", "ConfigMap", "demo-app", namespace)
    assert held is not None
    held["metadata"]["finalizers"] = ["example.com/hold"]
    cluster.update(held)
    cluster.delete(API_VERSION, KIND, "demo", namespace)
    result = reconciler.reconcile(namespace, "demo")
    assert not result.finalized
    live_cr = cluster.get(API_VERSION, KIND, "demo", namespace)
    ready = condition(live_cr, "Ready")
    since = cluster.get("v1", "ConfigMap", "demo-app", namespace)["metadata"]["deletionTimestamp"]  # type: ignore[index]
    assert ready["reason"] == "Deleting", ready
    assert (
        f"ConfigMap {namespace}/demo-app (held by finalizer example.com/hold since {since})"
        in (ready["message"])
    )

    unheld = cluster.get("v1", "ConfigMap", "demo-app", namespace)
    assert unheld is not None
    unheld["metadata"]["finalizers"] = []
    cluster.update(unheld)
    deadline = time.monotonic() + DEADLINE
    while cluster.get(API_VERSION, KIND, "demo", namespace) is not None:
        assert time.monotonic() < deadline, "the CR was never finalized"
        reconciler.reconcile(namespace, "demo")
        time.sleep(0.5)

    time.sleep(3)  # the garbage collector has had its chance at what the CR owned
    names = sorted(o["metadata"]["name"] for o in cluster.list("v1", "ConfigMap", namespace))
    assert "demo-app" not in names
    assert {"demo-app-o", "demo-handed", "demo-kept"} <= set(names)
    for name in ("demo-app-o", "demo-handed"):
        meta = cluster.get("v1", "ConfigMap", name, namespace)["metadata"]  # type: ignore[index]
        assert not meta.get("ownerReferences"), meta
        assert OWNER_LABEL not in (meta.get("labels") or {}), meta
        assert not [
            k for k in meta.get("annotations") or {} if k.startswith(("oper8d.io/", "oper8."))
        ]
    kept = cluster.get("v1", "ConfigMap", "demo-kept", namespace)["metadata"]  # type: ignore[index]
    assert kept["labels"][OWNER_LABEL] == uid and not kept.get("ownerReferences")
