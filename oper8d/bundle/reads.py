"""Scoped reads: what ``lookup()`` and ``live()`` may return, decided from the bundle alone.

A CR author is less trusted than the bundle author (docs/security.md), so a template reads
only the namespace of the CR being reconciled, and never a Secret, unless the controller
declares the read (``reads:`` in operator.yaml, ``model.ReadSpec``):

* ``parse_reads`` turns the ``reads:`` entries into ``ReadSpec``s (compile);
* ``find_calls`` finds the ``lookup()`` and ``random_string()`` calls of template sources
  (compile; the arguments that are constants are kept);
* ``undeclared_calls`` is the validate-time check: a call whose constant arguments can
  never be allowed (or whose apiVersion is not one) is a bundle problem;
* ``refusal`` is the render-time check used by ``engine.session``.

Used by ``bundle.compile``, ``engine.session`` and ``manifests.rbac``.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import TemplateSyntaxError
from jinja2.parser import Parser

from oper8d.bundle.model import Bundle, ControllerSpec, LookupCall, ReadSpec
from oper8d.errors import Problem, SourcePos
from oper8d.kinds import api_version_problem, group_of, is_cluster_scoped
from oper8d.template import ReadingEnvironment

#: the positional parameters of lookup(), in order
_LOOKUP_ARGS = ("api_version", "kind", "name", "namespace")


def parse_reads(entries: Any, pos_of: Any) -> tuple[list[ReadSpec], list[Problem]]:
    """``ReadSpec``s of the ``reads:`` list (already schema-valid); ``pos_of(i)`` is the
    position of entry ``i``. A namespace given for a cluster-scoped kind is a problem."""
    reads: list[ReadSpec] = []
    problems: list[Problem] = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        read = ReadSpec(
            api_version=entry["apiVersion"],
            kind=entry["kind"],
            pos=pos_of(i),
            namespace=entry.get("namespace"),
            names=tuple(entry.get("names") or ()),
            scope=entry.get("scope"),
        )
        problem = api_version_problem(read.api_version)
        if problem is not None:  # no group to match reads and RBAC rules by
            problems.append(Problem(problem, read.pos))
            continue
        known = is_cluster_scoped(read.api_version, read.kind)
        if read.scope == "Namespaced" and known:
            problems.append(Problem(f"{read.kind} is cluster-scoped: remove `scope`", read.pos))
        elif read.namespace and (known or read.scope == "Cluster"):
            problems.append(
                Problem(
                    f"{read.kind} is cluster-scoped: a read of it takes no `namespace`", read.pos
                )
            )
        reads.append(read)
    return reads, problems


# -- finding calls at compile time --------------------------------------------------------
class CallFinder:
    """Parses template sources that mention ``lookup`` or ``random_string`` (the others
    are skipped, so a bundle's load time does not grow) and collects the calls."""

    def __init__(self) -> None:
        self._env = ReadingEnvironment()
        self.lookups: list[LookupCall] = []
        self.random_strings = False

    def expression(self, source: str, pos: SourcePos) -> None:
        """A bare or ``{{ }}``-wrapped expression (``enabled``, ``when``, status fields)."""
        if not mentions_calls(source):
            return
        if "{{" in source or "{%" in source:
            self.template_string(source, pos)
            return
        try:
            ast = Parser(self._env, source, state="variable").parse_expression()
        except TemplateSyntaxError:
            return  # the template compile reports it
        self._collect(ast, lambda line: _shift(pos, line))

    def template_string(self, source: str, pos: SourcePos) -> None:
        """A string of an inline object or patch (templated only when it holds ``{{``)."""
        if not mentions_calls(source) or not ("{{" in source or "{%" in source):
            return
        try:
            ast = self._env.parse(source)
        except TemplateSyntaxError:
            return
        self._collect(ast, lambda line: _shift(pos, line))

    def text(self, source: str, file: str) -> None:
        """A text template file."""
        if not mentions_calls(source):
            return
        try:
            ast = self._env.parse(source)
        except TemplateSyntaxError:
            return
        self._collect(ast, lambda line: SourcePos(file, line))

    def _collect(self, ast: nodes.Node, position: Any) -> None:
        called: set[int] = set()
        for call in ast.find_all(nodes.Call):
            if isinstance(call.node, nodes.Name) and call.node.name == "lookup":
                called.add(id(call.node))
                self.lookups.append(_lookup_call(call, position(call.lineno)))
        for name in ast.find_all(nodes.Name):
            if name.name == "random_string":
                self.random_strings = True
            elif name.name == "lookup" and id(name) not in called and name.ctx == "load":
                # passed around (``{% set f = lookup %}``): nothing is known of its arguments
                self.lookups.append(LookupCall(position(name.lineno), None, None))


def mentions_calls(source: str) -> bool:
    """Whether a template source may call ``lookup`` or ``random_string`` (the others are
    not parsed for calls)."""
    return "lookup" in source or "random_string" in source


def may_mention_calls(value: Any) -> bool:
    """Whether some string in the plain data ``value`` may pass :func:`mentions_calls`:
    False only when neither name is anywhere in it. Its marshalled bytes hold each of its
    strings as text (UTF-8 beyond ASCII), so a string naming a call shows there; one
    search in C instead of a walk through every string of a component in Python."""
    try:
        blob = marshal.dumps(value)
    except ValueError:  # not plain data: look string by string
        return True
    return b"lookup" in blob or b"random_string" in blob


def _shift(pos: SourcePos, line: int) -> SourcePos:
    """The position of line ``line`` (1-based) of a string that starts at ``pos``."""
    return pos if line <= 1 else SourcePos(pos.file, pos.line + line - 1)


def _lookup_call(call: nodes.Call, pos: SourcePos) -> LookupCall:
    args: dict[str, nodes.Expr] = dict(zip(_LOOKUP_ARGS, call.args, strict=False))
    for keyword in call.kwargs:
        args[keyword.key] = keyword.value
    values: dict[str, str | None] = {}
    constant: dict[str, bool] = {}
    for key in _LOOKUP_ARGS:
        node = args.get(key)
        is_const = isinstance(node, nodes.Const) and (
            node.value is None or isinstance(node.value, str)
        )
        constant[key] = node is None or is_const
        values[key] = node.value if is_const else None  # type: ignore[union-attr]
    computed_ns = not constant["namespace"]
    return LookupCall(
        pos,
        values["api_version"],
        values["kind"],
        name=values["name"],
        namespace=values["namespace"],
        namespace_given=computed_ns or bool(values["namespace"]),
    )


# -- deciding -----------------------------------------------------------------------------
def cluster_scoped(bundle: Bundle, reads: Iterable[ReadSpec], api_version: str, kind: str) -> bool:
    """Whether ``kind`` lives outside namespaces: a declared ``scope``, the bundle's own CR
    kinds, the built-in kinds; anything else is taken as namespaced (and ``refusal`` checks
    what the server returns)."""
    group = group_of(api_version)
    for read in reads:
        if read.scope and (group_of(read.api_version), read.kind) == (group, kind):
            return read.scope == "Cluster"
    for controller in bundle.controllers:
        cr = controller.resource
        if (cr.group, cr.kind) == (group, kind):
            return not cr.namespaced
    return is_cluster_scoped(api_version, kind)


def is_secret(api_version: str, kind: str) -> bool:
    return group_of(api_version) == "" and kind == "Secret"


def declared(
    reads: Iterable[ReadSpec],
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None,
    cr_namespace: str | None,
) -> bool:
    """True when some declared read covers the object (``namespace`` None: cluster-scoped)."""
    group = group_of(api_version)
    for read in reads:
        if (group_of(read.api_version), read.kind) != (group, kind):
            continue
        if read.names and name not in read.names:
            continue
        wanted = None if namespace is None else (read.namespace or cr_namespace)
        if namespace == wanted:
            return True
    return False


def refusal(
    controller: ControllerSpec,
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None,
    cr_namespace: str | None,
) -> str | None:
    """Why reading ``kind`` ``namespace/name`` is not allowed for a CR in ``cr_namespace``
    (``namespace`` None: a cluster-scoped object), or None when it is."""
    if declared(controller.reads, api_version, kind, name, namespace, cr_namespace):
        return None
    if namespace is not None and namespace == cr_namespace and not is_secret(api_version, kind):
        return None
    if namespace is None:
        what = f"{kind} {name!r} (cluster-scoped)"
        entry = f"{{apiVersion: {api_version}, kind: {kind}, names: [{name}]}}"
    else:
        what = f"{kind} {namespace}/{name}"
        where = "" if namespace == cr_namespace else f", namespace: {namespace}"
        entry = f"{{apiVersion: {api_version}, kind: {kind}{where}, names: [{name}]}}"
    if is_secret(api_version, kind):
        why = "Secrets are readable only when the bundle declares them"
    elif namespace is None:
        why = "cluster-scoped kinds are readable only when the bundle declares them"
    elif cr_namespace is None:
        why = "the CR is cluster-scoped: templates read a namespace only where a read declares it"
    else:
        why = f"templates read only the CR's namespace ({cr_namespace}) unless a read is declared"
    return (
        f"reading {what} is not allowed: {why}; if the bundle should read it, add "
        f"{entry} to `reads:` of controller '{controller.name}'"
    )


def undeclared_calls(
    bundle: Bundle, controller: ControllerSpec, calls: Sequence[LookupCall]
) -> Iterator[Problem]:
    """Validate-time check: calls whose constant arguments no render can make allowed."""
    for call in calls:
        problem = None if call.api_version is None else api_version_problem(call.api_version)
        if problem is not None:  # a render would refuse it: say so now, at the call
            yield Problem(f"lookup(): {problem}", call.pos)
            continue
        if call.api_version is None or call.kind is None:
            continue
        api_version, kind = call.api_version, call.kind
        scoped = cluster_scoped(bundle, controller.reads, api_version, kind)
        candidates = [
            r
            for r in controller.reads
            if (group_of(r.api_version), r.kind) == (group_of(api_version), kind)
            and (call.name is None or not r.names or call.name in r.names)
        ]
        if scoped:
            ok = bool(candidates)
        elif call.namespace is not None:  # a constant namespace: it must be declared
            ok = any(r.namespace == call.namespace for r in candidates)
        elif not call.namespace_given:  # the CR's namespace
            ok = not is_secret(api_version, kind) or any(r.namespace is None for r in candidates)
        else:  # computed: the CR's own namespace is allowed, except for Secrets
            ok = not is_secret(api_version, kind) or bool(candidates)
        if ok:
            continue
        name = call.name if call.name is not None else "<name>"
        here = "<the CR's namespace>"
        namespace = call.namespace or ("<namespace>" if call.namespace_given else here)
        reason = refusal(controller, api_version, kind, name, None if scoped else namespace, here)
        yield Problem(f"lookup() {reason}", call.pos)


def undeclared_live(
    bundle: Bundle, controller: ControllerSpec, refs: Iterable[tuple[str, SourcePos]]
) -> Iterator[Problem]:
    """Validate-time check of ``live('<component>.<resource>')`` calls: a reference to an
    object whose literal kind is a Secret, or a cluster-scoped kind, that no ``reads:``
    entry covers can never be read."""
    components = {c.name: c for c in controller.components}
    seen: set[tuple[str, SourcePos]] = set()
    for ref, pos in refs:
        if (ref, pos) in seen:
            continue
        seen.add((ref, pos))
        component, _, resource = ref.partition(".")
        comp = components.get(component)
        if comp is None:
            continue  # the compile reports unknown references
        kinds = [k for r in comp.resources for k in _kinds_named(r.name, r.kinds, resource)]
        refused = [
            (api_version, kind)
            for api_version, kind in kinds
            if not _may_read(bundle, controller, api_version, kind)
        ]
        if kinds and len(refused) == len(kinds):
            api_version, kind = refused[0]
            why = (
                "Secrets are readable only when the bundle declares them"
                if is_secret(api_version, kind)
                else "cluster-scoped kinds are readable only when the bundle declares them"
            )
            yield Problem(
                f"live({ref!r}) reads a {kind}: {why}; add {{apiVersion: {api_version}, "
                f"kind: {kind}}} to `reads:` of controller '{controller.name}'",
                pos,
            )


def _kinds_named(
    name: str, kinds: Sequence[tuple[str, str]], resource: str
) -> list[tuple[str, str]]:
    """The kinds ``<component>.<resource>`` may name among a resource's: all of them for
    its own name, the one in the name for a document of a text template
    (``<resource>-<kind>-<object name>``)."""
    if resource == name:
        return list(kinds)
    rest = resource.removeprefix(name + "-") if resource.startswith(name + "-") else None
    if rest is None:
        return []
    return [k for k in kinds if rest == k[1].lower() or rest.startswith(k[1].lower() + "-")]


def _may_read(bundle: Bundle, controller: ControllerSpec, api_version: str, kind: str) -> bool:
    if cluster_scoped(bundle, controller.reads, api_version, kind) or is_secret(api_version, kind):
        group = group_of(api_version)
        return any((group_of(r.api_version), r.kind) == (group, kind) for r in controller.reads)
    return True
