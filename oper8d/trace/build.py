"""``trace_cr``: one look at a live CR, built from GET and LIST requests only.

The components are rendered as the operator's next reconcile would render them (the
engine's ``Renderer`` over the live cluster: ``live()`` and ``lookup()`` read what exists,
``enabled`` is evaluated, each object named and placed as ``DeployManager.prepare`` places
it), and each rendered object is judged by the engine's own verify step
(``VerifyPhase.object_verdicts``: the bundle's ``readyWhen`` rules, else the kind's
built-in rule), so the trace and the operator cannot disagree about readiness. Objects
the CR owns that are not rendered now (a disabled component's, a hook's) are listed too.
While the CR is being deleted nothing is rendered: ``trace.deletion`` says what is left
and what holds it. TemporaryPatches are not applied: they change fields, never which
objects exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.clock import rfc3339
from oper8d.cluster.base import ClusterReader
from oper8d.engine.config import is_paused
from oper8d.engine.deploy import DeployManager, component_of, internal_name_of, object_key
from oper8d.engine.inputs import read_config_maps, resolve_inputs
from oper8d.engine.progress import RolloutState
from oper8d.engine.readiness import Readiness, combine
from oper8d.engine.render import RenderedComponent, RenderedObject, Renderer
from oper8d.engine.session import KnownRandoms, SeededRandoms, Session, generated_values
from oper8d.engine.verify_phase import VerifyPhase
from oper8d.errors import ClusterError, PreconditionError, ReconcileError
from oper8d.logs import SensitiveValues, component_context, cr_key, reconcile_context
from oper8d.objects import Obj
from oper8d.trace.deletion import deletion_view
from oper8d.trace.model import (
    ComponentTrace,
    Condition,
    CrTrace,
    ObjectTrace,
    Reported,
    Trace,
    Verdict,
)
from oper8d.trace.reading import ReadOnly, object_trace, owned_objects

__all__ = ["trace_cr"]

#: the CR's conditions a trace shows, in this order (kstatus's are derived from them)
_CONDITIONS = ("Ready", "Updating")
#: reasons of Ready / Updating that carry the last reconcile's error
_ERROR_REASONS = frozenset({"ConfigError", "Errored", "ClusterError"})


def trace_cr(
    bundle: Bundle,
    controller: ControllerSpec,
    reader: ClusterReader,
    name: str,
    namespace: str | None,
    *,
    now: datetime,
) -> Trace | None:
    """The trace of CR ``name`` (in ``namespace`` when its kind is namespaced), or None
    when it does not exist. Raises ``ClusterError`` when the cluster cannot be read."""
    kind = controller.resource
    ns = namespace if kind.namespaced else None
    cr = reader.get(kind.api_version, kind.kind, name, ns)
    if cr is None:
        return None
    by_component: dict[str, list[Obj]] = {}
    for obj in owned_objects(reader, cr):
        by_component.setdefault(component_of(obj) or "", []).append(obj)
    resource = _cr_trace(cr)
    if resource.deletion_timestamp is not None:
        components, blockers = deletion_view(controller, cr, by_component)
        return Trace(rfc3339(now), resource, components, blockers=blockers)
    components, warnings = _live_view(bundle, controller, ReadOnly(reader), cr, by_component)
    return Trace(rfc3339(now), resource, components, warnings=warnings)


def _live_view(
    bundle: Bundle,
    controller: ControllerSpec,
    cluster: ReadOnly,
    cr: Obj,
    by_component: dict[str, list[Obj]],
) -> tuple[tuple[ComponentTrace, ...], tuple[str, ...]]:
    meta = cr["metadata"]
    key = cr_key(meta.get("namespace"), meta["name"])
    order = controller.graph.topological_order()
    status = cr.get("status") or {}
    with reconcile_context("trace", key) as scope:
        sensitive = scope.sensitive
        inputs = resolve_inputs(controller, cr, read_config_maps(cluster, cr))
        error = inputs.error()
        if error is not None:
            why = f"the CR cannot be rendered: {sensitive.redact(str(error))}"
            comps = [_unrendered(n, status, by_component, why) for n in order]
            return (*comps, *_extras(by_component)), (why,)
        generated = (
            _generated(cluster, meta["name"], meta.get("namespace"))
            if controller.random_strings
            else {}
        )
        session = Session(
            bundle=bundle,
            controller=controller,
            cr=cr,
            config=inputs.config,
            cluster=cluster,
            randoms=KnownRandoms(generated, SeededRandoms(key)),
            spec=inputs.spec,
        )
        tracer = _ComponentTracer(session, sensitive, status, by_component)
        comps = []
        for name in order:
            with component_context(name):
                comps.append(tracer.trace(name))
    return (*comps, *_extras(by_component)), ()


class _ComponentTracer:
    """Renders and judges the components of one CR, in dependency order (a component's
    ``live()`` reads need its upstreams' objects recorded first)."""

    def __init__(
        self,
        session: Session,
        sensitive: SensitiveValues,
        status: Mapping[str, Any],
        by_component: dict[str, list[Obj]],
    ) -> None:
        self.session = session
        self.sensitive = sensitive
        self.status = status
        self.by_component = by_component
        self.deployer = DeployManager(session.cluster, session.cr, field_manager="oper8d")
        self.renderer = Renderer(session)
        self.state = RolloutState()
        self.verify = VerifyPhase(session, self.state)

    def trace(self, name: str) -> ComponentTrace:
        owned = self.by_component.pop(name, [])
        reported = _reported(self.status, name)
        try:
            rendered = self.renderer.render_component(self.session.controller.component(name))
            if rendered.disabled:
                left = tuple(_leftover(o) for o in owned)
                why = "enabled is false" + (": the operator deletes what is left" if left else "")
                return ComponentTrace(name, "disabled", False, "Disabled", why, reported, left)
            prepared = {
                internal: RenderedObject(
                    internal, self.deployer.prepare(item.obj, internal, name), item.resource
                )
                for internal, item in rendered.objects.items()
            }
            for internal, item in prepared.items():
                self.session.record(internal, item.obj)
            self.state.rendered(name, RenderedComponent(objects=prepared))
            verdicts = self.verify.object_verdicts(name) or []
            own_rules = self.verify.ready_when(name)
        except ClusterError as err:
            if err.status is None:  # unreachable: nothing else can be read either
                raise
            return self._failed_render(name, owned, reported, err)
        except ReconcileError as err:
            return self._failed_render(name, owned, reported, err)
        readiness = [v.readiness for v in verdicts]
        overall = combine([*readiness, *own_rules]) if readiness or own_rules else None
        rendered_keys = {object_key(v.wanted) for v in verdicts}
        objects = [
            object_trace(
                v.wanted,
                v.live,
                internal_name=v.internal,
                rendered=True,
                readiness=self._verdict(v.readiness),
            )
            for v in verdicts
        ]
        objects += [_leftover(o) for o in owned if object_key(o) not in rendered_keys]
        if overall is None:
            return ComponentTrace(name, "ready", True, "NoObjects", "", reported, tuple(objects))
        shown = self._verdict(overall)
        return ComponentTrace(
            name, shown.state, True, shown.reason, shown.message, reported, tuple(objects)
        )

    def _failed_render(
        self, name: str, owned: list[Obj], reported: Reported | None, err: ReconcileError
    ) -> ComponentTrace:
        objects = tuple(_leftover(o) for o in owned)
        text = self.sensitive.redact(str(err))
        if isinstance(err, PreconditionError):  # require(): the operator waits, as here
            return ComponentTrace(
                name, "waiting", None, "PreconditionWait", text, reported, objects
            )
        message = f"cannot be rendered now: {text}"
        return ComponentTrace(name, "error", None, "RenderError", message, reported, objects)

    def _verdict(self, r: Readiness) -> Verdict:
        return Verdict(r.state, r.reason, self.sensitive.redact(r.message))


def _generated(cluster: ReadOnly, name: str, namespace: str | None) -> dict[str, str]:
    try:
        return generated_values(cluster, name, namespace)
    except ClusterError as err:
        if err.status is None:
            raise
        return {}  # not allowed to read Secrets: names rarely come from random_string()


def _unrendered(
    name: str, status: Mapping[str, Any], by_component: dict[str, list[Obj]], why: str
) -> ComponentTrace:
    objects = tuple(_leftover(o) for o in by_component.pop(name, []))
    return ComponentTrace(name, "error", None, "ConfigError", why, _reported(status, name), objects)


def _extras(by_component: Mapping[str, list[Obj]]) -> list[ComponentTrace]:
    """Objects the CR owns outside its components: a hook's (``hook-<name>``), or those of
    a component the bundle no longer has."""
    return [
        ComponentTrace(
            name or "(none)",
            "other",
            None,
            "NotAComponent",
            "owned by the CR, not rendered by a component",
            None,
            tuple(_leftover(o) for o in objs),
        )
        for name, objs in sorted(by_component.items())
    ]


def _leftover(obj: Obj) -> ObjectTrace:
    """A live object the CR owns that is not rendered now."""
    return object_trace(obj, obj, internal_name=internal_name_of(obj), rendered=False)


def _reported(status: Mapping[str, Any], name: str) -> Reported | None:
    """What the operator's last completed rollout said about component ``name``."""
    comp = status.get("componentStatus")
    if not isinstance(comp, Mapping):
        return None
    for entry in comp.get("waiting") or ():
        if isinstance(entry, Mapping) and entry.get("component") == name:
            return Reported("waiting", str(entry.get("reason") or ""))
    for key, state in (
        ("failedComponents", "failed"),
        ("verifiedComponents", "verified"),
        ("unverifiedComponents", "unverified"),
        ("deployedComponents", "deployed"),
        ("unstartedComponents", "unstarted"),
    ):
        if name in (comp.get(key) or ()):
            return Reported(state)
    return None


def _cr_trace(cr: Obj) -> CrTrace:
    meta = cr.get("metadata") or {}
    status = cr.get("status") or {}
    found = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, Mapping)}
    conditions = tuple(
        Condition(
            type=t,
            status=str(found[t].get("status") or "Unknown"),
            reason=str(found[t].get("reason") or ""),
            message=str(found[t].get("message") or ""),
            last_transition_time=found[t].get("lastTransitionTime"),
        )
        for t in _CONDITIONS
        if t in found
    )
    last_error = next(
        (c.message for c in conditions if c.reason in _ERROR_REASONS and c.message), None
    )
    return CrTrace(
        api_version=str(cr.get("apiVersion") or ""),
        kind=str(cr.get("kind") or ""),
        name=str(meta.get("name") or ""),
        namespace=meta.get("namespace") or None,
        uid=meta.get("uid"),
        generation=meta.get("generation"),
        observed_generation=status.get("observedGeneration"),
        creation_timestamp=meta.get("creationTimestamp"),
        deletion_timestamp=meta.get("deletionTimestamp"),
        finalizers=tuple(str(f) for f in meta.get("finalizers") or ()),
        paused=is_paused(cr),
        conditions=conditions,
        last_error=last_error,
    )
