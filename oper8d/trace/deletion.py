"""A CR being deleted: what is left of it and what holds the deletion.

The reconciler's finalizer (``engine.reconcile``, when the bundle's ``finalize`` is on)
deletes the CR's objects a component at a time, downstream components first, and waits
while objects of the current component still exist (their own finalizers); then it takes
its finalizer off the CR. Without that finalizer the API server deletes the CR at once and
the garbage collector its objects, through their owner references. Each blocker is one
sentence, in the order things have to happen.
"""

from __future__ import annotations

from oper8d.bundle.model import ControllerSpec
from oper8d.engine.deploy import internal_name_of
from oper8d.kinds import ref_of
from oper8d.objects import Obj
from oper8d.trace.model import ComponentTrace
from oper8d.trace.reading import object_trace

__all__ = ["deletion_view"]


def deletion_view(
    controller: ControllerSpec, cr: Obj, by_component: dict[str, list[Obj]]
) -> tuple[tuple[ComponentTrace, ...], tuple[str, ...]]:
    """The components (dependency order) with the objects still present, and the blockers."""
    graph = controller.graph
    extra = sorted(set(by_component) - set(graph.nodes))
    # the finalizer's order: downstream components first, then hooks' and unknown objects
    deletion_order = [*graph.reverse_order(), *extra]
    current = next((n for n in deletion_order if by_component.get(n)), None)
    components = []
    for name in [*graph.topological_order(), *extra]:
        objs = by_component.get(name, [])
        objects = tuple(
            object_trace(o, o, internal_name=internal_name_of(o), rendered=False) for o in objs
        )
        if not objs:
            reason, message = "Deleted", "nothing left"
        elif name == current:
            reason, message = "Deleting", f"{len(objs)} left: deleted now"
        else:
            reason, message = "WaitingToDelete", f"{len(objs)} left: deleted after {current}"
        components.append(
            ComponentTrace(name or "(none)", "deleting", None, reason, message, None, objects)
        )
    return tuple(components), _blockers(controller, cr, by_component, deletion_order, current)


def _blockers(
    controller: ControllerSpec,
    cr: Obj,
    by_component: dict[str, list[Obj]],
    deletion_order: list[str],
    current: str | None,
) -> tuple[str, ...]:
    finalizers = [str(f) for f in (cr.get("metadata") or {}).get("finalizers") or ()]
    ours = controller.finalizer
    ordered = controller.finalize.delete_components and ours in finalizers
    out: list[str] = []
    for finalizer in finalizers:
        if finalizer != ours:
            out.append(
                f"finalizer {finalizer} on the {cr.get('kind')}: not oper8d's; the controller "
                "that set it must remove it"
            )
        elif current is None:
            out.append(
                f"finalizer {ours} on the {cr.get('kind')}: nothing is left to delete; the "
                "operator removes it at its next reconcile (is it running?)"
            )
        elif ordered:
            out.append(
                f"finalizer {ours} on the {cr.get('kind')}: the operator removes it once the "
                f"objects below are gone, deleting a component at a time (now: {current})"
            )
        else:
            out.append(f"finalizer {ours} on the {cr.get('kind')}: the operator removes it")
    for name in deletion_order:
        for obj in by_component.get(name, []):
            out.append(_object_blocker(obj, name, ordered, current))
    return tuple(out)


def _object_blocker(obj: Obj, component: str, ordered: bool, current: str | None) -> str:
    meta = obj.get("metadata") or {}
    ref = ref_of(obj)
    since = meta.get("deletionTimestamp")
    finalizers = [str(f) for f in meta.get("finalizers") or ()]
    if since and finalizers:
        return f"{ref}: being deleted since {since}, held by finalizers {', '.join(finalizers)}"
    if since:
        return f"{ref}: being deleted since {since}"
    if not ordered:
        return f"{ref}: left to the garbage collector (owner reference)"
    if component == current:
        return f"{ref}: the operator deletes it now (component {component})"
    return f"{ref}: deleted after component {current} (component {component})"
