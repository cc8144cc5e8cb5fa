"""Readiness of live Kubernetes objects, at least as strict as kstatus.

The rollout's verify phase (``engine.rollout``) asks, for every object a component
deployed, whether it is *ready*, still *waiting*, or has *failed* (a failed Job, a
container in CrashLoopBackOff: waiting longer will not help). The rules:

* every kind: ``metadata.deletionTimestamp`` set -> waiting (Terminating);
  ``status.observedGeneration`` present and different from ``metadata.generation``
  -> waiting (the controller has not seen the latest spec); the kstatus conditions
  ``Stalled=True`` -> failed and ``Reconciling=True`` -> waiting.
* workload kinds whose controllers always write ``observedGeneration`` (Deployment,
  StatefulSet, DaemonSet, ReplicaSet, PodDisruptionBudget) wait until it is there.
* per-kind rules follow kstatus (sigs.k8s.io/cli-utils pkg/kstatus/status) and are
  stricter where oper8 is: a Job must complete, a Pod must be Ready, a LoadBalancer
  Service needs an address, a Deployment must report ``Available=True``.
* any other kind: a ``Ready`` condition decides when present; otherwise it is ready
  once it exists.

Every non-ready result names the object (``Kind ns/name``) and the numbers behind it.
Objects are plain dicts as the API server returns them; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeGuard

from oper8d.kinds import group_of, ref_of
from oper8d.objects import ObjView

__all__ = [
    "Readiness",
    "builtin_readiness",
    "combine",
    "condition_readiness",
    "exists_readiness",
    "subsystem_readiness",
]

State = Literal["ready", "waiting", "failed"]


@dataclass(frozen=True)
class Readiness:
    """The verdict on one object (or, after ``combine``, on several)."""

    state: State
    reason: str  # short CamelCase, e.g. "ReplicasNotAvailable", "JobFailed", "NotFound"
    message: (
        str  # a sentence naming the object: "Deployment default/web: 1 of 3 replicas available"
    )

    @property
    def ready(self) -> bool:
        return self.state == "ready"


# -- small readers over plain dicts ----------------------------------------------------------


def _get(obj: ObjView, *path: str) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _int(obj: ObjView, *path: str, default: int = 0) -> int:
    value = _get(obj, *path)
    # bool is an int in Python but never a count in Kubernetes
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def _condition(obj: ObjView, type_: str) -> Mapping[str, Any] | None:
    for cond in _get(obj, "status", "conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return None


def _is_true(cond: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    return cond is not None and cond.get("status") == "True"


def _explain(cond: Mapping[str, Any]) -> str:
    """``Ready is False (Reason): message`` for a condition."""
    text = f"{cond.get('type')} is {cond.get('status', 'Unknown')}"
    if cond.get("reason"):
        text += f" ({cond['reason']})"
    if cond.get("message"):
        text += f": {cond['message']}"
    return text


def _ready(obj: ObjView, detail: str, reason: str = "Ready") -> Readiness:
    return Readiness("ready", reason, f"{ref_of(dict(obj))}: {detail}")


def _waiting(obj: ObjView, reason: str, detail: str) -> Readiness:
    return Readiness("waiting", reason, f"{ref_of(dict(obj))}: {detail}")


def _failed(obj: ObjView, reason: str, detail: str) -> Readiness:
    return Readiness("failed", reason, f"{ref_of(dict(obj))}: {detail}")


def _not_found(ref: str | None) -> Readiness:
    return Readiness("waiting", "NotFound", f"{ref or 'object'}: does not exist yet")


# -- checks shared by every kind --------------------------------------------------------------


def _lifecycle(obj: ObjView, *, require_observed: bool = False) -> Readiness | None:
    """Deletion in progress, or a spec the object's controller has not observed yet."""
    if _get(obj, "metadata", "deletionTimestamp"):
        return _waiting(obj, "Terminating", "being deleted (metadata.deletionTimestamp is set)")
    generation = _get(obj, "metadata", "generation")
    observed = _get(obj, "status", "observedGeneration")
    if observed is None:
        if require_observed:
            return _waiting(
                obj, "GenerationNotObserved", "its controller has not reported status yet"
            )
        return None
    # kstatus compares with !=, not <: a mismatch either way means the status is stale
    if generation is not None and observed != generation:
        return _waiting(
            obj,
            "GenerationNotObserved",
            f"generation {generation} not observed yet (observedGeneration {observed})",
        )
    return None


