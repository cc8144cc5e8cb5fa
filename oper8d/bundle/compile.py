"""Compile a bundle folder into the typed, immutable ``Bundle`` model.

Used by every command (validate, render, graph, run) and by the controller: load
``operator.yaml`` and included files once (with positions), validate them against
``schemas/``, compile every template, check references, infer dependency edges from
``live()`` calls and reject cycles. All problems are collected and raised together
as one ``BundleError`` so a user fixes a bundle in one pass.

This module walks the bundle and its controllers; the compiler's mixins build the rest:
``bundle.components`` the components and their resources, ``bundle.parts`` the leaves
(readiness rules, patches, hooks, field paths, the temporary patch policy).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from oper8d.bundle.cache import CodeStore, data_key, open_store
from oper8d.bundle.components import ComponentsCompiler
from oper8d.bundle.edges import condition_references, infer_edges, template_references
from oper8d.bundle.loader import BundleFiles, Document, PathKey, load_yaml_file
from oper8d.bundle.model import (
    FORMAT_VERSION,
    Bundle,
    ComponentSpec,
    ControllerSpec,
    CRKind,
    FinalizeSpec,
    RequeueSpec,
)
from oper8d.bundle.nodes import _Below, _Node
from oper8d.bundle.paths import path_problems
from oper8d.bundle.placement import namespace_problems
from oper8d.bundle.reads import (
    CallFinder,
    may_mention_calls,
    mentions_calls,
    parse_reads,
    undeclared_calls,
    undeclared_live,
)
from oper8d.bundle.validate import SchemaSet, check_spec_schema
from oper8d.clock import parse_duration
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.kubeschema import KubeSchemas
from oper8d.limits import Limits, bounded_work
from oper8d.template import Expr, TemplateEngine

OPERATOR_FILE = "operator.yaml"
_T = TypeVar("_T")


def load_bundle(
    path: str | Path,
    limits: Limits | None = None,
    *,
    cache: bool = True,
    builtin_schemas: KubeSchemas | None = None,
) -> Bundle:
    """Load, validate and compile the bundle at ``path`` (a folder or its operator.yaml).

    ``cache``: reuse the templates' compiled code from the user's compile cache
    (``bundle.cache``; off with ``OPER8D_NO_CACHE=1``) and keep what this load compiles.
    ``builtin_schemas``: ``KubeSchemas.builtin()`` when the caller has it already (the
    conditions' field paths are checked against it; loading it costs a few ms).
    Raises ``BundleError`` listing every problem found, each with file:line:col.
    """
    root = Path(path)
    if root.is_file():
        root = root.parent
    if not (root / OPERATOR_FILE).is_file():
        raise BundleError(
            Problem(f"no {OPERATOR_FILE} in {root} (a bundle is a folder with an {OPERATOR_FILE})")
        )
    limits = limits if limits is not None else Limits()
    store = open_store(root, limits) if cache else None
    # the collector's passes over the compile's (acyclic, mostly) objects cost a sixth of
    # a load
    try:
        with bounded_work():
            return _Compiler(root, limits, store, builtin_schemas).compile()
    finally:
        if store is not None:
            store.save()  # also after problems: the templates that compiled are kept


class _Compiler(ComponentsCompiler):
    def __init__(
        self,
        root: Path,
        limits: Limits,
        store: CodeStore | None = None,
        builtin_schemas: KubeSchemas | None = None,
    ):
        self.root = root
        self.files = BundleFiles(root, limits=limits)
        self.builtin_schemas = builtin_schemas
        self.schemas = SchemaSet()
        self.limits = limits
        self.store = store
        self.templates = TemplateEngine(limits, code_cache=store)
        self.problems: list[Problem] = []
        # lookup() and random_string() calls of the controller being compiled
        self._calls = CallFinder()
        # its components in included files that failed (``ComponentsCompiler``)
        self._unloaded: set[str] | None = set()

    # -- entry ---------------------------------------------------------------------------
    def compile(self) -> Bundle:
        doc = load_yaml_file(
            self.root, OPERATOR_FILE, limits=self.limits, cache=self.store, files=self.files
        )
        self.problems.extend(self._checked(doc, "operator", ()))
        controllers = doc.data.get("controllers") if isinstance(doc.data, dict) else None
        for i, c in enumerate(controllers if isinstance(controllers, list) else []):
            resource = c.get("resource") if isinstance(c, dict) else None
            for key, check in (("schema", "spec schema"), ("configSchema", "config schema")):
                if isinstance(resource, dict) and isinstance(resource.get(key), dict):
                    path = ("controllers", i, "resource", key)
                    self.problems.extend(self._checked(doc, check, path))
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
        bundle = Bundle(
            name=meta.get("name"),
            root=self.root,
            controllers=tuple(c for c in controllers if c is not None),
            operator_version=_opt_str(meta.get("version")),
            description=meta.get("description"),
        )
        # the conditions' field paths (bundle.paths)
        kube_schemas = self.builtin_schemas or KubeSchemas.builtin()
        for c in bundle.controllers:
            self.problems.extend(undeclared_calls(bundle, c, c.lookups))
            refs = [ref for comp in c.components for ref in template_references(comp)]
            refs += condition_references(
                list(c.edges), list(c.components), list(c.hooks), dict(c.status_fields)
            )
            self.problems.extend(undeclared_live(bundle, c, refs))
            self.problems.extend(path_problems(c, kube_schemas))
            self.problems.extend(namespace_problems(c))
        if self.problems:
            raise BundleError(sorted(self.problems, key=_problem_order))
        return bundle

    # -- helpers -------------------------------------------------------------------------
    def _checked(self, doc: Document, schema: str, path: PathKey) -> list[Problem]:
        """The problems of ``doc`` under the package ``schema`` ("operator", "component"),
        or of the spec or config override schema at ``path`` ("spec schema", "config
        schema"). Data that passed the same check
        in an earlier load (the compile cache) is not checked again: only a pass is kept,
        so every problem is still found and placed by the check itself."""
        data: Any = doc.data
        for part in path:
            data = data[part]
        key = data_key(f"{schema} {path}", data) if self.store is not None else None
        if key is not None and self.store is not None and self.store.passed(key):
            return []
        if schema in ("spec schema", "config schema"):
            field = "spec" if schema == "spec schema" else "configOverrides"
            problems = check_spec_schema(doc, path, field=field, defaults=schema == "spec schema")
        else:
            problems = self.schemas.validate(doc, schema)
        if not problems and key is not None and self.store is not None:
            self.store.record_pass(key)
        return problems

    def _problem(self, message: str, pos: SourcePos) -> None:
        self.problems.append(Problem(message, pos))

    def _positions(self, node: _Node) -> Mapping[PathKey, SourcePos]:
        """The positions below ``node``, keyed by their path relative to it."""
        return _Below(node.doc.positions, node.path)

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
        self._calls = CallFinder()
        self._unloaded = set()
        # identities written literally by this controller's resources: (group, kind,
        # namespace or None for the CR's, name) -> (component.resource, position)
        self._literal_ids: dict[tuple[str, str, str | None, str], tuple[str, SourcePos]] = {}
        resource = self._cr_kind(node.child("resource"))
        reads_node = node.child("reads")
        reads, problems = parse_reads(reads_node.value, lambda i: reads_node.child(i).pos)
        self.problems.extend(problems)
        for key in ("hooks", "status", "finalize"):
            self._find_calls(node.child(key))
        components: list[ComponentSpec] = []
        component_nodes: list[_Node] = []
        for entry in node.child("components").items():
            for comp_node in self._component_nodes(entry):
                component_nodes.append(comp_node)
                self._find_calls(comp_node)
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
        if not finalize.enabled:
            for comp in components:
                for res in comp.resources:
                    if res.deletion_policy == "Orphan":
                        self._problem(
                            f"resource '{comp.name}.{res.name}': deletionPolicy: Orphan needs "
                            "`finalize: {enabled: true}` on the controller (the objects are "
                            "released before the CR goes; without the finalizer the garbage "
                            "collector deletes them first), or use Retain",
                            res.pos,
                        )
        requeue = self._requeue(node.child("requeue"))
        policy = self._temporary_patches(node.child("temporaryPatches"))
        edges = infer_edges(
            component_nodes,
            components,
            hooks,
            status_fields,
            expr=self._expr,
            problem=self._problem,
            unloaded=self._unloaded,
        )
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
            reads=tuple(reads),
            lookups=tuple(self._calls.lookups),
            random_strings=self._calls.random_strings,
        )

    def _find_calls(self, node: _Node) -> None:
        """Feed the template strings below ``node`` to the call finder: strings of inline
        objects and patches when templated, any other string as an expression."""
        if may_mention_calls(node.value):
            self._find_calls_in(node.doc, node.path, node.value, False)

    def _find_calls_in(self, doc: Document, path: PathKey, value: Any, in_object: bool) -> None:
        # (plain values and paths: a node and a position per string of a big bundle cost
        # more than the search; only a string that names a call is placed)
        if isinstance(value, str):
            if not mentions_calls(value):
                return
            if in_object:
                self._calls.template_string(value, doc.pos(path))
            else:
                self._calls.expression(value, doc.pos(path))
        elif isinstance(value, dict):
            for key, item in value.items():
                inside = in_object or key in ("object", "patch")
                self._find_calls_in(doc, (*path, key), item, inside)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self._find_calls_in(doc, (*path, i), item, in_object)

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
            config_schema=node.get("configSchema"),
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


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _problem_order(p: Problem) -> tuple[str, int, int]:
    return (p.pos.file, p.pos.line, p.pos.col) if p.pos else ("", 0, 0)


__all__ = ["FORMAT_VERSION", "load_bundle"]
