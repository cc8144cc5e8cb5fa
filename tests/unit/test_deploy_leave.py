"""Fields left to other controllers (``leaveToOthers:``): set on create, never reverted,
no write when only they changed (engine.deploy, engine.leave, through the reconciler)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from bundles import Harness, build

from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.deploy import DeployManager
from oper8d.engine.leave import update_body, without
from oper8d.errors import BundleError

CR = {
    "apiVersion": "demo.oper8d.io/v1alpha1",
    "kind": "Demo",
    "metadata": {"name": "demo", "namespace": "team", "uid": "cr-uid"},
}
REPLICAS = [("spec", "replicas")]


def deployment(image: str = "app:1", replicas: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "app"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {
                "metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def scale(cluster: MemoryCluster, replicas: int) -> None:
    """What an autoscaler does: another field manager writes spec.replicas."""
    namespace = "team" if cluster.get("apps/v1", "Deployment", "app", "team") else "default"
    live = cluster.get("apps/v1", "Deployment", "app", namespace)
    assert live is not None
    live = copy.deepcopy(live)
    live["spec"]["replicas"] = replicas
    cluster.update(live, field_manager="autoscaler")


def test_a_left_field_is_set_on_create_and_never_reverted() -> None:
    cluster = MemoryCluster()
    d = DeployManager(cluster, CR, field_manager="demo")
    prepared = d.prepare(deployment(), "app.deployment", "app", REPLICAS)
    first, wrote = d.apply(prepared, leave=REPLICAS)
    assert wrote and first["spec"]["replicas"] == 3
    scale(cluster, 7)
    writes = cluster.writes
    for _ in range(3):
        d = DeployManager(cluster, CR, field_manager="demo")
        live, wrote = d.apply(
            d.prepare(deployment(), "app.deployment", "app", REPLICAS), leave=REPLICAS
        )
        assert not wrote
    assert cluster.writes == writes
    assert live["spec"]["replicas"] == 7
    # a change of ours is applied, and still leaves the autoscaler's count alone
    live, wrote = d.apply(
        d.prepare(deployment(image="app:2"), "app.deployment", "app", REPLICAS), leave=REPLICAS
    )
    assert wrote
    assert live["spec"]["replicas"] == 7
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "app:2"


def test_without_leave_the_operator_reverts_the_field() -> None:
    cluster = MemoryCluster()
    d = DeployManager(cluster, CR, field_manager="demo")
    d.apply(d.prepare(deployment(), "app.deployment", "app"))
    scale(cluster, 7)
    live, wrote = d.apply(d.prepare(deployment(), "app.deployment", "app"))
    assert wrote and live["spec"]["replicas"] == 3


def test_the_hash_ignores_left_fields() -> None:
    d = DeployManager(MemoryCluster(), CR, field_manager="demo")
    a = d.prepare(deployment(replicas=3), "app.deployment", "app", REPLICAS)
    b = d.prepare(deployment(replicas=9), "app.deployment", "app", REPLICAS)
    hash_key = "oper8d.io/applied-hash"
    assert a["metadata"]["annotations"][hash_key] == b["metadata"]["annotations"][hash_key]
    assert without(a, REPLICAS)["spec"].get("replicas") is None
    assert a["spec"]["replicas"] == 3  # the object itself is untouched


def managed(*entries: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"manager": m, "operation": op, "fieldsV1": f} for m, op, f in entries]


def test_server_side_apply_releases_a_field_another_manager_owns() -> None:
    live = deployment(replicas=7)
    live["metadata"]["managedFields"] = managed(
        ("demo", "Apply", {"f:spec": {"f:replicas": {}, "f:selector": {}}}),
        ("kube-controller-manager", "Update", {"f:spec": {"f:replicas": {}}}),
    )
    body = update_body(deployment(replicas=3), live, REPLICAS, "demo")
    assert "replicas" not in body["spec"]
    # a PUT would reset what it does not send: the live value is kept instead
    put = update_body(deployment(replicas=3), live, REPLICAS, "demo", server_side=False)
    assert put["spec"]["replicas"] == 7


def test_server_side_apply_keeps_a_field_only_we_own_at_its_live_value() -> None:
    live = deployment(replicas=5)
    live["metadata"]["managedFields"] = managed(
        ("demo", "Apply", {"f:spec": {"f:replicas": {}}}),
        ("someone", "Update", {"f:metadata": {"f:labels": {}}}),
    )
    # leaving it out now would reset it to the default (1): send what is there
    assert update_body(deployment(replicas=3), live, REPLICAS, "demo")["spec"]["replicas"] == 5


SCHEMA = {
    "type": "object",
    "properties": {
        "replicas": {"type": "integer", "default": 2},
        "autoscaling": {"type": "boolean", "default": True},
    },
}
BUNDLE = """\
components:
  - name: app
    resources:
      - name: deployment
        leaveToOthers:
          - {path: spec.replicas, when: spec.autoscaling}
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: app}
          spec:
            replicas: "{{ spec.replicas }}"
            selector: {matchLabels: {app: a}}
            template:
              metadata: {labels: {app: a}}
              spec: {containers: [{name: app, image: "app:1"}]}
