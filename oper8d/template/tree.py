"""Inline Kubernetes objects with ``{{ }}`` in their strings, rendered without any YAML parse.

``TemplateEngine.tree`` compiles an inline object into a :class:`TreeTemplate`; the engine
renders it on every reconcile. Compilation builds a plan once:

- the whole object is stored marshalled and rebuilt with one ``marshal.loads`` (a fresh
  deep copy, in C, no per-node Python work), and only its templated strings are computed
  and put in place, in the order they are written (a "skeleton"); planning is one walk
  that finds those strings, with nothing built per mapping or list;
- an object with ``{{ }}`` in a key (rare) is rebuilt mapping by mapping instead: each
  mapping or list with templates inside from a prepared copy of its constant scalars, with
  only the templated entries computed (the general plan; a test holds the skeleton to it);
- a templated string is a compiled Jinja template (a single expression keeps its type).

All templated strings of one render are evaluated in one Jinja context (see
``CompiledString.render_in``): creating a context per string cost as much as evaluating
the string. Each string still reports its own position when it fails.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, cast

from jinja2 import Environment
from jinja2.runtime import Context, new_context

from oper8d.errors import BundleError, ConfigError, Problem, SourcePos
from oper8d.template.compiled import CompiledString
from oper8d.template.failures import excerpt
from oper8d.template.values import UnsupportedValue, normalize

Path = tuple[str | int, ...]
#: renders one node of the plan in the render's Jinja context (whose parent is the
#: template context merged with the globals)
Renderer = Callable[[Context], Any]
CompileString = Callable[[str, SourcePos], CompiledString]


#: values that hold no template (``normalize`` makes every scalar one of these)
_SCALARS = frozenset({int, float, bool, type(None)})


def is_templated(text: str) -> bool:
    """Whether a string holds Jinja markup (comments alone do not count)."""
    return "{{" in text or "{%" in text


class TreeTemplate:
    """A compiled inline object; ``render`` returns a new object each time."""

    __slots__ = (
        "_constant",
        "_environment",
        "_globals",
        "_render",
        "is_static",
        "pos",
        "references",
    )

    def __init__(
        self,
        value: Any,
        pos: SourcePos,
        positions: Mapping[Path, SourcePos] | None,
        compile_string: CompileString,
        globals: Mapping[str, Any],
        *,
        general: bool = False,
    ) -> None:
        """``general``: plan mapping by mapping even where the skeleton would do (tests)."""
        planner = _Planner(pos, positions if positions is not None else {}, compile_string)
        found = None if general else _templated_or_none(value)
        plain = value  # (only marshalled, when found is not None: never shared)
        if found is None:
            try:
                plain = normalize(value)
            except UnsupportedValue as exc:
                raise BundleError(Problem(str(exc), planner.pos_of(exc.path))) from exc
            found = None if general else _templated_or_none(plain)
        leaves: list[tuple[Path, CompiledString]] | None = None
        if found is None:  # asked for, or a key holds a template
            render = planner.plan(plain, ())
        else:
            leaves = planner.leaves(found)
            render = _skeleton(plain, leaves) if leaves else None
        if planner.problems:
            raise BundleError(planner.problems)
        # (a templated string was compiled whenever there is a renderer: an environment)
        environment = planner.environment
        self._assign(pos, frozenset(planner.references), plain, render, environment, globals)

    def _assign(
        self,
        pos: SourcePos,
        references: frozenset[str],
        plain: Any,
        render: Renderer | None,
        environment: Environment | None,
        globals: Mapping[str, Any],
    ) -> None:
        """Set what a compile works out."""
        self.pos = pos
        self.references = references
        self.is_static = render is None
        self._constant = _fresh_copies(plain) if render is None else None
        self._render = render
        self._environment = environment
        self._globals = globals

    def __repr__(self) -> str:
        return f"TreeTemplate({self.pos}, static={self.is_static})"

    def render(self, context: Mapping[str, Any]) -> Any:
        """The object for ``context``; the caller may mutate it."""
        if self._render is None or self._environment is None:
            assert self._constant is not None
            return self._constant()
        parent = {**self._globals, **context}
        # one context for every string of this render (template name None, no blocks)
        shared = new_context(
            self._environment, None, {}, parent, True, cast(MutableMapping[str, Any], self._globals)
        )
        # one budget for all the strings, entered once (``LimitedSandbox.budget``)
        budget = getattr(self._environment, "budget", None)
        if budget is None:
            return self._render(shared)
        with budget(shared):
            return self._render(shared)


#: the marshal format written before references (version 3): an object at two places of
#: the data is written twice, so each render gets two copies, as a deep copy of data gives
#: its caller (version 3 on would rebuild one object shared by both places)
_NO_SHARING = 2


def _fresh_copies(value: Any) -> Callable[[], Any]:
    """A function returning a fresh deep copy of constant plain data on each call."""
    if not isinstance(value, dict | list):
        return lambda: value  # scalars are immutable
    blob = marshal.dumps(value, _NO_SHARING)
    loads = marshal.loads
    return lambda: loads(blob)


def _skeleton(
    plain: Any, leaves: list[tuple[Path, CompiledString]], blob: bytes | None = None
) -> Renderer:
    """A renderer that rebuilds ``plain`` with one ``marshal.loads`` and puts the value of
    each templated string (``leaves``, in the order they are written) in its place
    (``blob``: ``plain`` marshalled already)."""
    if leaves[0][0] == ():  # the object is one templated string
        return leaves[0][1].render_in
    if blob is None:
        blob = marshal.dumps(plain, _NO_SHARING)
    loads = marshal.loads
    # consecutive strings of one mapping or list share the walk down to it
    runs: list[tuple[Path, list[tuple[str | int, Renderer]]]] = []
    for path, compiled in leaves:
        parent = path[:-1]
        if runs and runs[-1][0] == parent:
            runs[-1][1].append((path[-1], compiled.render_in))
        else:
            runs.append((parent, [(path[-1], compiled.render_in)]))

    def render_skeleton(context: Context) -> Any:
        out = loads(blob)
        for parent, entries in runs:
            node = out
            for step in parent:
                node = node[step]
            for key, render in entries:
                node[key] = render(context)
        return out

    return render_skeleton


class _TemplatedKey(Exception):
    """A key holds a template: the object takes the general plan."""


class _NotPlain(Exception):
    """A value is not of a plain type: the object is normalised first."""


def _templated_or_none(value: Any) -> list[tuple[Path, str]] | None:
    """The templated strings of ``value`` with their paths, in the order they are
    written; None when a key holds a template or a value is not plain."""
    kind = type(value)
    if kind is str:
        return [((), value)] if is_templated(value) else []
    if kind is dict or kind is list:
        found: list[tuple[Path, str]] = []
        try:
            _templated_strings(value, (), found)
        except (_TemplatedKey, _NotPlain):
            return None
        return found
    return [] if kind in _SCALARS else None


def _templated_strings(value: Any, path: Path, found: list[tuple[Path, str]]) -> None:
    """Add the templated strings below the container ``value`` to ``found`` with their
    paths, in the order they are written. Raises ``_TemplatedKey`` when a key holds a
    template and ``_NotPlain`` at a value ``values.normalize`` would change (any type but
    the exact plain ones): the loader's data needs no copy, as it is nearly always plain."""
    mapping = type(value) is dict
    for key, item in value.items() if mapping else enumerate(value):
        if mapping:
            if type(key) is str:
                if "{{" in key or "{%" in key:
                    raise _TemplatedKey
            elif type(key) not in _SCALARS:
                raise _NotPlain
        kind = type(item)
        if kind is str:
            if "{{" in item or "{%" in item:
                found.append(((*path, key), item))
        elif kind is dict or kind is list:
            _templated_strings(item, (*path, key), found)
        elif kind not in _SCALARS:
            raise _NotPlain


