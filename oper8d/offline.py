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

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from oper8d.bundle.model import Bundle, ComponentSpec, ControllerSpec, DeletionPolicy
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator, Simulator
from oper8d.engine.deploy import DeployManager, identity, object_key
from oper8d.engine.immutable import PlannedRefusal, planned_refusal
from oper8d.engine.inputs import read_config_maps, resolve_inputs
from oper8d.engine.progress import Progress
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions
from oper8d.engine.render import Renderer
from oper8d.engine.session import RandomSource, SeededRandoms, Session
from oper8d.errors import ClusterError, ConfigError, Problem, ReconcileError
from oper8d.kinds import DNS_LABEL, is_dns_subdomain
from oper8d.kubeschema import KubeSchemas
from oper8d.limits import bounded_work
from oper8d.logs import SensitiveValues, cr_key, reconcile_context
from oper8d.objects import Deletion, Obj

__all__ = [
    "EPOCH",
    "OfflineRun",
    "check_cr_metadata",
    "controller_for",
    "find_controller",
    "immutable_since",
    "reconcile_offline",
    "would_delete",
]


#: a fixed instant for offline runs, so timestamps in rendered output never change
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


def would_delete(bundle: Bundle, run: OfflineRun) -> list[Deletion]:
    """Objects of disabled components, rendered as if enabled: what a cluster that ran an
    earlier CR with them enabled would lose. Returns (component, object) pairs in component
    order; every disabled component is listed.

    ``live()`` sees what it saw in the run's last pass (the run's objects in the in-memory
    cluster). An object that does not exist there (one of another disabled component)
    reads as :data:`_ABSENT` when ``none`` fails the template, so names that do not depend
    on it are still known. A component whose names do depend on it, or that does not
    render at all, gives one (component, "all <kind> objects ...") pair per kind it
    declares: nothing is left out."""
    if not run.results or run.last.rollout is None:
        return []
    disabled = [n for n, c in run.last.rollout.components.items() if c.disabled]
    if not disabled:
        return []
    controller = controller_for(bundle, run.cr)
    # the inputs and the template context the reconciler rendered with (engine.inputs,
    # engine.session), over the cluster the run left behind
    inputs = resolve_inputs(controller, run.cr, read_config_maps(run.cluster, run.cr))
    meta = run.cr["metadata"]
    sessions = [
        session_type(
            bundle=bundle,
            controller=controller,
            cr=run.cr,
            config=inputs.config,
            cluster=run.cluster,
            randoms=SeededRandoms(f"{meta.get('namespace')}/{meta['name']}"),
            spec=inputs.spec,
            rendered=dict(run.applied),  # what live() read in the run
        )
        for session_type in (Session, _AbsentReadsSession)
    ]
    deployer = DeployManager(run.cluster, run.cr, field_manager="oper8d")
    renderers = [Renderer(session) for session in sessions]
    out: list[Deletion] = []
    for name in (c.name for c in controller.components if c.name in disabled):
        enabled_copy = dataclasses.replace(controller.component(name), enabled=None)
        for internal, what, policy in _render_disabled(renderers, enabled_copy):
            if not isinstance(what, str):
                what = deployer.prepare(what, internal, name, policy=policy)
            out.append((name, what))
    return out


def _render_disabled(
    renderers: list[Renderer], component: ComponentSpec
) -> list[tuple[str, Obj | str, DeletionPolicy]]:
    """(internal name, object, its resource's deletionPolicy) of each object of
    ``component`` from the first renderer that renders it, Retain ones left out (nothing
    removes them); (internal name, "all <kind> objects ...") for an object whose name
    depends on an absent object; one such line per declared kind when none renders it."""
    if all(res.deletion_policy == "Retain" for res in component.resources):
        return []
    why = ""
    for renderer in renderers:
        try:
            objects = renderer.render_component(component).objects
        except ReconcileError as err:
            why = why or f"it does not render offline: {err.message}"
            continue
        unknown = "the name of {} depends on a live() object that does not exist offline"
        return [
            (internal, item.obj, item.resource.deletion_policy)
            if not _depends_on_absent(item.obj)
            else (
                internal,
                _all_of(item.obj["apiVersion"], item.obj["kind"], unknown.format(internal)),
                item.resource.deletion_policy,
            )
            for internal, item in objects.items()
            if item.resource.deletion_policy != "Retain"
        ]
    kinds = dict.fromkeys(
        k for res in component.resources if res.deletion_policy != "Retain" for k in res.kinds
    )
    if not kinds:
        return [("", f"all objects of the component ({why})", "Delete")]
    return [("", _all_of(api_version, kind, why), "Delete") for api_version, kind in kinds]


