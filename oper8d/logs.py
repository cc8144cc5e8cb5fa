"""Logs of a running operator: which reconcile a line belongs to, and no Secret in them.

``oper8d run`` installs one handler with :func:`configure_logging`; the controller wraps each
reconcile in :func:`reconcile_context` and the rollout each component in
:func:`component_context`. A :class:`ContextFilter` on the handler copies the reconcile id,
the CR (``namespace/name``) and the component onto every record, and the formatters print
them: ``[cr=ns/name rid=ab12cd34 component=app]`` in text, ``reconcile_id``/``cr``/
``component`` fields in JSON (one object a line).

Redaction (the rules are in ``oper8d.redaction``): each reconcile has one set of sensitive
values, :class:`SensitiveValues`. Values are registered where they enter the reconcile: the
rollout marks every Secret it renders (:func:`mark_secret`), the session marks
``random_string()`` values and the Secrets ``lookup()``/``live()`` return, and anything else
held sensitive goes through :func:`mark_sensitive`. The filter masks them, as whole values,
in each message and traceback; Event notes and CR status messages go through
:func:`redact`. The set lives as long as the reconcile.

The context is kept in ``contextvars``: each thread starts empty, so work handed to a thread
pool inside a reconcile goes through :func:`propagate_context`. The two ``ContextVar`` objects
are module-level because Python requires it; their values are per reconcile.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, ParamSpec, TypeVar

from oper8d.redaction import (
    MIN_SENSITIVE_LENGTH,
    REDACTED,
    SensitiveValues,
    redact_strings,
    secret_values,
)

__all__ = [
    "MIN_SENSITIVE_LENGTH",
    "REDACTED",
    "ContextFilter",
    "JsonFormatter",
    "ReconcileScope",
    "SensitiveValues",
    "TextFormatter",
    "component_context",
    "configure_logging",
    "cr_key",
    "current_reconcile",
    "mark_secret",
    "mark_sensitive",
    "new_reconcile_id",
    "propagate_context",
    "reconcile_context",
    "redact",
    "redact_data",
]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class ReconcileScope:
    """What the logs know about the reconcile running in this context."""

    reconcile_id: str
    cr: str
    sensitive: SensitiveValues = field(default_factory=SensitiveValues)


_RECONCILE: contextvars.ContextVar[ReconcileScope | None] = contextvars.ContextVar(
    "oper8d_reconcile", default=None
)
_COMPONENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "oper8d_component", default=None
)


def new_reconcile_id() -> str:
    """A short random id that tells one reconcile's lines from another's."""
    return uuid.uuid4().hex[:8]


def cr_key(namespace: str | None, name: str) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped CR."""
    return f"{namespace}/{name}" if namespace else name


@contextmanager
def reconcile_context(
    reconcile_id: str, cr_key: str, sensitive: SensitiveValues | None = None
) -> Iterator[ReconcileScope]:
    """Everything logged inside belongs to this reconcile (and no component, until one is
    entered); its sensitive values are forgotten on exit. ``sensitive`` (default: a new set
    in which the CR's own name and namespace are public) lets an offline run keep one set
    over its passes, to mask what it prints afterwards."""
    if sensitive is None:
        sensitive = SensitiveValues(public=cr_key.split("/"))
    scope = ReconcileScope(reconcile_id, cr_key, sensitive)
    reconcile_token = _RECONCILE.set(scope)
    component_token = _COMPONENT.set(None)
    try:
        yield scope
    finally:
        _COMPONENT.reset(component_token)
        _RECONCILE.reset(reconcile_token)


@contextmanager
def component_context(name: str) -> Iterator[None]:
    """Everything logged inside is about component ``name``."""
    token = _COMPONENT.set(name)
    try:
        yield
    finally:
        _COMPONENT.reset(token)


def current_reconcile() -> ReconcileScope | None:
    return _RECONCILE.get()


def propagate_context(work: Callable[P, R]) -> Callable[P, R]:
    """``work`` run in the context of the caller of this function (its reconcile and its
    sensitive values), on whatever thread calls it. Each call gets its own copy, so calls
    may run at the same time and a component entered in one is not seen by another."""
    captured = contextvars.copy_context()

    @functools.wraps(work)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return captured.copy().run(work, *args, **kwargs)

    return run


