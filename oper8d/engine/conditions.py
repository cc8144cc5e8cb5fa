"""The CR's conditions: oper8's Ready and Updating, and the kstatus conditions derived from them.

Used by ``engine.status`` and ``engine.outcome`` (which decide the conditions of each
reconcile step) and, through them, by the reconciler and the runtime. Conditions follow the
Kubernetes convention: ``lastTransitionTime`` changes only when the status value does,
``observedGeneration`` says which spec they are about. The status value of Ready and Updating
follows from the reason (``ready_condition`` / ``updating_condition``), so no caller can pair
them wrongly:

* ``Ready``: True iff its reason is ``Stable``.
* ``Updating``: False iff its reason is ``Stable``, ``ClusterError`` or ``Errored``.

kstatus (kubectl wait, Argo CD, Flux, cli-utils) ignores ``Ready`` on custom resources and
reads the abnormal-true conditions instead, so every status step also derives them from
Ready (same lastTransitionTime and observedGeneration rules):

* ``Stalled``: True when Ready is ``ConfigError`` or ``Errored`` (waiting will not help);
* ``Reconciling``: True while the rollout is in progress: Ready neither Stable nor
  stalled (Initializing, InProgress; Updating says why, ClusterError included: it is
  retried). False once Stable or stalled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from oper8d.clock import rfc3339
from oper8d.logs import redact

__all__ = [
    "READY",
    "RECONCILING",
    "STALLED",
    "UPDATING",
    "Condition",
    "ReadyReason",
    "UpdatingReason",
    "get_condition",
    "kstatus_conditions",
    "ready_condition",
    "set_condition",
    "updating_condition",
    "with_conditions",
    "with_kstatus_conditions",
]

READY = "Ready"
UPDATING = "Updating"
#: kstatus's abnormal-true conditions, derived from Ready/Updating
RECONCILING = "Reconciling"
STALLED = "Stalled"

#: longest condition message we write; metav1.Condition allows 32768, kept well below
_MAX_MESSAGE = 4096


class ReadyReason(StrEnum):
    STABLE = "Stable"
    INITIALIZING = "Initializing"
    IN_PROGRESS = "InProgress"
    CONFIG_ERROR = "ConfigError"
    ERRORED = "Errored"
    #: the CR is being deleted and its teardown waits (``engine.teardown``)
    DELETING = "Deleting"


class UpdatingReason(StrEnum):
    STABLE = "Stable"
    PRECONDITION_WAIT = "PreconditionWait"
    VERIFY_WAIT = "VerifyWait"
    CLUSTER_ERROR = "ClusterError"
    ERRORED = "Errored"
    VERSION_CHANGE = "VersionChange"
    DELETION_WAIT = "DeletionWait"


_UPDATING_FALSE = frozenset(
    {UpdatingReason.STABLE, UpdatingReason.CLUSTER_ERROR, UpdatingReason.ERRORED}
)


@dataclass(frozen=True)
class Condition:
    """A condition to write: its status value follows from its reason (see the helpers)."""

    type: str
    status: bool
    reason: str
    message: str


def ready_condition(reason: ReadyReason | str, message: str) -> Condition:
    """The Ready condition; True iff ``reason`` is Stable. Unknown reasons raise ValueError."""
    reason = ReadyReason(reason)
    return Condition(READY, reason is ReadyReason.STABLE, str(reason), _clip(message))


def updating_condition(reason: UpdatingReason | str, message: str) -> Condition:
    """The Updating condition; False iff ``reason`` is Stable, ClusterError or Errored."""
    reason = UpdatingReason(reason)
    return Condition(UPDATING, reason not in _UPDATING_FALSE, str(reason), _clip(message))


def _clip(message: str) -> str:
    # masked before it is cut, so no part of a sensitive value survives the cut
    message = redact(message)
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 1] + "…"


def get_condition(status: Mapping[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """The condition of ``type_`` in ``status.conditions``, or None."""
    for cond in (status or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return dict(cond)
    return None


def set_condition(
    status: Mapping[str, Any] | None,
    type_: str,
    status_value: bool,
    reason: str,
    message: str,
    *,
    now: datetime,
    observed_generation: int | None,
) -> dict[str, Any]:
    """A new status with condition ``type_`` set. ``lastTransitionTime`` is kept when the
    status value ("True"/"False") is unchanged and becomes ``now`` otherwise. The
    condition keeps its place in the list (new ones go last); other keys an older
    writer left on it (oper8's ``lastTransactionTime``) are dropped.

    ``status`` is not changed. The result is a new dict with a new ``conditions`` list;
    its other values, and the conditions it leaves as they were, are the input's own (a
    status is replaced, never changed in place, so sharing them is safe and spares a deep
    copy of the whole status per condition). A test holds it to the call on a deep copy."""
    new = dict(status or {})
    value = "True" if status_value else "False"
    conditions = [c for c in new.get("conditions") or () if isinstance(c, Mapping)]
    index = next((i for i, c in enumerate(conditions) if c.get("type") == type_), None)
    old = conditions[index] if index is not None else None
    if old is not None and old.get("status") == value and old.get("lastTransitionTime"):
        since = old["lastTransitionTime"]
    else:
        since = rfc3339(now)
    cond: dict[str, Any] = {
        "type": type_,
        "status": value,
        "reason": str(reason),
        "message": message,
        "lastTransitionTime": since,
    }
    if observed_generation is not None:
        cond["observedGeneration"] = observed_generation
    if index is None:
        conditions.append(cond)
    else:
        conditions[index] = cond
        # a type appears once; drop duplicates an earlier writer may have left
        conditions = [c for i, c in enumerate(conditions) if i == index or c.get("type") != type_]
    new["conditions"] = conditions
    return new


def with_conditions(
    status: Mapping[str, Any] | None,
    *conditions: Condition,
    now: datetime,
    observed_generation: int | None,
) -> dict[str, Any]:
    """``set_condition`` for each of ``conditions``, in order (``status`` is not changed)."""
    new = dict(status or {})
    for c in conditions:
        new = set_condition(
            new,
            c.type,
            c.status,
            c.reason,
            c.message,
            now=now,
            observed_generation=observed_generation,
        )
    return new


def kstatus_conditions(status: Mapping[str, Any]) -> tuple[Condition, Condition] | None:
    """``Reconciling`` and ``Stalled`` as they follow from the status's Ready and Updating
    conditions (see this module's docstring), or None without a Ready condition."""
    ready = get_condition(status, READY)
    if ready is None:
        return None
    updating = get_condition(status, UPDATING) or {}
    ready_reason = str(ready.get("reason") or "")
    stalled = ready_reason in (ReadyReason.CONFIG_ERROR, ReadyReason.ERRORED)
    in_progress = not stalled and ready_reason != ReadyReason.STABLE
    if in_progress and updating.get("reason") not in (None, UpdatingReason.STABLE):
        # Updating says what the rollout is doing or waiting for
        why, message = str(updating["reason"]), str(updating.get("message") or "")
    else:
        why, message = ready_reason, str(ready.get("message") or "")
    return (
        Condition(RECONCILING, in_progress, why, message if in_progress else ""),
        Condition(STALLED, stalled, ready_reason, message if stalled else ""),
    )


def with_kstatus_conditions(
    status: dict[str, Any], *, now: datetime, observed_generation: int | None
) -> dict[str, Any]:
    derived = kstatus_conditions(status)
    if derived is None:
        return status
    return with_conditions(status, *derived, now=now, observed_generation=observed_generation)
