"""Text, Mermaid and Graphviz views of a bundle's component graph (``oper8d graph``)."""

from __future__ import annotations

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.engine.dag import Graph


def _graph(c: ControllerSpec) -> Graph:
    return Graph([x.name for x in c.components], [(e.upstream, e.downstream) for e in c.edges])


def _label(c: ControllerSpec, name: str) -> str:
    comp = c.component(name)
    notes = []
    if comp.enabled is not None:
        notes.append(f"if {comp.enabled.source}")
    if comp.for_each is not None:
        notes.append(f"for each {comp.for_each.var} in {comp.for_each.items.source}")
    return f"{name} ({'; '.join(notes)})" if notes else name


def render_graph(bundle: Bundle, fmt: str) -> str:
    out: list[str] = []
    for c in bundle.controllers:
        g = _graph(c)
        if fmt == "mermaid":
            out.append(f"%% controller {c.name}: {c.resource.kind}")
            out.append("graph TD")
            for n in g.topological_order():
                out.append(f'  {_id(n)}["{_label(c, n)}"]')
            for e in c.edges:
                arrow = "-.->" if e.inferred else "-->"
                text = f"|{e.when.source}|" if e.when else ""
                out.append(f"  {_id(e.upstream)} {arrow}{text} {_id(e.downstream)}")
        elif fmt == "dot":
            out.append(f'digraph "{c.name}" {{')
            out.append("  rankdir=TB;")
            for n in g.topological_order():
                out.append(f'  "{n}" [label="{_label(c, n)}"];')
            for e in c.edges:
                attrs = ["style=dashed"] if e.inferred else []
                if e.when:
                    attrs.append(f'label="{e.when.source}"')
                out.append(f'  "{e.upstream}" -> "{e.downstream}" [{", ".join(attrs)}];')
            out.append("}")
        else:
            out.append(f"controller {c.name} ({c.resource.api_version} {c.resource.kind})")
            for level, names in enumerate(g.levels()):
                for n in names:
                    ups = sorted(
                        (e for e in c.edges if e.downstream == n), key=lambda e: e.upstream
                    )
                    deps = ", ".join(
                        e.upstream + (" (inferred)" if e.inferred else "")
                        + (f" when {e.when.source}" if e.when else "")
                        for e in ups
                    )
                    line = f"  [{level}] {_label(c, n)}"
                    out.append(line + (f"  <- {deps}" if deps else ""))
    return "\n".join(out) + "\n"


def _id(name: str) -> str:
    return name.replace("-", "_")
