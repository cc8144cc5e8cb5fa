"""The log handler of a running operator (``oper8d run``): its context filter and formats.

Split from :mod:`oper8d.logs` so that the engine's modules, which a short command such as
``oper8d render`` imports, do not import ``logging`` (several milliseconds): the engine logs
through :class:`oper8d.logs.Logger`, which imports it when a record is logged. The filter
reads the reconcile's context and sensitive values from :mod:`oper8d.logs`.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import IO, Any

from oper8d.logs import _COMPONENT, _RECONCILE
from oper8d.redaction import SensitiveValues

__all__ = ["ContextFilter", "JsonFormatter", "TextFormatter", "configure_logging"]


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
    if isinstance(record.args, tuple):  # each argument a whole value: masked even if short
        record.args = tuple(sensitive.redact(a) if isinstance(a, str) else a for a in record.args)
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
