"""Typos in conditions over live objects, found when a bundle is compiled.

Readiness ``expr`` rules, component ``readyWhen``, ``enabled`` and ``forEach.items``,
``dependsOn`` ``when:``, hook checks and status projections read live objects (``obj``,
``live('<component>.<resource>')``) and the CR (``spec``, ``cr.spec``). Where the kind is
known here (the resource writes one literal apiVersion and kind; a built-in kind or the
bundle's own CR), a field path its schema does not have is a problem at the expression, as
is a name no condition context defines. The same typos met at run time where the kind is
computed are ConfigErrors (``engine.missing``); a field the schema has but a live object
lacks yet means "waiting". ``bundle.compile`` calls :func:`path_problems` once per
controller.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateAssertionError, TemplateSyntaxError
from jinja2.meta import find_undeclared_variables

from oper8d.bundle.model import ControllerSpec, ResourceSpec
from oper8d.bundle.schema_messages import suggest
from oper8d.bundle.spec_schema import declares
from oper8d.errors import Problem
from oper8d.kubeschema import KubeSchemas
from oper8d.template import Expr, ReadingEnvironment
from oper8d.template.filters import template_filters

__all__ = ["CONDITION_NAMES", "path_problems"]

#: what every condition's context defines (``engine.session.Session.context``), the
#: extras some conditions get, and Jinja's own globals
CONDITION_NAMES = frozenset(
    {
        *("cr", "spec", "metadata", "status", "name", "namespace", "config", "version"),
        *("operator", "scoped_name", "truncate_name", "live", "lookup", "require"),
        *("config_error", "random_string", "component", "obj", "internal_name", "hook"),
        *("range", "dict", "lipsum", "cycler", "joiner", "namespace", "true", "false"),
        *("none", "True", "False", "None"),
    }
)

Path = tuple[str | int, ...]
#: (apiVersion, kind) of the object a chain starts at; ("", "") for the CR
Root = tuple[str, str]


def path_problems(controller: ControllerSpec, schemas: KubeSchemas) -> list[Problem]:
    """Undefined names and field paths the kinds' schemas lack, in ``controller``'s
    conditions, each at its expression."""
    env = ReadingEnvironment()
    env.filters.update(template_filters())  # undeclared names are found by compiling
    kinds = _literal_kinds(controller)
    found: list[Problem] = []
    for expr, obj_kind, bound in _conditions(controller):
        ast = _parse(env, expr)
        if ast is None:
            continue
        try:
            undeclared = find_undeclared_variables(ast)
        except TemplateAssertionError:  # reported by the template engine at render
            undeclared = set()
        for name in sorted(undeclared - CONDITION_NAMES - bound):
            found.append(
                Problem(f"{expr.source!r}: {name!r} is undefined: no such name (a typo?)", expr.pos)
            )
        bad: list[tuple[Root, Path, str]] = []
        for root, path in _chains(ast, obj_kind, kinds):
            message = _missing(root, path, schemas, controller.resource.schema)
            if message is not None:
                bad.append((root, path, message))
        for root, path, message in bad:  # the shortest path of each typo
            if not any(r == root and path[: len(p)] == p and p != path for r, p, _ in bad):
                found.append(Problem(f"{expr.source!r}: {message}", expr.pos))
    return found


def _conditions(
    controller: ControllerSpec,
) -> Iterator[tuple[Expr, Root | None, frozenset[str]]]:
    """Each condition with the kind its ``obj`` is (None: no ``obj``, or unknown) and the
    names it may read beside :data:`CONDITION_NAMES` (a ``forEach`` item's)."""
    none: frozenset[str] = frozenset()
    for comp in controller.components:
        item = frozenset({comp.for_each.var}) if comp.for_each is not None else none
        if comp.enabled is not None:
            yield comp.enabled, None, item
        if comp.for_each is not None:
            yield comp.for_each.items, None, none
        for res in comp.resources:
            kind = res.kinds[0] if len(res.kinds) == 1 else None
            for rule in res.ready:
                if rule.kind == "expr" and rule.expr is not None:
                    yield rule.expr, kind, item
        for rule in comp.ready:
            if rule.expr is not None:
                yield rule.expr, None, item
    for edge in controller.edges:
        if edge.when is not None:
            yield edge.when, None, none
    for hook in controller.hooks:
        if hook.check is not None:
            yield hook.check, None, none
    for expr in controller.status_fields.values():
        yield expr, None, none


def _literal_kinds(controller: ControllerSpec) -> dict[str, Root]:
    """``<component>.<resource>`` -> the one kind it renders, for ``live()``."""
    out: dict[str, Root] = {}
    for comp in controller.components:
        if comp.for_each is not None:
            continue
        for res in comp.resources:
            if _one_object(res):
                out[f"{comp.name}.{res.name}"] = res.kinds[0]
    return out


def _one_object(res: ResourceSpec) -> bool:
    return len(res.kinds) == 1 and res.object is not None


def _parse(env: Environment, expr: Expr) -> nodes.Template | None:
    if expr.compiled is None:
        return None
    source = expr.source
    if "{{" not in source and "{%" not in source:
        source = f"{{{{ {source} }}}}"
    try:
        return env.parse(source)
    except TemplateSyntaxError:  # reported by the template engine already
        return None


def _chains(
    ast: nodes.Template, obj_kind: Root | None, kinds: Mapping[str, Root]
) -> Iterator[tuple[Root, Path]]:
    called = {id(call.node) for call in ast.find_all(nodes.Call)}
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        if id(node) in called:  # a method: obj.status.get('x')
            continue
        chain = _chain(node)
        if chain is None:
            continue
        start, path = chain
        if start == ("name", "obj") and obj_kind is not None:
            yield obj_kind, path
        elif start == ("name", "spec"):
            yield ("", ""), ("spec", *path)
        elif start == ("name", "cr") and path[:1] == ("spec",):
            yield ("", ""), path
        elif start[0] == "live" and start[1] in kinds:
            yield kinds[start[1]], path


def _chain(node: Any) -> tuple[tuple[str, str], Path] | None:
    if isinstance(node, nodes.Name):
        return ("name", node.name), ()
    if (
        isinstance(node, nodes.Call)
        and isinstance(node.node, nodes.Name)
        and node.node.name == "live"
        and len(node.args) == 1
        and isinstance(node.args[0], nodes.Const)
        and isinstance(node.args[0].value, str)
    ):
        return ("live", node.args[0].value), ()
    if isinstance(node, nodes.Getattr):
        inner = _chain(node.node)
        return None if inner is None else (inner[0], (*inner[1], node.attr))
    if (
        isinstance(node, nodes.Getitem)
        and isinstance(node.arg, nodes.Const)
        and isinstance(node.arg.value, str | int)
    ):
        inner = _chain(node.node)
        return None if inner is None else (inner[0], (*inner[1], node.arg.value))
    return None


def _missing(
    root: Root, path: Path, schemas: KubeSchemas, cr_schema: Mapping[str, Any]
) -> str | None:
    if root == ("", ""):
        known, names = declares(cr_schema, path)
        what = "the CR's spec schema"
    else:
        known, names = schemas.has_field(root[0], root[1], path)
        what = f"{root[1]} ({root[0]})"
    if known is not False:
        return None
    shown = ""
    for part in path:
        shown += f"[{part}]" if isinstance(part, int) else (f".{part}" if shown else str(part))
    hint = suggest(str(path[-1]), names) if names else ""
    return f"{what} has no field {shown}{hint}"
