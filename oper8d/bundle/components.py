"""The components and resources of a controller, as ``bundle.compile`` builds them (a mixin
of its ``_Compiler``).

A component is written in ``operator.yaml`` or in a file it includes; its resources are an
inline ``object:`` (compiled as a tree template) or a text ``template:`` file, whose kinds are
read from the literal text or declared with ``kinds:``. Two resources writing the same literal
object are refused here, as is a patch naming a resource its component does not have.

Kept apart so ``compile.py`` holds the bundle and its controllers, this module what a
component is made of and ``bundle.parts`` the leaves (rules, patches, hooks); all report
through the compiler's problem list.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from oper8d.bundle.literals import (
    literal_identity,
    literal_kinds,
    literal_namespace,
    text_documents,
)
from oper8d.bundle.loader import load_yaml_file, read_bundle_text
from oper8d.bundle.model import ComponentSpec, ForEach, ResourceSpec
from oper8d.bundle.nodes import _Node
from oper8d.bundle.parts import PartsCompiler
from oper8d.bundle.schema_messages import suggest
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.kinds import api_version_problem

if TYPE_CHECKING:
    from pathlib import Path

    from oper8d.bundle.cache import CodeStore
    from oper8d.bundle.loader import BundleFiles, Document, PathKey
    from oper8d.bundle.reads import CallFinder
    from oper8d.limits import Limits

__all__ = ["ComponentsCompiler"]

#: a component's name in a file that does not parse: ``name: db`` or ``- name: db`` at the
#: top level
_TOP_NAME = re.compile(
    r"""^(?:- )?name:[ \t]*["']?([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)["']?[ \t]*$""", re.M
)


class ComponentsCompiler(PartsCompiler):
    """Components and their resources; the compiler provides what is declared here."""

    if TYPE_CHECKING:  # provided by bundle.compile._Compiler
        root: Path
        files: BundleFiles
        limits: Limits
        store: CodeStore | None
        problems: list[Problem]
        _calls: CallFinder
        _literal_ids: dict[tuple[str, str, str | None, str], tuple[str, SourcePos]]
        #: components of included files that failed (None: of a file whose are not known)
        _unloaded: set[str] | None

        def _checked(self, doc: Document, schema: str, path: PathKey) -> list[Problem]: ...
        def _check_unique(
            self, named: list[tuple[str, SourcePos]], what: str, _pos: SourcePos
        ) -> None: ...

    def _component_nodes(self, entry: _Node) -> list[_Node]:
        if not entry.has("include"):
            return [entry]
        include = entry.child("include")
        try:
            doc = load_yaml_file(
                self.root,
                include.value,
                pos=include.pos,
                limits=self.limits,
                cache=self.store,
                files=self.files,
            )
        except BundleError as err:
            self.problems.extend(err.problems)
            self._note_unparsed(include)
            return []
        problems = self._checked(doc, "component", ())
        if problems:
            self.problems.extend(problems)
            self._note_unloaded(doc.data)
            return []
        top = _Node(doc, (), doc.data)
        return list(top.items()) if isinstance(doc.data, list) else [top]

    def _note_unparsed(self, include: _Node) -> None:
        """Remember the names an included file that does not parse gives its components
        (``name:`` lines at its top level); nothing when it cannot be read at all."""
        try:
            text = read_bundle_text(self.root, include.value, pos=include.pos, files=self.files)
        except BundleError:
            return  # not found or unreadable: its problem names no component
        if self._unloaded is not None:
            self._unloaded.update(_TOP_NAME.findall(text))

    def _note_unloaded(self, data: object) -> None:
        """Remember the names of the components in an included file that failed its
        check: references to them are consequences of its problems, not problems."""
        entries = data if isinstance(data, list) else [data]
        names = [e.get("name") if isinstance(e, dict) else None for e in entries]
        if self._unloaded is None or not all(isinstance(n, str) for n in names):
            self._unloaded = None
        else:
            self._unloaded.update(n for n in names if isinstance(n, str))

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
                for_each = ForEach(
                    items=items,
                    var=fe.get("as", "item"),
                    key=key,
                    max_items=fe.get("maxItems"),
                    pos=fe.pos,
                )
        ready = self._rules(node.child("readyWhen"), component_level=True)
        # a forEach's instances may differ in name; components that may be disabled may
        # be alternatives (render checks those: engine.render)
        if not node.has("forEach") and not node.has("enabled"):
            for res_node in node.child("resources").items():
                self._claim_literal(name, res_node)
        patches = [self._patch(p) for p in node.child("patches").items()]
        targets = {r.name for r in resources if r}
        for p_node, p in zip(node.child("patches").items(), patches, strict=True):
            if p is not None and p.target_resource and p.target_resource not in targets:
                self._problem(
                    f"patch targets resource '{p.target_resource}', which component "
                    f"'{name}' does not have{suggest(p.target_resource, targets)}",
                    p_node.child("target").pos,
                )
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

    def _claim_literal(self, component: str, node: _Node) -> None:
        """A second resource writing the same literal identity: two sources of one object,
        which would overwrite each other at every reconcile."""
        obj = node.get("object") if node.has("object") else None
        key = literal_identity(obj)
        if key is None:
            return
        label = f"{component}.{node.get('name')}"
        first = self._literal_ids.setdefault(key, (label, node.pos))
        if first[0] != label:
            group, kind, namespace, name = key
            what = f"{kind}{'.' + group if group else ''} {name}"
            where = f" in namespace {namespace}" if namespace else ""
            self._problem(
                f"resources {first[0]} ({first[1]}) and {label} both render {what}{where}: "
                "one object can have one source; rename one of them",
                node.pos,
            )

    def _resource(self, node: _Node, component: str | None) -> ResourceSpec | None:
        obj = tmpl = None
        kinds: list[tuple[str, str]] = []
        if node.has("object"):
            body = node.child("object")
            obj = self._guard(self.templates.tree, body.value, body.pos, self._positions(body))
            if obj is None:
                return None
            kinds = literal_kinds([body.value])
        else:
            ref = node.child("template")
            try:
                text = read_bundle_text(self.root, ref.value, pos=ref.pos, files=self.files)
            except BundleError as err:
                self.problems.extend(err.problems)
                return None
            except OSError as err:
                self._problem(f"cannot read template '{ref.value}': {err.strerror}", ref.pos)
                return None
            tmpl = self._guard(self.templates.text, text, ref.value)
            if tmpl is None:
                return None
            self._calls.text(text, ref.value)
            kinds = literal_kinds(text_documents(text))
        declared_kinds = [
            (d.get("apiVersion"), d.get("kind"), d.pos) for d in node.child("kinds").items()
        ]
        for api_version, kind, pos in [(a, k, node.pos) for a, k in kinds] + declared_kinds:
            problem = api_version_problem(api_version)
            if problem is not None:  # a kind no request, write or RBAC rule can name
                self._problem(f"resource '{node.get('name')}' renders {kind}: {problem}", pos)
                return None
            if (api_version, kind) not in kinds:
                kinds.append((api_version, kind))
        if not kinds:
            self._problem(
                f"resource '{node.get('name')}' computes its apiVersion and kind in a template: "
                "declare the kinds it may render with `kinds: [{apiVersion: ..., kind: ...}]`",
                node.pos,
            )
            return None
        namespace = None
        if obj is not None:
            namespace = literal_namespace(node.child("object").value, node.pos)
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
            leave_to_others=self._field_paths(node.child("leaveToOthers")),
            deletion_policy=node.get("deletionPolicy", "Delete"),
            on_immutable_change=node.get("onImmutableChange", "fail"),
        )
