"""Compiled templates: expressions, template strings and text templates.

``TemplateEngine`` (``environment.py``) builds these at bundle load; the bundle model holds
them and the engine renders them on every reconcile. Nothing here parses template source:
rendering runs code Jinja generated once.

Every render runs inside the environment's budget (``sandbox.LimitedSandbox.budget``: time
and loop iterations) and its output is bounded by ``renderedBytes``: a text template's
text, a string of an inline object, or the value of an expression (its strings counted).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Template, Undefined
from jinja2.runtime import Context

from oper8d.errors import ConfigError, SourcePos
from oper8d.limits import LimitExceeded, Limits
from oper8d.template.documents import (
    DEFAULT_CACHE_SIZE,
    DocumentCache,
    check_documents,
    key_line,
)
from oper8d.template.failures import passes_through, render_failure, template_line
from oper8d.template.linemap import render_with_lines
from oper8d.template.slots import SLOTS_VAR, Slots
from oper8d.template.values import copy_result


@dataclass(frozen=True, eq=False)
class CompiledString:
    """One template string (an inline-object string or an expression).

    ``native``: the string is a single expression, whose value keeps its type (an int,
    a dict, ...); otherwise it renders to text.
    """

    source: str
    pos: SourcePos
    references: frozenset[str]
    native: bool
    template: Template = field(repr=False)
    #: the environment's ``in_budget`` and ``renderedBytes``, read once (every render asks)
    _in_budget: Any = field(init=False, repr=False)
    _limit: int | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        environment = self.template.environment
        object.__setattr__(self, "_in_budget", getattr(environment, "in_budget", None))
        object.__setattr__(self, "_limit", _rendered_limit(self.template))

    def at(self, pos: SourcePos) -> CompiledString:
        """The same compiled string written at ``pos``: a bundle repeats its strings, and
        this copies what construction works out (a third of planning an inline object)."""
        twin = object.__new__(CompiledString)
        vars(twin).update(vars(self), pos=pos)
        return twin

    def render(self, parent: dict[str, Any]) -> Any:
        """Render with ``parent``: the template context already merged with the globals."""
        return self._run(self.template.new_context(parent, shared=True))

    def render_in(self, context: Context) -> Any:
        """Render in ``context``, which the strings of one ``TreeTemplate`` render share
        (creating a Jinja context costs as much as evaluating a short expression).

        The context's own variables (``{% set %}``, the ``result`` of an expression) are
        cleared afterwards, so every string sees only the shared parent, exactly as with
        a context of its own. A string defining ``{% block %}``s gets a context of its own,
        because a context carries the blocks of the template it was made for."""
        if self.template.blocks:
            return self.render(context.parent)
        try:
            return self._run(context, shared=context)
        finally:
            if context.vars:
                context.vars.clear()
                context.exported_vars.clear()

    def _run(self, context: Context, shared: Context | None = None) -> Any:
        template = self.template
        try:
            in_budget = self._in_budget
            if in_budget is not None and in_budget():  # e.g. an inline object's budget
                return self._value(context)
            with _budget(template, shared):
                return self._value(context)
        except Exception as exc:
            if passes_through(exc):
                raise
            raise render_failure(exc, self.pos, self.source) from exc

    def _value(self, context: Context) -> Any:
        template = self.template
        if self.native:
            # the compiled code assigns the expression to ``result`` (as
            # Environment.compile_expression does) and yields nothing
            for _ in template.root_render_func(context):
                pass
            result = context.vars["result"]
            if type(result) is str:  # the usual value, as check_rendered_size counts it
                limit = self._limit
                if limit is not None and len(result) > limit:
                    raise _too_large(limit)
                return result
            check_rendered_size(template, result)
            return copy_result(result)
        return _joined(template, template.root_render_func(context))


@dataclass(frozen=True, eq=False)
class Expr:
    """A compiled expression (``enabled``, ``when``, readiness ``expr``, status fields, ...).

    A constant (``enabled: true``) has no compiled string and evaluates to itself.
    """

    source: str
    pos: SourcePos
    references: frozenset[str] = frozenset()
    compiled: CompiledString | None = field(default=None, repr=False)
    constant: Any = field(default=None, repr=False)
    globals: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def limits(self) -> Limits:
        """The limits of the engine that compiled this expression (defaults for a constant)."""
        env = self.compiled.template.environment if self.compiled is not None else None
        limits = getattr(env, "limits", None)
        return limits if isinstance(limits, Limits) else Limits()

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        """The expression's value; a ``ConfigError`` at ``pos`` when it fails."""
        if self.compiled is None:
            return self.constant
        return self.compiled.render({**self.globals, **context})


