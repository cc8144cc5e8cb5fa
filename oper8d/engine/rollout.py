"""The four-phase rollout of one CR (oper8's contract, event-driven).

1. deploy graph: components in dependency order (edge conditions checked, objects
   rendered, patched, applied; disabled components have their objects deleted);
2. afterDeploy hooks (afterDeployUnsuccessful when phase 1 did not complete);
3. verify graph over the deployed components (skipped after a fatal deploy error);
4. afterVerify hooks (afterVerifyUnsuccessful when phase 3 did not complete).

A failure stops only the failing component's downstream components. Used by the
reconciler and by ``oper8d render`` (which runs it against an in-memory cluster).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from jinja2.exceptions import UndefinedError

from oper8d.bundle.model import ComponentSpec, HookSpec, ReadyRule, ResourceSpec
from oper8d.dag import Graph, RunResult, run_concurrent, run_serial
from oper8d.engine.declared import check_identity, check_shape
from oper8d.engine.deploy import DeployManager, component_of
from oper8d.engine.patch import (
    TemporaryPatchRef,
    apply_temporary_patches,
    check_identity_preserved,
    json_patch,
    strategic_merge,
)
from oper8d.engine.session import Session
from oper8d.engine.status import CompletionSummary
from oper8d.engine.verify import (
    Readiness,
    builtin_readiness,
    combine,
    condition_readiness,
    exists_readiness,
    subsystem_readiness,
)
from oper8d.errors import (
    ConfigError,
    ExpectedError,
    PreconditionError,
    ReconcileError,
    RolloutError,
    VerificationError,
)
from oper8d.kinds import CLUSTER_SCOPED_KINDS, ref_of
from oper8d.limits import LimitExceeded
from oper8d.logs import component_context, mark_secret, propagate_context
from oper8d.objects import Obj
from oper8d.template import Expr


class Progress(Protocol):
    """Receives each component's state as the rollout goes (the CLI's live view)."""

    def update(self, component: str, state: str, detail: str = "") -> None: ...


class _NoProgress:
    def update(self, component: str, state: str, detail: str = "") -> None:
        return None


@dataclass
class RenderedComponent:
    """What one component rendered in this rollout: internal name -> (object, method, rules)."""

    objects: dict[str, tuple[Obj, str, tuple[ReadyRule, ...]]] = field(default_factory=dict)
    disabled: bool = False


@dataclass
class RolloutResult:
    summary: CompletionSummary
    components: dict[str, RenderedComponent]
    deploy_complete: bool  # every component processed (deployed or disabled) without error
    hook_objects: dict[str, Obj] = field(default_factory=dict)


class Rollout:
    """Runs the four phases for one session. ``apply=False`` renders without writing
    (the offline render and dry previews)."""

    def __init__(
        self,
        session: Session,
        deployer: DeployManager,
        *,
        temporary_patches: list[TemporaryPatchRef] | None = None,
        max_workers: int = 4,
        progress: Progress | None = None,
    ):
        self.session = session
        self.deployer = deployer
        self.controller = session.controller
        self.temporary_patches = temporary_patches or []
        self.max_workers = max_workers
        self.progress = progress or _NoProgress()
        self.graph = Graph(
            [c.name for c in self.controller.components],
            [(e.upstream, e.downstream) for e in self.controller.edges],
        )
        self.components: dict[str, RenderedComponent] = {}
        self.waiting: dict[str, str] = {}
        self._lock = threading.Lock()

    # -- running -------------------------------------------------------------------------
    def _run(self, graph: Graph, work: Callable[[str], None]) -> RunResult:
        if self.max_workers <= 1:
            return run_serial(graph, work)
        # the pool's threads start with an empty context: carry the reconcile's log context
        return run_concurrent(graph, propagate_context(work), max_workers=self.max_workers)

    def run(self) -> RolloutResult:
        deploy = self._run(self.graph, self._deploy_component)
        deploy_ok = deploy.ok()
        # every error of the rollout in the order it arose; the reported one is picked below
        errors: list[BaseException] = self._in_graph_order(deploy.failed)
        hook_objects: dict[str, Obj] = {}
        try:
            hook_objects.update(
                self._hooks("afterDeploy" if deploy_ok else "afterDeployUnsuccessful")
            )
        except ReconcileError as err:
            errors.append(err)
            deploy_ok = False

        fatal = any(_is_fatal(e) for e in deploy.failed.values())
        deployed = list(deploy.completed)
        verified: list[str] = []
        verify_failed: dict[str, BaseException] = {}
        if not fatal:
            verify = self._run(self.graph.subgraph(deployed), self._verify_component)
            verified = list(verify.completed)
            verify_failed = dict(verify.failed)
            errors.extend(self._in_graph_order(verify.failed))
            verify_ok = verify.ok() and deploy_ok
            try:
                hook_objects.update(
                    self._hooks("afterVerify" if verify_ok else "afterVerifyUnsuccessful")
                )
            except ReconcileError as err:
                errors.append(err)

        failed = {n for n, e in deploy.failed.items() if _is_fatal(e)}
        failed |= {n for n, e in verify_failed.items() if _is_fatal(e)}
        all_names = [c.name for c in self.controller.components]
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
            waiting=dict(sorted(self.waiting.items())),
            first_error=_reported_error(errors),
        )
        return RolloutResult(
            summary=summary,
            components=self.components,
            deploy_complete=deploy_ok,
            hook_objects=hook_objects,
        )

    def _in_graph_order(self, failed: Mapping[str, BaseException]) -> list[BaseException]:
        """Errors of a run, in topological order (the runners finish nodes in any order)."""
        return [failed[n] for n in self.graph.topological_order() if n in failed]

    # -- phase 1: deploy -----------------------------------------------------------------
    def _deploy_component(self, name: str) -> None:
        with component_context(name):
            self._deploy_in_context(name)

    def _deploy_in_context(self, name: str) -> None:
        comp = self.controller.component(name)
        self.progress.update(name, "deploying")
        try:
            self._check_edges(name)
            rendered = self.render_component(comp)
            for internal, (obj, method, rules) in list(rendered.objects.items()):
                rendered.objects[internal] = (
                    self.deployer.prepare(obj, internal, name),
                    method,
                    rules,
                )
            self.deployer.remember_kinds(o for o, _m, _r in rendered.objects.values())
            written = 0
            for internal, (prepared, method, _rules) in rendered.objects.items():
                _live, wrote = self.deployer.apply(prepared, method)  # type: ignore[arg-type]
                written += wrote
                self.session.record(internal, prepared)
            if rendered.disabled:
                self._delete_component_objects(name)
        except ExpectedError as err:
            self._wait(name, err.message)
            raise
        except ReconcileError as err:
            self.progress.update(name, "failed", err.message)
            raise
        except Exception as err:  # a bug or an unexpected client error: fail this component only
            self.progress.update(name, "failed", repr(err))
            raise RolloutError(f"component '{name}': {err!r}") from err
        if rendered.disabled:
            self.progress.update(name, "disabled")
        else:
            total = len(rendered.objects)
            detail = f"{written} of {total} applied" if written else f"{total} unchanged"
            self.progress.update(name, "deployed", detail)

    def _wait(self, name: str, why: str) -> None:
        with self._lock:
            self.waiting[name] = why
        self.progress.update(name, "waiting", why)

    def _check_edges(self, name: str) -> None:
        for edge in self.controller.edges:
            if edge.downstream != name or edge.when is None:
                continue
            if not holds(edge.when, self.session.context(component=name)):
                raise PreconditionError(
                    f"waiting for {edge.upstream}: {edge.when.source}", pos=edge.pos
                )

    def render_component(self, comp: ComponentSpec) -> RenderedComponent:
        """Render every instance of a component (no writes). Disabled: empty, ``disabled``."""
        session = self.session
        result = RenderedComponent()
        base = session.context(component=comp.name)
        if comp.enabled is not None and not comp.enabled.evaluate(base):
            result.disabled = True
            with self._lock:
                self.components[comp.name] = result
            return result
        for instance, ctx in self._instances(comp, base):
            for res in comp.resources:
                try:
                    for internal, obj in self._render_resource(res, instance, ctx):
                        obj = self._patch(comp, res, obj, internal, ctx)
                        mark_secret(obj)  # a patch may have added values
                        self._check_declared(obj, res, internal, ctx)
                        result.objects[internal] = (obj, res.method, res.ready)
                except ReconcileError:
                    raise
                except Exception as err:  # a bug: say where, so it can be reported and fixed
                    raise RolloutError(
                        f"resource '{instance}.{res.name}' of component '{comp.name}': "
                        f"internal error while rendering: {type(err).__name__}: {err}",
                        pos=res.pos,
                    ) from err
        with self._lock:
            self.components[comp.name] = result
        return result

    def _instances(
        self, comp: ComponentSpec, base: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        fe = comp.for_each
        if fe is None:
            return [(comp.name, base)]
        items = fe.items.evaluate(base)
        if items is None:
            return []
        if not isinstance(items, list):
            raise ConfigError(
                f"forEach.items of component '{comp.name}' must be a list, got "
                f"{type(items).__name__}",
                pos=fe.items.pos,
            )
        limit = fe.items.limits.for_each_items
        if len(items) > limit:
            detail = f"forEach.items of component '{comp.name}' has {len(items)} items"
            hit = LimitExceeded("for_each_items", f"{detail} (at most {limit})")
            raise ConfigError(str(hit), pos=fe.items.pos)
        out: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            ctx = {**base, fe.var: item, "index": index}
            if fe.key is not None:
                key = fe.key.evaluate(ctx)
            elif isinstance(item, dict) and "name" in item:
                key = item["name"]
            else:
                key = index
            instance = f"{comp.name}-{key}"
            if instance in seen:
                raise ConfigError(
                    f"forEach of component '{comp.name}': two items have the key '{key}'",
                    pos=fe.items.pos,
                )
            seen.add(instance)
            out.append((instance, {**ctx, "component": instance}))
        return out

    def _render_resource(
        self, res: ResourceSpec, instance: str, ctx: dict[str, Any]
    ) -> list[tuple[str, Obj]]:
        if res.object is not None:
            obj = res.object.render(ctx)
            check_shape(obj, res, f"{instance}.{res.name}")
            mark_secret(obj)  # before anything can log it
            return [(f"{instance}.{res.name}", obj)]
        assert res.template is not None
        docs = res.template.render(ctx)
        for doc in docs:
            check_shape(doc, res, f"{instance}.{res.name}")
            mark_secret(doc)
        if len(docs) == 1:
            return [(f"{instance}.{res.name}", docs[0])]
        # several documents: "<resource>-<kind>", plus "-<name>" when the kind repeats
        kinds = [d["kind"].lower() for d in docs]
        return [
            (
                f"{instance}.{res.name}-{kind}"
                + (f"-{d['metadata']['name']}" if kinds.count(kind) > 1 else ""),
                d,
            )
            for kind, d in zip(kinds, docs, strict=True)
        ]

    def _check_declared(
        self, obj: Obj, res: ResourceSpec, internal: str, ctx: dict[str, Any]
    ) -> None:
        """Refuse an object the resource does not declare; put a namespaced object without a
        namespace into the resource's declared namespace (the deployer gives others the CR's)."""
        namespace = self.deployer.cr_namespace
        if res.namespace is not None:
            namespace = res.namespace.evaluate(ctx)
            if not isinstance(namespace, str) or not namespace:
                raise ConfigError(
                    f"the namespace of resource '{internal}' rendered to {namespace!r}, not a "
                    "namespace name",
                    pos=res.namespace.pos,
                )
            meta = obj["metadata"]
            if not meta.get("namespace") and obj["kind"] not in CLUSTER_SCOPED_KINDS:
                meta["namespace"] = namespace
        check_identity(obj, res, internal, namespace)

    def _patch(
        self, comp: ComponentSpec, res: ResourceSpec, obj: Obj, internal: str, ctx: dict[str, Any]
    ) -> Obj:
        for patch in comp.patches:
            if patch.target_resource and patch.target_resource != res.name:
                continue
            if patch.target_kind and patch.target_kind != obj.get("kind"):
                continue
            if patch.target_name and patch.target_name != obj["metadata"].get("name"):
                continue
            body = patch.patch.render(ctx)
            before = obj
            if patch.type == "json6902":
                obj = json_patch(obj, body)
            else:
                obj = strategic_merge(
                    obj, body, kind=obj.get("kind"), api_version=obj.get("apiVersion")
                )
            check_identity_preserved(before, obj, source=str(patch.pos))
        if self.temporary_patches and self._patchable(obj):
            obj = apply_temporary_patches(obj, internal, self.temporary_patches)
        return obj

    def _patchable(self, obj: Obj) -> bool:
        policy = self.controller.temporary_patches
        if not policy.enabled:
            return False
        return not policy.allowed_kinds or obj.get("kind") in policy.allowed_kinds

    def _delete_component_objects(self, name: str) -> None:
        """Delete what a now-disabled component deployed earlier (once: then it is gone)."""
        for obj in self.deployer.owned():
            if component_of(obj) == name:
                self.deployer.delete(obj)

    # -- phase 3: verify -----------------------------------------------------------------
    def _verify_component(self, name: str) -> None:
        with component_context(name):
            self._verify_in_context(name)

    def _verify_in_context(self, name: str) -> None:
        rendered = self.components.get(name)
        if rendered is None or rendered.disabled:
            self.progress.update(name, "verified", "disabled")
            return
        self.progress.update(name, "verifying")
        results: list[Readiness] = []
        for internal, (obj, _method, rules) in rendered.objects.items():
            meta = obj["metadata"]
            live = self.session.cluster.get(
                obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")
            )
            results.append(self._check_rules(live, obj, rules, internal))
        comp = self.controller.component(name)
        for rule in comp.ready:
            assert rule.expr is not None
            if not holds(rule.expr, self.session.context(component=name)):
                results.append(
                    Readiness(
                        "waiting", "ReadyWhen", rule.message or f"{rule.expr.source} is false"
                    )
                )
        overall = combine(results) if results else Readiness("ready", "NoObjects", "")
        if overall.state == "failed":
            self.progress.update(name, "failed", overall.message)
            raise RolloutError(f"component '{name}' failed: {overall.message}")
        if overall.state == "waiting":
            self._wait(name, overall.message)
            raise VerificationError(f"component '{name}' is not ready: {overall.message}")
        self.progress.update(name, "verified")

    def _check_rules(
        self, live: Obj | None, wanted: Obj, rules: tuple[ReadyRule, ...], internal: str
    ) -> Readiness:
        if live is None:
            return Readiness("waiting", "NotFound", f"{ref_of(wanted)} does not exist yet")
        if not rules:
            return builtin_readiness(live)
        results = []
        for rule in rules:
            if rule.kind == "builtin":
                r = builtin_readiness(live)
            elif rule.kind == "exists":
                r = exists_readiness(live)
            elif rule.kind == "condition":
                r = condition_readiness(
                    live,
                    rule.condition_type or "Ready",
                    rule.condition_status,
                    rule.condition_reason,
                )
            elif rule.kind == "subsystem":
                ctx = self.session.context(obj=live)
                version = (
                    rule.subsystem_version.evaluate(ctx)
                    if rule.subsystem_version is not None
                    else self.session.version
                )
                r = subsystem_readiness(live, None if version is None else str(version))
            else:
                assert rule.expr is not None
                ok = holds(rule.expr, self.session.context(obj=live, internal_name=internal))
                r = (
                    Readiness("ready", "ReadyWhen", "")
                    if ok
                    else Readiness(
                        "waiting",
                        "ReadyWhen",
                        f"{ref_of(live)}: {rule.message or rule.expr.source + ' is false'}",
                    )
                )
            if r.state != "ready" and rule.message and rule.kind != "expr":
                r = Readiness(r.state, r.reason, f"{r.message} ({rule.message})")
            results.append(r)
        return combine(results)

    # -- phases 2 and 4: hooks -----------------------------------------------------------
    def _hooks(self, phase: str) -> dict[str, Obj]:
        applied: dict[str, Obj] = {}
        for hook in self.controller.hooks:
            if hook.phase != phase:
                continue
            try:
                with component_context(f"hook-{hook.name}"):
                    applied.update(self._run_hook(hook))
            except ReconcileError:
                raise
            except Exception as err:  # a bug or an unexpected client error: fail the rollout
                raise RolloutError(f"hook '{hook.name}': {err!r}", pos=hook.pos) from err
        return applied

    def _run_hook(self, hook: HookSpec) -> dict[str, Obj]:
        ctx = self.session.context(hook=hook.name)
        applied: dict[str, Obj] = {}
        for res in hook.resources:
            for internal, obj in self._render_resource(res, f"hook-{hook.name}", ctx):
                self._check_declared(obj, res, internal, ctx)
                prepared = self.deployer.prepare(obj, internal, f"hook-{hook.name}")
                self.deployer.apply(prepared, res.method)
                self.session.record(internal, prepared)
                applied[internal] = prepared
        if hook.check is not None and not holds(hook.check, ctx):
            message = hook.message or f"hook '{hook.name}': {hook.check.source} is false"
            if hook.phase.startswith("afterDeploy"):
                raise PreconditionError(message, pos=hook.pos)
            raise VerificationError(message, pos=hook.pos)
        return applied


def holds(expr: Expr, context: dict[str, Any]) -> bool:
    """Evaluate a condition over live objects. A field that does not exist yet (an object
    not created, a status not written) means "not yet", not a broken bundle."""
    try:
        return bool(expr.evaluate(context))
    except ConfigError as err:
        if isinstance(err.__cause__, UndefinedError):
            return False
        raise


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
    return (fatal or converted)[0] if converted else None