def _standard_conditions(obj: ObjView) -> Readiness | None:
    """kstatus's abnormal-true conditions: Stalled -> failed, Reconciling -> waiting."""
    stalled = _condition(obj, "Stalled")
    if _is_true(stalled):
        return _failed(obj, stalled.get("reason") or "Stalled", _explain(stalled))
    reconciling = _condition(obj, "Reconciling")
    if _is_true(reconciling):
        return _waiting(obj, reconciling.get("reason") or "Reconciling", _explain(reconciling))
    return None


# -- per-kind rules ---------------------------------------------------------------------------


def _deployment(obj: ObjView) -> Readiness:
    want = _int(obj, "spec", "replicas", default=1)
    replicas = _int(obj, "status", "replicas")
    updated = _int(obj, "status", "updatedReplicas")
    ready = _int(obj, "status", "readyReplicas")
    available = _int(obj, "status", "availableReplicas")
    progressing = _condition(obj, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return _failed(obj, "ProgressDeadlineExceeded", _explain(progressing))
    if _get(obj, "spec", "paused") is True:
        # kstatus reports a paused Deployment InProgress (Progressing=Unknown DeploymentPaused)
        return _waiting(
            obj, "DeploymentPaused", "rollout is paused (spec.paused); resume it to continue"
        )
    if replicas < want:
        return _waiting(obj, "ReplicasNotCreated", f"{replicas} of {want} replicas created")
    if updated != want:
        return _waiting(obj, "ReplicasNotUpdated", f"{updated} of {want} replicas updated")
    if replicas > updated:
        return _waiting(
            obj, "OldReplicasTerminating", f"{replicas - updated} old replicas pending termination"
        )
    if available < want:
        return _waiting(obj, "ReplicasNotAvailable", f"{available} of {want} replicas available")
    if ready < want:
        return _waiting(obj, "ReplicasNotReady", f"{ready} of {want} replicas ready")
    # Without progressDeadlineSeconds the controller never writes Progressing (kstatus).
    if _get(obj, "spec", "progressDeadlineSeconds") is not None and not (
        _is_true(progressing) and progressing.get("reason") == "NewReplicaSetAvailable"
    ):
        detail = _explain(progressing) if progressing else "no Progressing condition yet"
        return _waiting(obj, "NewReplicaSetNotAvailable", detail)
    available_cond = _condition(obj, "Available")
    if not _is_true(available_cond):
        detail = _explain(available_cond) if available_cond else "no Available condition yet"
        return _waiting(obj, "DeploymentNotAvailable", detail)
    return _ready(obj, f"{available} of {want} replicas available")


def _statefulset(obj: ObjView) -> Readiness:
    want = _int(obj, "spec", "replicas", default=1)
    replicas = _int(obj, "status", "replicas")
    ready = _int(obj, "status", "readyReplicas")
    if replicas < want:
        return _waiting(obj, "ReplicasNotCreated", f"{replicas} of {want} replicas created")
    if ready < want:
        return _waiting(obj, "ReplicasNotReady", f"{ready} of {want} replicas ready")
    # availableReplicas exists since Kubernetes 1.22 (minReadySeconds); check it when reported
    available = _get(obj, "status", "availableReplicas")
    if isinstance(available, int) and available < want:
        return _waiting(obj, "ReplicasNotAvailable", f"{available} of {want} replicas available")
    if replicas > want:
        return _waiting(obj, "ExtraReplicas", f"{replicas - want} replicas pending termination")
    if _get(obj, "spec", "updateStrategy", "type") == "OnDelete":
        # pods are replaced only when a user deletes them: revisions do not converge
        return _ready(obj, f"{ready} of {want} replicas ready (OnDelete update strategy)")
    updated = _int(obj, "status", "updatedReplicas")
    partition = _int(obj, "spec", "updateStrategy", "rollingUpdate", "partition")
    if partition > 0:
        need = max(want - partition, 0)
        if updated < need:
            return _waiting(
                obj,
                "PartitionRollout",
                f"{updated} of {need} replicas updated (partition {partition})",
            )
        return _ready(obj, f"{updated} of {need} replicas updated (partition {partition})")
    if updated < want:
        return _waiting(obj, "ReplicasNotUpdated", f"{updated} of {want} replicas updated")
    current = _int(obj, "status", "currentReplicas")
    if current < want:
        return _waiting(
            obj, "ReplicasNotCurrent", f"{current} of {want} replicas at the current revision"
        )
    current_rev = _get(obj, "status", "currentRevision")
    update_rev = _get(obj, "status", "updateRevision")
    if current_rev != update_rev:
        return _waiting(
            obj,
            "RevisionMismatch",
            f"currentRevision {current_rev} is not updateRevision {update_rev} yet",
        )
    return _ready(obj, f"{ready} of {want} replicas ready")


def _daemonset(obj: ObjView) -> Readiness:
    desired = _get(obj, "status", "desiredNumberScheduled")
    if not isinstance(desired, int):
        return _waiting(obj, "NoDesiredNumber", "status.desiredNumberScheduled not reported yet")
    for field, reason, what in (
        ("currentNumberScheduled", "PodsNotScheduled", "scheduled"),
        ("updatedNumberScheduled", "PodsNotUpdated", "updated"),
        ("numberAvailable", "PodsNotAvailable", "available"),
        ("numberReady", "PodsNotReady", "ready"),
    ):
        have = _int(obj, "status", field)
        if have < desired:
            return _waiting(obj, reason, f"{have} of {desired} pods {what}")
    return _ready(obj, f"{desired} of {desired} pods available")


def _replicaset(obj: ObjView) -> Readiness:
    failure = _condition(obj, "ReplicaFailure")
    if _is_true(failure):
        return _waiting(obj, failure.get("reason") or "ReplicaFailure", _explain(failure))
    want = _int(obj, "spec", "replicas", default=1)
    for field, reason, what in (
        ("fullyLabeledReplicas", "ReplicasNotLabeled", "labeled"),
        ("availableReplicas", "ReplicasNotAvailable", "available"),
        ("readyReplicas", "ReplicasNotReady", "ready"),
    ):
        have = _int(obj, "status", field)
        if have < want:
            return _waiting(obj, reason, f"{have} of {want} replicas {what}")
    replicas = _int(obj, "status", "replicas")
    if replicas > want:
        return _waiting(obj, "ExtraReplicas", f"{replicas - want} replicas pending termination")
    return _ready(obj, f"{want} of {want} replicas available")


def _job(obj: ObjView) -> Readiness:
    # FailureTarget precedes Failed (Kubernetes >= 1.31): the Job will fail, pods are stopping
    for type_ in ("Failed", "FailureTarget"):
        cond = _condition(obj, type_)
        if _is_true(cond):
            return _failed(obj, cond.get("reason") or "JobFailed", f"job failed: {_explain(cond)}")
    completions = _int(obj, "spec", "completions", default=1)
    succeeded = _int(obj, "status", "succeeded")
    for type_ in ("Complete", "SuccessCriteriaMet"):
        if _is_true(_condition(obj, type_)):
            return _ready(obj, f"complete, {succeeded} of {completions} completions succeeded")
    if _is_true(_condition(obj, "Suspended")):
        return _waiting(obj, "JobSuspended", "suspended (spec.suspend); it will not complete")
    active = _int(obj, "status", "active")
    failed = _int(obj, "status", "failed")
    return _waiting(
        obj,
        "JobNotComplete",
        f"{succeeded} of {completions} completions succeeded ({active} active, {failed} failed)",
    )


#: container waiting reasons that do not resolve by waiting: the pod needs a fix
_FATAL_WAITING_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "CreateContainerConfigError",
        "InvalidImageName",
    }
)


