"""A change of an immutable field (engine.immutable): ``onImmutableChange: fail`` leaves
the object and says which field and how to proceed; ``recreate`` deletes the object and
creates it again (a StatefulSet orphaning its pods), on the in-memory cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import Harness, build, condition
from immutable_corpus import BUNDLE, STATEFUL


def _deployment(h: Harness) -> dict:
    deployment = h.cluster.get("apps/v1", "Deployment", "demo-web", "default")
    assert deployment is not None
    return deployment


def test_fail_leaves_the_object_and_names_the_field_and_the_way_out(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE.format(policy="")))
    h.create({"track": "a"})
    h.settle()
    uid = _deployment(h)["metadata"]["uid"]
    h.set_spec(track="b")
    h.reconcile()
    cr = h.cr()
    ready = condition(cr, "Ready")
    message = ready["message"]
    assert ready["reason"] == "ConfigError"
    assert "Deployment default/demo-web: spec.selector cannot change" in message
    assert "onImmutableChange: recreate` on resource 'app.deployment'" in message
    assert "revert the change" in message
    assert condition(cr, "Stalled")["status"] == "True"
    assert cr["status"]["componentStatus"]["failedComponents"] == ["app"]
    live = _deployment(h)
    assert live["metadata"]["uid"] == uid
    assert live["spec"]["selector"]["matchLabels"]["track"] == "a"  # nothing half-applied


def test_recreate_deletes_and_creates_the_object_again(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE.format(policy="onImmutableChange: recreate")))
    h.create({"track": "a"})
    h.settle()
    uid = _deployment(h)["metadata"]["uid"]
    h.set_spec(track="b")
    h.settle()
    live = _deployment(h)
    assert live["metadata"]["uid"] != uid
    assert live["spec"]["selector"]["matchLabels"]["track"] == "b"
    assert condition(h.cr(), "Ready")["status"] == "True"


@pytest.mark.parametrize("size", ["2Gi"])
def test_a_recreated_statefulset_orphans_its_pods(tmp_path: Path, size: str) -> None:
    h = Harness(build(tmp_path, STATEFUL))
    h.create({"size": "1Gi"})
    h.settle()
    old = h.cluster.get("apps/v1", "StatefulSet", "demo-db", "default")
    assert old is not None
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "demo-db-0",
            "namespace": "default",
            "labels": {"app": "db"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "demo-db",
                    "uid": old["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "db", "image": "db:1"}]},
    }
    h.cluster.apply(pod, field_manager="kube-controller-manager")
    h.set_spec(size=size)
    h.settle()
    new = h.cluster.get("apps/v1", "StatefulSet", "demo-db", "default")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    claim = new["spec"]["volumeClaimTemplates"][0]
    assert claim["spec"]["resources"]["requests"]["storage"] == size
    kept = h.cluster.get("v1", "Pod", "demo-db-0", "default")
    assert kept is not None and not kept["metadata"].get("ownerReferences")
