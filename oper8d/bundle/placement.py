"""Where a resource's objects go is the bundle author's choice, never the CR author's.

A resource's ``namespace:`` may be a template string, but it decides which namespace the
operator writes to (and so the RBAC the operator holds there). It may read only what the
CR author cannot choose: ``config`` (checked again when rendering, since a CR can override
config: ``engine.declared``), the CR's ``namespace`` (the cluster admin gives the tenant
that), ``operator`` and the pure helpers. A ``namespace:`` reading ``spec``, the CR's
``name``, a forEach item or a live object would let a tenant pick any namespace, so it is
a bundle error at ``oper8d validate``.
"""

from __future__ import annotations

from collections.abc import Iterator

from jinja2.exceptions import TemplateError
from jinja2.meta import find_undeclared_variables

from oper8d.bundle.model import ControllerSpec, ResourceSpec
from oper8d.errors import Problem
from oper8d.template import Expr, ReadingEnvironment

__all__ = ["NAMESPACE_NAMES", "namespace_problems"]

#: what a ``namespace:`` template may read
NAMESPACE_NAMES = frozenset(
    {"config", "namespace", "operator", "truncate_name", "require", "config_error"}
)


def namespace_problems(controller: ControllerSpec) -> list[Problem]:
    """Each ``namespace:`` of ``controller``'s resources that reads a name the CR author
    controls, at its position."""
    found = []
    for res, item in _resources(controller):
        expr = res.namespace
        if expr is None or expr.compiled is None:
            continue
        # a forEach item named like an allowed name (``as: namespace``) hides that name
        tenant = sorted(_names(expr) - (NAMESPACE_NAMES - {item}))
        if tenant:
            read = [f"the forEach item {n}" if n == item else n for n in tenant]
            found.append(
                Problem(
                    f"`namespace: {expr.source}` reads {', '.join(read)}: a CR author would "
                    "choose the namespace the operator writes to. A declared namespace may "
                    f"read only {', '.join(sorted(NAMESPACE_NAMES))}",
                    expr.pos,
                )
            )
    return found


def _resources(controller: ControllerSpec) -> Iterator[tuple[ResourceSpec, str | None]]:
    """Each resource, and the name its component's forEach item goes by (None: none)."""
    for comp in controller.components:
        item = comp.for_each.var if comp.for_each is not None else None
        for res in comp.resources:
            yield res, item
    for hook in controller.hooks:
        for res in hook.resources:
            yield res, None


def _names(expr: Expr) -> set[str]:
    """The names ``expr`` reads from its context (Jinja's own globals included: the CR's
    ``namespace`` shadows Jinja's ``namespace()``)."""
    env = ReadingEnvironment()
    env.globals.clear()
    try:
        return set(find_undeclared_variables(env.parse(expr.source)))
    except TemplateError:  # reported by the template engine when it compiled
        return set()
