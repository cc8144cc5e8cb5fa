"""Reconcile one CR: the engine's entry point, used by the runtime manager, the CLI's
dry run and render, and bundle tests.

Steps: pause check → deletion/finalize → finalizer and inventory (one write of the CR)
→ inputs (``engine.inputs``: CR schema validation with defaults, config merge) → start
status → four-phase rollout (``engine.rollout``) → prune (``engine.prune``) → completion
status (written only when something but a timestamp changed) → requeue decision. A CR's
first rollout writes its status once, at the end: ``Initializing`` is only the base the
completion status is built on, as nothing has been reported yet; a later rollout (a new
version, a spec change) writes its start status first, so a user sees it under way. Every
write to the CR happens here (through ``engine.cr_writes``), between steps, on the
reconcile's own thread; the defaulted spec stays in the session, apart from the CR as the
server returned it. With a ``ChangeTracker`` (``engine.fingerprint``) a CR whose inputs did
not change since its last stable reconcile is skipped before any of this.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.clock import Clock, SystemClock
from oper8d.cluster.base import Cluster
from oper8d.engine import status as st
from oper8d.engine.config import is_paused
from oper8d.engine.cr_writes import prepare_cr, put_status, remove_finalizer, write_status
from oper8d.engine.deploy import AppliedMemory, DeployManager
from oper8d.engine.inputs import CrInputs, read_config_maps, resolve_inputs
from oper8d.engine.kubecheck import KindWarnings
from oper8d.engine.missing import SchemaSource
from oper8d.engine.prune import prunable, rendered_keys
from oper8d.engine.references import Rendered, reference_warnings
from oper8d.engine.rollout import Progress, Rollout, RolloutResult
from oper8d.engine.session import RandomSource, SecretRandoms, Session
from oper8d.engine.teardown import deleting_status, prune, tear_down
from oper8d.engine.temporary_patches import temporary_patch_refs
from oper8d.errors import ClusterError, ConfigError, Problem, ReconcileError
from oper8d.kubeschema import KubeSchemas
from oper8d.logs import Logger, current_reconcile
from oper8d.objects import Obj

if TYPE_CHECKING:  # (imported where used: offline runs and dry runs skip nothing)
    from oper8d.engine.fingerprint import ChangeTracker

log = Logger("oper8d.reconcile")


@dataclass
class ReconcileResult:
    """What a reconcile did and when to come back."""

    requeue_after: float | None
    status: dict[str, Any] | None = None
    rollout: RolloutResult | None = None
    error: BaseException | None = None
    paused: bool = False
    finalized: bool = False
    status_written: bool = False
    #: the CR is Ready at its generation and version with nothing left to do
    stable: bool = False
    #: nothing it depends on changed since its last stable reconcile: nothing was done
    skipped: bool = False
    #: everything it read is reported by the change feed (``ChangeTracker.covers``): any
    #: change that could end a wait wakes the CR, so a waiting CR needs no short requeue
    watched: bool = False
    #: internal name -> the object as applied, in the order the rollout applied them
    applied: dict[str, Obj] = field(default_factory=dict)
    #: references among the rendered objects that cannot resolve (``engine.references``);
    #: None when not every component rendered, so the set could not be judged
    warnings: tuple[Problem, ...] | None = None


@dataclass
class ReconcilerOptions:
    """Settings of a Reconciler; the defaults serve the CLI and tests."""

    field_manager: str = "oper8d"
    max_workers: int = 4
    clock: Clock = field(default_factory=SystemClock)
    #: builds the random-string source of a CR (default: values kept in a Secret)
    randoms: Callable[[Cluster, Obj], RandomSource] | None = None
    progress: Progress | None = None
    operator_version: str | None = None
    #: PUT an object whose server-side apply the API server refuses as invalid (422)
    replace_on_invalid: bool = False
    #: Kubernetes' schemas every rendered object is checked against before apply
    #: (default: the shipped built-in kinds; the CLI and runtime add the bundle's CRDs)
    schemas: KubeSchemas | None = None
    #: skip CRs whose inputs did not change since their last stable reconcile
    #: (``engine.fingerprint``; None: every reconcile runs in full)
    changes: ChangeTracker | None = None


class Reconciler:
    """Reconciles CRs of one controller of a bundle against a cluster."""

    def __init__(
        self,
        bundle: Bundle,
        controller: ControllerSpec,
        cluster: Cluster,
        options: ReconcilerOptions | None = None,
    ):
        self.bundle = bundle
        self.controller = controller
        self.cluster = cluster
        self.options = options or ReconcilerOptions()
        self.kind = controller.resource
        # what the server stored for our applies, kept across reconciles (engine.deploy)
        self._applied = AppliedMemory()
        self._schemas = self.options.schemas or KubeSchemas.builtin()
        self._kind_warnings = KindWarnings()
        self._digest = ""
        if self.options.changes is not None:
            from oper8d.engine.fingerprint import bundle_digest

            self._digest = bundle_digest(bundle)

    # -- entry ---------------------------------------------------------------------------
    def reconcile(self, namespace: str | None, name: str) -> ReconcileResult:
        cr = self.cluster.get(self.kind.api_version, self.kind.kind, name, namespace)
        if cr is None:
            return ReconcileResult(requeue_after=None)
        return self.reconcile_object(cr)

    def reconcile_object(self, cr: Obj) -> ReconcileResult:
        """Reconcile ``cr`` as read from the cluster (or the runtime's cache)."""
        if is_paused(cr):
            return ReconcileResult(requeue_after=None, paused=True)
        meta = cr["metadata"]
        if meta.get("deletionTimestamp"):
            return self._finalize(cr)
        changes = self.options.changes
        if changes is None:
            return self._reconcile_live(cr)
        from oper8d.engine.fingerprint import cr_fingerprint

        uid = str(meta.get("uid") or "")
        fingerprint = cr_fingerprint(cr, self._digest)
        if changes.unchanged(uid, fingerprint):
            return ReconcileResult(
                requeue_after=self.controller.requeue.after_success,
                status=cr.get("status"),
                stable=True,
                skipped=True,
            )
        recorder = changes.begin(self.cluster)
        stable = False
        try:
            # the CR as handed over, and as it is now: an edit in between is a second version
            recorder.note(cr)
            recorder.reread(cr)
            # this reconcile's reads and writes go through the recorder; the copy shares
            # everything else (the applied memory, the options) with this reconciler
            recording = copy.copy(self)
            recording.cluster = recorder
            result = recording._reconcile_live(cr)
            stable = result.stable
            result.watched = changes.covers(recorder)
            # what the next reconcile will be handed: the CR with our finalizer/inventory,
            # at a version any later change of it (its status too) moves past
            fingerprint = cr_fingerprint(recorder.as_left(cr), self._digest)
            return result
        finally:
            changes.finish(uid, recorder, fingerprint, stable)

    def _reconcile_live(self, cr: Obj) -> ReconcileResult:
        meta = cr["metadata"]
        requeue = self.controller.requeue
        try:
            cr = prepare_cr(self.cluster, self.controller, cr)
            inputs = self._inputs(cr)
        except ReconcileError as err:
            failed = st.error_status(cr.get("status") or {}, err, **self._g(cr))
            written = write_status(self.cluster, cr, failed)
            return ReconcileResult(
                requeue_after=requeue.after_error,
                error=err,
                status=failed,
                status_written=written is not None,
            )
        try:
            return self._rollout(cr, inputs)
        except ClusterError as err:
            # a status write, the CR's inventory or pruning failed: nothing more to do now
            log.warning("reconcile of %s stopped: %s", meta.get("name"), err)
            return ReconcileResult(requeue_after=requeue.after_error, error=err)

    # -- the rollout ---------------------------------------------------------------------
    def _rollout(self, cr: Obj, inputs: CrInputs) -> ReconcileResult:
        """Start status → TemporaryPatches → the four phases → prune →
        completion status. The CR is written only between these steps, on this thread."""
        session = self._session(cr, inputs)
        start, wrote = self._start(session)
        deployer = self._deployer(session.cr)
        try:
            patches = temporary_patch_refs(self.cluster, self.controller, session.cr)
        except ReconcileError as err:
            failed = st.error_status(start, err, **self._g(session.cr))
            written = write_status(self.cluster, session.cr, failed)
            return ReconcileResult(
                requeue_after=self.controller.requeue.after_error,
                status=failed,
                error=err,
                status_written=wrote or written is not None,
            )
        result = Rollout(
            session,
            deployer,
            temporary_patches=patches,
            max_workers=self.options.max_workers,
            progress=self.options.progress,
        ).run()
        self._prune(result, deployer)
        return self._complete(session, start, result, wrote, held=bool(deployer.unrecorded))

    def _session(self, cr: Obj, inputs: CrInputs) -> Session:
        randoms = (self.options.randoms or _secret_randoms(self.options.field_manager))(
            self.cluster, cr
        )
        scope = current_reconcile()  # the runtime's: the same id as the log lines
        return Session(
            bundle=self.bundle,
            controller=self.controller,
            cr=cr,
            config=inputs.config,
            cluster=self.cluster,
            randoms=randoms,
            reconcile_id=scope.reconcile_id if scope else uuid.uuid4().hex[:8],
            spec=inputs.spec,
            schemas=self._schemas,
            kind_warnings=self._kind_warnings,
        )

    def _start(self, session: Session) -> tuple[dict[str, Any], bool]:
        """The start status (Initializing / VersionChange), and whether it was written
        (only when it changed, and not on a first rollout: see the module docstring)."""
        old_status = session.cr.get("status") or {}
        start = st.start_status(
            old_status,
            version=_str(session.version),
            generation=_gen(session.cr),
            now=self.options.clock.now(),
        )
        if not old_status or not st.status_changed(old_status, start):
            return start, False
        session.cr = put_status(self.cluster, session.cr, start)
        return start, True

    def _deployer(self, cr: Obj) -> DeployManager:
        return DeployManager(
            self.cluster,
            cr,
            field_manager=self.options.field_manager,
            memory=self._applied,
            replace_on_invalid=self.options.replace_on_invalid,
        )

    def _prune(self, result: RolloutResult, deployer: DeployManager) -> None:
        """Delete (or release, by their policy) the owned objects the prune rule
        (``engine.prune``) says must go."""
        rendered = rendered_keys(result)
        owned = deployer.owned()
        prune(
            self.cluster,
            deployer,
            prunable(owned, self.controller, result.summary.deployed, rendered),
        )

    def _complete(
        self,
        session: Session,
        start: dict[str, Any],
        result: RolloutResult,
        wrote: bool,
        *,
        held: bool,
    ) -> ReconcileResult:
        """The completion status (written when more than a timestamp changed) and when to
        come back: at once when a component waits for its kind to be recorded."""
        version = _str(session.version)
        try:
            projected = self._project(session)
        except ConfigError as err:
            failed = st.error_status(start, err, **self._g(session.cr))
            written = write_status(self.cluster, session.cr, failed)
            return ReconcileResult(
                requeue_after=self.controller.requeue.after_error,
                status=failed,
                rollout=result,
                error=err,
                status_written=wrote or written is not None,
                applied=dict(session.rendered),
            )
        final = st.completion_status(
            start,
            result.summary,
            version=version,
            generation=_gen(session.cr),
            now=self.options.clock.now(),
            kind=self.kind.kind,
            operator_version=self.options.operator_version or self.bundle.operator_version,
            projected=projected,
        )
        written = write_status(self.cluster, session.cr, final)
        summary = result.summary
        requeue = self.controller.requeue
        if summary.first_error is not None and summary.first_error.fatal:
            after = requeue.after_error
        elif held:
            after = 0.0
        elif st.is_stable(final, version):
            after = requeue.after_success
        else:
            after = requeue.while_waiting
        stable = summary.first_error is None and not held and st.is_stable(final, version)
        return ReconcileResult(
            requeue_after=after,
            stable=stable,
            status=final,
            rollout=result,
            error=summary.first_error,
            status_written=wrote or written is not None,
            applied=dict(session.rendered),
            warnings=_reference_warnings(session, result),
        )

    def _project(self, session: Session) -> dict[str, Any]:
        # a typo in a projection is a ConfigError (reported by _complete's caller), not a
        # field silently left out; one over a field not set yet waits (engine.missing)
        schemas = SchemaSource(self.controller.resource.schema, self._schemas)
        return st.project_fields(self.controller.status_fields, session.context(), schemas)

    # -- finalize ------------------------------------------------------------------------
    def _finalize(self, cr: Obj) -> ReconcileResult:
        fin = self.controller.finalize
        finalizers = cr["metadata"].get("finalizers") or []
        if self.options.changes is not None:
            self.options.changes.forget(str(cr["metadata"].get("uid") or ""))
        if self.controller.finalizer not in finalizers:
            return ReconcileResult(requeue_after=None, finalized=True)
        deployer = DeployManager(self.cluster, cr, field_manager=self.options.field_manager)
        order = self.controller.graph.reverse_order()
        blockers = tear_down(self.cluster, deployer, order, delete=fin.delete_components)
        if blockers:
            now = self.options.clock.now()
            status = deleting_status(cr.get("status"), blockers, generation=_gen(cr), now=now)
            written = write_status(self.cluster, cr, status)
            return ReconcileResult(
                requeue_after=self.controller.requeue.while_waiting or 5.0,
                status=status,
                status_written=written is not None,
            )
        remove_finalizer(self.cluster, cr, self.controller.finalizer)
        return ReconcileResult(requeue_after=None, finalized=True)

    # -- inputs --------------------------------------------------------------------------
    def _inputs(self, cr: Obj) -> CrInputs:
        """The CR's defaulted spec and merged config (``engine.inputs``), or the
        ConfigError naming the field that is wrong."""
        inputs = resolve_inputs(self.controller, cr, read_config_maps(self.cluster, cr))
        error = inputs.error()
        if error is not None:
            raise error
        return inputs

    # -- status --------------------------------------------------------------------------
    def _g(self, cr: Obj) -> dict[str, Any]:
        return {"generation": _gen(cr), "now": self.options.clock.now(), "kind": self.kind.kind}


def _secret_randoms(field_manager: str) -> Callable[[Cluster, Obj], RandomSource]:
    return lambda cluster, cr: SecretRandoms(cluster, cr, field_manager=field_manager)


def _gen(cr: Obj) -> int | None:
    return cast(int | None, cr["metadata"].get("generation"))


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _reference_warnings(session: Session, result: RolloutResult) -> tuple[Problem, ...] | None:
    """What the rendered objects refer to and do not hold, once every component rendered
    (a component still waiting would hold the target)."""
    if not result.deploy_complete:
        return None
    rendered = [
        Rendered(item.internal, item.obj, item.resource.pos)
        for component in result.components.values()
        for item in component.objects.values()
    ]
    rendered += [Rendered(name, obj) for name, obj in result.hook_objects.items()]
    namespace = session.cr["metadata"].get("namespace")
    return tuple(reference_warnings(rendered, namespace))
