"""Reconciling a CR again: no-op reconciles write nothing, changes write only what changed,
drift is corrected, paused CRs are left alone (engine.reconcile + engine.deploy against
the in-memory cluster)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from bundles import Harness, build, condition

from oper8d.engine.unchanged import HASH_ANNOTATION

SCHEMA = {
    "type": "object",
    "properties": {
        "level": {"type": "string", "default": "info"},
        "replicas": {"type": "integer", "default": 2},
        "version": {"type": "string", "default": "1.0"},
    },
}

CONTROLLER = """
components:
  - name: config
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}"}
          data: {level: "{{ spec.level }}"}
  - name: creds
    resources:
      - name: secret
        object:
          apiVersion: v1
          kind: Secret
          metadata: {name: "{{ scoped_name('creds') }}"}
          stringData: {password: "{{ random_string('pw') }}"}
  - name: app
    dependsOn: [config]
    resources:
      - name: deployment
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "{{ scoped_name('app') }}"}
          spec:
            replicas: "{{ spec.replicas }}"
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec:
                containers:
                  - name: app
                    image: "nginx:{{ version }}"
                    resources: {limits: {cpu: 500m}}
      - name: service
        object:
          apiVersion: v1
          kind: Service
          metadata: {name: "{{ scoped_name('web') }}"}
          spec:
            selector: {app: web}
            ports: [{port: 80}]
status:
  replicas: "live('app.deployment').spec.replicas"
  endpoint: "live('app.service').spec.clusterIP ~ ':80'"
