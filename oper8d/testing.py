"""Test helpers for bundle authors (and oper8d's own tests, and ``oper8d test``).

Everything here runs offline and deterministically: a bundle is reconciled by the real
engine against the embedded in-memory cluster, whose readiness simulator plays the
Kubernetes controllers, on a fake clock. No cluster, no sleeping, same output every time.

Example: the migration Job fails, so the app is never rolled out::

    from oper8d.testing import run_offline

    run = run_offline(
        "examples/operators/stateful",
        "examples/operators/stateful/samples/notes.yaml",
        statuses={
            ("Job", "notes-migrate-2-1-0"): {
                "conditions": [{"type": "Failed", "status": "True"}],
            },
        },
    )
    assert not run.ready
    assert run.cluster.get("apps/v1", "Deployment", "notes-app", "default") is None

and what a CR renders to (the objects ``oper8d render`` prints, in rollout order)::

    objects = render(
        "examples/operators/webapp",
        {
            "apiVersion": "demo.oper8d.io/v1alpha1",
            "kind": "WebApp",
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"image": "nginx:1.27", "autoscaling": {"enabled": False}},
        },
    )
    assert [o["kind"] for o in objects] == ["ConfigMap", "Deployment", "Service"]

``statuses`` keys are ``(kind, metadata.name)``; the object settles with that status
instead of the simulated one (see ``oper8d.cluster.memory.simulate.DefaultSimulator``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.loader import load_cr_file
from oper8d.bundle.model import Bundle
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator, Simulator
from oper8d.errors import ConfigError
from oper8d.objects import Obj
from oper8d.offline import EPOCH, OfflineRun, reconcile_offline

__all__ = [
    "DefaultSimulator",
    "FakeClock",
    "MemoryCluster",
    "OfflineRun",
    "StatusOverrides",
    "load_cr",
    "memory_cluster",
    "render",
    "run_offline",
]

#: ``{(kind, name): status}``: the status an object settles with in the simulation
StatusOverrides = Mapping[tuple[str, str], Mapping[str, Any]]

BundleSource = str | Path | Bundle
CrSource = Mapping[str, Any] | str | Path


def load_cr(cr: CrSource) -> dict[str, Any]:
    """A CR given as a dict (returned as a copy) or as the path of a YAML file holding one."""
    if isinstance(cr, Mapping):
        return dict(cr)
    path = Path(cr)
    doc = load_cr_file(str(path))
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{path}: a CR file holds one mapping (a Kubernetes object)")
    return doc.data


def render(bundle: BundleSource, cr: CrSource) -> list[Obj]:
    """Every object the operator applies for ``cr``, in rollout order, as ``oper8d render``
    prints them (ownership labels, owner references and hashes included).

    Raises the ``ConfigError`` (or other fatal ``ReconcileError``) that stopped the rollout,
    so a broken template or a CR that violates the schema fails the calling test.
    """
    run = run_offline(bundle, cr)
    if run.fatal_error is not None:
        raise run.fatal_error
    return list(run.applied.values())


def run_offline(
    bundle: BundleSource,
    cr: CrSource,
    *,
    statuses: StatusOverrides | None = None,
    max_reconciles: int = 20,
    ready_after: int = 0,
) -> OfflineRun:
    """Reconcile ``cr`` until it is Ready, fails, or ``max_reconciles`` passes were made.

    ``statuses`` overrides what the simulated controllers report for some objects (a failed
    Job, a custom resource of another operator); ``ready_after=N`` makes workloads settle
    N passes after each write instead of at once. Nothing is raised for a failing rollout:
    inspect ``run.ready``, ``run.condition("Ready")``, ``run.cr["status"]`` and
    ``run.cluster``.
    """
    simulator = DefaultSimulator(delay_writes=ready_after, overrides=statuses)
    return reconcile_offline(
        _bundle(bundle), load_cr(cr), max_reconciles=max_reconciles, simulator=simulator
    )


def memory_cluster(
    *,
    clock: Callable[[], datetime] | None = None,
    simulator: Simulator | None = None,
    statuses: StatusOverrides | None = None,
    seed: str = "oper8d-test",
) -> MemoryCluster:
    """A deterministic in-memory cluster: a fixed clock (``FakeClock`` at the offline
    epoch unless ``clock`` is given), uids derived from ``seed``, and a
    ``DefaultSimulator`` (with ``statuses`` overrides) unless ``simulator`` is given."""
    if simulator is None:
        simulator = DefaultSimulator(overrides=statuses)
    elif statuses is not None:
        raise ValueError("pass either simulator or statuses, not both")
    return MemoryCluster(
        clock=clock or FakeClock(EPOCH).now,
        uid_factory=sequential_uids(seed),
        simulator=simulator,
    )


def _bundle(bundle: BundleSource) -> Bundle:
    return bundle if isinstance(bundle, Bundle) else load_bundle(bundle)
