"""Readiness of live objects (engine.verify): kstatus-grade rules per built-in kind."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.engine import status as status_mod
from oper8d.engine.verify import (
    Readiness,
    builtin_readiness,
    combine,
    condition_readiness,
    exists_readiness,
    subsystem_readiness,
)

_DELETE = object()


def patched(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``obj`` with dotted paths (``status__readyReplicas``) set or deleted."""
    out = copy.deepcopy(obj)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        cur = out
        for key in parents:
            cur = cur.setdefault(key, {})
        if value is _DELETE:
            cur.pop(last, None)
        else:
            cur[last] = value
    return out


def cond(type_: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def deployment(n: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 2},
        "spec": {"replicas": n, "progressDeadlineSeconds": 600},
        "status": {
            "observedGeneration": 2,
            "replicas": n,
            "updatedReplicas": n,
            "readyReplicas": n,
            "availableReplicas": n,
            "conditions": [
                cond("Available", reason="MinimumReplicasAvailable"),
                cond("Progressing", reason="NewReplicaSetAvailable"),
            ],
        },
    }


def statefulset(n: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default", "generation": 1},
        "spec": {"replicas": n, "updateStrategy": {"type": "RollingUpdate"}},
        "status": {
            "observedGeneration": 1,
            "replicas": n,
            "readyReplicas": n,
            "currentReplicas": n,
            "updatedReplicas": n,
            "currentRevision": "db-1",
            "updateRevision": "db-1",
        },
    }


def daemonset(n: int = 4) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system", "generation": 3},
        "status": {
            "observedGeneration": 3,
            "desiredNumberScheduled": n,
            "currentNumberScheduled": n,
            "updatedNumberScheduled": n,
            "numberAvailable": n,
            "numberReady": n,
        },
    }


def job(*conditions: dict[str, str], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "default", "generation": 1},
        "spec": {"completions": 1},
        "status": {"conditions": list(conditions), **status},
    }


def pod(phase: str = "Running", *conditions: dict[str, str], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default"},
        "status": {"phase": phase, "conditions": list(conditions), **status},
    }


def obj(
    api_version: str, kind: str, name: str = "x", namespace: str | None = "default", **rest: Any
):
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


# -- missing and deleted objects ---------------------------------------------------------------


def test_a_missing_object_waits_as_not_found_and_names_what_was_looked_for():
    result = builtin_readiness(None, ref="Deployment default/web")
    assert result == Readiness("waiting", "NotFound", "Deployment default/web: does not exist yet")


@pytest.mark.parametrize("check", [builtin_readiness, exists_readiness])
def test_an_object_being_deleted_is_not_ready(check):
    result = check(patched(deployment(), metadata__deletionTimestamp="2026-01-01T00:00:00Z"))
    assert (result.state, result.reason) == ("waiting", "Terminating")
    assert "Deployment default/web" in result.message


# -- Deployment ---------------------------------------------------------------------------------


def test_a_fully_rolled_out_deployment_is_ready():
    result = builtin_readiness(deployment())
    assert result.ready
    assert result.message == "Deployment default/web: 3 of 3 replicas available"


def test_a_deployment_with_too_few_available_replicas_says_how_many():
    result = builtin_readiness(patched(deployment(), status__availableReplicas=1))
    assert result == Readiness(
        "waiting", "ReplicasNotAvailable", "Deployment default/web: 1 of 3 replicas available"
    )


