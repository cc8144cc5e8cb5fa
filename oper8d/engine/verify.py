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
Objects are plain dicts as the API server returns them; nothing here does I/O. The rule of
each kind is in ``engine.readiness_kinds``; ``Readiness`` and ``combine`` in ``engine.readiness``.
"""

from __future__ import annotations

from oper8d.engine.readiness import (
    Readiness,
    _condition,
    _explain,
    _get,
    _is_true,
    _lifecycle,
    _not_found,
    _ready,
    _standard_conditions,
    _waiting,
    combine,
)
from oper8d.engine.readiness_kinds import REQUIRE_OBSERVED, RULES, generic_rule
from oper8d.kinds import group_of
from oper8d.objects import ObjView

__all__ = [
    "Readiness",
    "builtin_readiness",
    "combine",
    "condition_readiness",
    "exists_readiness",
    "subsystem_readiness",
]


def builtin_readiness(obj: ObjView | None, *, ref: str | None = None) -> Readiness:
    """The kind's built-in readiness (the bundle's ``readyWhen: builtin``).

    ``ref`` names the object in the message when it does not exist (``obj`` is None).
    """
    if obj is None:
        return _not_found(ref)
    group = group_of(str(obj.get("apiVersion") or ""))
    kind = str(obj.get("kind") or "")
    rule = RULES.get((group, kind), generic_rule)
    require_observed = rule is not generic_rule and kind in REQUIRE_OBSERVED
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
