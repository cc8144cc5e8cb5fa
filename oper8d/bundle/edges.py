"""Dependency edges of a controller's components, as the bundle compiler infers them.

Used by ``bundle.compile``: the edges a bundle declares (``dependsOn``, with ``when``) and
those inferred from ``live('<component>.<resource>')`` calls made while rendering a
component; references in conditions, readiness rules, hooks and status fields are checked
but order nothing. Problems (an unknown component or resource, a cycle naming each of its
edges) go to the compiler's ``problem`` callback, so every one is reported in one pass.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Iterator

from oper8d.bundle.model import ComponentSpec, Edge, HookSpec
from oper8d.bundle.nodes import _Node
from oper8d.dag import CycleError, Graph
from oper8d.errors import SourcePos
from oper8d.template import Expr

__all__ = ["ReportProblem", "infer_edges", "suggest_name"]

_REF = re.compile(r"^(?P<component>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<resource>.+)$")

#: how the compiler takes a problem: its message and where it is
ReportProblem = Callable[[str, SourcePos], None]


def infer_edges(
    component_nodes: list[_Node],
    components: list[ComponentSpec],
    hooks: list[HookSpec],
    status_fields: dict[str, Expr],
    *,
    expr: Callable[[_Node], Expr | None],
    problem: ReportProblem,
    unloaded: Collection[str] | None = (),
) -> list[Edge]:
    """The controller's dependency edges: ``dependsOn`` (with their ``when`` conditions)
    and those inferred from ``live()`` calls made while rendering; every reference checked
    and a cycle reported with the position of each of its edges (through ``problem``).
    ``component_nodes``: every component entry as written, included files' too;
    ``unloaded``: the components of included files that failed to load or check (None: a
    file whose components are not known failed)."""
    by_name = {c.name: c for c in components}
    # components written but not compiled (their own problems are reported): a reference to
    # one is no second problem ("unknown component" listed before its cause)
    written = (node.get("name") for node in component_nodes)
    failed: set[str] = _Everything() if unloaded is None else set(unloaded)
    failed.update({name for name in written if isinstance(name, str)} - by_name.keys())
    edges: dict[tuple[str, str], Edge] = {}
    comp_nodes = {c.name: c.pos for c in components}
    for comp_node in component_nodes:
        name = comp_node.get("name")
        if not isinstance(name, str) or name not in by_name:
            continue
        for dep in comp_node.child("dependsOn").items():
            upstream = dep.value if isinstance(dep.value, str) else dep.get("component")
            if not isinstance(upstream, str):
                continue  # the bundle schema reports the wrong type
            if upstream not in by_name:
                if upstream not in failed:
                    _unknown_component(upstream, list(by_name), dep.pos, problem)
                continue
            if upstream == name:
                problem(f"component '{name}' depends on itself", dep.pos)
                continue
            when = expr(dep.child("when")) if dep.has("when") else None
            ready = dep.get("ready") is True
            edges[(upstream, name)] = Edge(upstream, name, dep.pos, when=when, ready=ready)
    for comp in components:
        for ref, pos in template_references(comp):
            upstream = _referenced_component(ref, pos, by_name, failed, problem)
            if upstream is None:
                continue
            if upstream != comp.name and (upstream, comp.name) not in edges:
                edges[(upstream, comp.name)] = Edge(upstream, comp.name, pos, inferred=True)
    # live() in conditions, readiness, hooks and status fields reads objects without
    # ordering anything: only check that the reference names something that exists
    conditions = condition_references(list(edges.values()), components, hooks, status_fields)
    for ref, pos in conditions:
        _referenced_component(ref, pos, by_name, failed, problem)
    graph = Graph(comp_nodes, [(e.upstream, e.downstream) for e in edges.values()])
    try:
        graph.check_acyclic()
    except CycleError as err:
        cycle = err.cycle
        first = edges[(cycle[0], cycle[1])]
        where = ", ".join(
            f"{a} -> {b} at {edges[(a, b)].pos}" for a, b in itertools.pairwise(cycle)
        )
        problem(f"dependency cycle: {' -> '.join(cycle)} ({where})", first.pos)
    return sorted(edges.values(), key=lambda e: (e.downstream, e.upstream))


class _Everything(set[str]):
    """Every name: the components an unreadable included file held may be any."""

    def __contains__(self, _name: object) -> bool:
        return True


def _referenced_component(
    ref: str,
    pos: SourcePos,
    by_name: dict[str, ComponentSpec],
    failed: set[str],
    problem: ReportProblem,
) -> str | None:
    """The component a ``live('<component>.<resource>')`` reference names, or None
    (and a problem, unless it names a component ``failed`` to compile) when it names
    nothing in the bundle."""
    m = _REF.match(ref)
    if not m:
        problem(f"live('{ref}'): a reference is '<component>.<resource>'", pos)
        return None
    upstream = m["component"]
    if upstream not in by_name:
        if upstream not in failed:
            _unknown_component(upstream, list(by_name), pos, problem)
        return None
    resource = m["resource"]
    if not _has_resource(by_name[upstream], resource):
        names = [r.name for r in by_name[upstream].resources]
        problem(
            f"live('{ref}'): component '{upstream}' has no resource '{resource}'"
            + suggest_name(resource, names),
            pos,
        )
        return None
    return upstream


def _unknown_component(name: str, known: list[str], pos: SourcePos, problem: ReportProblem) -> None:
    problem(f"unknown component '{name}'" + suggest_name(name, known), pos)


def template_references(comp: ComponentSpec) -> Iterator[tuple[str, SourcePos]]:
    """live() references made while rendering ``comp`` (not while verifying it)."""
    for res in comp.resources:
        tmpl = res.object or res.template
        for ref in sorted(getattr(tmpl, "references", ())):
            yield ref, res.pos
    for patch in comp.patches:
        for ref in sorted(patch.patch.references):
            yield ref, patch.pos
    for expr in (comp.enabled, comp.for_each.items if comp.for_each else None):
        if expr is not None:
            for ref in sorted(expr.references):
                yield ref, expr.pos


def condition_references(
    edges: list[Edge],
    components: list[ComponentSpec],
    hooks: list[HookSpec],
    status_fields: dict[str, Expr],
) -> Iterator[tuple[str, SourcePos]]:
    """live() references that are read but order nothing: edge conditions, readiness
    rules, hooks and status fields."""
    exprs: list[Expr | None] = [e.when for e in edges]
    for comp in components:
        rules = [*comp.ready, *(rule for res in comp.resources for rule in res.ready)]
        exprs.extend(rule.expr for rule in rules)
        exprs.extend(rule.subsystem_version for rule in rules)
    for hook in hooks:
        exprs.append(hook.check)
        for res in hook.resources:
            tmpl = res.object or res.template
            for ref in sorted(getattr(tmpl, "references", ())):
                yield ref, res.pos
    exprs.extend(status_fields.values())
    for expr in exprs:
        if expr is not None:
            for ref in sorted(expr.references):
                yield ref, expr.pos


def _has_resource(comp: ComponentSpec, resource: str) -> bool:
    # multi-document templates name objects "<resource>-<kind>-<name>"
    return any(resource == r.name or resource.startswith(r.name + "-") for r in comp.resources)


def suggest_name(name: str, known: list[str]) -> str:
    import difflib  # (only for a problem: not loaded by a valid bundle)

    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