@pytest.mark.parametrize(
    ("changes", "reason", "detail"),
    [
        ({"status__observedGeneration": 1}, "GenerationNotObserved", "generation 2 not observed"),
        ({"status": _DELETE}, "GenerationNotObserved", "has not reported status"),
        ({"status__replicas": 2}, "ReplicasNotCreated", "2 of 3 replicas created"),
        ({"status__updatedReplicas": 2}, "ReplicasNotUpdated", "2 of 3 replicas updated"),
        ({"status__replicas": 4}, "OldReplicasTerminating", "1 old replicas pending termination"),
        ({"status__readyReplicas": 2}, "ReplicasNotReady", "2 of 3 replicas ready"),
        (
            {"status__conditions": [cond("Progressing", reason="NewReplicaSetAvailable")]},
            "DeploymentNotAvailable",
            "no Available condition",
        ),
        (
            {
                "status__conditions": [
                    cond("Available", reason="MinimumReplicasAvailable"),
                    cond("Progressing", reason="ReplicaSetUpdated"),
                ]
            },
            "NewReplicaSetNotAvailable",
            "Progressing is True (ReplicaSetUpdated)",
        ),
        ({"spec__paused": True}, "DeploymentPaused", "paused"),
    ],
)
def test_a_deployment_still_rolling_out_waits_with_the_numbers(changes, reason, detail):
    result = builtin_readiness(patched(deployment(), **changes))
    assert (result.state, result.reason) == ("waiting", reason)
    assert result.message.startswith("Deployment default/web: ")
    assert detail in result.message


def test_a_deployment_whose_pods_cannot_be_created_says_why():
    failing = patched(
        deployment(),
        status__replicas=0,
        status__conditions=[
            cond(
                "ReplicaFailure",
                "True",
                "FailedCreate",
                'pods "web-1" is forbidden: metadata.labels: Invalid value',
            )
        ],
    )
    result = builtin_readiness(failing)
    assert (result.state, result.reason) == ("waiting", "FailedCreate")
    assert 'pods "web-1" is forbidden: metadata.labels: Invalid value' in result.message


