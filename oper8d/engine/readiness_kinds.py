"""The built-in readiness rule of each Kubernetes kind, at least as strict as kstatus.

Used by ``engine.verify.builtin_readiness`` (the bundle's ``readyWhen: builtin``), which
first applies the checks every kind shares (deletion, observedGeneration, the kstatus
Stalled/Reconciling conditions). The rules follow kstatus (sigs.k8s.io/cli-utils
pkg/kstatus/status) and are stricter where oper8 is; ``engine.verify`` sums them up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from oper8d.engine.readiness import (
    Readiness,
    _condition,
    _explain,
    _failed,
    _get,
    _int,
    _is_true,
    _ready,
    _waiting,
)
from oper8d.objects import ObjView

__all__ = ["REQUIRE_OBSERVED", "RULES", "Rule", "generic_rule"]


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
        # the pods cannot be created (a label or quota the API server refuses): say why,
        # from the condition the Deployment controller copies from its ReplicaSet
        failure = _condition(obj, "ReplicaFailure")
        if _is_true(failure):
            return _waiting(obj, failure.get("reason") or "ReplicaFailure", _explain(failure))
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


#: (status field, reason, what) counts that must reach the desired number, checked in order
Counts = tuple[tuple[str, str, str], ...]
_DAEMONSET_COUNTS: Counts = (
    ("currentNumberScheduled", "PodsNotScheduled", "scheduled"),
    ("updatedNumberScheduled", "PodsNotUpdated", "updated"),
    ("numberAvailable", "PodsNotAvailable", "available"),
    ("numberReady", "PodsNotReady", "ready"),
)
_REPLICASET_COUNTS: Counts = (
    ("fullyLabeledReplicas", "ReplicasNotLabeled", "labeled"),
    ("availableReplicas", "ReplicasNotAvailable", "available"),
    ("readyReplicas", "ReplicasNotReady", "ready"),
)


def _first_short(obj: ObjView, want: int, noun: str, counts: Counts) -> Readiness | None:
    """Waiting on the first ``(status field, reason, what)`` count below ``want``
    (``2 of 3 pods ready``); None when every count reaches it."""
    for field, reason, what in counts:
        have = _int(obj, "status", field)
        if have < want:
            return _waiting(obj, reason, f"{have} of {want} {noun} {what}")
    return None


def _daemonset(obj: ObjView) -> Readiness:
    desired = _get(obj, "status", "desiredNumberScheduled")
    if not isinstance(desired, int):
        return _waiting(obj, "NoDesiredNumber", "status.desiredNumberScheduled not reported yet")
    short = _first_short(obj, desired, "pods", _DAEMONSET_COUNTS)
    return short or _ready(obj, f"{desired} of {desired} pods available")


def _replicaset(obj: ObjView) -> Readiness:
    failure = _condition(obj, "ReplicaFailure")
    if _is_true(failure):
        return _waiting(obj, failure.get("reason") or "ReplicaFailure", _explain(failure))
    want = _int(obj, "spec", "replicas", default=1)
    short = _first_short(obj, want, "replicas", _REPLICASET_COUNTS)
    if short is not None:
        return short
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


def generic_rule(obj: ObjView) -> Readiness:
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
RULES: Mapping[tuple[str, str], Rule] = MappingProxyType(
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
REQUIRE_OBSERVED = frozenset(
    {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "PodDisruptionBudget"}
)
