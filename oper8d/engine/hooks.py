"""Phases 2 and 4 of a rollout: the bundle's hooks after the deploy and verify graphs.

A hook renders and applies its objects (owned by ``hook-<name>``), then its ``check``
must hold: false after deploy holds the rollout (PreconditionError), after verify it
is not ready yet (VerificationError). Run by ``engine.rollout`` on the reconcile's
thread, hooks of one phase in bundle order.
"""

from __future__ import annotations

from oper8d.bundle.model import HookPhase, HookSpec
from oper8d.engine.declared import check_declared
from oper8d.engine.deploy import DeployManager, hook_component
from oper8d.engine.missing import SchemaSource
from oper8d.engine.render import (
    RenderedObject,
    Renderer,
    checked_against_schema,
    holds,
    render_resource,
)
from oper8d.engine.session import Session
from oper8d.errors import PreconditionError, ReconcileError, RolloutError, VerificationError
from oper8d.logs import component_context
from oper8d.objects import Obj

__all__ = ["run_hooks"]


def run_hooks(
    session: Session, deployer: DeployManager, renderer: Renderer, phase: HookPhase
) -> dict[str, Obj]:
    """Run the hooks of ``phase``; returns the objects they applied by internal name.
    The first hook that fails stops the phase with its error. ``renderer`` holds the
    identities the rollout's components render: a hook may not render one of them."""
    applied: dict[str, Obj] = {}
    for hook in session.controller.hooks:
        if hook.phase != phase:
            continue
        try:
            with component_context(hook_component(hook.name)):
                applied.update(_run_hook(session, deployer, renderer, hook))
        except ReconcileError:
            raise
        except Exception as err:  # a bug or an unexpected client error: fail the rollout
            raise RolloutError(f"hook '{hook.name}': {err!r}", pos=hook.pos) from err
    return applied


def _run_hook(
    session: Session, deployer: DeployManager, renderer: Renderer, hook: HookSpec
) -> dict[str, Obj]:
    owner = hook_component(hook.name)
    ctx = session.context(hook=hook.name)
    applied: dict[str, Obj] = {}
    # every object rendered, checked (declaration, schema, one source per object) and its
    # kind recorded in the inventory before any is applied: nothing half-applied
    items = [item for res in hook.resources for item in render_resource(res, owner, ctx)]
    checked: dict[str, RenderedObject] = {}
    for item in items:
        check_declared(
            item.obj,
            item.resource,
            item.internal,
            ctx,
            session.namespace,
            session.controller.config_defaults,
        )
        obj = checked_against_schema(session, item.obj, item.resource, item.internal)
        checked[item.internal] = RenderedObject(item.internal, obj, item.resource)
    renderer.claim(checked)
    prepared = {i: deployer.prepare(item.obj, i, owner) for i, item in checked.items()}
    deployer.require_recorded(prepared.values())
    for internal, obj in prepared.items():
        deployer.apply(obj, checked[internal].resource.method)
        session.record(internal, obj)
        applied[internal] = obj
    schemas = SchemaSource(session.controller.resource.schema, session.schemas)
    if hook.check is not None and not holds(hook.check, ctx, schemas):
        message = hook.message or f"hook '{hook.name}': {hook.check.source} is false"
        if hook.phase.startswith("afterDeploy"):
            raise PreconditionError(message, pos=hook.pos)
        raise VerificationError(message, pos=hook.pos)
    return applied
