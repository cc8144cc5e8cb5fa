"""``KubeSchemas``: which kinds a cluster serves and the checks each rendered object gets.

The entry point of ``oper8d.kubeschema`` (see its docstring for the whole API). One
``KubeSchemas`` holds the built-in schemas of one Kubernetes version (package data from
``scripts/gen_kube_schemas.py``, or another file given by the user) plus custom kinds from
CRDs; ``validate`` and ``coerce`` compile a kind's schema on first use and keep the
compiled tree, so each later object of that kind costs one walk. Immutable once built
(``with_crds`` returns a new one); compiled trees are cached behind a lock, so one
instance can serve several threads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oper8d.cachefiles import parsed_once
from oper8d.fileio import FileRefused, FileTooLarge, read_bounded
from oper8d.kubeschema.compile import OBJECT_META, Compiler
from oper8d.kubeschema.crds import CustomKind, custom_kinds
from oper8d.kubeschema.messages import Allow, Coercions, Errors, format_path, type_error
from oper8d.kubeschema.messages import Path as FieldPath
from oper8d.kubeschema.nodes import (
    ArrayNode,
    BooleanNode,
    IntegerNode,
    Node,
    NumberNode,
    ObjectNode,
    StringNode,
)
from oper8d.kubeschema.objectmeta import (
    SELECTING_KINDS,
    config_key_problems,
    meta_problems,
    selector_problems,
)
from oper8d.kubeschema.semantic import SemanticChecks
from oper8d.limits import LimitExceeded, Limits

if TYPE_CHECKING:  # (imported when first used: see KubeSchemas._rules)
    from oper8d.kubeschema.cel import CelValidator

DATA_PACKAGE = "oper8d.kubeschema.data"
DEFAULT_VERSION = "v1.34.4"
_CONFIG_KEYS = {("", "ConfigMap"): ("data", "binaryData"), ("", "Secret"): ("data", "stringData")}


class SchemaDataError(ValueError):
    """A schema set (package data or a user's file) is missing or unreadable."""


@dataclass(frozen=True)
class Finding:
    """One problem: ``path`` like ``spec.template.spec.containers[0].env[0].value``
    (empty for the object as a whole), ``segments`` the same as keys and indices."""

    path: str
    segments: tuple[str | int, ...]
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class Validation:
    """What ``validate`` found: errors the apiserver would reject the object for, a
    warning (instead of errors) when the kind has no known schema, and the CEL rules
    (``x-kubernetes-validations``) that could not be evaluated, each naming its field."""

    errors: tuple[Finding, ...] = ()
    warning: str | None = None
    unchecked: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class Coercion:
    """A number or boolean turned into the string its schema asks for (or a string of
    digits into the port number it names)."""

    path: str
    segments: tuple[str | int, ...]
    before: Any
    after: Any


@dataclass(frozen=True)
class Coerced:
    """An object as its schema has it, and what was changed to get there."""

    obj: Any
    coercions: tuple[Coercion, ...] = ()


@dataclass(frozen=True)
class KindInfo:
    """A kind a cluster serves: its API version, plural and scope."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    builtin: bool


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def shipped_versions() -> list[str]:
    """Kubernetes versions whose built-in schemas ship with oper8d (``v1.34.4``, ...)."""
    from importlib import resources

    names = [p.name for p in resources.files(DATA_PACKAGE).iterdir()]
    files = [n for n in names if n.endswith(".json.gz")]
    return sorted(n.removeprefix("k8s-").removesuffix(".json.gz") for n in files)


def _read(raw: bytes, where: str) -> dict[str, Any]:
    import gzip  # (here: a warm process reads the parse kept in the cache folder instead)

    try:
        data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, ValueError) as e:
        raise SchemaDataError(f"{where}: not a kubeschema data file ({e})") from None
    if not isinstance(data, dict) or data.get("format") != 1 or "defs" not in data:
        raise SchemaDataError(f"{where}: not a kubeschema data file (format 1)")
    return data


def _shipped_file(name: str) -> bytes:
    """A file of ``DATA_PACKAGE``: read from beside this module when oper8d is installed as
    files (as it is), through ``importlib.resources`` otherwise (a zip), whose import costs
    a few ms of every ``oper8d render``."""
    here = Path(__file__).with_name("data") / name
    if here.is_file():
        return here.read_bytes()
    from importlib import resources

    return resources.files(DATA_PACKAGE).joinpath(name).read_bytes()


class KubeSchemas:
    """Built-in schemas of one Kubernetes version plus custom kinds."""

    def __init__(
        self,
        data: Mapping[str, Any],
        custom: Iterable[CustomKind] = (),
        custom_groups: Iterable[str] = (),
    ) -> None:
        self._data = data
        self._defs: Mapping[str, Any] = data["defs"]
        self._builtin_groups = frozenset(data.get("groups", ()))
        self._kinds: dict[tuple[str, str], tuple[KindInfo, str | CustomKind]] = {}
        for api_version, kind, name, plural, namespaced in data["kinds"]:
            info = KindInfo(api_version, kind, plural, namespaced, True)
            self._kinds[(api_version, kind)] = (info, name)
        self._custom = tuple(custom)
        for ck in self._custom:
            info = KindInfo(ck.api_version, ck.kind, ck.plural, ck.namespaced, False)
            self._kinds[(ck.api_version, ck.kind)] = (info, ck)
        self._custom_groups = frozenset(
            {*custom_groups, *(group_of(ck.api_version) for ck in self._custom)}
        )
        self._lock = threading.Lock()
        self._roots: dict[tuple[str, str], Node | None] = {}
        self._builtin = Compiler(self._defs, builtin=True)
        self._semantic = SemanticChecks(self._defs)
        #: made when a custom kind's object is first checked (``_rules``)
        self._cel: CelValidator | None = None

    # ------------------------------------------------------------------ loading

    @classmethod
    def builtin(cls, version: str = DEFAULT_VERSION, cache: Path | None = None) -> KubeSchemas:
        """The schemas shipped for ``version`` (see ``shipped_versions()``); ``cache``: the
        cache folder (``cachefiles.cache_dir()``), where they are kept parsed."""
        name = f"k8s-{version}.json.gz"
        try:
            raw = _shipped_file(name)
        except FileNotFoundError:
            have = ", ".join(shipped_versions())
            message = f"no Kubernetes schemas for {version} (shipped: {have})"
            raise SchemaDataError(message) from None
        return cls(parsed_once(cache, f"{name}.marshal", raw, lambda: _read(raw, name)))

    @classmethod
    def load(cls, path: Path, limits: Limits | None = None) -> KubeSchemas:
        """A schema set written by ``scripts/gen_kube_schemas.py --out FILE``, of at most
        ``fileBytes`` (refused before it is read)."""
        max_bytes = (limits if limits is not None else Limits()).file_bytes
        try:
            raw = read_bounded(path, max_bytes)
        except FileTooLarge as e:
            too_large = LimitExceeded("file_bytes", f"{path} holds {e.size} bytes")
            raise SchemaDataError(f"{path}: {too_large}") from None
        except FileRefused as e:
            raise SchemaDataError(f"{path}: cannot be read ({e})") from None
        except OSError as e:
            raise SchemaDataError(f"{path}: cannot be read ({e.strerror})") from None
        return cls(_read(raw, str(path)))

    def with_crds(self, crds: Iterable[Mapping[str, Any]], where: str = "CRD") -> KubeSchemas:
        """A new set that also knows the served versions of ``crds`` (CRD objects)."""
        crds = list(crds)
        added = [ck for crd in crds for ck in custom_kinds(crd, _crd_where(crd, where))]
        groups = {crd["spec"]["group"] for crd in crds}  # checked by custom_kinds
        return KubeSchemas(self._data, (*self._custom, *added), self._custom_groups | groups)

    @property
    def kubernetes_version(self) -> str:
        return str(self._data.get("kubernetesVersion", "?"))

    def served_kinds(self) -> list[tuple[str, str]]:
        """Every (apiVersion, kind) this set knows."""
        return list(self._kinds)

    def kind_info(self, api_version: str, kind: str) -> KindInfo | None:
        """Scope and plural of a served kind, or None."""
        entry = self._kinds.get((api_version, kind))
        return entry[0] if entry else None

    @property
    def definitions(self) -> Mapping[str, Any]:
        """The built-in schemas by definition name (what a ``$ref`` names)."""
        return self._defs

    def raw_schema(self, api_version: str, kind: str) -> Mapping[str, Any] | None:
        """The uncompiled schema of a served kind (a built-in definition, whose ``$ref``s
        name ``definitions``, or a CRD version's ``openAPIV3Schema``), or None."""
        entry = self._kinds.get((api_version, kind))
        if entry is None:
            return None
        source = entry[1]
        return self._defs.get(source) if isinstance(source, str) else source.schema

    # ----------------------------------------------------------------- checking

    def validate(self, obj: Any, old: Any = None) -> Validation:
        """Check one rendered object (a plain dict) as the apiserver would on create, or
        on update of ``old`` (the stored object): CEL transition rules then run, and
        rules over unchanged values are ratcheted (``kubeschema.cel``)."""
        errors: Errors = []
        if not isinstance(obj, dict):
            return _validation([((), type_error(obj, "object"))])
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        for field, value in (("apiVersion", api_version), ("kind", kind)):
            if not value:
                errors.append(((field,), "Required value"))
            elif not isinstance(value, str):
                errors.append(((field,), type_error(value, "string")))
        if errors:
            return _validation(errors)
        api_version, kind = str(api_version), str(kind)  # both checked to be strings
        root = self._root(api_version, kind)
        if root is None:
            return self._unknown(api_version, kind)
        root.check(obj, (), errors)
        group = group_of(api_version)
        source = self._kinds[(api_version, kind)][1]
        builtin = isinstance(source, str)
        meta_problems(group, kind, obj.get("metadata"), ("metadata",), errors, builtin)
        keys = _CONFIG_KEYS.get((group, kind))
        if keys:
            config_key_problems(obj, keys, errors)
        if (group, kind) in SELECTING_KINDS and not errors:
            selector_problems(obj, errors)
        if isinstance(source, str):  # a built-in kind: the Go validation's cross-field rules
            self._semantic.check(group, kind, source, obj, errors)
        elif not errors and source.schema is not None:
            # the apiserver runs the rules once the object has the schema's shape
            if old is None:
                report = self._rules().check(source.schema, obj)
            else:
                report = self._rules().check(source.schema, obj, old)
            errors.extend(report.errors)
            if report.unchecked:
                found = _validation(errors)
                return Validation(found.errors, found.warning, report.unchecked)
        return _validation(errors)

    def _rules(self) -> CelValidator:
        """The CEL evaluator, imported only when a custom kind is checked: ``validate`` and
        ``render`` of a bundle of built-in kinds never load it."""
        with self._lock:
            if self._cel is None:
                from oper8d.kubeschema.cel import CelValidator

                self._cel = CelValidator()
            return self._cel

    def validate_metadata(self, meta: Any) -> Validation:
        """Check only the types and formats of an object's ``metadata`` (ObjectMeta), such
        as the server-set fields a client sent (``creationTimestamp: yesterday``), which the
        apiserver decodes, and so refuses, before it overwrites them."""
        errors: Errors = []
        with self._lock:
            node = self._builtin.definition(OBJECT_META)
        node.check(meta, ("metadata",), errors)
        return _validation(errors)

    def coerce(self, obj: Any, allow: Allow | None = None) -> Coerced:
        """``obj`` with numbers and booleans turned into strings where the schema says
        string (``true``/``false`` for booleans), and strings of digits into numbers where a
        port number or name goes (``targetPort: "8080"``, which the apiserver refuses);
        other values are left for ``validate``.

        ``allow(segments)`` limits it to some fields (e.g. those a lone expression
        rendered). Containers are copied only along changed paths; ``obj`` is not modified.
        """
        if not isinstance(obj, dict):
            return Coerced(obj)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        named = isinstance(api_version, str) and isinstance(kind, str)
        root = self._root(str(api_version), str(kind)) if named else None
        if root is None:
            return Coerced(obj)
        out: Coercions = []
        new = root.coerce(obj, (), out, allow)
        return Coerced(new, tuple(Coercion(format_path(p), p, b, a) for p, b, a in out))

    def checked(self, obj: Any) -> tuple[Any, Validation]:
        """``coerce(obj).obj`` and what ``validate`` finds in it, in one call (what the
        engine asks of every rendered object). An object of a built-in kind that validates
        as it stands is returned as it is, without the coercion walk: every value
        ``coerce`` changes there fails the check (a number or boolean where a string goes,
        a string of digits as a port), so such an object has none. A custom kind's whole
        floats pass as integers and are coerced, so it always takes both walks. A test
        holds this to coerce-then-validate on the schema corpus and on generated values."""
        if isinstance(obj, dict):
            api_version, kind = obj.get("apiVersion"), obj.get("kind")
            if isinstance(api_version, str) and isinstance(kind, str):
                entry = self._kinds.get((api_version, kind))
                if entry is not None and isinstance(entry[1], str):
                    found = self.validate(obj)
                    if found.ok:
                        return obj, found
        coerced = self.coerce(obj).obj
        return coerced, self.validate(coerced)

    def has_field(
        self, api_version: str, kind: str, path: Sequence[str | int]
    ) -> tuple[bool | None, tuple[str, ...]]:
        """Whether objects of the kind can hold the field at ``path`` (``("status",
        "readyReplicas")``; an int steps into a list): True, False (with the names the
        schema has where the path left it, for a "did you mean"), or None when nobody can
        tell (an unknown kind, a field that keeps unknown fields)."""
        node = self._root(api_version, kind)
        for part in path:
            if node is None:
                return None, ()
            if isinstance(node, ArrayNode):
                node = node.items if isinstance(part, int) else None
                if node is None:
                    return False, ()
            elif isinstance(node, ObjectNode):
                if part in node.props:
                    node = node.props[part]
                elif node.additional is not None:
                    node = node.additional
                elif node.preserve or not node.strict:
                    return None, ()
                else:
                    return False, tuple(node.props)
            elif isinstance(node, StringNode | IntegerNode | NumberNode | BooleanNode):
                return False, ()
            else:
                return None, ()
        return (None if node is None else True), ()

    def precompile(self) -> None:
        """Compile every known kind now, the definitions their objects may reach included
        (which otherwise compile when an object first reaches them), e.g. before a
        benchmark or a worker pool."""
        seen: set[int] = set()
        stack = [self._root(api_version, kind) for api_version, kind in list(self._kinds)]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, ObjectNode):
                stack += node.props.values()  # (builds deferred properties)
                stack.append(node.additional)
            elif isinstance(node, ArrayNode):
                stack.append(node.items)

    def _root(self, api_version: str, kind: str) -> Node | None:
        key = (api_version, kind)
        root = self._roots.get(key)
        if root is not None or key in self._roots:
            return root
        with self._lock:
            if key not in self._roots:
                entry = self._kinds.get(key)
                self._roots[key] = None if entry is None else self._compile(entry[1])
            return self._roots[key]

    def _compile(self, source: str | CustomKind) -> Node | None:
        if isinstance(source, str):
            return self._builtin.definition(source)
        meta = self._builtin.definition(OBJECT_META)
        if source.schema is None:
            return None
        compiler = Compiler({}, builtin=False, object_meta=meta, embedded=_embedded_check)
        root = compiler.node(source.schema)
        if isinstance(root, ObjectNode):
            root.props.update(metadata=meta, apiVersion=StringNode(None), kind=StringNode(None))
        return root

    def _unknown(self, api_version: str, kind: str) -> Validation:
        if (api_version, kind) in self._kinds:  # a served custom version without a schema
            return Validation(warning=f"{kind} ({api_version}): its CRD has no schema: not checked")
        if group_of(api_version) not in self._builtin_groups | self._custom_groups:
            return Validation(
                warning=f'no schema for kind "{kind}" in version "{api_version}": not checked '
                "(give its CustomResourceDefinition with --crds)"
            )
        message = f'no matches for kind "{kind}" in version "{api_version}"'
        served = sorted(av for av, k in self._kinds if k == kind)
        if served:
            message += f": {kind} is served as {' and '.join(served)}"
        else:
            kinds = sorted({k for av, k in self._kinds if av == api_version})
            import difflib  # (only for an unknown kind)

            close = difflib.get_close_matches(kind, kinds, n=1, cutoff=0.6)
            if close:
                message += f'; did you mean "{close[0]}"?'
        return _validation([(("apiVersion",), message)])


def _crd_where(crd: Mapping[str, Any], where: str) -> str:
    name = (crd.get("metadata") or {}).get("name")
    return f"{where} {name}" if name else where


def _embedded_check(value: dict[str, Any], path: FieldPath, errors: Errors) -> None:
    for field in ("apiVersion", "kind"):
        if not value.get(field):
            errors.append(((*path, field), "Required value: must not be empty"))


def _validation(errors: Errors) -> Validation:
    if not errors:
        return _VALID  # (immutable: one serves every object that passes)
    return Validation(tuple(Finding(format_path(p), p, m) for p, m in errors))


_VALID = Validation()