def _pod(obj: ObjView) -> Readiness:
    phase = _get(obj, "status", "phase") or ""
    if phase == "Succeeded":
        return _ready(obj, "completed successfully")
    if phase == "Failed":
        why = _get(obj, "status", "message") or _get(obj, "status", "reason") or "no reason given"
        return _failed(obj, "PodFailed", f"pod failed: {why}")
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in _get(obj, "status", key) or ():
            if not isinstance(cs, Mapping):
                continue
            waiting = _get(cs, "state", "waiting") or {}
            reason = waiting.get("reason") if isinstance(waiting, Mapping) else None
            if reason in _FATAL_WAITING_REASONS:
                detail = f"container {cs.get('name')} is in {reason}"
                if waiting.get("message"):
                    detail += f": {waiting['message']}"
                return _failed(obj, reason, detail)
    ready = _condition(obj, "Ready")
    if _is_true(ready):
        return _ready(obj, "Ready")
    scheduled = _condition(obj, "PodScheduled")
    if scheduled is not None and scheduled.get("reason") == "Unschedulable":
        return _waiting(obj, "Unschedulable", _explain(scheduled))
    if not phase:
        return _waiting(obj, "PodNotObserved", "no phase reported yet")
    detail = f"phase {phase}, " + (_explain(ready) if ready else "no Ready condition yet")
    return _waiting(obj, "PodNotReady", detail)