def test_a_deployment_past_its_progress_deadline_has_failed():
    stuck = patched(
        deployment(),
        status__availableReplicas=0,
        status__conditions=[
            cond("Progressing", "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-1" timed out')
        ],
    )
    result = builtin_readiness(stuck)
    assert (result.state, result.reason) == ("failed", "ProgressDeadlineExceeded")
    assert "timed out" in result.message


def test_a_deployment_without_spec_replicas_wants_one_replica():
    one = patched(deployment(1), spec__replicas=_DELETE)
    assert builtin_readiness(one).ready
    assert builtin_readiness(patched(one, status__availableReplicas=0)).state == "waiting"


def test_without_a_progress_deadline_no_progressing_condition_is_needed():
    # the controller writes Progressing only when progressDeadlineSeconds is set
    dep = patched(
        deployment(),
        spec__progressDeadlineSeconds=_DELETE,
        status__conditions=[cond("Available", reason="MinimumReplicasAvailable")],
    )
    assert builtin_readiness(dep).ready


def test_a_custom_resource_named_deployment_is_judged_by_the_generic_rule():
    custom = obj("example.com/v1", "Deployment", "web")
    assert builtin_readiness(custom).ready


# -- StatefulSet --------------------------------------------------------------------------------


def test_a_fully_rolled_out_statefulset_is_ready():
    assert builtin_readiness(statefulset()).ready


@pytest.mark.parametrize(
    ("changes", "reason", "detail"),
    [
        ({"status__replicas": 1}, "ReplicasNotCreated", "1 of 3 replicas created"),
        ({"status__readyReplicas": 1}, "ReplicasNotReady", "1 of 3 replicas ready"),
        ({"status__availableReplicas": 2}, "ReplicasNotAvailable", "2 of 3 replicas available"),
        ({"status__replicas": 5}, "ExtraReplicas", "2 replicas pending termination"),
        ({"status__updatedReplicas": 1}, "ReplicasNotUpdated", "1 of 3 replicas updated"),
        ({"status__currentReplicas": 2}, "ReplicasNotCurrent", "2 of 3 replicas"),
        ({"status__updateRevision": "db-2"}, "RevisionMismatch", "db-1 is not updateRevision db-2"),
        ({"status__observedGeneration": _DELETE}, "GenerationNotObserved", "not reported status"),
    ],
)
def test_a_statefulset_still_rolling_out_waits_with_the_numbers(changes, reason, detail):
    result = builtin_readiness(patched(statefulset(), **changes))
    assert (result.state, result.reason) == ("waiting", reason)
    assert result.message.startswith("StatefulSet default/db: ")
    assert detail in result.message


def test_a_partitioned_statefulset_needs_only_the_replicas_above_the_partition_updated():
    part = patched(
        statefulset(3),
        spec__updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
        status__updateRevision="db-2",
        status__currentReplicas=2,
        status__updatedReplicas=1,
    )
    assert builtin_readiness(part).ready
    waiting = builtin_readiness(patched(part, status__updatedReplicas=0))
    assert (waiting.state, waiting.reason) == ("waiting", "PartitionRollout")
    assert "0 of 1 replicas updated (partition 2)" in waiting.message


def test_an_on_delete_statefulset_needs_ready_replicas_but_not_matching_revisions():
    on_delete = patched(
        statefulset(), spec__updateStrategy={"type": "OnDelete"}, status__updateRevision="db-2"
    )
    assert builtin_readiness(on_delete).ready
    assert builtin_readiness(patched(on_delete, status__readyReplicas=2)).state == "waiting"


# -- DaemonSet, ReplicaSet ----------------------------------------------------------------------


def test_a_daemonset_with_every_pod_updated_and_available_is_ready():
    assert builtin_readiness(daemonset()).ready


@pytest.mark.parametrize(
    ("field", "reason", "detail"),
    [
        ("currentNumberScheduled", "PodsNotScheduled", "3 of 4 pods scheduled"),
        ("updatedNumberScheduled", "PodsNotUpdated", "3 of 4 pods updated"),
        ("numberAvailable", "PodsNotAvailable", "3 of 4 pods available"),
        ("numberReady", "PodsNotReady", "3 of 4 pods ready"),
    ],
)
def test_a_daemonset_short_of_pods_waits_with_the_numbers(field, reason, detail):
    result = builtin_readiness(patched(daemonset(), **{f"status__{field}": 3}))
    assert result == Readiness("waiting", reason, f"DaemonSet kube-system/agent: {detail}")


def test_a_daemonset_whose_controller_has_not_reported_waits():
    assert builtin_readiness(
        patched(daemonset(), status__desiredNumberScheduled=_DELETE)
    ).reason == ("NoDesiredNumber")
    unobserved = patched(daemonset(), status__observedGeneration=_DELETE)
    assert builtin_readiness(unobserved).reason == "GenerationNotObserved"


def test_a_replicaset_is_ready_only_with_all_replicas_available():
    rs = obj(
        "apps/v1",
        "ReplicaSet",
        "web-1",
        metadata={"name": "web-1", "namespace": "default", "generation": 1},
        spec={"replicas": 2},
        status={
            "observedGeneration": 1,
            "replicas": 2,
            "fullyLabeledReplicas": 2,
            "readyReplicas": 2,
            "availableReplicas": 2,
        },
    )
    assert builtin_readiness(rs).ready
    short = builtin_readiness(patched(rs, status__availableReplicas=1))
    assert (short.reason, short.message) == (
        "ReplicasNotAvailable",
        "ReplicaSet default/web-1: 1 of 2 replicas available",
    )
    failing = patched(rs, status__conditions=[cond("ReplicaFailure", reason="FailedCreate")])
    assert builtin_readiness(failing).reason == "FailedCreate"


# -- Job, CronJob -------------------------------------------------------------------------------


def test_a_failed_job_fails_with_the_jobs_reason_and_message():
    failed = job(
        cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the backoff limit")
    )
    result = builtin_readiness(failed)
    assert (result.state, result.reason) == ("failed", "BackoffLimitExceeded")
    assert result.message.startswith("Job default/migrate: ")
    assert "Job has reached the backoff limit" in result.message


def test_a_job_marked_failure_target_has_already_failed():
    result = builtin_readiness(job(cond("FailureTarget", reason="BackoffLimitExceeded")))
    assert result.state == "failed"


@pytest.mark.parametrize("type_", ["Complete", "SuccessCriteriaMet"])
def test_a_complete_job_is_ready(type_):
    assert builtin_readiness(job(cond(type_), succeeded=1)).ready


def test_a_running_job_waits_and_reports_its_progress():
    result = builtin_readiness(job(active=1, failed=1, startTime="2026-01-01T00:00:00Z"))
    assert result == Readiness(
        "waiting",
        "JobNotComplete",
        "Job default/migrate: 0 of 1 completions succeeded (1 active, 1 failed)",
    )


def test_a_suspended_job_waits():
    assert builtin_readiness(job(cond("Suspended"))).reason == "JobSuspended"


def test_a_cronjob_is_ready_once_it_exists():
    assert builtin_readiness(obj("batch/v1", "CronJob", "nightly")).ready


# -- Pod ----------------------------------------------------------------------------------------


def test_a_ready_pod_is_ready():
    assert builtin_readiness(pod("Running", cond("Ready"))).ready


def test_a_succeeded_pod_is_ready_and_a_failed_pod_has_failed():
    assert builtin_readiness(pod("Succeeded")).ready
    failed = builtin_readiness(pod("Failed", message="OOMKilled"))
    assert (failed.state, failed.reason) == ("failed", "PodFailed")
    assert "OOMKilled" in failed.message


@pytest.mark.parametrize(
    "reason",
    [
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "CreateContainerConfigError",
        "InvalidImageName",
    ],
)
@pytest.mark.parametrize("statuses", ["containerStatuses", "initContainerStatuses"])
def test_a_container_stuck_in_a_hopeless_state_fails_the_pod(reason, statuses):
    stuck = pod(
        "Running" if statuses == "containerStatuses" else "Pending",
        cond("Ready", "False", "ContainersNotReady"),
        **{
            statuses: [
                {"name": "app", "state": {"waiting": {"reason": reason, "message": "back-off"}}}
            ]
        },
    )
    result = builtin_readiness(stuck)
    assert (result.state, result.reason) == ("failed", reason)
    assert result.message == f"Pod default/web-0: container app is in {reason}: back-off"


def test_a_container_that_is_merely_creating_keeps_the_pod_waiting():
    creating = pod(
        "Pending",
        containerStatuses=[{"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}}],
    )
    assert builtin_readiness(creating).state == "waiting"


@pytest.mark.parametrize(
    ("the_pod", "reason"),
    [
        (pod("Running", cond("Ready", "False", "ContainersNotReady")), "PodNotReady"),
        (
            pod("Pending", cond("PodScheduled", "False", "Unschedulable", "0/3 nodes")),
            "Unschedulable",
        ),
        (pod(""), "PodNotObserved"),
    ],
)
def test_a_pod_not_yet_ready_waits(the_pod, reason):
    result = builtin_readiness(the_pod)
    assert (result.state, result.reason) == ("waiting", reason)


# -- other built-in kinds -----------------------------------------------------------------------


def test_a_claim_is_ready_once_bound():
    claim = obj("v1", "PersistentVolumeClaim", "data", status={"phase": "Bound"})
    assert builtin_readiness(claim).ready
    pending = builtin_readiness(patched(claim, status__phase="Pending"))
    assert pending == Readiness(
        "waiting", "NotBound", "PersistentVolumeClaim default/data: phase Pending, not Bound"
    )


def test_a_load_balancer_service_waits_for_its_address():
    lb = obj("v1", "Service", "web", spec={"type": "LoadBalancer", "clusterIP": "10.0.0.1"})
    assert builtin_readiness(lb).reason == "LoadBalancerPending"
    served = patched(lb, status__loadBalancer={"ingress": [{"ip": "203.0.113.7"}]})
    assert builtin_readiness(served).ready
    assert builtin_readiness(obj("v1", "Service", "web", spec={"type": "ClusterIP"})).ready


def test_a_namespace_is_ready_when_active_and_named_without_a_slash():
    ns = obj("v1", "Namespace", "team-a", namespace=None, status={"phase": "Active"})
    assert builtin_readiness(ns).ready
    terminating = builtin_readiness(patched(ns, status__phase="Terminating"))
    assert terminating == Readiness("waiting", "Terminating", "Namespace team-a: phase Terminating")


def test_a_pod_disruption_budget_waits_for_enough_healthy_pods():
    pdb = obj(
        "policy/v1",
        "PodDisruptionBudget",
        "web",
        metadata={"name": "web", "namespace": "default", "generation": 1},
        status={"observedGeneration": 1, "currentHealthy": 1, "desiredHealthy": 2},
    )
    assert builtin_readiness(pdb) == Readiness(
        "waiting",
        "InsufficientHealthyPods",
        "PodDisruptionBudget default/web: 1 of 2 pods healthy",
    )
    assert builtin_readiness(patched(pdb, status__currentHealthy=2)).ready
    unobserved = patched(pdb, status__currentHealthy=2, status__observedGeneration=_DELETE)
    assert builtin_readiness(unobserved).state == "waiting"


def test_a_crd_is_ready_once_established_with_its_names_accepted():
    crd = obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "webapps.demo.io",
        namespace=None,
        status={"conditions": [cond("NamesAccepted"), cond("Established")]},
    )
    assert builtin_readiness(crd).ready
    installing = patched(
        crd, status__conditions=[cond("NamesAccepted"), cond("Established", "False", "Installing")]
    )
    assert builtin_readiness(installing).state == "waiting"
    clash = patched(
        crd, status__conditions=[cond("NamesAccepted", "False", "ListKindConflict", "taken")]
    )
    assert builtin_readiness(clash) == Readiness(
        "failed",
        "ListKindConflict",
        "CustomResourceDefinition webapps.demo.io: "
        "NamesAccepted is False (ListKindConflict): taken",
    )


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "ServiceAccount"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("networking.k8s.io/v1", "Ingress"),
    ],
)
def test_kinds_without_a_rollout_are_ready_once_they_exist(api_version, kind):
    assert builtin_readiness(obj(api_version, kind)).ready


