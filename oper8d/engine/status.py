"""oper8's status contract on the CR, written in the Kubernetes condition convention.

``engine.reconcile`` calls ``start_status`` before a rollout, ``completion_status``
after it (or ``error_status`` when reconciling stopped before a rollout), writes the
result only when ``status_changed`` says something but a timestamp changed, and asks
``is_stable`` for the requeue decision. All functions are pure: they take the current
status dict and return a new one (the input is never modified); the time is passed in.

Two conditions, as oper8 writes them (kept as they are: see docs/oper8-compat.md): Ready
and Updating. ``engine.conditions`` has their reasons, the status value each reason implies,
and the kstatus conditions derived from them; its names are re-exported here. Unlike oper8
(``lastTransactionTime`` refreshed on every write) each condition carries
``lastTransitionTime``, changed only when its status value changes, and
``observedGeneration``; ``status.observedGeneration`` is set too.

How a rollout's outcome maps to the conditions (a table, and why Ready stays Initializing
until the first successful rollout) is described in ``engine.outcome``, which builds them.

A CR without a version (nothing at the controller's ``versionPath``) is recorded as
the empty version ``""``, so ``versions.reconciled`` still marks the first success.

Messages, waiting reasons and projected fields are written without the reconcile's
sensitive values (``oper8d.logs.redact``): an error may quote a value read from a Secret.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from oper8d.engine.conditions import (
    READY,
    RECONCILING,
    STALLED,
    UPDATING,
    Condition,
    ReadyReason,
    UpdatingReason,
    get_condition,
    kstatus_conditions,
    ready_condition,
    set_condition,
    updating_condition,
    with_conditions,
    with_kstatus_conditions,
)
from oper8d.engine.missing import SchemaSource, evaluate_live
from oper8d.engine.outcome import (
    INITIAL_ROLLOUT_STARTED,
    CompletionSummary,
    error_conditions,
    outcome_conditions,
)
from oper8d.errors import PreconditionError
from oper8d.logs import redact, redact_data
from oper8d.template import Expr

__all__ = [
    "INITIAL_ROLLOUT_STARTED",
    "READY",
    "RECONCILING",
    "STALLED",
    "UPDATING",
    "CompletionSummary",
    "Condition",
    "KindStatus",
    "ReadyReason",
    "UpdatingReason",
    "completion_status",
    "error_status",
    "get_condition",
    "is_stable",
    "kind_status_key",
    "kstatus_conditions",
    "project_fields",
    "ready_condition",
    "reconciled_once",
    "reserved_status_keys",
    "set_condition",
    "start_status",
    "status_changed",
    "updating_condition",
    "with_conditions",
]


class KindStatus(StrEnum):
    """Values of ``status.<kindLowerCamel>Status`` (an IBM Cloud Pak convention)."""

    COMPLETED = "Completed"
    FAILED = "Failed"
    IN_PROGRESS = "InProgress"


_KIND_STATUS_VALUES = frozenset(str(v) for v in KindStatus)


# -- the reconcile's status steps ---------------------------------------------------------------


def start_status(
    status: Mapping[str, Any] | None,
    *,
    version: str | None,
    generation: int | None,
    now: datetime,
    kind: str | None = None,
) -> dict[str, Any]:
    """The status at the start of a reconcile: Ready Initializing before the first
    successful rollout; Ready InProgress + Updating VersionChange when the version
    differs from the reconciled one; otherwise the status unchanged.

    The start is announced once per generation: when Ready already reports on this
    generation and is not Stable, a rollout of it is under way (waiting, or retried after
    an error) and re-announcing would flip the conditions back and forth on every
    reconcile (two status writes each time, and Stalled's lastTransitionTime moving
    with every retry)."""
    current = dict(status or {})
    reconciled = _reconciled_version(current)
    ready = get_condition(current, READY)
    if (
        generation is not None
        and ready is not None
        and ready.get("observedGeneration") == generation
        and ready.get("reason") != ReadyReason.STABLE
    ):
        return current  # a new dict; its values are replaced, never changed in place
    conditions: tuple[Condition, ...]
    if reconciled is None:
        conditions = (ready_condition(ReadyReason.INITIALIZING, INITIAL_ROLLOUT_STARTED),)
    elif reconciled != _version_text(version):
        message = f"Version Change Started: [{reconciled}] -> [{_version_text(version)}]"
        conditions = (
            ready_condition(ReadyReason.IN_PROGRESS, message),
            updating_condition(UpdatingReason.VERSION_CHANGE, message),
        )
    else:
        return current  # a new dict; its values are replaced, never changed in place
    new = with_conditions(current, *conditions, now=now, observed_generation=generation)
    new = with_kstatus_conditions(new, now=now, observed_generation=generation)
    return _with_kind_status(new, kind)


def completion_status(
    status: Mapping[str, Any] | None,
    completion: CompletionSummary,
    *,
    version: str | None,
    generation: int | None,
    now: datetime,
    kind: str,
    operator_version: str | None,
    projected: Mapping[str, Any],
) -> dict[str, Any]:
    """The status after a rollout: conditions per the table in ``engine.outcome``,
    ``componentStatus``, ``versions.reconciled`` (on success only), ``operatorVersion``,
    ``observedGeneration``, ``<kindLowerCamel>Status`` and the projected fields (a
    projected key that is one of ``reserved_status_keys(kind)`` is dropped)."""
    current = dict(status or {})
    initializing = _reconciled_version(current) is None
    ready, updating = outcome_conditions(completion, initializing=initializing)
    new = with_conditions(current, ready, updating, now=now, observed_generation=generation)
    new = with_kstatus_conditions(new, now=now, observed_generation=generation)
    new["componentStatus"] = _component_status(completion)
    if completion.succeeded:
        versions = dict(new.get("versions") or {})
        versions["reconciled"] = _version_text(version)
        new["versions"] = versions
    if operator_version is not None:
        new["operatorVersion"] = operator_version
    if generation is not None:
        new["observedGeneration"] = generation
    new = _with_kind_status(new, kind)
    reserved = reserved_status_keys(kind)
    for key, value in projected.items():
        if key not in reserved:
            # a projection may carry a value read from a Secret
            new[key] = redact_data(copy.deepcopy(value))
    return new


def error_status(
    status: Mapping[str, Any] | None,
    error: BaseException,
    *,
    generation: int | None,
    now: datetime,
    kind: str | None = None,
) -> dict[str, Any]:
    """The status when reconciling stopped before or outside a rollout (an invalid CR,
    a missing config-defaults ConfigMap, ...): the error's row of the table;
    ``componentStatus`` and ``versions`` are left as they were."""
    current = dict(status or {})
    initializing = _reconciled_version(current) is None
    conditions = error_conditions(error, initializing=initializing)
    new = with_conditions(current, *conditions, now=now, observed_generation=generation)
    new = with_kstatus_conditions(new, now=now, observed_generation=generation)
    if generation is not None:
        new["observedGeneration"] = generation
    return _with_kind_status(new, kind)


def project_fields(
    fields: Mapping[str, Expr], context: Mapping[str, Any], schemas: SchemaSource
) -> dict[str, Any]:
    """The bundle's status projections over ``context``. A projection over a field not set
    yet, or an object not created yet, is left out until it is; a typo (an undefined name,
    a field the kind's schema does not have) or any other failure is a ConfigError at the
    projection, never a field silently missing (``engine.missing``)."""
    out: dict[str, Any] = {}
    for key, expr in fields.items():
        try:
            value, waiting = evaluate_live(expr, context, schemas)
        except PreconditionError:  # require(): a condition not met yet
            continue
        if waiting is None:
            out[key] = value
    return out


def status_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    """True when anything but a condition's ``lastTransitionTime`` differs: the reconciler
    writes status only then."""
    return _without_times(old) != _without_times(new)


def is_stable(status: Mapping[str, Any] | None, version: str | None) -> bool:
    """Ready True, Updating False and ``versions.reconciled`` equal to ``version``: the CR
    needs no requeue."""
    ready = get_condition(status, READY) or {}
    updating = get_condition(status, UPDATING) or {}
    return (
        ready.get("status") == "True"
        and updating.get("status") == "False"
        and _reconciled_version(status) == _version_text(version)
    )


def kind_status_key(kind: str) -> str:
    """``WebApp`` -> ``webAppStatus`` (oper8's rule: only the first letter is lowered)."""
    return f"{kind[:1].lower()}{kind[1:]}Status"


def reserved_status_keys(kind: str | None) -> frozenset[str]:
    """Top-level status keys oper8d writes itself; projected status fields may not use
    them (the bundle compiler can reject such a field up front)."""
    keys = {"conditions", "componentStatus", "versions", "observedGeneration", "operatorVersion"}
    if kind:
        keys.add(kind_status_key(kind))
    return frozenset(keys)


# -- implementation -----------------------------------------------------------------------------


def _version_text(version: str | None) -> str:
    return "" if version is None else str(version)


def reconciled_once(status: Mapping[str, Any] | None) -> bool:
    """Whether a CR with this status has finished a rollout (``versions.reconciled``)."""
    return _reconciled_version(status) is not None


def _reconciled_version(status: Mapping[str, Any] | None) -> str | None:
    versions = (status or {}).get("versions")
    if not isinstance(versions, Mapping) or versions.get("reconciled") is None:
        return None
    return str(versions["reconciled"])


def _component_status(completion: CompletionSummary) -> dict[str, Any]:
    total = len(completion.all_components)
    return {
        "allComponents": list(completion.all_components),
        "deployedComponents": list(completion.deployed),
        "verifiedComponents": list(completion.verified),
        "unverifiedComponents": list(completion.unverified),
        "failedComponents": list(completion.failed),
        "unstartedComponents": list(completion.unstarted),
        "waiting": [
            {"component": name, "reason": redact(why)} for name, why in completion.waiting.items()
        ],
        "deployed": f"{len(completion.deployed)}/{total}",
        "verified": f"{len(completion.verified)}/{total}",
    }


def _kind_status_value(status: Mapping[str, Any]) -> KindStatus:
    """oper8's mapping: Completed when both conditions are Stable; Failed on an error
    reason in either; InProgress otherwise."""
    ready = (get_condition(status, READY) or {}).get("reason")
    updating = (get_condition(status, UPDATING) or {}).get("reason")
    if ready == ReadyReason.STABLE and updating == UpdatingReason.STABLE:
        return KindStatus.COMPLETED
    if ready in (ReadyReason.ERRORED, ReadyReason.CONFIG_ERROR) or updating in (
        UpdatingReason.ERRORED,
        UpdatingReason.CLUSTER_ERROR,
    ):
        return KindStatus.FAILED
    return KindStatus.IN_PROGRESS


def _with_kind_status(status: dict[str, Any], kind: str | None) -> dict[str, Any]:
    """Set ``<kindLowerCamel>Status`` unless a user (or another tool) owns it: it is
    written only when absent or already one of the values oper8 writes."""
    if not kind:
        return status
    key = kind_status_key(kind)
    current = status.get(key)
    if current in (None, "") or (isinstance(current, str) and current in _KIND_STATUS_VALUES):
        status[key] = str(_kind_status_value(status))
    return status


def _without_times(status: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(status or {})
    conditions = out.get("conditions")
    if isinstance(conditions, list):
        out["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"}
            if isinstance(c, Mapping)
            else c
            for c in conditions
        ]
    return out