class TextTemplate:
    """A Helm-style text template file that renders to one or more Kubernetes objects."""

    def __init__(
        self,
        file: str,
        template: Template,
        source: str,
        references: frozenset[str],
        nonce: str,
        cache_size: int = DEFAULT_CACHE_SIZE,
        scalar_tags: dict[str, str] | None = None,
    ) -> None:
        self.file = file
        self._nonce = nonce
        self.references = references
        self._template = template
        self._source = source
        self._lines = source.splitlines()
        self._documents = DocumentCache(file, cache_size, scalar_tags)

    def __repr__(self) -> str:
        return f"TextTemplate({self.file!r})"

    def render_text(self, context: Mapping[str, Any]) -> str:
        """The rendered text as the template prints it, values in place (for showing it;
        never parsed: see ``slots``)."""
        text, slots = self.render_tokens(context)
        return slots.fill(text)

    def render(self, context: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The objects the template renders to, empty documents dropped; the caller owns them.
        Printed values are scalars of the template's structure, never structure (``slots``).
        The text and its values together are bounded by ``renderedBytes``, the parsed
        documents' depth and alias expansion by ``limits.check_structure``."""
        text, slots = self.render_tokens(context)
        text = slots.splice_lines(text)
        template = self._template
        origin = self.origin(context)
        limits = getattr(template.environment, "limits", None)
        if limits is None:
            return self._documents.parse(text, slots, origin)
        try:
            written = len(text) + check_rendered_size(template, slots.values, start=len(text))
            documents = self._documents.parse(text, slots, origin)
            check_documents(documents, limits, written=written)
        except (LimitExceeded, TypeError) as exc:  # TypeError: a printed value is not data
            raise ConfigError(f"{exc} (in the rendered text)", pos=SourcePos(self.file)) from None
        return documents

    def locate(
        self, context: Mapping[str, Any], document: int, path: Sequence[str | int]
    ) -> SourcePos:
        """Where document ``document`` (0-based, of the non-empty ones) of what ``context``
        renders has the key at ``path`` (or the deepest of its parents that it has): the
        template's file and line, for an error about a rendered object."""
        text, slots = self.render_tokens(context)
        try:
            line = key_line(slots.splice_lines(text), slots, document, path)
        except Exception:  # it parsed a moment ago: at worst, no line
            line = None
        return SourcePos(self.file, self.origin(context)(line) if line is not None else 0)

    def origin(self, context: Mapping[str, Any]) -> Callable[[int], int]:
        """The template line (1-based) of a line (0-based) of what ``context`` renders:
        rendered again, once, when first asked (``linemap``; only errors ask)."""
        lines: list[int] = []

        def line_of(rendered: int) -> int:
            if not lines:
                lines.extend(self._rendered_lines(context))
            return lines[min(max(rendered, 0), len(lines) - 1)]

        return line_of

    def _rendered_lines(self, context: Mapping[str, Any]) -> list[int]:
        template = self._template
        slots = Slots(self._nonce, _rendered_limit(template))
        try:
            with _budget(template):
                chunks = template.root_render_func(
                    template.new_context({**context, SLOTS_VAR: slots})
                )
                return render_with_lines(template, chunks, self._source)[1]
        except Exception:  # it rendered a moment ago: at worst, no line
            return [0]

    def render_tokens(self, context: Mapping[str, Any]) -> tuple[str, Slots]:
        """The rendered text with a token where each value was printed, and the values."""
        template = self._template
        slots = Slots(self._nonce, _rendered_limit(template))
        try:
            try:
                with _budget(template):
                    chunks = template.root_render_func(
                        template.new_context({**context, SLOTS_VAR: slots})
                    )
                    return _joined(template, chunks), slots
            except Exception:
                # what Template.render does: template lines in the traceback (template_line)
                template.environment.handle_exception()
        except Exception as exc:
            if passes_through(exc):
                raise
            line = template_line(exc, self.file)
            where = self._lines[line - 1] if line and line <= len(self._lines) else self.file
            raise render_failure(exc, SourcePos(self.file, line or 0), where) from exc


def _budget(template: Template, shared: Context | None = None) -> Any:
    """The environment's render budget (``sandbox.LimitedSandbox``), or no budget at all;
    ``shared``: the context the strings of one inline object share, and their budget."""
    budget = getattr(template.environment, "budget", None)
    return budget(shared) if budget is not None else contextlib.nullcontext()


def _rendered_limit(template: Template) -> int | None:
    limits = getattr(template.environment, "limits", None)
    return limits.rendered_bytes if limits is not None else None


def _joined(template: Template, chunks: Iterator[str]) -> str:
    """The chunks a template yields, joined, stopping as soon as they exceed ``renderedBytes``."""
    limit = _rendered_limit(template)
    if limit is None:
        return "".join(chunks)
    parts: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        parts.append(chunk)
    return "".join(parts)


def check_rendered_size(template: Template, value: Any, start: int = 0) -> int:
    """The size of ``value`` (an expression's result, a text template's printed values):
    its strings' characters plus one per item. Fails when ``start`` plus that passes
    ``renderedBytes``; counted iteratively, stopping at the limit."""
    limit = _rendered_limit(template)
    if limit is None:
        return 0
    size = start
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item)
        elif isinstance(item, Mapping):
            size += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            size += len(item)
            stack.extend(item)
        elif not isinstance(item, (*_DATA, Undefined, Iterator, range)):
            # a template object (``self``, a macro, ``namespace()``, a function) is not
            # data: it must not reach an object, a status field or the YAML writer
            raise TypeError(
                f"the value holds a {type(item).__name__}, which is not data (strings, "
                "numbers, booleans, null, lists and mappings)"
            )
        else:
            size += 1
        if size > limit:
            raise _too_large(limit)
    return size - start


_DATA = (str, int, float, bool, type(None))


def _too_large(limit: int) -> LimitExceeded:
    return LimitExceeded("rendered_bytes", f"the rendered output is larger than {limit} bytes")