def mark_sensitive(value: object) -> None:
    """Never show ``value`` (its ``str``) in this reconcile's logs and events. Outside a
    reconcile nothing is logged for anyone to read, and nothing is kept."""
    scope = _RECONCILE.get()
    if scope is not None and value is not None:
        scope.sensitive.add(str(value))


def mark_secret(obj: Mapping[str, Any]) -> None:
    """Mark every value of a core ``Secret``'s ``data`` (as sent, base64, and decoded) and
    ``stringData``. Any other object is left alone."""
    for value in secret_values(obj):
        mark_sensitive(value)


def redact(text: str) -> str:
    """``text`` without the current reconcile's sensitive values (for event notes)."""
    scope = _RECONCILE.get()
    return text if scope is None else scope.sensitive.redact(text)


def redact_data(value: Any) -> Any:
    """``value`` (strings, lists and maps of them) without the current reconcile's
    sensitive values in any string (for fields a bundle projects into the CR status)."""
    scope = _RECONCILE.get()
    return value if scope is None else redact_strings(value, scope.sensitive)


class ContextFilter(logging.Filter):
    """Puts ``reconcile_id``, ``cr`` and ``component`` on each record and redacts its message
    and traceback. Attach it to a handler: a logger's filters miss its children's records."""

    def filter(self, record: logging.LogRecord) -> bool:
        scope = _RECONCILE.get()
        for attr, value in (
            ("reconcile_id", scope.reconcile_id if scope else None),
            ("cr", scope.cr if scope else None),
            ("component", _COMPONENT.get()),
        ):
            if getattr(record, attr, None) is None:  # a value given with extra= wins
                setattr(record, attr, value)
        if scope is not None:
            _redact_record(record, scope.sensitive)
        return True


def _redact_record(record: logging.LogRecord, sensitive: SensitiveValues) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging would print msg and args raw
        message = f"{record.msg} (log arguments that do not fit: {record.args!r})"
    record.msg, record.args = sensitive.redact(message), ()
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = sensitive.redact(record.exc_text)
    if record.stack_info:
        record.stack_info = sensitive.redact(record.stack_info)


def _context_label(record: logging.LogRecord) -> str:
    parts = [
        f"{label}={value}"
        for label, value in (
            ("cr", getattr(record, "cr", None)),
            ("rid", getattr(record, "reconcile_id", None)),
            ("component", getattr(record, "component", None)),
        )
        if value
    ]
    return f"[{' '.join(parts)}] " if parts else ""


class TextFormatter(logging.Formatter):
    """``12:00:01 INFO    oper8d.controller: [cr=ns/name rid=ab12cd34 component=app] msg``"""

    def __init__(self, datefmt: str = "%H:%M:%S") -> None:
        # the format string tells logging to fill in record.asctime; formatMessage lays it out
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt)

    def formatMessage(self, record: logging.LogRecord) -> str:
        return (
            f"{record.asctime} {record.levelname:<7} {record.name}: "
            f"{_context_label(record)}{record.message}"
        )


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``ts`` (UTC), ``level``, ``logger``, ``msg``, the reconcile's
    ``reconcile_id``/``cr``/``component`` when set, and ``error`` for a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        out: dict[str, Any] = {
            "ts": ts.replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for attr in ("reconcile_id", "cr", "component"):
            value = getattr(record, attr, None)
            if value:
                out[attr] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["error"] = record.exc_text
        if record.stack_info:
            out["stack"] = record.stack_info
        return json.dumps(out)


def configure_logging(
    fmt: str, *, stream: IO[str], level: str | int = "INFO", logger: str = "oper8d"
) -> logging.Handler:
    """Send ``logger`` and its children to ``stream`` as ``text`` or ``json``, with the
    context filter; replaces the handlers it had. Returns the handler."""
    if fmt not in ("text", "json"):
        raise ValueError(f"log format must be 'text' or 'json', got {fmt!r}")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(ContextFilter())
    target = logging.getLogger(logger)
    target.handlers[:] = [handler]
    target.setLevel(level.upper() if isinstance(level, str) else level)
    return handler