# -- any other kind -----------------------------------------------------------------------------


def widget(*conditions: dict[str, str], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "demo.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "apps", "generation": 4},
        "status": {"conditions": list(conditions), **status},
    }


def test_a_custom_resource_without_conditions_is_ready_once_it_exists():
    assert builtin_readiness(widget()).ready


def test_a_custom_resource_is_judged_by_its_ready_condition_when_it_has_one():
    assert builtin_readiness(widget(cond("Ready"))).ready
    not_ready = builtin_readiness(widget(cond("Ready", "False", "Provisioning", "disk 2 of 3")))
    assert not_ready == Readiness(
        "waiting", "Provisioning", "Widget apps/w: Ready is False (Provisioning): disk 2 of 3"
    )


def test_stalled_fails_and_reconciling_waits_whatever_ready_says():
    stalled = builtin_readiness(widget(cond("Ready"), cond("Stalled", reason="QuotaExceeded")))
    assert (stalled.state, stalled.reason) == ("failed", "QuotaExceeded")
    reconciling = builtin_readiness(widget(cond("Ready"), cond("Reconciling", reason="Scaling")))
    assert (reconciling.state, reconciling.reason) == ("waiting", "Scaling")


def test_a_custom_resource_with_a_stale_status_waits():
    stale = builtin_readiness(widget(cond("Ready"), observedGeneration=3))
    assert stale == Readiness(
        "waiting",
        "GenerationNotObserved",
        "Widget apps/w: generation 4 not observed yet (observedGeneration 3)",
    )


