"""When the API server refuses: an invalid object fails only its component, a failing
status write ends the reconcile with a requeue instead of an exception
(engine.reconcile against the in-memory cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bundles import Harness, build, condition

from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError

BUNDLE = """
components:
  - name: good
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('good') }}"}}
  - name: bad
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: "{{ scoped_name('bad') }}"
            labels: {tier: "{{ spec.tier }}"}
  - name: after
    dependsOn: [bad]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('after') }}"}}
"""


class RefusingCluster(MemoryCluster):
    """Refuses the objects named ``demo-bad``, as an admission webhook might (422), or
    fails them as an overloaded server does (``status``)."""

    status = 422

    def apply(self, obj: Obj, **kwargs: Any) -> Obj:
        if obj["metadata"]["name"] == "demo-bad":
            raise ClusterError(
                "ConfigMap demo-bad: admission webhook denied it", status=self.status
            )
        return super().apply(obj, **kwargs)


def test_an_object_kubernetes_schema_refuses_fails_its_component_before_any_request(
    tmp_path: Path,
) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    h.create({"tier": "not a valid label value!"})
    result = h.reconcile()
    cr = h.cr()
    ready = condition(cr, "Ready")
    assert ready["reason"] == "ConfigError"
    assert (
        "resource 'bad.cm' renders ConfigMap demo-bad, which the API server would refuse: "
        "metadata.labels" in ready["message"]
    )
    assert cr["status"]["componentStatus"]["failedComponents"] == ["bad"]
    assert h.names("ConfigMap") == ["demo-good"]
    assert result.error is not None


@pytest.mark.parametrize(("status", "stalled"), [(422, True), (400, True), (500, False)])
def test_an_object_the_server_refuses_fails_its_component_with_a_cluster_error(
    tmp_path: Path, status: int, stalled: bool
) -> None:
    """Refused as invalid (400/422), waiting will not help: Stalled, as for the same object
    refused offline. A server error (500) is retried: Reconciling."""
    h = Harness(build(tmp_path, BUNDLE))
    h.cluster = RefusingCluster(
        clock=h.clock.now, uid_factory=sequential_uids("test"), simulator=h.simulator
    )
    h.cluster.status = status
    res = h.bundle.controllers[0].resource
    h.cluster.register_kind(res.api_version, res.kind, namespaced=res.namespaced)
    h.reconciler = h.new_reconciler()
    h.create({"tier": "web"})
    result = h.reconcile()
    cr = h.cr()
    updating = condition(cr, "Updating")
    reason = "Errored" if stalled else "ClusterError"
    assert (updating["status"], updating["reason"]) == ("False", reason)
    assert "demo-bad" in updating["message"]
    assert condition(cr, "Stalled")["status"] == str(stalled)
    assert condition(cr, "Ready")["reason"] == ("ConfigError" if stalled else "Initializing")
    components = cr["status"]["componentStatus"]
    assert components["failedComponents"] == ["bad"]
    assert components["unstartedComponents"] == ["after"]
    assert h.names("ConfigMap") == ["demo-good"]
    assert result.requeue_after == 60.0


class StatusRefusingCluster(MemoryCluster):
    def update_status(self, obj: Obj) -> Obj:
        raise ClusterError("etcdserver: request timed out", status=500)


def test_a_failing_status_write_ends_the_reconcile_with_a_requeue(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    h.cluster = StatusRefusingCluster(clock=h.clock.now, simulator=h.simulator)
    h.cluster.register_kind("demo.oper8d.io/v1alpha1", "Demo", namespaced=True)
    h.reconciler = h.new_reconciler()
    h.create({"tier": "web"})
    result = h.reconcile()
    assert isinstance(result.error, ClusterError)
    assert result.requeue_after == 60.0
