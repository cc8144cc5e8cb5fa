"""How template failures become oper8d errors.

Used by every compiled template kind (``compiled.py``, ``tree.py``) and by the engine that
compiles them (``environment.py``):

- at load time a Jinja syntax error becomes a :class:`~oper8d.errors.Problem` for a
  ``BundleError``;
- at render time any exception becomes a :class:`~oper8d.errors.ConfigError` carrying the
  most precise position known, except errors of the ``ReconcileError`` family raised on
  purpose by context functions (``require`` -> PreconditionError, ``config_error`` ->
  ConfigError), which pass through unchanged so the engine sees the intended outcome.
"""

from __future__ import annotations

import re

from jinja2.exceptions import (
    SecurityError,
    TemplateError,
    TemplateSyntaxError,
    UndefinedError,
)

from oper8d.errors import ConfigError, Problem, ReconcileError, SourcePos
from oper8d.limits import LimitExceeded
from oper8d.template.filters import MissingRequiredValue

#: longest template excerpt quoted in a message
_EXCERPT_LIMIT = 80

_UNDEFINED_HINT = "; use `| default(...)` or `is defined` when the value is optional"


def excerpt(source: str) -> str:
    """A one-line, bounded quote of template source for messages."""
    text = " ".join(source.split())
    if len(text) > _EXCERPT_LIMIT:
        text = text[: _EXCERPT_LIMIT - 3] + "..."
    return text


def syntax_problem(exc: TemplateSyntaxError, pos: SourcePos, where: str | None) -> Problem:
    """The bundle problem for a template that does not compile."""
    message = f"template syntax error: {exc.message}"
    if where is not None:
        line = f"line {exc.lineno} of " if exc.lineno and exc.lineno > 1 else ""
        message += f" (in {line}{excerpt(where)})"
    return Problem(message, pos)


def compile_problem(exc: BaseException, pos: SourcePos) -> Problem:
    """The bundle problem for a template that cannot be compiled for another reason than its
    syntax: a limit (nesting depth, a constant too large) or a value the lexer refuses."""
    if isinstance(exc, LimitExceeded):
        return Problem(str(exc), pos)
    return Problem(f"the template cannot be compiled: {type(exc).__name__}: {exc}", pos)


def passes_through(exc: BaseException) -> bool:
    """True for errors a template raises on purpose, which must reach the engine as they are."""
    return isinstance(exc, ReconcileError) and not isinstance(exc, MissingRequiredValue)


_INTERNAL_CALLABLE = re.compile(r"^(?:[\w.]*\.)?(?:LimitedSandbox|SandboxedEnvironment)\.call\(\) ")


def render_failure(exc: BaseException, pos: SourcePos, where: str) -> ConfigError:
    """The ConfigError for a template that failed to render at ``pos``; ``where`` is the
    template text (or line) being rendered, quoted in the message."""
    # Python names the callable in a TypeError; in a template that is the sandbox's own
    # call method (``oper8d.template.sandbox.LimitedSandbox.call() got multiple values for
    # keyword argument 'app'``), which says nothing to the reader
    detail = _INTERNAL_CALLABLE.sub("", str(exc))
    if isinstance(exc, MissingRequiredValue):
        return ConfigError(f"{exc.message} (in {excerpt(where)})", pos=pos)
    if isinstance(exc, LimitExceeded):
        return ConfigError(f"{exc} (in {excerpt(where)})", pos=pos)
    if isinstance(exc, RecursionError):
        return ConfigError(
            "template failed: the template recursed too deeply (a macro or a recursive "
            f"loop calling itself without end?) (in {excerpt(where)})",
            pos=pos,
        )
    if isinstance(exc, UndefinedError):
        what, hint = "undefined variable", _UNDEFINED_HINT
    elif isinstance(exc, SecurityError):
        what, hint = "blocked by the template sandbox", ""
    elif isinstance(exc, TemplateError):
        what, hint = "template error", ""
    elif isinstance(exc, ZeroDivisionError):
        what, hint = "division by zero", ""
    elif isinstance(exc, OverflowError):
        what, hint = "value too large", ""
    elif isinstance(exc, TypeError):
        what, hint = "type error", ""
    elif isinstance(exc, ValueError):
        what, hint = "invalid value", ""
    else:
        what, hint = "template failed", ""
        detail = f"{type(exc).__name__}: {exc}"
    return ConfigError(f"{what}: {detail} (in {excerpt(where)}){hint}", pos=pos)


def template_line(exc: BaseException, filename: str) -> int | None:
    """The line of template ``filename`` that was running when ``exc`` was raised.

    Jinja rewrites the traceback of a failed ``Template.render`` so that template code
    shows up as frames named after the template file with template line numbers; the
    innermost such frame is the line that failed.
    """
    import traceback  # (here: only a failed render needs it)

    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line
