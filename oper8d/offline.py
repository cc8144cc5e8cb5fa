"""Run a bundle without a cluster: offline render and dry-run rollouts.

Both run the real reconciler against the embedded in-memory cluster, so what they show
is what the operator would do: ``render`` repeats reconciles (with simulated readiness)
until the CR is stable, then returns every object as it would be applied; ``dry_run``
does the same with a progress view and returns the final CR status. Used by the CLI,
by ``oper8d.testing`` and by the benchmarks. Deterministic: the clock, uids and random
strings are derived from the CR, so the same input gives byte-identical output.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.simulate import DefaultSimulator
from oper8d.engine.clock import FakeClock
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions
from oper8d.engine.rollout import Progress, Rollout
from oper8d.engine.session import SeededRandoms, Session
from oper8d.errors import ConfigError, ReconcileError

#: a fixed instant for offline runs, so timestamps in rendered output never change
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class OfflineRun:
    """The outcome of reconciling one CR offline."""

    cr: Obj  # the live CR at the end (with status)
    results: list[ReconcileResult]
    applied: dict[str, Obj]  # internal name -> object as applied, in rollout order
    deletions: list[tuple[str, Obj]] = field(default_factory=list)  # (component, object)
    cluster: MemoryCluster | None = None

    @property
    def ready(self) -> bool:
        for cond in (self.cr.get("status") or {}).get("conditions", []):
            if cond.get("type") == "Ready":
                return cond.get("status") == "True"
        return False

    @property
    def last(self) -> ReconcileResult:
        return self.results[-1]


def controller_for(bundle: Bundle, cr: Mapping[str, Any]) -> ControllerSpec:
    """The controller of ``bundle`` that reconciles ``cr``'s kind, or a ConfigError."""
    if not isinstance(cr, Mapping) or not cr.get("apiVersion") or not cr.get("kind"):
        raise ConfigError("the CR must be a mapping with apiVersion and kind", field="apiVersion")
    controller = bundle.controller_for(cr["apiVersion"], cr["kind"])
    if controller is None:
        known = ", ".join(f"{c.resource.api_version} {c.resource.kind}" for c in bundle.controllers)
        raise ConfigError(
            f"bundle '{bundle.name}' has no controller for {cr['apiVersion']} {cr['kind']} "
            f"(it reconciles: {known})",
            field="kind",
        )
    meta = cr.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise ConfigError("the CR needs metadata.name", field="metadata.name")
    return controller


def reconcile_offline(
    bundle: Bundle,
    cr: Mapping[str, Any],
    *,
    cluster: MemoryCluster | None = None,
    max_reconciles: int = 20,
    progress: Progress | None = None,
    max_workers: int = 1,
    simulator: Any = None,
    on_pass: Callable[[int], None] | None = None,
) -> OfflineRun:
    """Create ``cr`` in an in-memory cluster and reconcile it until it is stable, it fails,
    or ``max_reconciles`` passes were made. Simulated time advances by each requeue delay."""
    controller = controller_for(bundle, cr)
    clock = FakeClock(EPOCH)
    if cluster is None:
        cluster = MemoryCluster(
            clock=clock.now,
            uid_factory=sequential_uids(f"{cr['metadata'].get('namespace')}/{cr['metadata']['name']}"),
            simulator=simulator if simulator is not None else DefaultSimulator(),
        )
    kind = controller.resource
    cluster.register_kind(kind.api_version, kind.kind, namespaced=kind.namespaced)
    body = copy.deepcopy(dict(cr))
    body.pop("status", None)
    if kind.namespaced:
        body["metadata"].setdefault("namespace", "default")
    live = cluster.get(kind.api_version, kind.kind, body["metadata"]["name"], body["metadata"].get("namespace"))
    if live is None:
        cluster.apply(body, field_manager="oper8d-cli")
    seed = f"{body['metadata'].get('namespace')}/{body['metadata']['name']}"
    reconciler = Reconciler(
        bundle,
        controller,
        cluster,
        ReconcilerOptions(
            field_manager="oper8d",
            max_workers=max_workers,
            clock=clock,
            randoms=lambda _c, _cr: SeededRandoms(seed),
            progress=progress,
        ),
    )
    results: list[ReconcileResult] = []
    applied: dict[str, Obj] = {}
    ns, name = body["metadata"].get("namespace"), body["metadata"]["name"]
    for number in range(1, max_reconciles + 1):
        if on_pass is not None:
            on_pass(number)
        result = reconciler.reconcile(ns, name)
        results.append(result)
        applied = result.applied or applied
        err = result.error
        if err is not None and isinstance(err, ReconcileError) and err.fatal:
            break
        if result.requeue_after is None or result.paused:
            break
        status = result.status or {}
        if _stable(status):
            break
        cluster.tick()
        clock.advance(result.requeue_after or 1.0)
    final = cluster.get(kind.api_version, kind.kind, name, ns) or body
    return OfflineRun(cr=final, results=results, applied=applied, cluster=cluster)


def would_delete(bundle: Bundle, run: OfflineRun) -> list[tuple[str, Obj]]:
    """Objects of disabled components, rendered as if enabled: what a live cluster would lose.
    Components that cannot be rendered while disabled are skipped."""
    if not run.results or run.last.rollout is None:
        return []
    controller = controller_for(bundle, run.cr)
    disabled = [n for n, c in run.last.rollout.components.items() if c.disabled]
    if not disabled or run.cluster is None:
        return []
    from oper8d.engine.deploy import DeployManager

    session = Session(
        bundle=bundle,
        controller=controller,
        cr=run.cr,
        config=dict(controller.config_defaults),
        cluster=run.cluster,
        randoms=SeededRandoms("would-delete"),
    )
    rollout = Rollout(session, DeployManager(run.cluster, run.cr, field_manager="oper8d"))
    out: list[tuple[str, Obj]] = []
    for name in disabled:
        comp = controller.component(name)
        enabled_copy = type(comp)(**{**comp.__dict__, "enabled": None})
        try:
            rendered = rollout.render_component(enabled_copy)
        except ReconcileError:
            continue
        out.extend((name, obj) for obj, _m, _r in rendered.objects.values())
    return out


def _stable(status: Mapping[str, Any]) -> bool:
    conds = {c.get("type"): c for c in status.get("conditions", [])}
    ready, updating = conds.get("Ready", {}), conds.get("Updating", {})
    return ready.get("status") == "True" and updating.get("status") == "False"
