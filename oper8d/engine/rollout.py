"""The four-phase rollout of one CR (oper8's contract, event-driven).

1. deploy graph: components in dependency order (edge conditions checked, objects
   rendered, patched, applied; disabled components have their objects deleted);
2. afterDeploy hooks (afterDeployUnsuccessful when phase 1 did not complete);
3. verify graph over the deployed components (skipped after a fatal deploy error);
4. afterVerify hooks (afterVerifyUnsuccessful when phase 3 did not complete).

A failure stops only the failing component's downstream components. This module runs
the phases and sums them up; each phase's work lives in its own module (``render``,
``deploy_phase``, ``verify_phase``, ``hooks``). Used by the reconciler, which writes the
CR before and after, never during, a rollout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from oper8d.bundle.model import HookPhase
from oper8d.dag import Graph, RunResult, run_concurrent, run_serial
from oper8d.engine.deploy import DeployManager
from oper8d.engine.deploy_phase import DeployPhase
from oper8d.engine.hooks import run_hooks
from oper8d.engine.patch import TemporaryPatchRef
from oper8d.engine.progress import Progress, RolloutState
from oper8d.engine.render import RenderedComponent, Renderer
from oper8d.engine.session import Session
from oper8d.engine.status import CompletionSummary
from oper8d.engine.verify_phase import VerifyPhase
from oper8d.errors import ExpectedError, ReconcileError, RolloutError
from oper8d.logs import propagate_context
from oper8d.objects import Obj

__all__ = ["Progress", "Rollout", "RolloutResult"]


@dataclass
class RolloutResult:
    """What one rollout did: its summary and what each component rendered."""

    summary: CompletionSummary
    #: what each component rendered (objects prepared for apply), by component name
    components: dict[str, RenderedComponent]
    deploy_complete: bool  # every component processed (deployed or disabled) without error
    hook_objects: dict[str, Obj] = field(default_factory=dict)


class Rollout:
    """Runs the four phases for one session."""

    def __init__(
        self,
        session: Session,
        deployer: DeployManager,
        *,
        temporary_patches: Sequence[TemporaryPatchRef] = (),
        max_workers: int = 4,
        progress: Progress | None = None,
    ) -> None:
        self.session = session
        self.deployer = deployer
        self.graph = session.controller.graph
        self.max_workers = max_workers
        self.state = RolloutState() if progress is None else RolloutState(progress)
        self.verify = VerifyPhase(session, self.state)
        self.renderer = Renderer(session, temporary_patches)
        self.deploy = DeployPhase(
            session,
            deployer,
            self.renderer,
            self.state,
            readiness=self.verify.readiness,
        )

    def _run(self, graph: Graph, work: Callable[[str], None]) -> RunResult:
        if self.max_workers <= 1:
            return run_serial(graph, work)
        # the pool's threads start with an empty context: carry the reconcile's log context
        return run_concurrent(graph, propagate_context(work), max_workers=self.max_workers)

    def run(self) -> RolloutResult:
        deploy = self._run(self.graph, self.deploy)
        deploy_ok = deploy.ok()
        # every error of the rollout in the order it arose; the reported one is picked below
        errors: list[BaseException] = self._in_graph_order(deploy.failed)
        hook_objects: dict[str, Obj] = {}
        hook_error = self._hooks(
            "afterDeploy" if deploy_ok else "afterDeployUnsuccessful", hook_objects
        )
        if hook_error is not None:
            errors.append(hook_error)
            deploy_ok = False

        fatal = any(_is_fatal(e) for e in deploy.failed.values())
        deployed = list(deploy.completed)
        verified: list[str] = []
        verify_failed: dict[str, BaseException] = {}
        if not fatal:
            verify = self._run(self.graph.subgraph(deployed), self.verify)
            verified = list(verify.completed)
            verify_failed = dict(verify.failed)
            errors.extend(self._in_graph_order(verify.failed))
            verify_ok = verify.ok() and deploy_ok
            hook_error = self._hooks(
                "afterVerify" if verify_ok else "afterVerifyUnsuccessful", hook_objects
            )
            if hook_error is not None:
                errors.append(hook_error)

        failed = {n for n, e in deploy.failed.items() if _is_fatal(e)}
        failed |= {n for n, e in verify_failed.items() if _is_fatal(e)}
        all_names = list(self.graph.nodes)
        unstarted = set(deploy.unstarted)
        # disjoint sets (oper8's completion state): verified / unverified / failed / unstarted
        unverified = [
            n for n in all_names if n not in verified and n not in failed and n not in unstarted
        ]
        summary = CompletionSummary(
            all_components=tuple(all_names),
            deployed=tuple(sorted(deployed)),
            verified=tuple(sorted(verified)),
            unverified=tuple(sorted(unverified)),
            failed=tuple(sorted(failed)),
            unstarted=tuple(sorted(unstarted)),
            waiting=dict(sorted(self.state.waiting.items())),
            first_error=_reported_error(errors),
        )
        return RolloutResult(
            summary=summary,
            components=self.state.components,
            deploy_complete=deploy_ok,
            hook_objects=hook_objects,
        )

    def _hooks(self, phase: HookPhase, applied: dict[str, Obj]) -> ReconcileError | None:
        """Run the hooks of ``phase``, adding what they applied to ``applied``; the error
        that stopped them, if any."""
        try:
            applied.update(run_hooks(self.session, self.deployer, self.renderer, phase))
        except ReconcileError as err:
            return err
        return None

    def _in_graph_order(self, failed: Mapping[str, BaseException]) -> list[BaseException]:
        """Errors of a run, in topological order (the runners finish nodes in any order)."""
        return [failed[n] for n in self.graph.topological_order() if n in failed]


def _is_fatal(err: BaseException) -> bool:
    return not isinstance(err, ExpectedError)


def _reported_error(errors: list[BaseException]) -> ReconcileError | None:
    """The error the status reports: the first fatal one, else the first expected one. A
    failed component outranks a component that merely waits (e.g. for the failed one)."""
    converted = [
        e if isinstance(e, ReconcileError) else RolloutError(f"{type(e).__name__}: {e}")
        for e in errors
    ]
    fatal = [e for e in converted if e.fatal]
    reported = fatal or converted
    return reported[0] if reported else None
