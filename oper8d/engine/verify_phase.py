"""Phase 3 of a rollout for one component: its objects' readiness read from the cluster
and judged by their rules (``engine.verify``), then the component's own ``readyWhen``.

Called by ``engine.rollout`` on the DAG runner's worker threads over the components the
deploy phase completed. Reads only; a component that is not ready yet raises
``VerificationError`` (it waits), one that failed raises ``RolloutError``.
"""

from __future__ import annotations

from dataclasses import dataclass

from oper8d.bundle.model import ReadyRule
from oper8d.engine.missing import SchemaSource
from oper8d.engine.progress import RolloutState
from oper8d.engine.render import holds
from oper8d.engine.session import Session
from oper8d.engine.verify import (
    Readiness,
    builtin_readiness,
    combine,
    condition_readiness,
    exists_readiness,
    subsystem_readiness,
)
from oper8d.errors import RolloutError, VerificationError
from oper8d.kinds import ref_of
from oper8d.logs import component_context
from oper8d.objects import Obj

__all__ = ["ObjectVerdict", "VerifyPhase"]


@dataclass(frozen=True)
class ObjectVerdict:
    """One rendered object (prepared for apply), its live copy (None: it does not exist)
    and the verdict of its readiness rules."""

    internal: str
    wanted: Obj
    live: Obj | None
    readiness: Readiness


class VerifyPhase:
    """Verifies components of one session; call it with a component name."""

    def __init__(self, session: Session, state: RolloutState) -> None:
        self.session = session
        self.state = state
        # read only when a rule meets a missing field: typo or "not yet" (engine.missing)
        self.schemas = SchemaSource(session.controller.resource.schema, session.schemas)

    def __call__(self, name: str) -> None:
        with component_context(name):
            self._verify(name)

    def _verify(self, name: str) -> None:
        progress = self.state.progress
        rendered = self.state.component(name)
        if rendered is None or rendered.disabled:
            progress.update(name, "verified", "disabled")
            return
        progress.update(name, "verifying")
        overall = self.readiness(name)
        assert overall is not None
        if overall.state == "failed":
            progress.update(name, "failed", overall.message)
            raise RolloutError(f"component '{name}' failed: {overall.message}")
        if overall.state == "waiting":
            self.state.wait(name, overall.message)
            raise VerificationError(f"component '{name}' is not ready: {overall.message}")
        progress.update(name, "verified")

    def readiness(self, name: str) -> Readiness | None:
        """The readiness of a deployed component, as the verify phase judges it, without
        reporting it: its objects by their rules, then its ``readyWhen``. None when it is
        disabled or was not rendered (nothing to wait for). Also used by the deploy phase
        for ``dependsOn: [{component, ready: true}]``."""
        verdicts = self.object_verdicts(name)
        if verdicts is None:
            return None
        results = [v.readiness for v in verdicts] + self.ready_when(name)
        return combine(results) if results else Readiness("ready", "NoObjects", "")

    def object_verdicts(self, name: str) -> list[ObjectVerdict] | None:
        """Each object a deployed component rendered, read from the cluster and judged by
        its rules (``oper8d trace`` shows them one by one). None when the component is
        disabled or was not rendered."""
        rendered = self.state.component(name)
        if rendered is None or rendered.disabled:
            return None
        verdicts: list[ObjectVerdict] = []
        for internal, item in rendered.objects.items():
            meta = item.obj["metadata"]
            live = self.session.cluster.get(
                item.obj["apiVersion"], item.obj["kind"], meta["name"], meta.get("namespace")
            )
            verdict = self._check_rules(live, item.obj, item.resource.ready, internal)
            verdicts.append(ObjectVerdict(internal, item.obj, live, verdict))
        return verdicts

    def ready_when(self, name: str) -> list[Readiness]:
        """The component's own ``readyWhen`` rules that do not hold."""
        results: list[Readiness] = []
        for rule in self.session.controller.component(name).ready:
            assert rule.expr is not None
            if not holds(rule.expr, self.session.context(component=name), self.schemas):
                results.append(
                    Readiness(
                        "waiting", "ReadyWhen", rule.message or f"{rule.expr.source} is false"
                    )
                )
        return results

    def _check_rules(
        self, live: Obj | None, wanted: Obj, rules: tuple[ReadyRule, ...], internal: str
    ) -> Readiness:
        """The readiness of one live object by its rules (none: the built-in rule)."""
        if live is None:
            return Readiness("waiting", "NotFound", f"{ref_of(wanted)} does not exist yet")
        if not rules:
            return builtin_readiness(live)
        results = []
        for rule in rules:
            r = self._rule(live, rule, internal)
            if r.state != "ready" and rule.message and rule.kind != "expr":
                r = Readiness(r.state, r.reason, f"{r.message} ({rule.message})")
            results.append(r)
        return combine(results)

    def _rule(self, live: Obj, rule: ReadyRule, internal: str) -> Readiness:
        if rule.kind == "builtin":
            return builtin_readiness(live)
        if rule.kind == "exists":
            return exists_readiness(live)
        if rule.kind == "condition":
            return condition_readiness(
                live, rule.condition_type or "Ready", rule.condition_status, rule.condition_reason
            )
        if rule.kind == "subsystem":
            ctx = self.session.context(obj=live)
            version = (
                rule.subsystem_version.evaluate(ctx)
                if rule.subsystem_version is not None
                else self.session.version
            )
            return subsystem_readiness(live, None if version is None else str(version))
        assert rule.expr is not None
        ctx = self.session.context(obj=live, internal_name=internal)
        if holds(rule.expr, ctx, self.schemas):
            return Readiness("ready", "ReadyWhen", "")
        return Readiness(
            "waiting",
            "ReadyWhen",
            f"{ref_of(live)}: {rule.message or rule.expr.source + ' is false'}",
        )