"""


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(build(tmp_path, CONTROLLER, schema=SCHEMA))


def stable(h: Harness, **spec: Any) -> Harness:
    h.create(spec)
    h.settle()
    assert condition(h.cr(), "Ready")["status"] == "True"
    return h


def test_second_reconcile_of_a_stable_cr_sends_no_writes(h: Harness) -> None:
    stable(h)
    before = h.cluster.writes
    status_before = h.cr()["status"]
    result = h.reconcile()
    assert h.cluster.writes == before, h.cluster.requests
    assert not result.status_written
    assert h.cr()["status"] == status_before
    assert result.requeue_after is None  # stable: nothing to come back for


def test_no_op_reconciles_after_an_operator_restart_send_no_writes(h: Harness) -> None:
    stable(h)
    h.reconciler = h.new_reconciler()
    before = h.cluster.writes
    h.reconcile()
    assert h.cluster.writes == before, h.cluster.requests


def test_changing_one_spec_field_rewrites_only_the_objects_that_use_it(h: Harness) -> None:
    stable(h)
    h.set_spec(level="debug")
    h.cluster.reset_requests()
    result = h.reconcile()
    # the ConfigMap, and the CR's status (observedGeneration moved)
    assert h.cluster.requests["apply"] == 1, h.cluster.requests
    assert result.rollout is not None
    assert h.get("ConfigMap", "demo-config")["data"] == {"level": "debug"}  # type: ignore[index]


def test_a_managed_field_edited_by_someone_else_is_corrected_on_the_next_reconcile(
    h: Harness,
) -> None:
    stable(h)
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    live["spec"]["replicas"] = 7
    h.cluster.update(live, field_manager="kubectl")
    h.reconcile()
    corrected = h.get("Deployment", "demo-app", "apps/v1")
    assert corrected is not None
    assert corrected["spec"]["replicas"] == 2


def test_an_edited_config_map_value_is_corrected_and_then_left_alone(h: Harness) -> None:
    stable(h)
    cm = h.get("ConfigMap", "demo-config")
    assert cm is not None
    cm["data"]["level"] = "trace"
    h.cluster.update(cm, field_manager="kubectl")
    h.reconcile()
    assert h.get("ConfigMap", "demo-config")["data"]["level"] == "info"  # type: ignore[index]
    before = h.cluster.writes
    h.reconcile()
    assert h.cluster.writes == before


def test_a_removed_hash_annotation_makes_the_object_be_applied_again(h: Harness) -> None:
    stable(h)
    cm = h.get("ConfigMap", "demo-config")
    assert cm is not None
    del cm["metadata"]["annotations"][HASH_ANNOTATION]
    h.cluster.update(cm, field_manager="kubectl")
    h.cluster.reset_requests()
    h.reconcile()
    assert h.cluster.requests["apply"] == 1
    assert HASH_ANNOTATION in h.get("ConfigMap", "demo-config")["metadata"]["annotations"]  # type: ignore[index]


@pytest.mark.parametrize("value", ["true", "True", "TRUE", " true "])
def test_a_paused_cr_is_not_touched_and_not_requeued(h: Harness, value: str) -> None:
    h.create({}, annotations={"oper8.org/pause-execution": value})
    before = h.cluster.writes
    result = h.reconcile()
    assert result.paused
    assert result.requeue_after is None
    assert h.cluster.writes == before
    assert h.objects() == []
    assert "status" not in h.cr() or not h.cr()["status"]


def test_a_paused_stable_cr_does_not_correct_drift_until_unpaused(h: Harness) -> None:
    stable(h)
    h.edit_cr(lambda cr: cr["metadata"].setdefault("annotations", {}).update(
        {"oper8.org/pause-execution": "true"}
    ))  # fmt: skip
    cm = h.get("ConfigMap", "demo-config")
    assert cm is not None
    cm["data"]["level"] = "trace"
    h.cluster.update(cm, field_manager="kubectl")
    before = h.cluster.writes
    h.reconcile()
    assert h.cluster.writes == before
    h.edit_cr(lambda cr: cr["metadata"]["annotations"].update(
        {"oper8.org/pause-execution": "false"}
    ))  # fmt: skip
    h.reconcile()
    assert h.get("ConfigMap", "demo-config")["data"]["level"] == "info"  # type: ignore[index]


def test_a_version_change_shows_version_change_then_stable_with_the_new_version(
    h: Harness,
) -> None:
    stable(h, version="1.0")
    assert h.cr()["status"]["versions"]["reconciled"] == "1.0"
    h.simulator.delay_writes = 1  # the new Deployment generation takes a tick to roll out
    h.set_spec(version="2.0")
    first = h.reconcile()
    cr = h.cr()
    # the new version is rolling out: not Stable, and the start status said why
    assert condition(cr, "Ready")["reason"] == "InProgress"
    assert condition(cr, "Updating")["status"] == "True"
    assert cr["status"]["versions"]["reconciled"] == "1.0"
    assert first.requeue_after is not None
    h.cluster.tick()
    h.settle()
    cr = h.cr()
    assert condition(cr, "Ready")["reason"] == "Stable"
    assert cr["status"]["versions"]["reconciled"] == "2.0"


def test_version_change_start_status_is_written_before_the_rollout(h: Harness) -> None:
    stable(h, version="1.0")
    h.set_spec(version="2.0")
    reasons: list[tuple[str, str]] = []

    def record(_event: str, obj: dict[str, Any]) -> None:
        if obj["kind"] == "Demo" and obj.get("status"):
            reasons.append(
                (condition(obj, "Ready").get("reason", ""), condition(obj, "Updating")["reason"])
            )

    h.cluster.watch(record)
    h.reconcile()
    assert reasons[0] == ("InProgress", "VersionChange")
    assert reasons[-1] == ("Stable", "Stable")


def test_last_transition_time_stays_the_same_across_no_op_reconciles(h: Harness) -> None:
    stable(h)
    first = condition(h.cr(), "Ready")["lastTransitionTime"]
    for _ in range(3):
        h.clock.advance(3600)
        h.reconcile()
    assert condition(h.cr(), "Ready")["lastTransitionTime"] == first


def test_status_projection_fields_appear_in_status(h: Harness) -> None:
    stable(h, replicas=3)
    status = h.cr()["status"]
    assert status["replicas"] == 3
    assert status["endpoint"].startswith("10.96.0.") and status["endpoint"].endswith(":80")


def test_owner_references_point_at_the_cr_and_passthrough_annotations_are_copied(
    h: Harness,
) -> None:
    h.create({}, annotations={"oper8.org/log-default-level": "debug2", "other.io/x": "no"})
    h.settle()
    cr = h.cr()
    managed = [
        o for o in h.objects() if "oper8.org/internal-name" in o["metadata"].get("annotations", {})
    ]
    assert len(managed) == 4
    for obj in managed:
        (ref,) = obj["metadata"]["ownerReferences"]
        assert ref["uid"] == cr["metadata"]["uid"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("Demo", "demo", True)
        annotations = obj["metadata"]["annotations"]
        assert annotations["oper8.org/log-default-level"] == "debug2"
        assert "other.io/x" not in annotations


def test_internal_names_are_set_on_every_managed_object(h: Harness) -> None:
    stable(h)
    names = {
        o["metadata"]["annotations"].get("oper8.org/internal-name")
        for o in h.objects()
        if o["metadata"]["name"] != "demo-oper8d-generated"  # random_string's store
    }
    assert names == {"config.cm", "creds.secret", "app.deployment", "app.service"}


def test_random_strings_stay_the_same_across_reconciles_and_restarts(h: Harness) -> None:
    stable(h)
    first = h.get("Secret", "demo-creds")["data"]["password"]  # type: ignore[index]
    for _ in range(3):
        h.reconcile()
    h.reconciler = h.new_reconciler()
    h.set_spec(level="debug")  # a change that re-renders
    h.reconcile()
    assert h.get("Secret", "demo-creds")["data"]["password"] == first  # type: ignore[index]


def test_random_strings_differ_between_crs(h: Harness) -> None:
    h.create({}, name="one")
    h.create({}, name="two")
    h.settle("one")
    h.settle("two")
    one = h.get("Secret", "one-creds")["data"]["password"]  # type: ignore[index]
    two = h.get("Secret", "two-creds")["data"]["password"]  # type: ignore[index]
    assert one != two


def test_a_waiting_version_change_is_announced_once_not_on_every_reconcile(h: Harness) -> None:
    stable(h, version="1.0")
    h.simulator.delay_writes = 5
    h.set_spec(version="2.0")
    h.reconcile()
    h.cluster.reset_requests()
    result = h.reconcile()  # still rolling out: nothing new to say
    assert h.cluster.requests["update_status"] == 0
    assert not result.status_written
    assert condition(h.cr(), "Updating")["reason"] == "VerifyWait"


def test_a_cr_in_config_error_is_not_flipped_to_initializing_on_each_retry(
    tmp_path: Path,
) -> None:
    bundle = """
    components:
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('x') }}"}
              data: {a: "{{ config_error('always wrong') }}"}
    """
    h = Harness(build(tmp_path, bundle))
    h.create({})
    h.reconcile()
    since = condition(h.cr(), "Stalled")["lastTransitionTime"]
    seen: list[str] = []
    h.cluster.watch(
        lambda _e, obj: (
            seen.append(condition(obj, "Ready").get("reason", ""))
            if obj["kind"] == "Demo"
            else None
        )
    )
    h.clock.advance(60)
    h.reconcile()
    assert seen == []  # no Initializing in between
    assert condition(h.cr(), "Stalled")["lastTransitionTime"] == since


def test_random_string_keys_that_are_not_valid_secret_keys_are_stored_safely(
    tmp_path: Path,
) -> None:
    bundle = """
    components:
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('app') }}"}
              data: {token: "{{ random_string('api token/v1', 8) }}"}
    """
    h = Harness(build(tmp_path, bundle))
    h.create({})
    h.settle()
    token = h.get("ConfigMap", "demo-app")["data"]["token"]  # type: ignore[index]
    assert len(token) == 8
    store = h.get("Secret", "demo-oper8d-generated")
    assert store is not None
    assert all(re.fullmatch(r"[-._a-zA-Z0-9]+", key) for key in store["data"])
    h.reconciler = h.new_reconciler()
    h.set_spec(again=True)
    h.reconcile()
    assert h.get("ConfigMap", "demo-app")["data"]["token"] == token  # type: ignore[index]
