"""A rollout's outcome and the Ready and Updating conditions it sets, for ``engine.status``.

``engine.rollout`` sums a rollout up in a :class:`CompletionSummary`; ``engine.status``
builds the completion status from it with :func:`outcome_conditions`, and the status of a
reconcile that stopped before a rollout with :func:`error_conditions` (both names are
exported by ``engine.status`` too, as ``CompletionSummary`` is). The conditions' reasons
are ``engine.conditions``'s.

How a rollout's outcome maps to the conditions (``*``: see below)::

    outcome                        Ready                             Updating
    all verified, no error         Stable "Verify Complete"          Stable "Rollout Complete"
    verification incomplete        InProgress "Verify InProgress"*   VerifyWait (what waits)
    VerificationError, or another  InProgress "Verify InProgress"*   VerifyWait (error text)
      ExpectedError
    PreconditionError              InProgress "Rollout InProgress"*  PreconditionWait (error)
    ClusterError                   InProgress "Rollout InProgress"*  ClusterError (error text)
    ConfigError, or a ClusterError ConfigError (error text)          Errored (error text)
      refusing the object (400/422)
    other fatal / unexpected       Errored (error text)              Errored (error text)

``*`` While the CR has never been reconciled (no ``status.versions.reconciled``), Ready
stays ``Initializing "Initial Rollout Started"`` instead: oper8 keeps Initializing
until the first successful rollout, so "still installing" and "an update is rolling
out" remain distinguishable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from oper8d.engine.conditions import (
    Condition,
    ReadyReason,
    UpdatingReason,
    ready_condition,
    updating_condition,
)
from oper8d.errors import (
    ClusterError,
    ConfigError,
    ExpectedError,
    Oper8dError,
    PreconditionError,
    ReconcileError,
)

__all__ = ["INITIAL_ROLLOUT_STARTED", "CompletionSummary", "error_conditions", "outcome_conditions"]

#: how many waiting components the Updating message spells out (all are in componentStatus)
_MAX_WAITING_SHOWN = 3

INITIAL_ROLLOUT_STARTED = "Initial Rollout Started"


@dataclass(frozen=True)
class CompletionSummary:
    """What a rollout achieved, per component (names of component instances).

    The name tuples are stored sorted and without duplicates whatever order they are
    given in, so equal outcomes compare equal and status lists are deterministic.
    """

    all_components: tuple[str, ...] = ()
    deployed: tuple[str, ...] = ()
    verified: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    unstarted: tuple[str, ...] = ()
    #: component -> what it waits on ("Deployment default/web: 1 of 3 replicas available")
    waiting: Mapping[str, str] = field(default_factory=dict)
    first_error: ReconcileError | None = None

    def __post_init__(self) -> None:
        for name in ("all_components", "deployed", "verified", "unverified", "failed", "unstarted"):
            object.__setattr__(self, name, tuple(sorted(set(getattr(self, name)))))
        object.__setattr__(self, "waiting", dict(sorted(self.waiting.items())))

    @property
    def succeeded(self) -> bool:
        """No error and nothing left unverified, failed or unstarted."""
        return self.first_error is None and not (self.unverified or self.failed or self.unstarted)


def _error_text(error: BaseException) -> str:
    if isinstance(error, Oper8dError):
        return str(error) or type(error).__name__
    # an unexpected exception: its type is part of what went wrong ("KeyError: 'x'")
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _waiting_ready(initializing: bool, message: str) -> Condition:
    if initializing:
        return ready_condition(ReadyReason.INITIALIZING, INITIAL_ROLLOUT_STARTED)
    return ready_condition(ReadyReason.IN_PROGRESS, message)


def error_conditions(error: BaseException, *, initializing: bool) -> tuple[Condition, Condition]:
    """Ready and Updating when ``error`` stopped the reconcile: its row of the table."""
    text = _error_text(error)
    if isinstance(error, PreconditionError):
        return (
            _waiting_ready(initializing, "Rollout InProgress"),
            updating_condition(UpdatingReason.PRECONDITION_WAIT, text),
        )
    if isinstance(error, ExpectedError):  # VerificationError and any other transient error
        return (
            _waiting_ready(initializing, "Verify InProgress"),
            updating_condition(UpdatingReason.VERIFY_WAIT, text),
        )
    if isinstance(error, ConfigError) or _refused(error):
        return (
            ready_condition(ReadyReason.CONFIG_ERROR, text),
            updating_condition(UpdatingReason.ERRORED, text),
        )
    if isinstance(error, ClusterError):
        return (
            _waiting_ready(initializing, "Rollout InProgress"),
            updating_condition(UpdatingReason.CLUSTER_ERROR, text),
        )
    return (
        ready_condition(ReadyReason.ERRORED, text),
        updating_condition(UpdatingReason.ERRORED, text),
    )


def _refused(error: BaseException) -> bool:
    """A ClusterError that is the API server refusing the object as invalid (an immutable
    field changed, a value its Go validation refuses): waiting will not help, so the CR
    says so (Stalled) as it would for the same object refused by the offline checks."""
    return isinstance(error, ClusterError) and error.status in (400, 422)


def outcome_conditions(
    completion: CompletionSummary, *, initializing: bool
) -> tuple[Condition, Condition]:
    """Ready and Updating after a rollout that ended as ``completion`` says."""
    if completion.first_error is not None:
        return error_conditions(completion.first_error, initializing=initializing)
    if completion.failed:
        # failed without an error recorded: report it rather than claim progress
        text = f"Components failed: {', '.join(completion.failed)}"
        return (
            ready_condition(ReadyReason.ERRORED, text),
            updating_condition(UpdatingReason.ERRORED, text),
        )
    if completion.unverified or completion.unstarted:
        return (
            _waiting_ready(initializing, "Verify InProgress"),
            updating_condition(UpdatingReason.VERIFY_WAIT, _verify_wait_message(completion)),
        )
    return (
        ready_condition(ReadyReason.STABLE, "Verify Complete"),
        updating_condition(UpdatingReason.STABLE, "Rollout Complete"),
    )


def _verify_wait_message(completion: CompletionSummary) -> str:
    message = "Component verification incomplete"
    items = list(completion.waiting.items())
    if not items:
        return message
    shown = "; ".join(f"{name}: {why}" for name, why in items[:_MAX_WAITING_SHOWN])
    more = len(items) - _MAX_WAITING_SHOWN
    return f"{message}: {shown}" + (f" (and {more} more)" if more > 0 else "")
