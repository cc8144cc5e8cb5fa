"""The parts of a controller that ``bundle.compile`` builds from small nodes: readiness rules,
``leaveToOthers`` field paths, patches, hooks and the temporary patch policy (a mixin of
its ``_Compiler``).

Kept apart so ``compile.py`` holds the walk over the bundle and its controllers,
``components.py`` the components and resources, and this module the leaves; all report
through the compiler's problem list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from oper8d.bundle.model import (
    HookSpec,
    LeaveField,
    PatchSpec,
    ReadyRule,
    ResourceSpec,
    TemporaryPatchPolicy,
)
from oper8d.bundle.nodes import _Node
from oper8d.errors import SourcePos
from oper8d.fieldpaths import parse_field_path

if TYPE_CHECKING:
    from oper8d.bundle.loader import PathKey
    from oper8d.template import Expr, TemplateEngine

__all__ = ["HOOK_PHASES", "PartsCompiler"]

HOOK_PHASES = ("afterDeploy", "afterDeployUnsuccessful", "afterVerify", "afterVerifyUnsuccessful")
_T = TypeVar("_T")


class PartsCompiler:
    """Rules, field paths, patches and hooks; the compiler provides what is declared here."""

    if TYPE_CHECKING:  # provided by bundle.compile._Compiler (_resource: bundle.components)
        templates: TemplateEngine

        def _problem(self, message: str, pos: SourcePos) -> None: ...
        def _expr(self, node: _Node) -> Expr | None: ...
        def _guard(self, fn: Callable[..., _T], *args: Any, **kw: Any) -> _T | None: ...
        def _positions(self, node: _Node) -> Mapping[PathKey, SourcePos]: ...
        def _resource(self, node: _Node, component: str | None) -> ResourceSpec | None: ...

    def _temporary_patches(self, node: _Node) -> TemporaryPatchPolicy:
        """``temporaryPatches:``: off unless ``enabled``; turned on, it must list the kinds
        and the field paths patches may change (an empty list would allow nothing, and
        "everything" was how hostNetwork and privileged containers got in)."""
        enabled = node.get("enabled", False) is True
        paths = []
        for item in node.child("allowedPaths").items():
            path = parse_field_path(str(item.value))
            if path is None:
                self._problem(
                    f"temporaryPatches.allowedPaths: '{item.value}' is not a dotted field "
                    "path (spec.replicas, spec.template.spec.containers[*].resources, "
                    "metadata.annotations[example.com/debug])",
                    item.pos,
                )
                continue
            paths.append(path)
        for key, example in (("allowedKinds", "[Deployment]"), ("allowedPaths", "[spec.replicas]")):
            if enabled and not node.get(key):
                self._problem(
                    f"temporaryPatches is enabled but lists no `{key}`: list what a "
                    f"TemporaryPatch may change (`{key}: {example}`)",
                    node.pos,
                )
        return TemporaryPatchPolicy(
            enabled=enabled,
            allowed_kinds=tuple(node.get("allowedKinds") or ()),
            allowed_types=tuple(node.get("allowedTypes") or TemporaryPatchPolicy.allowed_types),
            allowed_paths=tuple(paths),
        )

    def _field_paths(self, node: _Node) -> tuple[LeaveField, ...]:
        """``leaveToOthers:`` entries (a path, or ``{path, when}``); an empty segment
        (``spec..replicas``) is a problem."""
        fields = []
        for item in node.items():
            text = item.get("path") if isinstance(item.value, dict) else item.value
            path = parse_field_path(str(text))
            if path is None:
                self._problem(
                    f"leaveToOthers: '{text}' is not a dotted field path (map keys joined by "
                    "'.', a key holding '.' in brackets: spec.replicas, "
                    "metadata.annotations[sidecar.istio.io/status])",
                    item.pos,
                )
                continue
            when = self._expr(item.child("when")) if isinstance(item.value, dict) else None
            fields.append(LeaveField(path, item.pos, when))
        return tuple(fields)

    def _rules(self, node: _Node, *, component_level: bool) -> list[ReadyRule]:
        value = node.value
        if value is None:
            return []
        if isinstance(value, str):
            if component_level:
                self._problem(
                    f"component readyWhen takes a list of expression rules, not '{value}'",
                    node.pos,
                )
                return []
            return [ReadyRule(kind=value, pos=node.pos)]  # type: ignore[arg-type]
        rules: list[ReadyRule] = []
        for rule in node.items():
            message = rule.get("message")
            if rule.has("expr"):
                expr = self._expr(rule.child("expr"))
                if expr is not None:
                    rules.append(ReadyRule("expr", rule.pos, expr=expr, message=message))
            elif component_level:
                self._problem(
                    "component readyWhen rules are expressions ('expr:'); put builtin/exists/"
                    "condition/subsystem rules on a resource",
                    rule.pos,
                )
            elif rule.has("condition"):
                cond = rule.child("condition")
                rules.append(
                    ReadyRule(
                        "condition",
                        rule.pos,
                        condition_type=cond.get("type"),
                        condition_status=str(cond.get("status", "True")),
                        condition_reason=cond.get("reason"),
                        message=message,
                    )
                )
            elif rule.has("subsystem"):
                sub = rule.child("subsystem")
                version = self._expr(sub.child("version")) if sub.has("version") else None
                rules.append(
                    ReadyRule("subsystem", rule.pos, subsystem_version=version, message=message)
                )
            elif rule.get("exists"):
                rules.append(ReadyRule("exists", rule.pos, message=message))
            else:
                rules.append(ReadyRule("builtin", rule.pos, message=message))
        return rules

    def _patch(self, node: _Node) -> PatchSpec | None:
        body = node.child("patch")
        tree = self._guard(self.templates.tree, body.value, body.pos, self._positions(body))
        if tree is None:
            return None
        target = node.child("target")
        return PatchSpec(
            type=node.get("type", "strategicMerge"),
            patch=tree,
            pos=node.pos,
            target_resource=target.get("resource"),
            target_kind=target.get("kind"),
            target_name=target.get("name"),
        )

    def _hooks(self, node: _Node) -> list[HookSpec]:
        hooks: list[HookSpec] = []
        for phase in HOOK_PHASES:
            for hook in node.child(phase).items():
                check = self._expr(hook.child("check")) if hook.has("check") else None
                resources = [self._resource(r, None) for r in hook.child("resources").items()]
                hooks.append(
                    HookSpec(
                        name=hook.get("name"),
                        phase=phase,  # type: ignore[arg-type]
                        pos=hook.pos,
                        check=check,
                        message=hook.get("message"),
                        resources=tuple(r for r in resources if r is not None),
                    )
                )
        return hooks
