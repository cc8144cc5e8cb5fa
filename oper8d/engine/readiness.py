"""The verdict on a live object (``Readiness``), ``combine``, and the readers the rules share.

``engine.verify`` (the readiness rules a bundle names) and ``engine.readiness_kinds`` (the
built-in rule of each kind) build their verdicts with the helpers here; those are
underscored because nothing outside these three modules uses them. Objects are plain dicts
as the API server returns them; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeGuard

from oper8d.kinds import ref_of
from oper8d.objects import ObjView

__all__ = ["Readiness", "State", "combine"]

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
        # (a dict by its type first: the check against the Mapping ABC is slow, and
        # every readiness rule reads several fields of every object)
        if type(cur) is not dict and not isinstance(cur, Mapping):
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
        if (type(cond) is dict or isinstance(cond, Mapping)) and cond.get("type") == type_:
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
