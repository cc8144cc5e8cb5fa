"""Offline runs: the real reconciler against the embedded in-memory cluster until the CR is
stable (see the package docstring)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator, Simulator
from oper8d.engine.progress import Progress
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions
from oper8d.engine.session import RandomSource, SeededRandoms
from oper8d.errors import ConfigError, Problem, ReconcileError
from oper8d.kinds import DNS_LABEL, is_dns_subdomain
from oper8d.kubeschema import KubeSchemas
from oper8d.limits import bounded_work
from oper8d.logs import SensitiveValues, cr_key, reconcile_context
from oper8d.objects import Obj

__all__ = [
    "EPOCH",
    "OfflineRun",
    "check_cr_metadata",
    "controller_for",
    "find_controller",
    "reconcile_offline",
    "why_incomplete",
]


EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

#: called at the start of each reconcile pass with its number (from 1) and the simulated
#: seconds since the run began
PassHook = Callable[[int, float], None]


@dataclass
class OfflineRun:
    """The outcome of reconciling one CR offline."""

    cr: Obj  # the live CR at the end (with status)
    results: list[ReconcileResult]
    applied: dict[str, Obj]  # internal name -> object as applied, in rollout order
    cluster: MemoryCluster  # the in-memory cluster, to inspect what exists at the end
    stable: bool = False  # ended because the CR became Ready and not Updating
    #: values from Secrets seen in the run: masked in whatever it prints
    sensitive: SensitiveValues = dataclasses.field(default_factory=SensitiveValues)

    def redact(self, text: str) -> str:
        """``text`` without the run's sensitive values (as whole values)."""
        return self.sensitive.redact(text)

    @property
    def ready(self) -> bool:
        """The CR's Ready condition is True."""
        ready = self.condition("Ready")
        return ready is not None and ready.get("status") == "True"

    def condition(self, type_: str) -> dict[str, Any] | None:
        """The CR's status condition of this type (``Ready``, ``Updating``), or None."""
        for cond in (self.cr.get("status") or {}).get("conditions", []):
            if cond.get("type") == type_:
                return dict(cond)
        return None

    @property
    def paused(self) -> bool:
        """The CR carries oper8.org/pause-execution: nothing was reconciled."""
        return bool(self.results) and self.last.paused

    @property
    def last(self) -> ReconcileResult:
        return self.results[-1]

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """References among the rendered objects that cannot resolve
        (``engine.references``), from the last pass that rendered every component."""
        for result in reversed(self.results):
            if result.warnings is not None:
                return result.warnings
        return ()

    @property
    def fatal_error(self) -> ReconcileError | None:
        """The last pass's error when it was fatal (bad spec, template failure, ...)."""
        err = self.last.error if self.results else None
        return err if isinstance(err, ReconcileError) and err.fatal else None


def controller_for(bundle: Bundle, cr: Mapping[str, Any]) -> ControllerSpec:
    """The controller of ``bundle`` that reconciles ``cr``'s kind, or a ConfigError naming
    the CR field that is wrong (apiVersion, kind, metadata.name, metadata.namespace)."""
    controller = find_controller(bundle, cr)
    check_cr_metadata(cr)
    return controller


def find_controller(bundle: Bundle, cr: Mapping[str, Any]) -> ControllerSpec:
    """The controller for ``cr``'s apiVersion and kind, or a ConfigError listing the kinds
    the bundle reconciles."""
    if not isinstance(cr, Mapping) or not cr.get("apiVersion") or not cr.get("kind"):
        raise ConfigError("the CR must be a mapping with apiVersion and kind", field="apiVersion")
    controller = bundle.controller_for(str(cr["apiVersion"]), str(cr["kind"]))
    if controller is None:
        known = ", ".join(f"{c.resource.api_version} {c.resource.kind}" for c in bundle.controllers)
        raise ConfigError(
            f"bundle '{bundle.name}' has no controller for {cr['apiVersion']} {cr['kind']} "
            f"(it reconciles: {known})",
            field="kind",
        )
    return controller


def check_cr_metadata(cr: Mapping[str, Any]) -> None:
    """Raise a ConfigError when the CR's name or namespace would be refused by the API
    server; checked before the CR is created, so the error names the field."""
    meta = cr.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise ConfigError("the CR needs metadata.name", field="metadata.name")
    name, namespace = meta["name"], meta.get("namespace")
    if not isinstance(name, str) or not is_dns_subdomain(name):
        raise ConfigError(
            f"{name!r} is not a valid name: use lower-case letters, digits, '-' and '.' "
            "(a DNS-1123 subdomain, at most 253 characters)",
            field="metadata.name",
        )
    if namespace is not None and (
        not isinstance(namespace, str) or len(namespace) > 63 or not DNS_LABEL.fullmatch(namespace)
    ):
        raise ConfigError(
            f"{namespace!r} is not a valid namespace: use lower-case letters, digits and '-' "
            "(a DNS-1123 label, at most 63 characters)",
            field="metadata.namespace",
        )


