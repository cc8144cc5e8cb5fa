"""Paths, messages and value-only checks (enum, pattern) shared by the compiled nodes,
the constraints of custom resources and the catalog.

A path is a tuple of property names (``str``), list indices (``int``) and map keys
(``MapKey``); ``format_path`` prints it as apimachinery does
(``spec.containers[0].env``, ``data[password]``). Messages follow the apiserver's words
(``Invalid value``, ``Unsupported value``, ``Required value``, ``Duplicate value``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

Path = tuple[Any, ...]
Errors = list[tuple[Path, str]]
Allow = Callable[[Path], bool]
Coercions = list[tuple[Path, Any, Any]]


class MapKey(str):
    """A key of a map (labels, data, ...): printed ``[key]`` in a path, as apimachinery does."""

    __slots__ = ()


def format_path(path: Path) -> str:
    """``("spec", "containers", 0, "env")`` -> ``spec.containers[0].env``."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int | MapKey):
            out.append(f"[{part}]")
        else:
            out.append(f".{part}" if out else part)
    return "".join(out)


def json_type(value: Any, *, integral_floats: bool = False) -> str:
    """The JSON type name of a Python value (for messages). ``integral_floats``: ``2.0`` is
    an integer, as JSON Schema counts it (OpenAPI type inference)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if integral_floats and value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def show_value(value: Any) -> str:
    """A value as messages show it: strings quoted, containers by their type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict | list):
        return json_type(value)
    return repr(value)


def type_error(value: Any, expected: str) -> str:
    return f"Invalid value: {show_value(value)}: must be of type {expected}, not {json_type(value)}"


def enum_error(value: Any, allowed: Sequence[Any]) -> str:
    listed = ", ".join(show_value(v) for v in allowed)
    return f"Unsupported value: {show_value(value)}: supported values: {listed}"


def enum_check(
    allowed: Sequence[Any], also_ok: Sequence[Any] = ()
) -> Callable[[Any, Path, Errors], None]:
    """``Unsupported value`` unless the value is one of ``allowed`` (or ``also_ok``,
    accepted but not listed in the message)."""
    try:
        members: Any = frozenset((*allowed, *also_ok))
    except TypeError:
        members = list(allowed)
    # (worked out once: every string of every object meets an enum or two)
    bools_allowed = any(isinstance(a, bool) for a in allowed)

    def check(value: Any, path: Path, errors: Errors) -> None:
        try:
            ok = value in members
        except TypeError:
            ok = False
        if ok and isinstance(value, bool) != bools_allowed:
            ok = value in [a for a in allowed if type(a) is type(value)]
        if not ok:
            errors.append((path, enum_error(value, allowed)))

    return check


def pattern_check(pattern: str) -> Callable[[Any, Path, Errors], None]:
    try:
        regex = re.compile(pattern)
    except re.error:
        return lambda value, path, errors: None  # an ECMA pattern Python cannot read

    def check(value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, str) and not regex.search(value):
            errors.append((path, f"Invalid value: {show_value(value)}: should match '{pattern}'"))

    return check