def _static(value: Any) -> Renderer:
    """A renderer that returns a fresh deep copy of constant plain data."""
    fresh = _fresh_copies(value)
    return lambda _context: fresh()


class _Planner:
    """Walks a normalised inline object once and returns its renderer."""

    def __init__(
        self, pos: SourcePos, positions: Mapping[Path, SourcePos], compile_string: CompileString
    ) -> None:
        self._pos = pos
        self._positions = positions
        self._compile_string = compile_string
        self.references: set[str] = set()
        self.problems: list[Problem] = []
        #: the environment the strings were compiled in (None while there is none)
        self.environment: Environment | None = None

    def pos_of(self, path: Path) -> SourcePos:
        """The position of the node at ``path``, else of its nearest known ancestor."""
        for end in range(len(path), -1, -1):
            found = self._positions.get(path[:end])
            if found is not None:
                return found
        return self._pos

    def leaves(self, found: list[tuple[Path, str]]) -> list[tuple[Path, CompiledString]]:
        """The templated strings ``found`` compiled, each with its path (the skeleton's
        plan); strings that fail to compile are left out, their problems kept."""
        leaves = []
        for path, text in found:
            compiled = self._compile(text, path)
            if compiled is not None:
                leaves.append((path, compiled))
        return leaves

    def plan(self, value: Any, path: Path) -> Renderer | None:
        """The renderer of ``value``, or None when it holds no template (constant)."""
        if isinstance(value, str):
            compiled = self._compile(value, path)
            return compiled.render_in if compiled else None
        if isinstance(value, dict):
            return self._plan_mapping(value, path)
        if isinstance(value, list):
            return self._plan_list(value, path)
        return None

    def _compile(self, text: str, path: Path) -> CompiledString | None:
        if not is_templated(text):
            return None
        try:
            compiled = self._compile_string(text, self.pos_of(path))
        except BundleError as exc:
            self.problems.extend(exc.problems)
            return None
        self.references |= compiled.references
        self.environment = compiled.template.environment
        return compiled

    def _below(self, value: Any, path: Path, step: str | int) -> Renderer | None:
        """``plan(value, (*path, step))``, building that path only where it is needed:
        for a container, or a string holding a template (most strings hold none)."""
        if type(value) is str:
            if not is_templated(value):
                return None
            compiled = self._compile(value, (*path, step))
            return compiled.render_in if compiled else None
        if type(value) is dict or type(value) is list:
            return self.plan(value, (*path, step))
        return None if type(value) in _SCALARS else self.plan(value, (*path, step))

    def _plan_mapping(self, mapping: dict[Any, Any], path: Path) -> Renderer | None:
        entries: list[tuple[Any, CompiledString | None, Any, Renderer | None]] = []
        for key, value in mapping.items():
            key_template = (
                self._compile(key, (*path, key))
                if isinstance(key, str) and is_templated(key)
                else None
            )
            entries.append((key, key_template, value, self._below(value, path, key)))
        if all(key_t is None and value_r is None for _, key_t, _, value_r in entries):
            return None
        if any(key_t is not None for _, key_t, _, _ in entries):
            return _mapping_with_templated_keys(entries)
        # Copy a prepared dict (C speed, keeps key order), then fill in the computed entries.
        base = {key: (None if render else value) for key, _, value, render in entries}
        computed: list[tuple[Any, Renderer]] = []
        for key, _, value, render in entries:
            if render is not None:
                computed.append((key, render))
            elif isinstance(value, dict | list):
                base[key] = None
                computed.append((key, _static(value)))

        def render_mapping(context: Context) -> dict[Any, Any]:
            out = base.copy()
            for key, render in computed:
                out[key] = render(context)
            return out

        return render_mapping

    def _plan_list(self, items: list[Any], path: Path) -> Renderer | None:
        renders = [self._below(item, path, index) for index, item in enumerate(items)]
        if all(render is None for render in renders):
            return None
        base = [None if render else item for item, render in zip(items, renders, strict=True)]
        computed: list[tuple[int, Renderer]] = []
        for index, (item, render) in enumerate(zip(items, renders, strict=True)):
            if render is not None:
                computed.append((index, render))
            elif isinstance(item, dict | list):
                base[index] = None
                computed.append((index, _static(item)))

        def render_list(context: Context) -> list[Any]:
            out = base.copy()
            for index, render in computed:
                out[index] = render(context)
            return out

        return render_list


def _mapping_with_templated_keys(
    entries: list[tuple[Any, CompiledString | None, Any, Renderer | None]],
) -> Renderer:
    """A mapping renderer for the rarer case of ``{{ }}`` in keys: keys are rendered too and
    must come out as distinct strings."""
    plan = [
        (
            key,
            key_template,
            value,
            value_render or (_static(value) if isinstance(value, dict | list) else None),
        )
        for key, key_template, value, value_render in entries
    ]

    def render_mapping(context: Context) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        key_origins: dict[str, CompiledString] = {}
        for key, key_template, value, value_render in plan:
            if key_template is not None:
                key = key_template.render_in(context)
                if not isinstance(key, str):
                    raise ConfigError(
                        f"a templated key must render to a string, got {type(key).__name__} "
                        f"{key!r} (in {excerpt(key_template.source)}); use `| string`",
                        pos=key_template.pos,
                    )
            if key in out:
                origin = key_template or key_origins[key]
                raise ConfigError(
                    f"key {key!r} appears twice in the rendered mapping "
                    f"(in {excerpt(origin.source)})",
                    pos=origin.pos,
                )
            if key_template is not None:
                key_origins[key] = key_template
            out[key] = value if value_render is None else value_render(context)
        return out

    return render_mapping