def reconcile_offline(
    bundle: Bundle,
    cr: Mapping[str, Any],
    *,
    cluster: MemoryCluster | None = None,
    max_reconciles: int = 20,
    progress: Progress | None = None,
    max_workers: int = 1,
    simulator: Simulator | None = None,
    on_pass: PassHook | None = None,
    randoms: RandomSource | None = None,
    schemas: KubeSchemas | None = None,
) -> OfflineRun:
    """Create ``cr`` in an in-memory cluster and reconcile it until it is stable, it fails,
    or ``max_reconciles`` passes were made. Simulated time advances by each requeue delay.

    ``cluster`` defaults to a fresh deterministic one (fixed clock, uids derived from the
    CR, ``simulator`` or a ``DefaultSimulator``); pass one to start from existing objects.
    ``max_workers=1`` keeps the rollout order, and so the output, deterministic.
    ``random_string()`` values come from ``randoms`` (default: derived from the CR).
    ``schemas``: what rendered objects are checked against (default: the built-in kinds).
    """
    with bounded_work():  # the collector's passes cost a fifth of a render
        return _reconcile_offline(
            bundle, cr, cluster, max_reconciles, progress, max_workers, simulator, on_pass,
            randoms, schemas,
        )  # fmt: skip


def _reconcile_offline(
    bundle: Bundle,
    cr: Mapping[str, Any],
    cluster: MemoryCluster | None,
    max_reconciles: int,
    progress: Progress | None,
    max_workers: int,
    simulator: Simulator | None,
    on_pass: PassHook | None,
    randoms: RandomSource | None,
    schemas: KubeSchemas | None,
) -> OfflineRun:
    controller = controller_for(bundle, cr)
    clock = FakeClock(EPOCH)
    body = copy.deepcopy(dict(cr))
    body.pop("status", None)
    kind = controller.resource
    if kind.namespaced:
        body["metadata"].setdefault("namespace", "default")
    ns, name = body["metadata"].get("namespace"), body["metadata"]["name"]
    seed = f"{ns}/{name}"
    if cluster is None:
        cluster = MemoryCluster(
            clock=clock.now,
            uid_factory=sequential_uids(seed),
            simulator=simulator if simulator is not None else DefaultSimulator(),
            schemas=schemas,  # one load serves the cluster's admission and the engine's checks
        )
    cluster.register_kind(kind.api_version, kind.kind, namespaced=kind.namespaced)
    if cluster.get(kind.api_version, kind.kind, name, ns) is None:
        cluster.apply(body, field_manager="oper8d-cli")
    reconciler = Reconciler(
        bundle,
        controller,
        cluster,
        ReconcilerOptions(
            field_manager="oper8d",
            max_workers=max_workers,
            clock=clock,
            randoms=lambda _c, _cr: randoms if randoms is not None else SeededRandoms(seed),
            progress=progress,
            schemas=schemas,
        ),
    )
    results: list[ReconcileResult] = []
    applied: dict[str, Obj] = {}
    stable = False
    key = cr_key(ns, name)
    sensitive = SensitiveValues(public=key.split("/"))
    for number in range(1, max_reconciles + 1):
        if on_pass is not None:
            on_pass(number, clock.monotonic())
        with reconcile_context(f"pass{number:04d}", key, sensitive):
            result = reconciler.reconcile(ns, name)
        results.append(result)
        applied = result.applied or applied
        if _stable(result.status or {}):
            stable = True
            break
        err = result.error
        if isinstance(err, ReconcileError) and err.fatal:
            break
        if result.requeue_after is None or result.paused:
            break
        cluster.tick()
        clock.advance(result.requeue_after or 1.0)
    final = cluster.get(kind.api_version, kind.kind, name, ns) or body
    return OfflineRun(
        cr=final,
        results=results,
        applied=applied,
        cluster=cluster,
        stable=stable,
        sensitive=sensitive,
    )


def _stable(status: Mapping[str, Any]) -> bool:
    conds = {c.get("type"): c for c in status.get("conditions", [])}
    ready, updating = conds.get("Ready", {}), conds.get("Updating", {})
    return bool(ready.get("status") == "True" and updating.get("status") == "False")


def why_incomplete(run: OfflineRun) -> str | None:
    """Why a run that did not become stable stopped (``oper8d render``'s ``# not complete``
    line, and bundle tests' golden renders)."""
    if run.paused:
        return "the CR is paused (annotation oper8.org/pause-execution): nothing is applied"
    if run.last.error is not None:
        return run.redact(str(run.last.error))
    ready = run.condition("Ready")
    return run.redact(f"{ready.get('reason')}: {ready.get('message')}") if ready else None