# -- condition, exists and subsystem rules ------------------------------------------------------


def test_a_condition_rule_holds_when_type_status_and_reason_match():
    w = widget(cond("Synced", "True", "UpToDate"))
    assert condition_readiness(w, "Synced").ready
    assert condition_readiness(w, "Synced", "True", "UpToDate").ready
    assert condition_readiness(widget(cond("Degraded", "False")), "Degraded", "False").ready


def test_a_condition_rule_that_does_not_hold_waits_and_shows_the_condition():
    w = widget(cond("Synced", "False", "Conflict", "field owned by kubectl"))
    result = condition_readiness(w, "Synced")
    assert result == Readiness(
        "waiting",
        "Conflict",
        "Widget apps/w: Synced is False (Conflict): field owned by kubectl (want True)",
    )
    wrong_reason = condition_readiness(
        widget(cond("Synced", "True", "Partial")), "Synced", "True", "UpToDate"
    )
    assert wrong_reason.state == "waiting"
    assert "want True (UpToDate)" in wrong_reason.message


def test_a_missing_or_stale_condition_does_not_hold():
    assert condition_readiness(widget(), "Synced").reason == "ConditionMissing"
    stale = widget({**cond("Synced"), "observedGeneration": 3})
    assert condition_readiness(stale, "Synced").reason == "ConditionStale"
    assert condition_readiness(None, "Synced", ref="Widget apps/w").reason == "NotFound"


