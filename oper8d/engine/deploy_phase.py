"""Phase 1 of a rollout for one component: its edge conditions checked, its objects
rendered (``engine.render``), stamped and applied (``engine.deploy``); a disabled
component has what it deployed earlier deleted.

Called by ``engine.rollout`` on the DAG runner's worker threads, one call per component,
in dependency order. Writes only objects: the CR itself (inventory, status) is written by
the reconciler before and after the rollout, never from here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from oper8d.bundle.model import Edge, ResourceSpec
from oper8d.engine.deploy import DeployManager, component_of
from oper8d.engine.immutable import on_refusal
from oper8d.engine.leave import FieldPath
from oper8d.engine.missing import SchemaSource
from oper8d.engine.progress import RolloutState
from oper8d.engine.render import RenderedComponent, RenderedObject, Renderer, holds
from oper8d.engine.session import Session
from oper8d.engine.teardown import prune
from oper8d.engine.verify import Readiness
from oper8d.errors import (
    ClusterError,
    ExpectedError,
    PreconditionError,
    ReconcileError,
    RolloutError,
)
from oper8d.logs import component_context

__all__ = ["DeployPhase"]


class DeployPhase:
    """Deploys components of one session; call it with a component name."""

    def __init__(
        self,
        session: Session,
        deployer: DeployManager,
        renderer: Renderer,
        state: RolloutState,
        readiness: Callable[[str], Readiness | None] | None = None,
    ) -> None:
        """``readiness`` judges a deployed upstream component for ``ready`` edges (the
        verify phase's ``VerifyPhase.readiness``; None: such edges only wait for deploy)."""
        self.session = session
        self.deployer = deployer
        self.renderer = renderer
        self.state = state
        self.readiness = readiness
        # what an edge's `when:` may read (engine.missing): the CR's schema and the session's
        self._schemas = SchemaSource(session.controller.resource.schema, session.schemas)
        # the fields each resource leaves this rollout: its `when:`s are evaluated once, so
        # prepare (the hash) and apply (the body) cannot disagree
        self._left_fields: dict[tuple[str, str], tuple[FieldPath, ...]] = {}
        # each component's incoming edges, found once (not by a scan per component)
        self._edges_into: dict[str, list[Edge]] = {}
        for edge in session.controller.edges:
            self._edges_into.setdefault(edge.downstream, []).append(edge)

    def __call__(self, name: str) -> None:
        with component_context(name):
            self._deploy(name)

    def _deploy(self, name: str) -> None:
        progress = self.state.progress
        progress.update(name, "deploying")
        try:
            self._check_edges(name)
            spec = self.session.controller.component(name)
            rendered = self._prepared(name, self.renderer.render_component(spec))
            self.state.rendered(name, rendered)
            written = self._apply(name, rendered)
            if rendered.disabled:
                self._delete_objects_of(name)
        except ExpectedError as err:
            self.state.wait(name, err.message)
            raise
        except ReconcileError as err:
            progress.update(name, "failed", err.message)
            raise
        except Exception as err:  # a bug or an unexpected client error: fail this component only
            progress.update(name, "failed", repr(err))
            raise RolloutError(f"component '{name}': {err!r}") from err
        if rendered.disabled:
            progress.update(name, "disabled")
        else:
            total = len(rendered.objects)
            detail = f"{written} of {total} applied" if written else f"{total} unchanged"
            progress.update(name, "deployed", detail)

    def _check_edges(self, name: str) -> None:
        """Raise PreconditionError while an incoming ``ready`` edge's upstream is not ready
        (a disabled upstream counts as ready) or an edge's ``when`` does not hold."""
        for edge in self._edges_into.get(name, ()):
            if edge.ready and self.readiness is not None:
                verdict = self.readiness(edge.upstream)
                if verdict is not None and verdict.state != "ready":
                    raise PreconditionError(
                        f"waiting for {edge.upstream} to be ready: {verdict.message}",
                        pos=edge.pos,
                    )
            if edge.when is not None and not holds(
                edge.when, self.session.context(component=name), self._schemas
            ):
                raise PreconditionError(
                    f"waiting for {edge.upstream}: {edge.when.source}", pos=edge.pos
                )

    def _prepared(self, name: str, rendered: RenderedComponent) -> RenderedComponent:
        """``rendered`` with each object stamped for apply (namespace, ownership)."""
        objects = {}
        for internal, item in rendered.objects.items():
            with _placed(item, "prepared for apply"):
                left = self._left(name, item.resource)
                policy = item.resource.deletion_policy
                prepared = self.deployer.prepare(item.obj, internal, name, left, policy)
            objects[internal] = RenderedObject(internal, prepared, item.resource)
        return RenderedComponent(objects=objects, disabled=rendered.disabled)

    def _left(self, name: str, resource: ResourceSpec) -> tuple[FieldPath, ...]:
        """The fields ``resource`` leaves to other controllers this time (``when`` holds)."""
        key = (name, resource.name)
        left = self._left_fields.get(key)
        if left is None:
            left = self._left_fields[key] = tuple(
                f.path
                for f in resource.leave_to_others
                if f.when is None or holds(f.when, self.session.context(component=name))
            )
        return left

    def _apply(self, name: str, rendered: RenderedComponent) -> int:
        """Apply the component's objects, all of whose kinds the CR's inventory must name
        first (else nothing is applied); returns how many were written."""
        self.deployer.require_recorded(item.obj for item in rendered.objects.values())
        written = 0
        for internal, item in rendered.objects.items():
            with _placed(item, "applied"):
                left = self._left(name, item.resource)
                method = item.resource.method
                try:
                    _live, wrote = self.deployer.apply(item.obj, method, left)
                except ClusterError as err:  # (an immutable field: as the resource says)
                    _live, wrote = on_refusal(
                        self.deployer, item.obj, err, item.resource, name, method, left
                    )
            written += wrote
            self.session.record(internal, item.obj)
        return written

    def _delete_objects_of(self, name: str) -> None:
        """Delete what a now-disabled component deployed earlier (once: then it is gone),
        or release or keep it as its ``deletionPolicy`` says."""
        owned = self.deployer.owned()
        prune(self.deployer.cluster, self.deployer, [o for o in owned if component_of(o) == name])


@contextlib.contextmanager
def _placed(item: RenderedObject, step: str) -> Iterator[None]:
    """An unexpected error while an object is prepared or applied (a field of the wrong type
    that the in-memory cluster does not check, say) names the object and its resource."""
    try:
        yield
    except ReconcileError:
        raise
    except Exception as err:
        raise RolloutError(
            f"object '{item.internal}' could not be {step}: {type(err).__name__}: {err} "
            "(is a field of the wrong type? run `oper8d render` to see the object)",
            pos=item.resource.pos,
        ) from err