def _pvc(obj: ObjView) -> Readiness:
    phase = _get(obj, "status", "phase") or "unknown"
    if phase != "Bound":
        return _waiting(obj, "NotBound", f"phase {phase}, not Bound")
    return _ready(obj, "Bound")


def _service(obj: ObjView) -> Readiness:
    if _get(obj, "spec", "type") == "LoadBalancer" and not _get(
        obj, "status", "loadBalancer", "ingress"
    ):
        return _waiting(
            obj, "LoadBalancerPending", "no load balancer address (status.loadBalancer.ingress)"
        )
    return _ready(obj, "exists")


def _namespace(obj: ObjView) -> Readiness:
    phase = _get(obj, "status", "phase") or "unknown"
    if phase == "Terminating":
        return _waiting(obj, "Terminating", "phase Terminating")
    if phase != "Active":
        return _waiting(obj, "NamespaceNotActive", f"phase {phase}, not Active")
    return _ready(obj, "Active")


def _pdb(obj: ObjView) -> Readiness:
    healthy = _int(obj, "status", "currentHealthy")
    desired = _int(obj, "status", "desiredHealthy")
    if healthy < desired:
        return _waiting(obj, "InsufficientHealthyPods", f"{healthy} of {desired} pods healthy")
    return _ready(obj, f"{healthy} of {desired} pods healthy")


def _crd(obj: ObjView) -> Readiness:
    names = _condition(obj, "NamesAccepted")
    if names is not None and names.get("status") == "False":
        return _failed(obj, names.get("reason") or "NamesNotAccepted", _explain(names))
    established = _condition(obj, "Established")
    if (
        established is not None
        and established.get("status") == "False"
        and established.get("reason") != "Installing"
    ):
        return _failed(obj, established.get("reason") or "NotEstablished", _explain(established))
    if _is_true(established) and _is_true(names):
        return _ready(obj, "Established")
    return _waiting(obj, "Installing", "not Established with names accepted yet")


def _generic(obj: ObjView) -> Readiness:
    ready = _condition(obj, "Ready")
    if ready is None:
        return _ready(obj, "exists", reason="Exists")
    if _is_true(ready):
        return _ready(obj, "Ready")
    return _waiting(obj, ready.get("reason") or "NotReady", _explain(ready))


def _always(obj: ObjView) -> Readiness:
    return _ready(obj, "exists", reason="Exists")


Rule = Callable[[ObjView], Readiness]

#: (API group, kind) -> rule; read-only (no mutable module state)
_RULES: Mapping[tuple[str, str], Rule] = MappingProxyType(
    {
        ("apps", "Deployment"): _deployment,
        ("extensions", "Deployment"): _deployment,
        ("apps", "StatefulSet"): _statefulset,
        ("apps", "DaemonSet"): _daemonset,
        ("extensions", "DaemonSet"): _daemonset,
        ("apps", "ReplicaSet"): _replicaset,
        ("extensions", "ReplicaSet"): _replicaset,
        ("batch", "Job"): _job,
        ("batch", "CronJob"): _always,
        ("", "Pod"): _pod,
        ("", "PersistentVolumeClaim"): _pvc,
        ("", "Service"): _service,
        ("", "Namespace"): _namespace,
        ("", "ConfigMap"): _always,
        ("", "Secret"): _always,
        ("", "ServiceAccount"): _always,
        ("networking.k8s.io", "Ingress"): _always,
        ("extensions", "Ingress"): _always,
        ("policy", "PodDisruptionBudget"): _pdb,
        ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
        ("rbac.authorization.k8s.io", "Role"): _always,
        ("rbac.authorization.k8s.io", "ClusterRole"): _always,
        ("rbac.authorization.k8s.io", "RoleBinding"): _always,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _always,
    }
)

#: kinds whose controllers always write status.observedGeneration: wait until they have
_REQUIRE_OBSERVED = frozenset(
    {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "PodDisruptionBudget"}
)


# -- public rules -----------------------------------------------------------------------------


