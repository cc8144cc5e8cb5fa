"""Reconcile one CR: the engine's entry point, used by the runtime manager, the CLI's
dry run and render, and bundle tests.

Steps: pause check → deletion/finalize → finalizer → CR schema validation (defaults
applied) → config merge → start status → four-phase rollout → prune → completion
status (written only when something but a timestamp changed) → requeue decision.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.bundle.validate import apply_defaults, validate_instance
from oper8d.clock import Clock, SystemClock
from oper8d.cluster.base import Cluster
from oper8d.dag import Graph
from oper8d.engine import status as st
from oper8d.engine.config import (
    CONFIG_DEFAULTS_ANNOTATION,
    CONFIG_OVERRIDES_KEY,
    TEMPORARY_PATCHES_ANNOTATION,
    get_path,
    is_paused,
    merge_configs,
)
from oper8d.engine.deploy import (
    INVENTORY_ANNOTATION,
    AppliedMemory,
    DeployManager,
    component_of,
    object_key,
)
from oper8d.engine.patch import TemporaryPatchRef
from oper8d.engine.rollout import Progress, Rollout, RolloutResult
from oper8d.engine.session import RandomSource, SecretRandoms, Session
from oper8d.errors import ClusterError, ConfigError, Problem, ReconcileError
from oper8d.logs import current_reconcile, redact
from oper8d.objects import Obj

log = logging.getLogger("oper8d.reconcile")

TEMPORARY_PATCH_API_VERSION = "oper8.org/v1"


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
    #: internal name -> the object as applied, in the order the rollout applied them
    applied: dict[str, Obj] = field(default_factory=dict)


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
        self._graph = Graph(
            [c.name for c in controller.components],
            [(e.upstream, e.downstream) for e in controller.edges],
        )
        # what the server stored for our applies, kept across reconciles (engine.deploy)
        self._applied = AppliedMemory()

    # -- entry ---------------------------------------------------------------------------
    def reconcile(self, namespace: str | None, name: str) -> ReconcileResult:
        cr = self.cluster.get(self.kind.api_version, self.kind.kind, name, namespace)
        if cr is None:
            return ReconcileResult(requeue_after=None)
        return self.reconcile_object(cr)

    def reconcile_object(self, cr: Obj) -> ReconcileResult:
        if is_paused(cr):
            return ReconcileResult(requeue_after=None, paused=True)
        meta = cr["metadata"]
        if meta.get("deletionTimestamp"):
            return self._finalize(cr)
        requeue = self.controller.requeue
        try:
            if self.controller.finalize.enabled and self.controller.finalizer not in (
                meta.get("finalizers") or []
            ):
                cr = self._update_cr(
                    cr, lambda m: m.setdefault("finalizers", []).append(self.controller.finalizer)
                )
            cr = self._validated(cr)
            config = self._config(cr)
        except ReconcileError as err:
            failed = st.error_status(cr.get("status") or {}, err, **self._g(cr))
            written = self._write_status(cr, failed)
            return ReconcileResult(
                requeue_after=requeue.after_error,
                error=err,
                status=failed,
                status_written=written is not None,
            )
        try:
            return self._rollout(cr, config)
        except ClusterError as err:
            # a status write, the CR's inventory or pruning failed: nothing more to do now
            log.warning("reconcile of %s stopped: %s", meta.get("name"), err)
            return ReconcileResult(requeue_after=requeue.after_error, error=err)

    # -- the rollout ---------------------------------------------------------------------
    def _rollout(self, cr: Obj, config: dict[str, Any]) -> ReconcileResult:
        opts = self.options
        version = get_path(cr, self.kind.version_path)
        old_status = cr.get("status") or {}
        start = st.start_status(
            old_status, version=_str(version), generation=_gen(cr), now=opts.clock.now()
        )
        wrote = False
        if st.status_changed(old_status, start):
            cr = self._put_status(cr, start)
            wrote = True

        randoms = (opts.randoms or _secret_randoms(opts.field_manager))(self.cluster, cr)
        scope = current_reconcile()  # the runtime's: the same id as the log lines
        session = Session(
            bundle=self.bundle,
            controller=self.controller,
            cr=cr,
            config=config,
            cluster=self.cluster,
            randoms=randoms,
            reconcile_id=scope.reconcile_id if scope else uuid.uuid4().hex[:8],
        )
        inventory_lock = threading.Lock()

        def record_inventory(kinds: set[str]) -> None:
            with inventory_lock:
                session.cr = self._update_cr(
                    session.cr,
                    lambda m: m.setdefault("annotations", {}).__setitem__(
                        INVENTORY_ANNOTATION, ",".join(sorted(kinds))
                    ),
                )

        deployer = DeployManager(
            self.cluster,
            cr,
            field_manager=opts.field_manager,
            record_inventory=record_inventory,
            memory=self._applied,
            replace_on_invalid=opts.replace_on_invalid,
        )
        deployer.expect_kinds(self.controller.deployed_kinds())
        try:
            patches = self._temporary_patches(cr)
        except ReconcileError as err:
            failed = st.error_status(start, err, **self._g(cr))
            written = self._write_status(session.cr, failed)
            return ReconcileResult(
                requeue_after=self.controller.requeue.after_error,
                status=failed,
                error=err,
                status_written=wrote or written is not None,
            )
        rollout = Rollout(
            session,
            deployer,
            temporary_patches=patches,
            max_workers=opts.max_workers,
            progress=opts.progress,
        )
        result = rollout.run()
        self._prune(result, deployer)
        projected = self._project(session)
        final = st.completion_status(
            start,
            result.summary,
            version=_str(version),
            generation=_gen(cr),
            now=opts.clock.now(),
            kind=self.kind.kind,
            operator_version=opts.operator_version or self.bundle.operator_version,
            projected=projected,
        )
        written = self._write_status(session.cr, final)
        summary = result.summary
        requeue = self.controller.requeue
        if summary.first_error is not None and summary.first_error.fatal:
            after = requeue.after_error
        elif st.is_stable(final, _str(version)):
            after = requeue.after_success
        else:
            after = requeue.while_waiting
        return ReconcileResult(
            requeue_after=after,
            status=final,
            rollout=result,
            error=summary.first_error,
            status_written=wrote or written is not None,
            applied=dict(session.rendered),
        )

    def _prune(self, result: RolloutResult, deployer: DeployManager) -> None:
        """Delete owned objects not rendered this time, for components that were processed
        (deployed or disabled), and objects of components and hooks the bundle no longer
        has. Objects of a hook that still exists are its own (a hook may not run every
        time). Objects are matched by identity, not internal name: an object whose name
        changed (a Job named after the version) leaves the old one to prune."""
        processed = set(result.summary.deployed)
        known = {c.name for c in self.controller.components}
        hooks = {f"hook-{h.name}" for h in self.controller.hooks}
        rendered = {
            object_key(obj)
            for comp in result.components.values()
            for obj, _method, _rules in comp.objects.values()
        } | {object_key(obj) for obj in result.hook_objects.values()}
        for obj in deployer.owned():
            component = component_of(obj)
            if component is None or (component in known and component not in processed):
                continue
            if component not in known and component in hooks:
                continue
            if object_key(obj) not in rendered:
                deployer.delete(obj)

    def _project(self, session: Session) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, expr in self.controller.status_fields.items():
            try:
                out[key] = expr.evaluate(session.context())
            except ReconcileError as err:
                # a projection over objects that do not exist yet: leave the field out
                log.debug("status field %s not projected: %s", key, err)
        return out

    # -- finalize ------------------------------------------------------------------------
    def _finalize(self, cr: Obj) -> ReconcileResult:
        fin = self.controller.finalize
        finalizers = cr["metadata"].get("finalizers") or []
        if self.controller.finalizer not in finalizers:
            return ReconcileResult(requeue_after=None, finalized=True)
        deployer = DeployManager(self.cluster, cr, field_manager=self.options.field_manager)
        if fin.delete_components:
            owned = deployer.owned()
            by_component: dict[str, list[Obj]] = {}
            for obj in owned:
                by_component.setdefault(component_of(obj) or "", []).append(obj)
            # downstream components first; hook and unknown objects last
            order = self._graph.reverse_order() + sorted(set(by_component) - set(self._graph.nodes))
            for comp in order:
                objs = by_component.get(comp, [])
                for obj in objs:
                    deployer.delete(obj)
                remaining = [o for o in objs if self._exists(o)]
                if remaining:
                    # objects with finalizers of their own: wait for them before going upstream
                    return ReconcileResult(
                        requeue_after=self.controller.requeue.while_waiting or 5.0
                    )
        self._update_cr(
            cr,
            lambda m: m.__setitem__(
                "finalizers", [f for f in m.get("finalizers", []) if f != self.controller.finalizer]
            ),
        )
        return ReconcileResult(requeue_after=None, finalized=True)

    def _exists(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        return (
            self.cluster.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            is not None
        )

    # -- inputs --------------------------------------------------------------------------
    def _validated(self, cr: Obj) -> Obj:
        schema = self.kind.schema
        spec = apply_defaults(cr.get("spec") or {}, schema)
        problems: list[Problem] = validate_instance(spec, schema, field_prefix="spec")
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ConfigError(
                "; ".join(str(p) for p in problems[:5]) + more, field=first.field or "spec"
            )
        return {**cr, "spec": spec}

    def _config(self, cr: Obj) -> dict[str, Any]:
        config = dict(self.controller.config_defaults)
        name = get_path(cr, ["metadata", "annotations", CONFIG_DEFAULTS_ANNOTATION])
        if name:
            cm = self.cluster.get("v1", "ConfigMap", name, cr["metadata"].get("namespace"))
            if cm is None:
                raise ConfigError(
                    f"ConfigMap '{name}' named by annotation {CONFIG_DEFAULTS_ANNOTATION} "
                    "does not exist",
                    field=f"metadata.annotations[{CONFIG_DEFAULTS_ANNOTATION}]",
                )
            config = merge_configs(config, cm.get("data") or {})
        overrides = cr.get(CONFIG_OVERRIDES_KEY) or {}
        if not isinstance(overrides, dict):
            raise ConfigError("configOverrides must be a mapping", field=CONFIG_OVERRIDES_KEY)
        return merge_configs(config, overrides)

    def _temporary_patches(self, cr: Obj) -> list[TemporaryPatchRef]:
        raw = get_path(cr, ["metadata", "annotations", TEMPORARY_PATCHES_ANNOTATION])
        policy = self.controller.temporary_patches
        if not raw or not policy.enabled:
            return []
        try:
            entries = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"annotation {TEMPORARY_PATCHES_ANNOTATION} is not JSON: {err.msg}",
                field=f"metadata.annotations[{TEMPORARY_PATCHES_ANNOTATION}]",
            ) from err
        refs: list[TemporaryPatchRef] = []
        ns = cr["metadata"].get("namespace")
        for patch_name, info in sorted((entries or {}).items()):
            obj = self.cluster.get(TEMPORARY_PATCH_API_VERSION, "TemporaryPatch", patch_name, ns)
            if obj is None or obj["metadata"].get("deletionTimestamp"):
                continue
            spec = obj.get("spec") or {}
            target_ok = (
                spec.get("apiVersion") == cr["apiVersion"]
                and spec.get("kind") == cr["kind"]
                and spec.get("name") == cr["metadata"]["name"]
            )
            patch_type = spec.get("patchType", "patchStrategicMerge")
            if not target_ok or patch_type not in policy.allowed_types:
                log.warning(
                    "ignoring TemporaryPatch %s/%s: not for this CR or type", ns, patch_name
                )
                continue
            refs.append(
                TemporaryPatchRef(
                    name=patch_name,
                    namespace=ns or "",
                    patch_type=patch_type,
                    patch=spec.get("patch") or {},
                    timestamp=str((info or {}).get("timestamp", "")),
                )
            )
        return refs

    # -- writes to the CR ----------------------------------------------------------------
    def _g(self, cr: Obj) -> dict[str, Any]:
        return {"generation": _gen(cr), "now": self.options.clock.now(), "kind": self.kind.kind}

    def _write_status(self, cr: Obj, new_status: dict[str, Any]) -> dict[str, Any] | None:
        # an error message may quote a rendered Secret value: never put it in the status
        for cond in new_status.get("conditions") or []:
            if isinstance(cond.get("message"), str):
                cond["message"] = redact(cond["message"])
        if not st.status_changed(cr.get("status") or {}, new_status):
            return None
        self._put_status(cr, new_status)
        return new_status

    def _put_status(self, cr: Obj, new_status: dict[str, Any]) -> Obj:
        body = {**cr, "status": new_status}
        body["metadata"] = {k: v for k, v in cr["metadata"].items() if k != "resourceVersion"}
        try:
            live = self.cluster.update_status(body)
        except ClusterError as err:
            if err.status == 404:  # deleted meanwhile
                return cr
            raise
        return {**live, "spec": cr.get("spec")}

    def _update_cr(
        self, cr: Obj, change: Callable[[dict[str, Any]], None], attempts: int = 5
    ) -> Obj:
        """Read-modify-write of the CR's metadata with conflict retries."""
        for _ in range(attempts):
            live = self.cluster.get(
                cr["apiVersion"],
                cr["kind"],
                cr["metadata"]["name"],
                cr["metadata"].get("namespace"),
            )
            if live is None:
                return cr
            change(live["metadata"])
            try:
                updated = self.cluster.update(live)
            except ClusterError as err:
                if err.status == 409:
                    continue
                raise
            # keep our defaulted spec; metadata comes from the server
            return {**cr, "metadata": updated["metadata"]}
        raise ClusterError(f"conflict updating {cr['kind']} {cr['metadata']['name']}", status=409)


def _secret_randoms(field_manager: str) -> Callable[[Cluster, Obj], RandomSource]:
    return lambda cluster, cr: SecretRandoms(cluster, cr, field_manager=field_manager)


def _gen(cr: Obj) -> int | None:
    return cast(int | None, cr["metadata"].get("generation"))


def _str(value: Any) -> str | None:
    return None if value is None else str(value)
