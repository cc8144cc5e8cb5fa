"""Components that fail rather than wait: a failed Job, a container in CrashLoopBackOff
(engine.rollout's verify phase through the reconciler and ``reconcile_offline``)."""

from __future__ import annotations

from pathlib import Path

import yaml
from bundles import Harness, build, condition

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.memory.simulate import DefaultSimulator
from oper8d.offline import reconcile_offline

STATEFUL = Path(__file__).resolve().parents[2] / "examples" / "operators" / "stateful"

FAILED_JOB = {
    "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
         "message": "Job has reached the specified backoff limit"},
    ],
    "failed": 4,
}  # fmt: skip


def test_the_migration_job_failed_so_ready_is_false_and_the_app_was_never_created() -> None:
    bundle = load_bundle(STATEFUL)
    cr = yaml.safe_load((STATEFUL / "samples" / "notes.yaml").read_text())
    simulator = DefaultSimulator(overrides={("Job", "notes-migrate-2-1-0"): FAILED_JOB})
    run = reconcile_offline(bundle, cr, simulator=simulator, max_reconciles=6)
    ready, updating = condition(run.cr, "Ready"), condition(run.cr, "Updating")
    assert (ready["status"], ready["reason"]) == ("False", "Errored")
    assert "backoff limit" in ready["message"]
    assert (updating["status"], updating["reason"]) == ("False", "Errored")
    status = run.cr["status"]["componentStatus"]
    assert status["failedComponents"] == ["migrate"]
    assert "migrate" not in status["verifiedComponents"]
    assert run.cluster is not None
    kinds = {o["kind"] for o in run.cluster.objects("default")}
    assert "Deployment" not in kinds  # app never created
    assert "Service" in kinds  # the database's Service: an independent branch
    assert run.last.requeue_after == 60.0
    assert run.cr["status"]["notesAppStatus"] == "Failed"


CRASHING = """
components:
  - name: worker
    resources:
      - name: pod
        object:
          apiVersion: v1
          kind: Pod
          metadata: {name: "{{ scoped_name('worker') }}"}
          spec: {containers: [{name: main, image: busybox}]}
  - name: after
    dependsOn:
      - component: worker
        when: "live('worker.pod').status.phase == 'Running'"
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('after') }}"}}
"""

CRASH_LOOP = {
    "phase": "Running",
    "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
    "containerStatuses": [
        {
            "name": "main",
            "ready": False,
            "restartCount": 5,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
        }
    ],
}


def test_a_pod_in_crash_loop_back_off_fails_its_component(tmp_path: Path) -> None:
    h = Harness(
        build(tmp_path, CRASHING),
        simulator=DefaultSimulator(overrides={("Pod", "demo-worker"): CRASH_LOOP}),
    )
    h.create({})
    result = h.settle()
    cr = h.cr()
    ready = condition(cr, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Errored")
    assert "CrashLoopBackOff" in ready["message"]
    assert cr["status"]["componentStatus"]["failedComponents"] == ["worker"]
    assert result.requeue_after == 60.0


def test_a_failed_component_without_a_waiting_downstream_is_reported_errored(
    tmp_path: Path,
) -> None:
    bundle = """
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
    """
    h = Harness(
        build(tmp_path, bundle),
        simulator=DefaultSimulator(overrides={("Job", "demo-job"): FAILED_JOB}),
    )
    h.create({})
    h.reconcile()
    assert condition(h.cr(), "Ready")["reason"] == "Errored"
    assert h.cr()["status"]["componentStatus"]["failedComponents"] == ["job"]
