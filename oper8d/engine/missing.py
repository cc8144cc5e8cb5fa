"""Why a condition over live objects met an undefined value: "not yet" or a typo.

``engine.render.holds`` (readiness rules, ``when:``, hook checks) and status projections
(``engine.status.project_fields``) evaluate expressions over live objects and the CR. A
field the object's schema has but the live object lacks yet (``status.readyReplicas``
before the controller wrote it), or an object not created yet, means "waiting". An
undefined name, or a field path the kind's schema does not have (``readyReplicaz``), is a
typo: a ConfigError naming the expression's position, so a rollout never waits forever on
it.

The context's objects are wrapped (:class:`Tracked`, plain dict and list subclasses) so
that a missing key is recorded with the object's kind and the path to it; the schemas are
read (``kubeschema``, the bundle's spec schema for the CR) only when something is missing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from jinja2.exceptions import UndefinedError

from oper8d.bundle.schema_messages import suggest
from oper8d.bundle.spec_schema import declares
from oper8d.errors import ConfigError
from oper8d.kubeschema import KubeSchemas
from oper8d.template import Expr

__all__ = ["Outcome", "SchemaSource", "evaluate_live"]

Path = tuple[str | int, ...]
#: (apiVersion, kind, path) of a missing field; (None, call, ()) for an absent object
Miss = tuple[str | None, str, Path]
#: what ``evaluate_live`` found: the value, or None and why it is "waiting"
Outcome = tuple[Any, str | None]


class SchemaSource:
    """The built-in schemas, read once on first need (only when a field is missing); one
    per rollout or status write, never module-wide. ``cr_schema``: the bundle's spec schema,
    for paths into the CR; ``schemas``: ones already loaded (the session's), used as they are."""

    def __init__(
        self, cr_schema: Mapping[str, Any] | None = None, schemas: KubeSchemas | None = None
    ) -> None:
        self.cr_schema = cr_schema
        self._schemas: KubeSchemas | None = schemas
        self._lock = threading.Lock()

    def schemas(self) -> KubeSchemas:
        with self._lock:
            if self._schemas is None:
                self._schemas = KubeSchemas.builtin()
            return self._schemas

    def has_field(self, api_version: str, kind: str, path: Path) -> tuple[bool | None, Any]:
        if kind == "__cr__":
            return declares(self.cr_schema, path)
        return self.schemas().has_field(api_version, kind, path)


class _Log:
    def __init__(self) -> None:
        self.misses: list[Miss] = []


class TrackedDict(dict[str, Any]):
    """A live object (or part of one) that records the keys asked for and missing."""

    def __init__(self, data: Mapping[str, Any], log: _Log, root: tuple[str, str], path: Path):
        super().__init__(data)
        self._oper8d = (log, root, path)

    def __getitem__(self, key: str) -> Any:
        log, root, path = self._oper8d
        try:
            value = super().__getitem__(key)
        except KeyError:
            log.misses.append((root[0], root[1], (*path, key)))
            raise
        return _wrap(value, log, root, (*path, key))


class TrackedList(list[Any]):
    def __init__(self, data: list[Any], log: _Log, root: tuple[str, str], path: Path):
        super().__init__(data)
        self._oper8d = (log, root, path)

    def __getitem__(self, index: Any) -> Any:
        log, root, path = self._oper8d
        value = super().__getitem__(index)
        return _wrap(value, log, root, (*path, index)) if isinstance(index, int) else value

    def __iter__(self) -> Any:
        log, root, path = self._oper8d
        for index, value in enumerate(super().__iter__()):
            yield _wrap(value, log, root, (*path, index))


def _wrap(value: Any, log: _Log, root: tuple[str, str], path: Path) -> Any:
    if isinstance(value, dict):
        return TrackedDict(value, log, root, path)
    if isinstance(value, list):
        return TrackedList(value, log, root, path)
    return value


def _root_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    return str(obj.get("apiVersion", "")), str(obj.get("kind", ""))


def _tracked_reader(read: Callable[..., Any], log: _Log, name: str) -> Callable[..., Any]:
    def tracked(*args: Any, **kwargs: Any) -> Any:
        obj = read(*args, **kwargs)
        if obj is None:
            shown = ", ".join(repr(a) for a in args)
            log.misses.append((None, f"{name}({shown})", ()))
            return None
        return _wrap(obj, log, _root_of(obj), ())

    return tracked


def _tracked_context(context: Mapping[str, Any], log: _Log) -> dict[str, Any]:
    out = dict(context)
    cr = ("", "__cr__")
    for key in ("spec", "status"):
        if isinstance(out.get(key), dict):
            out[key] = TrackedDict(out[key], log, cr, (key,))
    if isinstance(out.get("cr"), dict):
        out["cr"] = TrackedDict(out["cr"], log, cr, ())
    if isinstance(out.get("obj"), dict):
        out["obj"] = _wrap(out["obj"], log, _root_of(out["obj"]), ())
    for key in ("live", "lookup"):
        if callable(out.get(key)):
            out[key] = _tracked_reader(out[key], log, key)
    return out


def evaluate_live(expr: Expr, context: Mapping[str, Any], schemas: SchemaSource) -> Outcome:
    """``expr`` over ``context``: (value, None), or (None, what it waits for) when a field
    the schema has is not there yet or an object does not exist yet. A typo (an undefined
    name, a field path the kind's schema does not have) raises ConfigError at the
    expression's position."""
    log = _Log()
    try:
        return expr.evaluate(_tracked_context(context, log)), None
    except ConfigError as err:
        if not isinstance(err.__cause__, UndefinedError):
            raise
        if not log.misses:
            raise ConfigError(
                f"{expr.source!r}: {err.__cause__.message}: no such name (a typo?)",
                pos=expr.pos,
            ) from None
        api_version, kind, path = log.misses[-1]
        if api_version is None:
            return None, f"{kind} does not exist yet"
        known, names = schemas.has_field(api_version, kind, path)
        shown = _field(path)
        if known is False:
            what = "the CR's spec schema" if kind == "__cr__" else f"{kind} ({api_version})"
            hint = suggest(str(path[-1]), names) if names else ""
            raise ConfigError(
                f"{expr.source!r}: {what} has no field {shown}{hint}", pos=expr.pos
            ) from None
        return None, f"{shown} is not set yet"


def _field(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
