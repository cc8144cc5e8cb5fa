"""Logs of a running operator: which reconcile a line belongs to, and no Secret in them.

``oper8d run`` installs one handler with ``oper8d.logformat.configure_logging``; the
controller wraps each reconcile in :func:`reconcile_context` and the rollout each component
in :func:`component_context`. A ``ContextFilter`` on the handler copies the reconcile id,
the CR (``namespace/name``) and the component onto every record, and the formatters print
them: ``[cr=ns/name rid=ab12cd34 component=app]`` in text, ``reconcile_id``/``cr``/
``component`` fields in JSON (one object a line).

Redaction (the rules are in ``oper8d.redaction``): each reconcile has one set of sensitive
values, :class:`SensitiveValues`. Values are registered where they enter the reconcile: the
rollout marks every Secret it renders (:func:`mark_secret`), the session marks
``random_string()`` values and the Secrets ``lookup()``/``live()`` return, and anything else
held sensitive goes through :func:`mark_sensitive`. The filter masks them (``oper8d.redaction``'s
rule: whole values, and inside text the values that look secret) in each log argument,
message and traceback; Event notes and CR status messages go through
:func:`redact`. The set lives as long as the reconcile.

The context is kept in ``contextvars``: each thread starts empty, so work handed to a thread
pool inside a reconcile goes through :func:`propagate_context`. The two ``ContextVar`` objects
are module-level because Python requires it; their values are per reconcile.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    import logging

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
    "Logger",
    "ReconcileScope",
    "SensitiveValues",
    "component_context",
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


class Logger:
    """A ``logging`` logger by name, imported and looked up when a record is logged, so
    that importing the engine does not import ``logging``. A debug record is dropped
    without importing it: until ``logging`` is imported nothing can have configured it,
    and unconfigured logging drops records below WARNING."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def debug(self, msg: str, *args: object) -> None:
        if "logging" in sys.modules:
            self._logger().debug(msg, *args, stacklevel=2)

    def warning(self, msg: str, *args: object) -> None:
        self._logger().warning(msg, *args, stacklevel=2)

    def _logger(self) -> logging.Logger:
        import logging

        return logging.getLogger(self.name)
