"""Text, Mermaid and Graphviz views of a bundle's component graph (``oper8d graph``).

Every view shows each component (with its ``enabled`` condition and ``forEach``), every
dependency edge with its ``when`` condition, and marks inferred edges (found in a
template's ``live('<component>.<resource>')`` call): ``(inferred)`` in text, dashed
(``-.->`` / ``style=dashed``) in Mermaid and dot. Edges are listed in dependency order,
so the output is stable. Used by the CLI only; imports nothing from the kubernetes client.
"""

from __future__ import annotations

from collections.abc import Callable

from oper8d.bundle.model import Bundle, ControllerSpec, Edge

__all__ = ["FORMATS", "render_graph"]

FORMATS = ("text", "mermaid", "dot")

#: characters that would end or break a Mermaid label, written as Mermaid entity codes
_MERMAID_ESCAPES = {'"': "#quot;", "|": "#124;", "<": "#lt;", ">": "#gt;"}


def render_graph(bundle: Bundle, fmt: str) -> str:
    """The graphs of every controller of ``bundle`` in format ``fmt`` (one of FORMATS)."""
    views: dict[str, Callable[[Bundle], list[str]]] = {
        "text": _text,
        "mermaid": _mermaid,
        "dot": _dot,
    }
    if fmt not in views:
        raise ValueError(f"unknown graph format {fmt!r}; use one of {', '.join(FORMATS)}")
    return "\n".join(views[fmt](bundle)) + "\n"


def _order(c: ControllerSpec) -> tuple[list[str], list[Edge]]:
    """Components upstream-first, and edges sorted by (downstream, upstream) in that order."""
    order = c.graph.topological_order()
    rank = {name: i for i, name in enumerate(order)}
    edges = sorted(c.edges, key=lambda e: (rank[e.downstream], rank[e.upstream]))
    return order, edges


def _label(c: ControllerSpec, name: str) -> str:
    comp = c.component(name)
    notes = []
    if comp.enabled is not None:
        notes.append(f"if {comp.enabled.source}")
    if comp.for_each is not None:
        notes.append(f"for each {comp.for_each.var} in {comp.for_each.items.source}")
    return f"{name} ({'; '.join(notes)})" if notes else name


def _edge_label(e: Edge) -> str:
    """What an edge waits for beyond deploy: ``ready`` and/or its ``when``."""
    return " and ".join(
        part for part in ("ready" if e.ready else "", e.when.source if e.when else "") if part
    )


# -- text ------------------------------------------------------------------------------
def _text(bundle: Bundle) -> list[str]:
    out: list[str] = []
    for c in bundle.controllers:
        order, edges = _order(c)
        rank = {name: i for i, name in enumerate(order)}
        out.append(f"controller {c.name} ({c.resource.api_version} {c.resource.kind})")
        for level, names in enumerate(c.graph.levels()):
            for n in sorted(names, key=rank.__getitem__):  # upstream-first within a level
                deps = ", ".join(
                    e.upstream
                    + (" (inferred)" if e.inferred else "")
                    + (" ready" if e.ready else "")
                    + (f" when {e.when.source}" if e.when else "")
                    for e in edges
                    if e.downstream == n
                )
                line = f"  [{level}] {_label(c, n)}"
                out.append(line + (f"  <- {deps}" if deps else ""))
    if any(e.inferred for c in bundle.controllers for e in c.edges):
        out.append("(inferred): from a live('<component>.<resource>') call in a template")
    return out


# -- Mermaid ---------------------------------------------------------------------------
def _mermaid_text(text: str) -> str:
    return "".join(_MERMAID_ESCAPES.get(ch, ch) for ch in text)


def _mermaid_id(controller_index: int, name: str) -> str:
    # prefixed, so a component called `end` or `graph` cannot clash with Mermaid keywords
    return f"c{controller_index}_{name.replace('-', '_')}"


def _mermaid(bundle: Bundle) -> list[str]:
    out = ["flowchart TD"]
    several = len(bundle.controllers) > 1
    for i, c in enumerate(bundle.controllers):
        order, edges = _order(c)
        indent = "    " if several else "  "
        if several:
            out.append(f'  subgraph c{i}["{_mermaid_text(f"{c.name}: {c.resource.kind}")}"]')
        else:
            out.append(f"  %% controller {c.name}: {c.resource.kind}")
        for n in order:
            out.append(f'{indent}{_mermaid_id(i, n)}["{_mermaid_text(_label(c, n))}"]')
        for e in edges:
            arrow = "-.->" if e.inferred else "-->"
            label = _edge_label(e)
            text = f'|"{_mermaid_text(label)}"|' if label else ""
            out.append(
                f"{indent}{_mermaid_id(i, e.upstream)} {arrow}{text} {_mermaid_id(i, e.downstream)}"
            )
        if several:
            out.append("  end")
    return out


# -- Graphviz dot ----------------------------------------------------------------------
def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _dot(bundle: Bundle) -> list[str]:
    several = len(bundle.controllers) > 1
    out = [f'digraph "{_dot_text(bundle.name)}" {{', "  rankdir=TB;", "  node [shape=box];"]
    for c in bundle.controllers:
        order, edges = _order(c)

        def node(name: str, c: ControllerSpec = c) -> str:
            return f'"{_dot_text(f"{c.name}/{name}" if several else name)}"'

        indent = "    " if several else "  "
        if several:
            out.append(f'  subgraph "cluster_{_dot_text(c.name)}" {{')
            out.append(f'    label="{_dot_text(f"{c.name}: {c.resource.kind}")}";')
        for n in order:
            out.append(f'{indent}{node(n)} [label="{_dot_text(_label(c, n))}"];')
        for e in edges:
            attrs = ["style=dashed"] if e.inferred else []
            if label := _edge_label(e):
                attrs.append(f'label="{_dot_text(label)}"')
            suffix = f" [{', '.join(attrs)}]" if attrs else ""
            out.append(f"{indent}{node(e.upstream)} -> {node(e.downstream)}{suffix};")
        if several:
            out.append("  }")
    out.append("}")
    return out
