"""Plain-data helpers for template input and output.

``tree.py`` normalises an inline object from the bundle loader into plain JSON-like data
(the loader's ruamel types would otherwise leak into rendered objects), and every
compiled template passes expression results through :func:`copy_result`, so what a
render returns never aliases the context (a CR's ``spec``, a live object) and can be
mutated by the caller.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any

from jinja2 import Undefined
from jinja2.exceptions import UndefinedError

_IMMUTABLE_SCALARS = (str, int, float, bool, type(None))


class UnsupportedValue(TypeError):
    """A value in an inline object that is not JSON-like; ``path`` says where."""

    def __init__(self, value: Any, path: tuple[str | int, ...]):
        self.path = path
        super().__init__(
            f"unsupported value of type {type(value).__name__} in an inline object; "
            "use strings, numbers, booleans, null, lists and mappings"
        )


def normalize(value: Any, path: tuple[str | int, ...] = ()) -> Any:
    """``value`` as plain dicts, lists and built-in scalars (str/int/float/bool/None).

    YAML timestamps become ISO-8601 strings: Kubernetes objects are JSON, and Helm
    keeps such values as strings too. ``UnsupportedValue.path`` is ``path`` followed by
    the path below it.
    """
    try:
        return _normalize(value)
    except UnsupportedValue as exc:
        exc.path = (*path, *exc.path)
        raise


#: types ``_normalize`` returns as they are (what the bundle loader makes, nearly always)
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _normalize(value: Any) -> Any:
    # exact types first: the loader's plain data takes no ABC check and builds no paths
    # (an error's path is put together on the way out)
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        out = {}
        for k, v in value.items():
            try:
                out[k if type(k) is str else _normalize(k)] = (
                    v if type(v) in _PLAIN else _normalize(v)
                )
            except UnsupportedValue as exc:
                exc.path = (k, *exc.path)
                raise
        return out
    if kind is list:
        items = []
        for i, v in enumerate(value):
            try:
                items.append(v if type(v) in _PLAIN else _normalize(v))
            except UnsupportedValue as exc:
                exc.path = (i, *exc.path)
                raise
        return items
    return _normalize_other(value)


def _normalize_other(value: Any) -> Any:
    """Subclasses of the plain types, other mappings and sequences, dates."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return _normalize(dict(value.items()))
    if isinstance(value, list | tuple):
        return _normalize(list(value))
    if isinstance(value, datetime.date):  # datetime.datetime is a subclass
        return value.isoformat()
    raise UnsupportedValue(value, ())


def copy_result(value: Any) -> Any:
    """A deep copy of an expression result as plain data.

    Tuples and iterators (e.g. the result of ``| map(...)``) become lists; an undefined
    value anywhere inside raises ``UndefinedError`` naming what was missing.
    """
    kind = type(value)
    if kind is dict:
        return {k: copy_result(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [copy_result(v) for v in value]
    if kind in _IMMUTABLE_SCALARS:
        return value
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises here, naming the missing name
        raise UndefinedError("the expression's value is undefined")
    if isinstance(value, str):  # Markup and other str subclasses
        return str(value)
    if isinstance(value, Mapping):
        return {k: copy_result(v) for k, v in value.items()}
    if isinstance(value, Iterator | range):
        return [copy_result(v) for v in value]
    return value
