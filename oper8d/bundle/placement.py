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

from jinja2 import Environment
from jinja2.exceptions import TemplateError
from jinja2.meta import find_undeclared_variables

from oper8d.bundle.model import ControllerSpec, ResourceSpec
from oper8d.errors import Problem
from oper8d.template import Expr

__all__ = ["NAMESPACE_NAMES", "namespace_problems"]

#: what a ``namespace:`` template may read
NAMESPACE_NAMES = frozenset(
    {"config", "namespace", "operator", "truncate_name", "require", "config_error"}
)


def namespace_problems(controller: ControllerSpec) -> list[Problem]:
    """Each ``namespace:`` of ``controller``'s resources that reads a name the CR author
    controls, at its position."""
    found = []
    for res in _resources(controller):
        expr = res.namespace
        if expr is None or expr.compiled is None:
            continue
        tenant = sorted(_names(expr) - NAMESPACE_NAMES)
        if tenant:
            found.append(
                Problem(
                    f"`namespace: {expr.source}` reads {', '.join(tenant)}: a CR author would "
                    "choose the namespace the operator writes to. A declared namespace may "
                    f"read only {', '.join(sorted(NAMESPACE_NAMES))}",
                    expr.pos,
                )
            )
    return found


def _resources(controller: ControllerSpec) -> Iterator[ResourceSpec]:
    for comp in controller.components:
        yield from comp.resources
    for hook in controller.hooks:
        yield from hook.resources


def _names(expr: Expr) -> set[str]:
    try:
        return set(find_undeclared_variables(Environment().parse(expr.source)))
    except TemplateError:  # reported by the template engine when it compiled
        return set()
