"""Run a bundle without a cluster: offline render and dry-run rollouts.

Both run the real reconciler against the embedded in-memory cluster, so what they show
is what the operator would do: :func:`reconcile_offline` creates the CR and repeats
reconciles (with simulated readiness, simulated time advancing by each requeue delay)
until the CR is stable, fails, or a pass limit is reached; :func:`would_delete` lists what
the disabled components would remove from a cluster that had them. Used by the CLI
(``render``, ``run --dry-run``), by ``oper8d.testing`` and by the benchmarks.
Deterministic: the clock, uids and random strings are derived from the CR, so the same
input gives byte-identical output. Random strings are not secret: offline values of 12
characters or more start with ``offline`` (``engine.session.SeededRandoms``).

Each pass runs in a reconcile context (``oper8d.logs``) that shares one set of sensitive
values over the whole run, :attr:`OfflineRun.sensitive`: what the run prints afterwards
(errors, the dry run's summary, ``render``) is masked with it.
"""

from oper8d.offline.deletions import would_delete
from oper8d.offline.previous import immutable_since
from oper8d.offline.run import (
    EPOCH,
    OfflineRun,
    check_cr_metadata,
    controller_for,
    find_controller,
    reconcile_offline,
    why_incomplete,
)

__all__ = [
    "EPOCH",
    "OfflineRun",
    "check_cr_metadata",
    "controller_for",
    "find_controller",
    "immutable_since",
    "reconcile_offline",
    "why_incomplete",
    "would_delete",
]