def _known(internal: str, obj: Obj) -> Obj | str:
    """``obj``, or what can be said of it when its name needs an absent object."""
    if not _depends_on_absent(obj):
        return obj
    why = f"the name of {internal} depends on a live() object that does not exist offline"
    return _all_of(obj["apiVersion"], obj["kind"], why)


def _all_of(api_version: str, kind: str, why: str) -> str:
    return f"all {api_version} {kind} objects of the component ({why})"


class _Absent(str):
    """What ``live()`` gives in place of an object that does not exist offline, when
    ``none`` would fail the template: every field of it is absent too, it is false and
    empty, and printed it is ``<absent>``, which no Kubernetes name can hold."""

    __slots__ = ()

    def __getattr__(self, _name: str) -> _Absent:
        return self

    def __getitem__(self, _key: Any) -> _Absent:
        return self

    def __call__(self, *_args: Any, **_kwargs: Any) -> _Absent:
        return self

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False


#: the absent object (``_Absent``)
_ABSENT = _Absent("<absent>")


def _depends_on_absent(obj: Obj) -> bool:
    meta = obj.get("metadata") or {}
    return any(
        isinstance(meta.get(key), str) and _ABSENT in meta[key] for key in ("name", "namespace")
    )


@dataclass
class _AbsentReadsSession(Session):
    """A session whose ``live()`` gives :data:`_ABSENT` for an object that does not exist."""

    def live(self, ref: str) -> Obj | None:
        obj = super().live(ref)
        return obj if obj is not None else cast(Obj, _ABSENT)


#: metadata a stored object carries that a write must not send (``kubectl get -o yaml``)
_STORED_ONLY = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def immutable_since(bundle: Bundle, run: OfflineRun, previous: list[Obj]) -> list[PlannedRefusal]:
    """The objects of ``run`` whose change from the object of the same identity in
    ``previous`` (an earlier render, or the stored objects with their status) the API
    server would refuse as immutable: each object of ``previous`` is created in a scratch
    in-memory cluster (its status written too) and the new one applied over it."""
    controller = controller_for(bundle, run.cr)
    before = {object_key(o): o for o in previous if isinstance(o.get("metadata"), dict)}
    scratch = MemoryCluster(clock=lambda: EPOCH)
    out: list[PlannedRefusal] = []
    for obj in run.applied.values():
        old = before.get(object_key(obj))
        if old is None:
            continue
        try:
            live = _stored(scratch, old)
        except ClusterError:
            continue  # (a previous object the server would not store has no fields to keep)
        try:
            scratch.apply(_unowned(obj), field_manager="oper8d")
        except ClusterError as err:
            planned = planned_refusal(err, live, obj, controller)
            if planned is not None:
                out.append(planned)
    return out


def _stored(cluster: MemoryCluster, obj: Obj) -> Obj:
    sent = _unowned(obj)
    sent.pop("status", None)
    sent["metadata"] = {k: v for k, v in sent["metadata"].items() if k not in _STORED_ONLY}
    cluster.apply(sent, field_manager="oper8d")
    if isinstance(obj.get("status"), dict):
        stored = cluster.get(*identity(obj))
        cluster.update_status({**(stored or {}), "status": copy.deepcopy(obj["status"])})
    live = cluster.get(*identity(obj))
    assert live is not None
    return live


def _unowned(obj: Obj) -> Obj:
    """A copy of ``obj`` without owner references (their owner is not in the scratch
    cluster, whose garbage collector would take the object)."""
    out = copy.deepcopy(obj)
    out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "ownerReferences"}
    return out


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
