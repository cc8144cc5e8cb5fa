"""Hooks between the rollout's phases: checks that hold the rollout, objects applied
after deploy or verify, and what happens to those objects later (engine.rollout and
engine.reconcile's pruning)."""

from __future__ import annotations

from pathlib import Path

from bundles import Harness, build, condition

from oper8d.cluster.memory.simulate import DefaultSimulator

BUNDLE = """
components:
  - name: job
    resources:
      - name: job
        object:
          apiVersion: batch/v1
          kind: Job
          metadata: {name: "{{ scoped_name('job') }}"}
          spec:
            template:
              spec:
                restartPolicy: Never
                containers: [{name: main, image: busybox}]
hooks:
  afterDeploy:
    - name: migrated
      check: "live('job.job').status.succeeded | default(0) >= 1"
      message: waiting for the migration
  afterVerify:
    - name: announce
      resources:
        - name: cm
          object:
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: "{{ scoped_name('announce') }}"}
"""


def test_an_after_deploy_check_that_is_false_holds_the_rollout(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE), simulator=DefaultSimulator(delay_writes=1))
    h.create({})
    result = h.reconcile()
    updating = condition(h.cr(), "Updating")
    assert (updating["status"], updating["reason"]) == ("True", "PreconditionWait")
    assert "waiting for the migration" in updating["message"]
    assert result.requeue_after == 10.0
    assert h.names("ConfigMap") == []  # afterVerify did not run
    h.cluster.tick()
    h.settle()
    assert condition(h.cr(), "Ready")["reason"] == "Stable"
    assert h.names("ConfigMap") == ["demo-announce"]


def test_hook_objects_are_kept_while_a_later_rollout_is_incomplete(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE), simulator=DefaultSimulator(delay_writes=1))
    h.create({})
    h.settle()
    h.simulator.delay_writes = 3
    h.cluster.delete("batch/v1", "Job", "demo-job", "default")  # recreated, not yet done
    h.reconcile()
    assert condition(h.cr(), "Updating")["reason"] == "PreconditionWait"
    assert h.names("ConfigMap") == ["demo-announce"]


def test_objects_of_a_hook_removed_from_the_bundle_are_pruned(tmp_path: Path) -> None:
    h = Harness(build(tmp_path / "v1", BUNDLE))
    h.create({})
    h.settle()
    assert h.names("ConfigMap") == ["demo-announce"]
    without = BUNDLE.split("  afterVerify:")[0]
    h.reconciler = h.new_reconciler(build(tmp_path / "v2", without))
    h.settle()
    assert h.names("ConfigMap") == []


def test_a_component_whose_name_starts_with_hook_is_pruned_like_any_other(
    tmp_path: Path,
) -> None:
    bundle = """
    components:
      - name: hook-relay
        forEach: {items: spec.relays}
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name(item) }}"}
    """
    h = Harness(build(tmp_path, bundle))
    h.create({"relays": ["a", "b"]})
    h.settle()
    assert h.names("ConfigMap") == ["demo-a", "demo-b"]
    h.set_spec(relays=["a"])
    h.settle()
    assert h.names("ConfigMap") == ["demo-a"]


def test_a_hook_rendering_an_object_a_component_renders_is_an_error_naming_both(
    tmp_path: Path,
) -> None:
    clashing = BUNDLE.replace("scoped_name('announce')", "scoped_name('job')").replace(
        "apiVersion: v1\n            kind: ConfigMap", "apiVersion: batch/v1\n            kind: Job"
    )
    assert clashing != BUNDLE
    h = Harness(build(tmp_path, clashing))
    h.create({})
    h.settle()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert (
        "hook-announce.cm and job.job both render Job.batch default/demo-job" in (ready["message"])
    )
