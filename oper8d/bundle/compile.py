"""Compile a bundle folder into the typed, immutable ``Bundle`` model.

Used by every command (validate, render, graph, run) and by the controller: load
``operator.yaml`` and included files once (with positions), validate them against
``schemas/``, compile every template, check references, infer dependency edges from
``live()`` calls and reject cycles. All problems are collected and raised together
as one ``BundleError`` so a user fixes a bundle in one pass.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

from oper8d.bundle.loader import (
    Document,
    PathKey,
    load_yaml_file,
    read_bundle_text,
    resolve_path,
)
from oper8d.bundle.model import (
    FORMAT_VERSION,
    Bundle,
    ComponentSpec,
    ControllerSpec,
    CRKind,
    Edge,
    FinalizeSpec,
    ForEach,
    HookSpec,
    PatchSpec,
    ReadyRule,
    RequeueSpec,
    ResourceSpec,
    TemporaryPatchPolicy,
)
from oper8d.bundle.validate import SchemaSet, check_spec_schema
from oper8d.clock import parse_duration
from oper8d.dag import CycleError, Graph
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.limits import Limits
from oper8d.template import Expr, TemplateEngine

OPERATOR_FILE = "operator.yaml"
HOOK_PHASES = ("afterDeploy", "afterDeployUnsuccessful", "afterVerify", "afterVerifyUnsuccessful")
_REF = re.compile(r"^(?P<component>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<resource>.+)$")
_T = TypeVar("_T")


class _PositionIndex:
    """The positions below a path of one document, relative to that path (what
    ``TemplateEngine.tree`` takes for an inline object).

    Scanning every position of the document for each inline object made a bundle's load
    time grow with the square of its size; this groups the positions by their first
    ``n`` path elements in one pass, once per prefix length asked for (inline objects
    sit at two or three depths)."""

    def __init__(self, doc: Document) -> None:
        self._doc = doc
        self._by_length: dict[int, dict[PathKey, dict[PathKey, SourcePos]]] = {}

    def below(self, path: PathKey) -> Mapping[PathKey, SourcePos]:
        n = len(path)
        groups = self._by_length.get(n)
        if groups is None:
            groups = {}
            for p, pos in self._doc.positions.items():
                if len(p) >= n:
                    groups.setdefault(p[:n], {})[p[n:]] = pos
            self._by_length[n] = groups
        return groups.get(path, {})


@dataclass(frozen=True)
class _Node:
    """A value inside a loaded document, with a way to find positions below it."""

    doc: Document
    path: PathKey
    value: Any

    def child(self, key: str | int) -> _Node:
        value: Any = None
        if isinstance(self.value, dict):
            value = self.value.get(key)
        elif isinstance(self.value, list) and isinstance(key, int) and key < len(self.value):
            value = self.value[key]
        return _Node(self.doc, (*self.path, key), value)

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default) if isinstance(self.value, dict) else default

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    @property
    def pos(self) -> SourcePos:
        return self.doc.pos(self.path)

    def items(self) -> Iterator[_Node]:
        if isinstance(self.value, list):
            for i in range(len(self.value)):
                yield self.child(i)


def load_bundle(path: str | Path, limits: Limits | None = None) -> Bundle:
    """Load, validate and compile the bundle at ``path`` (a folder or its operator.yaml).

    Raises ``BundleError`` listing every problem found, each with file:line:col.
    """
    root = Path(path)
    if root.is_file():
        root = root.parent
    if not (root / OPERATOR_FILE).is_file():
        raise BundleError(
            Problem(f"no {OPERATOR_FILE} in {root} (a bundle is a folder with an {OPERATOR_FILE})")
        )
    return _Compiler(root, limits if limits is not None else Limits()).compile()


class _Compiler:
    def __init__(self, root: Path, limits: Limits):
        self.root = root
        self.schemas = SchemaSet()
        self.limits = limits
        self.templates = TemplateEngine(limits)
        self.problems: list[Problem] = []
        # id(document) -> (document, its index): the document is kept so its id stays its own
        self._position_indexes: dict[int, tuple[Document, _PositionIndex]] = {}

    # -- entry ---------------------------------------------------------------------------
    def compile(self) -> Bundle:
        doc = load_yaml_file(self.root, OPERATOR_FILE, limits=self.limits)
        self.problems.extend(self.schemas.validate(doc, "operator"))
        controllers = doc.data.get("controllers") if isinstance(doc.data, dict) else None
        for i, c in enumerate(controllers if isinstance(controllers, list) else []):
            resource = c.get("resource") if isinstance(c, dict) else None
            if isinstance(resource, dict) and isinstance(resource.get("schema"), dict):
                path = ("controllers", i, "resource", "schema")
                self.problems.extend(check_spec_schema(doc, path))
        if self.problems:
            raise BundleError(sorted(self.problems, key=_problem_order))
        top = _Node(doc, (), doc.data)
        meta = top.child("metadata")
        controllers = [self._controller(c) for c in top.child("controllers").items()]
        self._check_unique(
            [(c.name, c.pos) for c in controllers if c], "controller", top.child("controllers").pos
        )
        kinds = [(c.resource.api_version + " " + c.resource.kind, c.pos) for c in controllers if c]
        self._check_unique(kinds, "controller resource", top.pos)
        if self.problems:
            raise BundleError(sorted(self.problems, key=_problem_order))
        return Bundle(
            name=meta.get("name"),
            root=self.root,
            controllers=tuple(c for c in controllers if c is not None),
            operator_version=_opt_str(meta.get("version")),
            description=meta.get("description"),
        )

    # -- helpers -------------------------------------------------------------------------
    def _problem(self, message: str, pos: SourcePos) -> None:
        self.problems.append(Problem(message, pos))

    def _positions(self, node: _Node) -> Mapping[PathKey, SourcePos]:
        """The positions below ``node``, keyed by their path relative to it."""
        known = self._position_indexes.get(id(node.doc))
        if known is None:
            known = self._position_indexes[id(node.doc)] = (node.doc, _PositionIndex(node.doc))
        return known[1].below(node.path)

    def _guard(self, fn: Callable[..., _T], *args: Any, **kw: Any) -> _T | None:
        """Run a template compile; collect its BundleError instead of stopping."""
        try:
            return fn(*args, **kw)
        except BundleError as err:
            self.problems.extend(err.problems)
            return None

    def _expr(self, node: _Node) -> Expr | None:
        if node.value is None:
            return None
        return self._guard(self.templates.expression, node.value, node.pos)

    def _check_unique(self, named: list[tuple[str, SourcePos]], what: str, _pos: SourcePos) -> None:
        seen: dict[str, SourcePos] = {}
        for name, pos in named:
            if name in seen:
                self._problem(f"duplicate {what} '{name}' (first defined at {seen[name]})", pos)
            else:
                seen[name] = pos

    # -- controller ----------------------------------------------------------------------
    def _controller(self, node: _Node) -> ControllerSpec | None:
        before = len(self.problems)
        resource = self._cr_kind(node.child("resource"))
        components: list[ComponentSpec] = []
        for entry in node.child("components").items():
            for comp_node in self._component_nodes(entry):
                comp = self._component(comp_node)
                if comp is not None:
                    components.append(comp)
        self._check_unique([(c.name, c.pos) for c in components], "component", node.pos)
        hooks = self._hooks(node.child("hooks"))
        status_fields = {}
        for key in sorted(node.get("status") or {}):
            expr = self._expr(node.child("status").child(key))
            if expr is not None:
                status_fields[key] = expr
        finalize_node = node.child("finalize")
        finalize = FinalizeSpec(
            enabled=bool(finalize_node.get("enabled", False)),
            delete_components=bool(finalize_node.get("deleteComponents", True)),
        )
        requeue = self._requeue(node.child("requeue"))
        tp = node.child("temporaryPatches")
        policy = TemporaryPatchPolicy(
            enabled=bool(tp.get("enabled", True)),
            allowed_kinds=tuple(tp.get("allowedKinds") or ()),
            allowed_types=tuple(tp.get("allowedTypes") or ("patchStrategicMerge", "patchJson6902")),
        )
        edges = self._edges(node, components, hooks, status_fields)
        if len(self.problems) > before:
            return None
        return ControllerSpec(
            name=node.get("name"),
            pos=node.pos,
            resource=resource,
            components=tuple(components),
            edges=tuple(edges),
            config_defaults=node.get("config") or {},
            hooks=tuple(hooks),
            status_fields=status_fields,
            finalize=finalize,
            requeue=requeue,
            temporary_patches=policy,
        )

    def _cr_kind(self, node: _Node) -> CRKind:
        kind = node.get("kind")
        return CRKind(
            group=node.get("group"),
            version=node.get("version"),
            kind=kind,
            plural=node.get("plural") or (kind.lower() + "s"),
            scope=node.get("scope", "Namespaced"),
            short_names=tuple(node.get("shortNames") or ()),
            schema=node.get("schema") or {"type": "object"},
            version_path=node.get("versionPath", "spec.version"),
            printer_columns=tuple(node.get("printerColumns") or ()),
        )

    def _requeue(self, node: _Node) -> RequeueSpec:
        defaults = RequeueSpec()
        values: dict[str, float | None] = {}
        for key, attr in (
            ("afterError", "after_error"),
            ("whileWaiting", "while_waiting"),
            ("afterSuccess", "after_success"),
        ):
            if not node.has(key):
                values[attr] = getattr(defaults, attr)
                continue
            try:
                values[attr] = parse_duration(node.get(key))
            except ValueError as err:
                self._problem(str(err), node.child(key).pos)
        return RequeueSpec(**values)

    # -- components ----------------------------------------------------------------------
    def _component_nodes(self, entry: _Node) -> list[_Node]:
        if not entry.has("include"):
            return [entry]
        include = entry.child("include")
        try:
            resolve_path(self.root, include.value, pos=include.pos)
            doc = load_yaml_file(self.root, include.value, pos=include.pos, limits=self.limits)
        except BundleError as err:
            self.problems.extend(err.problems)
            return []
        problems = self.schemas.validate(doc, "component")
        if problems:
            self.problems.extend(problems)
            return []
        top = _Node(doc, (), doc.data)
        return list(top.items()) if isinstance(doc.data, list) else [top]

    def _component(self, node: _Node) -> ComponentSpec | None:
        name = node.get("name")
        resources = [self._resource(r, name) for r in node.child("resources").items()]
        self._check_unique([(r.name, r.pos) for r in resources if r], "resource", node.pos)
        enabled = None
        if node.has("enabled"):
            enabled = self._expr(node.child("enabled"))
        for_each = None
        if node.has("forEach"):
            fe = node.child("forEach")
            items = self._expr(fe.child("items"))
            key = self._expr(fe.child("key")) if fe.has("key") else None
            if items is not None:
                for_each = ForEach(items=items, var=fe.get("as", "item"), key=key)
        ready = self._rules(node.child("readyWhen"), component_level=True)
        patches = [self._patch(p) for p in node.child("patches").items()]
        if any(r is None for r in resources) or any(p is None for p in patches):
            return None
        return ComponentSpec(
            name=name,
            pos=node.pos,
            resources=tuple(r for r in resources if r is not None),
            enabled=enabled,
            for_each=for_each,
            ready=tuple(ready),
            patches=tuple(p for p in patches if p is not None),
        )

    def _resource(self, node: _Node, component: str | None) -> ResourceSpec | None:
        obj = tmpl = None
        kinds: list[tuple[str, str]] = []
        if node.has("object"):
            body = node.child("object")
            obj = self._guard(self.templates.tree, body.value, body.pos, self._positions(body))
            if obj is None:
                return None
            kinds = _literal_kinds([body.value])
        else:
            ref = node.child("template")
            try:
                text = read_bundle_text(self.root, ref.value, pos=ref.pos)
            except BundleError as err:
                self.problems.extend(err.problems)
                return None
            except OSError as err:
                self._problem(f"cannot read template '{ref.value}': {err.strerror}", ref.pos)
                return None
            tmpl = self._guard(self.templates.text, text, ref.value)
            if tmpl is None:
                return None
            kinds = _literal_kinds(_text_documents(text))
        for declared in node.child("kinds").items():
            pair = (declared.get("apiVersion"), declared.get("kind"))
            if pair not in kinds:
                kinds.append(pair)
        if not kinds:
            self._problem(
                f"resource '{node.get('name')}' computes its apiVersion and kind in a template: "
                "declare the kinds it may render with `kinds: [{apiVersion: ..., kind: ...}]`",
                node.pos,
            )
            return None
        namespace = None
        if obj is not None:
            namespace = _literal_namespace(node.child("object").value, node.pos)
        if node.has("namespace"):
            declared_ns = node.child("namespace")
            namespace = self._guard(
                self.templates.template_string, declared_ns.value, declared_ns.pos
            )
            if namespace is None:
                return None
        return ResourceSpec(
            name=node.get("name"),
            pos=node.pos,
            object=obj,
            template=tmpl,
            method=node.get("method", "apply"),
            ready=tuple(self._rules(node.child("readyWhen"), component_level=False)),
            kinds=tuple(kinds),
            namespace=namespace,
        )

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

    # -- dependency edges ----------------------------------------------------------------
    def _edges(
        self,
        node: _Node,
        components: list[ComponentSpec],
        hooks: list[HookSpec],
        status_fields: dict[str, Expr],
    ) -> list[Edge]:
        by_name = {c.name: c for c in components}
        edges: dict[tuple[str, str], Edge] = {}
        comp_nodes = {c.name: c.pos for c in components}
        for comp_node in self._all_component_nodes(node):
            name = comp_node.get("name")
            if not isinstance(name, str) or name not in by_name:
                continue
            for dep in comp_node.child("dependsOn").items():
                upstream = dep.value if isinstance(dep.value, str) else dep.get("component")
                if not isinstance(upstream, str):
                    continue  # the bundle schema reports the wrong type
                if upstream not in by_name:
                    self._unknown_component(upstream, list(by_name), dep.pos)
                    continue
                if upstream == name:
                    self._problem(f"component '{name}' depends on itself", dep.pos)
                    continue
                when = self._expr(dep.child("when")) if dep.has("when") else None
                edges[(upstream, name)] = Edge(upstream, name, dep.pos, when=when)
        for comp in components:
            for ref, pos in _references(comp):
                upstream = self._referenced_component(ref, pos, by_name)
                if upstream is None:
                    continue
                if upstream != comp.name and (upstream, comp.name) not in edges:
                    edges[(upstream, comp.name)] = Edge(upstream, comp.name, pos, inferred=True)
        # live() in conditions, readiness, hooks and status fields reads objects without
        # ordering anything: only check that the reference names something that exists
        conditions = _condition_references(list(edges.values()), components, hooks, status_fields)
        for ref, pos in conditions:
            self._referenced_component(ref, pos, by_name)
        graph = Graph(comp_nodes, [(e.upstream, e.downstream) for e in edges.values()])
        try:
            graph.check_acyclic()
        except CycleError as err:
            cycle = err.cycle
            first = edges[(cycle[0], cycle[1])]
            where = ", ".join(
                f"{a} -> {b} at {edges[(a, b)].pos}" for a, b in itertools.pairwise(cycle)
            )
            self._problem(f"dependency cycle: {' -> '.join(cycle)} ({where})", first.pos)
        return sorted(edges.values(), key=lambda e: (e.downstream, e.upstream))

    def _referenced_component(
        self, ref: str, pos: SourcePos, by_name: dict[str, ComponentSpec]
    ) -> str | None:
        """The component a ``live('<component>.<resource>')`` reference names, or None
        (and a problem) when it names nothing in the bundle."""
        m = _REF.match(ref)
        if not m:
            self._problem(f"live('{ref}'): a reference is '<component>.<resource>'", pos)
            return None
        upstream = m["component"]
        if upstream not in by_name:
            self._unknown_component(upstream, list(by_name), pos)
            return None
        resource = m["resource"]
        if not _has_resource(by_name[upstream], resource):
            names = [r.name for r in by_name[upstream].resources]
            self._problem(
                f"live('{ref}'): component '{upstream}' has no resource '{resource}'"
                + _suggest(resource, names),
                pos,
            )
            return None
        return upstream

    def _all_component_nodes(self, node: _Node) -> Iterator[_Node]:
        for entry in node.child("components").items():
            if entry.has("include"):
                try:
                    doc = load_yaml_file(self.root, entry.get("include"), limits=self.limits)
                except BundleError:
                    continue
                top = _Node(doc, (), doc.data)
                yield from (top.items() if isinstance(doc.data, list) else [top])
            else:
                yield entry

    def _unknown_component(self, name: str, known: list[str], pos: SourcePos) -> None:
        self._problem(f"unknown component '{name}'" + _suggest(name, known), pos)


def _references(comp: ComponentSpec) -> Iterator[tuple[str, SourcePos]]:
    """live() references made while rendering ``comp`` (not while verifying it)."""
    for res in comp.resources:
        tmpl = res.object or res.template
        for ref in sorted(getattr(tmpl, "references", ())):
            yield ref, res.pos
    for patch in comp.patches:
        for ref in sorted(patch.patch.references):
            yield ref, patch.pos
    for expr in (comp.enabled, comp.for_each.items if comp.for_each else None):
        if expr is not None:
            for ref in sorted(expr.references):
                yield ref, expr.pos


def _condition_references(
    edges: list[Edge],
    components: list[ComponentSpec],
    hooks: list[HookSpec],
    status_fields: dict[str, Expr],
) -> Iterator[tuple[str, SourcePos]]:
    """live() references that are read but order nothing: edge conditions, readiness
    rules, hooks and status fields."""
    exprs: list[Expr | None] = [e.when for e in edges]
    for comp in components:
        rules = [*comp.ready, *(rule for res in comp.resources for rule in res.ready)]
        exprs.extend(rule.expr for rule in rules)
        exprs.extend(rule.subsystem_version for rule in rules)
    for hook in hooks:
        exprs.append(hook.check)
        for res in hook.resources:
            tmpl = res.object or res.template
            for ref in sorted(getattr(tmpl, "references", ())):
                yield ref, res.pos
    exprs.extend(status_fields.values())
    for expr in exprs:
        if expr is not None:
            for ref in sorted(expr.references):
                yield ref, expr.pos


def _has_resource(comp: ComponentSpec, resource: str) -> bool:
    # multi-document templates name objects "<resource>-<kind>-<name>"
    return any(resource == r.name or resource.startswith(r.name + "-") for r in comp.resources)


_DOC_SPLIT = re.compile(r"^---\s*$", re.M)
_TOP_LINE = re.compile(r"^(apiVersion|kind):\s*([^\s#]+)\s*$", re.M)


def _text_documents(text: str) -> list[dict[str, str]]:
    """The literal top-level apiVersion/kind lines of each document of a text template."""
    docs = []
    for part in _DOC_SPLIT.split(text):
        fields = {m[1]: m[2].strip("'\"") for m in _TOP_LINE.finditer(part)}
        docs.append(fields)
    return docs


def _literal_namespace(obj: Any, pos: SourcePos) -> Expr | None:
    """An inline object's namespace written literally: the author declared it."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    value = meta.get("namespace") if isinstance(meta, dict) else None
    if isinstance(value, str) and value and "{" not in value:
        return Expr(json.dumps(value), pos, constant=value)
    return None


def _literal_kinds(objects: list[Any]) -> list[tuple[str, str]]:
    """(apiVersion, kind) of objects whose apiVersion and kind are written literally."""
    out = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if _literal(api_version) and _literal(kind):
            out.append((api_version, kind))
    return out


def _literal(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value) and "{" not in value


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _problem_order(p: Problem) -> tuple[str, int, int]:
    return (p.pos.file, p.pos.line, p.pos.col) if p.pos else ("", 0, 0)


__all__ = ["FORMAT_VERSION", "load_bundle"]