"""


def test_reconciles_leave_the_replicas_to_the_autoscaler_while_when_holds(
    tmp_path: Path,
) -> None:
    h = Harness(build(tmp_path, BUNDLE, schema=SCHEMA))
    h.create({"replicas": 2})
    h.settle()
    assert h.get("Deployment", "app", "apps/v1")["spec"]["replicas"] == 2  # type: ignore[index]
    scale(h.cluster, 6)
    writes = h.cluster.writes
    for _ in range(3):
        h.reconcile()
    assert h.get("Deployment", "app", "apps/v1")["spec"]["replicas"] == 6  # type: ignore[index]
    assert h.cluster.writes == writes
    # autoscaling off: the CR's count is the operator's again
    h.set_spec(autoscaling=False)
    h.settle()
    assert h.get("Deployment", "app", "apps/v1")["spec"]["replicas"] == 2  # type: ignore[index]


def test_an_empty_segment_in_a_path_is_a_compile_error(tmp_path: Path) -> None:
    bad = BUNDLE.replace("{path: spec.replicas, when: spec.autoscaling}", "spec..replicas")
    with pytest.raises(BundleError, match=r"spec\.\.replicas"):
        build(tmp_path, bad, schema=SCHEMA)


def test_a_put_of_a_template_without_the_left_field_keeps_its_live_value() -> None:
    live = deployment(replicas=5)  # scaled by the HPA
    rendered = deployment()
    del rendered["spec"]["replicas"]  # the template never sets it
    put = update_body(rendered, live, REPLICAS, "demo", server_side=False)
    assert put["spec"]["replicas"] == 5  # a PUT without it would reset replicas to 1


def test_an_annotation_key_with_dots_can_be_left_to_a_webhook() -> None:
    """``metadata.annotations[sidecar.istio.io/status]``: a key holding '.' in brackets."""
    from oper8d.engine.deploy import left_fields
    from oper8d.fieldpaths import parse_field_path

    path = parse_field_path("metadata.annotations[sidecar.istio.io/status]")
    assert path == ("metadata", "annotations", "sidecar.istio.io/status")
    cluster = MemoryCluster()
    d = DeployManager(cluster, CR, field_manager="demo")
    obj = deployment()
    obj["metadata"]["annotations"] = {"sidecar.istio.io/status": "ours"}
    prepared = d.prepare(obj, "app.deployment", "app", [path])
    assert left_fields(prepared) == (path,)
    assert prepared["metadata"]["annotations"]["oper8d.io/leave-to-others"] == (
        "metadata.annotations[sidecar.istio.io/status]"
    )
    d.apply(prepared, leave=[path])
    live = copy.deepcopy(cluster.get("apps/v1", "Deployment", "app", "team"))
    assert live is not None
    live["metadata"]["annotations"]["sidecar.istio.io/status"] = "injected"
    cluster.update(live, field_manager="webhook")
    writes = cluster.writes
    again, wrote = d.apply(d.prepare(obj, "app.deployment", "app", [path]), leave=[path])
    assert not wrote and cluster.writes == writes
    assert again["metadata"]["annotations"]["sidecar.istio.io/status"] == "injected"


@pytest.mark.parametrize("text", ["a..b", "a.", "a[b", "a[b]c", "a.[b]", ""])
def test_a_malformed_field_path_is_refused(text: str) -> None:
    from oper8d.fieldpaths import parse_field_path

    assert parse_field_path(text) is None


@pytest.mark.parametrize(
    "path",
    [("spec", "replicas"), ("metadata", "annotations", "a.b/c"), ("data", "x.y", "z")],
)
def test_a_formatted_field_path_parses_back(path: tuple[str, ...]) -> None:
    from oper8d.fieldpaths import format_field_path, parse_field_path

    assert parse_field_path(format_field_path(path)) == path
