"""Typos in conditions over live objects, found when a bundle is compiled.

Readiness ``expr`` rules, component ``readyWhen``, ``enabled`` and ``forEach.items``,
``dependsOn`` ``when:``, ``leaveToOthers`` ``when:``, hook checks and status projections read
live objects (``obj``, ``live('<component>.<resource>')``) and the CR (``spec``,
``cr.spec``). Where the kind is known here (the resource writes one literal apiVersion and
kind; a built-in kind or the bundle's own CR), a field path its schema does not have is a
problem at the expression, as is a name no condition context defines. A ``leaveToOthers``
path is held to the schemas of the kinds its resource renders the same way: a typo there
would leave nothing to the autoscaler, and oper8d would set the field back each time. The
same typos met at run time where the kind is computed are ConfigErrors
(``engine.missing``); a field the schema has but a live object lacks yet means "waiting".
``bundle.compile`` calls :func:`path_problems` once per controller.
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
from oper8d.fieldpaths import format_field_path
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
    return found + _leave_problems(controller, schemas)


def _leave_problems(controller: ControllerSpec, schemas: KubeSchemas) -> list[Problem]:
    """Each ``leaveToOthers`` path that no kind its resource renders can hold; silent
    when a kind has no known schema or keeps unknown fields there (nobody can tell)."""
    found: list[Problem] = []
    for comp in controller.components:
        for res in comp.resources:
            for field in res.leave_to_others:
                message = _leave_missing(res.kinds, field.path, schemas)
                if message is not None:
                    shown = format_field_path(field.path)
                    found.append(Problem(f"leaveToOthers '{shown}': {message}", field.pos))
    return found


def _leave_missing(
    kinds: tuple[Root, ...], path: tuple[str, ...], schemas: KubeSchemas
) -> str | None:
    messages = []
    for api_version, kind in kinds:
        known, _names = schemas.has_field(api_version, kind, path)
        if known is not False:
            return None
        what = f"{kind} ({api_version})"
        listed = _list_in(schemas, api_version, kind, path)
        if listed is not None:  # left keys step into a list: they never match
            messages.append(
                f"{what}: {listed} is a list, and a left field is named by map keys "
                f"only (leave {listed} whole)"
            )
        else:
            messages.append(_missing((api_version, kind), path, schemas, {}) or "")
    return "; ".join(messages)


def _list_in(schemas: KubeSchemas, api_version: str, kind: str, path: Path) -> str | None:
    """The list field ``path`` steps into by a key, as the user writes it, if any."""
    for end in range(1, len(path)):
        if schemas.has_field(api_version, kind, path[:end])[0] is not True:
            return None
        if schemas.has_field(api_version, kind, (*path[:end], 0))[0] is True:
            return format_field_path(path[:end])
    return None


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
            for field in res.leave_to_others:
                if field.when is not None:
                    yield field.when, None, item
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
    def lookup(prefix: Path) -> tuple[bool | None, tuple[str, ...]]:
        if root == ("", ""):
            return declares(cr_schema, prefix)
        return schemas.has_field(root[0], root[1], prefix)

    known, names = lookup(path)
    if known is not False:
        return None
    wrong = path[-1]
    for end in range(1, len(path)):  # the key that went wrong, for the "did you mean"
        known, found = lookup(path[:end])
        if known is False:
            wrong, names = path[end - 1], found
            break
    what = "the CR's spec schema" if root == ("", "") else f"{root[1]} ({root[0]})"
    hint = suggest(str(wrong), names) if names else ""
    return f"{what} has no field {format_field_path(path)}{hint}"
