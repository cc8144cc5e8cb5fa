"""DeployManager: what it stamps on objects and when it decides not to write
(engine.deploy, directly and through the reconciler)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from bundles import Harness, build

from oper8d.cluster.base import Method, Obj
from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.deploy import DeployManager
from oper8d.engine.unchanged import as_stored, is_current

CR = {
    "apiVersion": "demo.oper8d.io/v1alpha1",
    "kind": "Demo",
    "metadata": {"name": "demo", "namespace": "team", "uid": "cr-uid"},
}


def deployer(cluster: MemoryCluster | None = None) -> DeployManager:
    return DeployManager(cluster or MemoryCluster(), CR, field_manager="demo")


def test_prepared_objects_land_in_the_crs_namespace_with_an_owner_reference() -> None:
    obj = deployer().prepare(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "app.cm", "app"
    )
    meta = obj["metadata"]
    assert meta["namespace"] == "team"
    assert meta["annotations"]["oper8.org/internal-name"] == "app.cm"
    assert meta["ownerReferences"] == [
        {"apiVersion": "demo.oper8d.io/v1alpha1", "kind": "Demo", "name": "demo",
         "uid": "cr-uid", "controller": True, "blockOwnerDeletion": True},
    ]  # fmt: skip


def test_objects_in_another_namespace_or_cluster_scoped_get_no_owner_reference() -> None:
    d = deployer()
    elsewhere = d.prepare(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}},
        "app.cm",
        "app",
    )
    role = d.prepare(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "r"},
        },
        "app.role",
        "app",
    )
    assert "ownerReferences" not in elsewhere["metadata"]
    assert "ownerReferences" not in role["metadata"]
    assert "namespace" not in role["metadata"]
    # still found by pruning through the owner label
    assert elsewhere["metadata"]["labels"]["oper8d.io/owner-uid"] == "cr-uid"


def test_preparing_does_not_change_the_rendered_object() -> None:
    rendered = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    before = copy.deepcopy(rendered)
    deployer().prepare(rendered, "app.cm", "app")
    assert rendered == before


def test_a_secrets_string_data_matches_the_data_the_server_stored() -> None:
    d = deployer()
    wanted = d.prepare(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "stringData": {"pw": "hunter2"},
        },
        "app.secret",
        "app",
    )
    live = d.cluster.apply(wanted, field_manager="demo")
    assert "stringData" not in live
    assert as_stored(wanted)["data"] == {"pw": "aHVudGVyMg=="}
    assert is_current(wanted, live)
    changed = copy.deepcopy(live)
    changed["data"]["pw"] = "b3RoZXI="
    assert not is_current(wanted, changed)


def test_an_unchanged_object_is_not_written_twice() -> None:
    cluster = MemoryCluster()
    d = deployer(cluster)
    obj = d.prepare(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}},
        "app.cm",
        "app",
    )
    assert d.apply(obj)[1] is True
    assert d.apply(obj)[1] is False
    assert deployer(cluster).apply(obj)[1] is False  # another reconcile, same decision
    assert d.stats.applied == ["ConfigMap team/x"]


class SidecarInjectingCluster(MemoryCluster):
    """A mutating admission webhook: every Deployment gets a sidecar container."""

    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        if obj.get("kind") == "Deployment":
            obj = copy.deepcopy(obj)
            containers = obj["spec"]["template"]["spec"]["containers"]
            if all(c["name"] != "proxy" for c in containers):
                containers.append({"name": "proxy", "image": "envoy"})
        return super().apply(obj, field_manager=field_manager, method=method, force=force)


DEPLOYMENT = """
components:
  - name: app
    resources:
      - name: deployment
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "{{ scoped_name('app') }}"}
          spec:
            replicas: "{{ spec.replicas | default(1) }}"
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec: {containers: [{name: app, image: nginx}]}
"""


def harness_with(cluster_type: type[MemoryCluster], tmp_path: Path) -> Harness:
    h = Harness(build(tmp_path, DEPLOYMENT))
    h.cluster = cluster_type(clock=h.clock.now, simulator=h.simulator)
    h.cluster.register_kind("demo.oper8d.io/v1alpha1", "Demo", namespaced=True)
    h.reconciler = h.new_reconciler()
    return h


def containers(h: Harness) -> list[dict[str, Any]]:
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    return live["spec"]["template"]["spec"]["containers"]


def test_an_object_the_server_rewrites_is_applied_once_and_then_left_alone(tmp_path: Path) -> None:
    h = harness_with(SidecarInjectingCluster, tmp_path)
    h.create({})
    h.settle()
    assert [c["name"] for c in containers(h)] == ["app", "proxy"]
    h.cluster.reset_requests()
    h.reconcile()
    h.reconcile()
    assert h.cluster.writes == 0, h.cluster.requests


def test_after_a_restart_a_rewritten_object_is_applied_at_most_once(tmp_path: Path) -> None:
    h = harness_with(SidecarInjectingCluster, tmp_path)
    h.create({})
    h.settle()
    h.reconciler = h.new_reconciler()
    h.reconcile()
    h.cluster.reset_requests()
    h.reconcile()
    assert h.cluster.writes == 0, h.cluster.requests


def test_drift_on_a_rewritten_object_is_still_corrected(tmp_path: Path) -> None:
    h = harness_with(SidecarInjectingCluster, tmp_path)
    h.create({})
    h.settle()
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "evil"
    h.cluster.update(live, field_manager="kubectl")
    h.reconcile()
    assert containers(h)[0]["image"] == "nginx"


def test_a_spec_change_of_a_rewritten_object_is_applied(tmp_path: Path) -> None:
    h = harness_with(SidecarInjectingCluster, tmp_path)
    h.create({})
    h.settle()
    h.set_spec(replicas=3)
    h.reconcile()
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None and live["spec"]["replicas"] == 3