def builtin_readiness(obj: ObjView | None, *, ref: str | None = None) -> Readiness:
    """The kind's built-in readiness (the bundle's ``readyWhen: builtin``).

    ``ref`` names the object in the message when it does not exist (``obj`` is None).
    """
    if obj is None:
        return _not_found(ref)
    group = group_of(str(obj.get("apiVersion") or ""))
    kind = str(obj.get("kind") or "")
    rule = _RULES.get((group, kind), _generic)
    require_observed = rule is not _generic and kind in _REQUIRE_OBSERVED
    return (
        _lifecycle(obj, require_observed=require_observed) or _standard_conditions(obj) or rule(obj)
    )


def condition_readiness(
    obj: ObjView | None,
    type: str,
    status: str = "True",
    reason: str | None = None,
    *,
    ref: str | None = None,
) -> Readiness:
    """Ready when condition ``type`` has ``status`` (and ``reason``, when given), and the
    condition is not stale: written for the object's current generation."""
    if obj is None:
        return _not_found(ref)
    stale = _lifecycle(obj)
    if stale is not None:
        return stale
    cond = _condition(obj, type)
    if cond is None:
        return _waiting(obj, "ConditionMissing", f"no {type} condition yet (want {status})")
    generation = _get(obj, "metadata", "generation")
    observed = cond.get("observedGeneration")
    if observed is not None and generation is not None and observed != generation:
        return _waiting(
            obj,
            "ConditionStale",
            f"{type} condition is for generation {observed}, object is at {generation}",
        )
    want = f"{status}" + (f" ({reason})" if reason else "")
    if cond.get("status") != status or (reason is not None and cond.get("reason") != reason):
        return _waiting(
            obj, cond.get("reason") or "ConditionNotMet", f"{_explain(cond)} (want {want})"
        )
    return _ready(obj, f"{type} is {want}")


def exists_readiness(obj: ObjView | None, *, ref: str | None = None) -> Readiness:
    """Ready once the object exists and is not being deleted."""
    if obj is None:
        return _not_found(ref)
    if _get(obj, "metadata", "deletionTimestamp"):
        return _waiting(obj, "Terminating", "being deleted (metadata.deletionTimestamp is set)")
    return _ready(obj, "exists", reason="Exists")


def subsystem_readiness(
    obj: ObjView | None, version: str | None, *, ref: str | None = None
) -> Readiness:
    """A child CR managed by an oper8-style operator: ``Ready`` True, ``Updating`` False and
    ``status.versions.reconciled`` equal to ``version`` (not checked when None)."""
    if obj is None:
        return _not_found(ref)
    stale = _lifecycle(obj)
    if stale is not None:
        return stale
    ready = _condition(obj, "Ready")
    if not _is_true(ready):
        detail = _explain(ready) if ready else "no Ready condition yet"
        return _waiting(obj, (ready or {}).get("reason") or "NotReady", detail)
    updating = _condition(obj, "Updating")
    if updating is None or updating.get("status") != "False":
        detail = _explain(updating) if updating else "no Updating condition yet"
        return _waiting(obj, (updating or {}).get("reason") or "Updating", detail)
    reconciled = _get(obj, "status", "versions", "reconciled")
    if version is not None and reconciled != version:
        return _waiting(
            obj,
            "VersionNotReconciled",
            f"reconciled version is {reconciled!r}, want {version!r}",
        )
    return _ready(obj, f"Ready, version {reconciled!r} reconciled", reason="Stable")


_RANK: Mapping[str, int] = MappingProxyType({"ready": 0, "waiting": 1, "failed": 2})


def combine(results: Iterable[Readiness]) -> Readiness:
    """One verdict for several: failed beats waiting beats ready.

    The reason is the first worst result's; the message joins (``"; "``, duplicates
    dropped) the failed results' messages, then the waiting ones' (or, when all are
    ready, every message). No results at all is ready.
    """
    items = list(results)
    if not items:
        return Readiness("ready", "Ready", "")
    worst = max(items, key=lambda r: _RANK[r.state])  # max keeps the first of equals
    if worst.state == "ready":
        shown = items
    else:
        shown = [r for r in items if r.state == "failed"] + [
            r for r in items if r.state == "waiting"
        ]
    messages = list(dict.fromkeys(r.message for r in shown if r.message))
    return Readiness(worst.state, worst.reason, "; ".join(messages))
