"""Values inside objects for bundle tests: field paths, lookups, comparisons, merge patches.

Used by ``bundletest.loader`` (parsing the ``path:`` of a field check, applying
``crPatch``) and ``bundletest.checks`` (evaluating ``equals`` / ``absent`` / ``contains``).
Field paths use the notation of oper8d's CR field errors: keys joined by ``.``, list
indexes and keys that hold dots in brackets, e.g. ``spec.template.spec.containers[0].image``
or ``metadata.annotations[oper8d.io/config-hash]``; a list index may also be written as a
plain segment (``containers.0.image``), which needs no quotes in a YAML flow mapping.

Comparisons are strict about types the way YAML is: ``true`` is not ``1`` and ``"3"`` is
not ``3`` (Python would say ``True == 1``), while ``3`` and ``3.0`` are the same number.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["contains", "format_path", "lookup", "merge_patch", "parse_path", "same"]

FieldPath = tuple[str | int, ...]


def parse_path(text: str) -> FieldPath:
    """``spec.workers[0].name`` and ``spec.workers.0.name`` -> ``("spec", "workers", 0,
    "name")``;
    ``metadata.labels[app.kubernetes.io/name]`` -> ``("metadata", "labels",
    "app.kubernetes.io/name")``. Raises ``ValueError`` saying what is malformed."""
    parts: list[str | int] = []
    i, n = 0, len(text)
    expect_key = True  # at the start and after a '.'
    while i < n:
        char = text[i]
        if char == "[":
            end = text.find("]", i)
            if end < 0:
                raise ValueError(f"'[' at character {i + 1} is never closed")
            inner = text[i + 1 : end]
            if not inner or "[" in inner:
                raise ValueError(f"empty or nested brackets at character {i + 1}")
            parts.append(int(inner) if inner.isdigit() else inner)
            i, expect_key = end + 1, False
            if i < n and text[i] not in ".[":
                raise ValueError(f"expected '.' or '[' after ']' at character {i + 1}")
        elif char == ".":
            if expect_key:
                raise ValueError(f"empty key at character {i + 1} (two dots, or a leading dot)")
            i, expect_key = i + 1, True
        elif char == "]":
            raise ValueError(f"']' at character {i + 1} has no '['")
        else:
            end = i
            while end < n and text[end] not in ".[]":
                end += 1
            segment = text[i:end]
            parts.append(int(segment) if segment.isdigit() else segment)
            i, expect_key = end, False
    if expect_key:
        raise ValueError("the path is empty or ends with '.'")
    return tuple(parts)


def format_path(parts: Sequence[str | int]) -> str:
    """The inverse of :func:`parse_path` (keys with dots or brackets go in brackets)."""
    out = ""
    for part in parts:
        if isinstance(part, int) or any(c in part for c in ".[]"):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def lookup(tree: Any, parts: Sequence[str | int]) -> tuple[bool, Any]:
    """``(True, value)`` at ``parts`` inside ``tree``, or ``(False, None)`` when some step
    is missing. An index on a mapping is read as the key it spells (``data[0]``)."""
    node = tree
    for part in parts:
        if isinstance(node, Mapping):
            key = str(part)
            if key not in node:
                return False, None
            node = node[key]
        elif isinstance(node, list) and isinstance(part, int):
            if part >= len(node):
                return False, None
            node = node[part]
        else:
            return False, None
    return True, node


def same(actual: Any, expected: Any) -> bool:
    """Equality with YAML's types: booleans are not numbers, strings are not numbers."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, int | float):
        return isinstance(actual, int | float) and actual == expected
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and actual.keys() == expected.keys()
            and all(same(actual[k], v) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(same(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return type(actual) is type(expected) and actual == expected


def _matches(actual: Any, expected: Any) -> bool:
    """A mapping matches when it has every key of ``expected`` with a matching value; a
    list matches item by item (same length); anything else must be :func:`same`."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and _matches(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_matches(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return same(actual, expected)


def contains(actual: Any, expected: Any) -> bool:
    """The ``contains`` check: a list has an item that matches ``expected``; a string holds
    the string ``expected``; a mapping has every key of the mapping ``expected`` with
    matching values (recursively, lists item by item)."""
    if isinstance(actual, list):
        return any(_matches(item, expected) for item in actual)
    if isinstance(actual, str):
        return isinstance(expected, str) and expected in actual
    if isinstance(actual, Mapping):
        return isinstance(expected, Mapping) and _matches(actual, expected)
    return False


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: mappings merge recursively, ``null`` removes a key, any
    other value replaces. Returns a new value; neither input is changed."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out