def test_the_exists_rule_holds_for_any_existing_object():
    assert exists_readiness(widget(cond("Ready", "False"))).ready
    assert exists_readiness(None).state == "waiting"


def oper8_child(version: str, ready: str, updating: str, reconciled: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [cond("Ready", ready, "Stable"), cond("Updating", updating, "Stable")]
    }
    if reconciled is not None:
        status["versions"] = {"reconciled": reconciled}
    return {
        "apiVersion": "demo.io/v1",
        "kind": "Database",
        "metadata": {"name": "db", "namespace": "apps"},
        "spec": {"version": version},
        "status": status,
    }


def test_a_subsystem_is_ready_when_stable_at_the_wanted_version():
    assert subsystem_readiness(oper8_child("1.2", "True", "False", "1.2"), "1.2").ready


@pytest.mark.parametrize(
    ("ready", "updating", "reconciled", "reason"),
    [
        ("False", "False", "1.2", "Stable"),
        ("True", "True", "1.2", "Stable"),
        ("True", "False", "1.1", "VersionNotReconciled"),
        ("True", "False", None, "VersionNotReconciled"),
    ],
)
def test_a_subsystem_not_stable_at_the_wanted_version_waits(ready, updating, reconciled, reason):
    result = subsystem_readiness(oper8_child("1.2", ready, updating, reconciled), "1.2")
    assert (result.state, result.reason) == ("waiting", reason)
    assert result.message.startswith("Database apps/db: ")


def test_a_subsystem_rule_without_a_version_ignores_the_reconciled_version():
    assert subsystem_readiness(oper8_child("1.2", "True", "False", "0.9"), None).ready


def test_a_subsystem_reads_the_status_oper8d_itself_writes():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    child = oper8_child("1.2", "True", "False", None)
    child["status"] = status_mod.completion_status(
        {},
        status_mod.CompletionSummary(all_components=("a",), deployed=("a",), verified=("a",)),
        version="1.2",
        generation=1,
        now=now,
        kind="Database",
        operator_version=None,
        projected={},
    )
    child["metadata"]["generation"] = 1
    assert subsystem_readiness(child, "1.2").ready
    assert not subsystem_readiness(child, "1.3").ready


# -- combine ------------------------------------------------------------------------------------

READY = Readiness("ready", "Ready", "a: fine")
WAITING = Readiness("waiting", "ReplicasNotReady", "b: 1 of 2 replicas ready")
FAILED = Readiness("failed", "JobFailed", "c: job failed")


def test_failed_beats_waiting_beats_ready():
    assert combine([READY, WAITING]).state == "waiting"
    assert combine([WAITING, FAILED, READY]) == Readiness(
        "failed", "JobFailed", "c: job failed; b: 1 of 2 replicas ready"
    )
    assert combine([READY, READY]) == Readiness("ready", "Ready", "a: fine")


def test_combining_nothing_is_ready():
    assert combine([]).state == "ready"


readiness = st.builds(
    Readiness,
    st.sampled_from(["ready", "waiting", "failed"]),
    st.sampled_from(["A", "B", "C"]),
    st.text(alphabet="xyz: ", max_size=6),
)
RANK = {"ready": 0, "waiting": 1, "failed": 2}


@given(st.lists(readiness, min_size=1))
def test_combined_state_is_the_worst_state_whatever_the_order(results):
    worst = max(results, key=lambda r: RANK[r.state]).state
    assert combine(results).state == worst
    assert combine(reversed(results)).state == worst


@given(st.lists(readiness), st.lists(readiness))
def test_combine_is_associative_in_state(left, right):
    assert combine([combine(left), combine(right)]).state == combine(left + right).state


@given(st.lists(readiness, min_size=1))
def test_every_message_of_the_worst_state_is_shown(results):
    combined = combine(results)
    for r in results:
        if r.state == combined.state and r.message:
            assert r.message in combined.message
