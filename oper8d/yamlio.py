"""Deterministic YAML output for ``oper8d render`` (stream, folder, golden files).

PyYAML's libyaml emitter when present (the pure-Python one otherwise; same bytes). Key
order is kept as rendered; multi-line strings are written as ``|`` blocks and long
strings are never folded across lines, so rendered config files stay readable and a
changed value is a one-line diff in CI.

Most rendered objects are maps, lists, integers, booleans and short strings of letters,
digits and ``_./:@+=-``; such a document is written here directly, in the exact bytes
PyYAML writes for it (its representer and serializer are Python, and cost more than the
rest of the output). Anything else in a document (another type, a string that needs
another style, a key PyYAML would write as a complex key, an object that appears twice and
would get an anchor) sends the whole document through PyYAML.
``tests/unit/test_yamlio.py`` holds the two to the same bytes on generated documents.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

__all__ = ["dump", "dump_all"]

_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

#: no line folding: a long string stays on its own line
_NO_WRAP = 2**31 - 1


class _Dumper(_Base):  # type: ignore[misc]
    """A private dumper subclass, so our representers never touch PyYAML's global ones."""


def _str(dumper: Any, data: str) -> Any:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)

#: strings written plain (or single-quoted, when plain would read back as another type)
#: without asking PyYAML: no indicator first, no quote, ``#``, line break, or space at
#: either end
_SIMPLE = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./:@+=-]*(?: +[A-Za-z0-9_./:@+=-]+)*")
#: PyYAML writes a longer key as a complex key (``? key``)
_MAX_KEY = 100
_STR_TAG = "tag:yaml.org,2002:str"


def dump(obj: Any) -> str:
    """One YAML document, keys in their given order."""
    fast = _Writer().document(obj)
    return fast if fast is not None else _pyyaml_dump(obj)


def dump_all(objs: Iterable[Any]) -> str:
    """Documents separated by ``---`` lines."""
    writer = _Writer()
    texts = []
    for obj in objs:
        fast = writer.document(obj)
        texts.append(fast if fast is not None else _pyyaml_dump(obj))
    return "---\n".join(texts)


def _pyyaml_dump(obj: Any) -> str:
    return yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=_NO_WRAP,
    )


class _Fallback(Exception):
    """The document holds something only PyYAML writes right."""


class _Writer:
    """Writes block-style documents as PyYAML does (two-space indents, lists in a map not
    indented, ``{}`` and ``[]`` for empty ones), for the simple values ``_SIMPLE`` and
    JSON scalars; remembers how each string is written across the documents of a call."""

    def __init__(self) -> None:
        # (PyYAML's resolver decides which plain strings read back as another type)
        self._resolve: Any = yaml.resolver.Resolver().resolve
        self._scalars: dict[str, str | None] = {}
        self._seen: set[int] = set()

    def document(self, obj: Any) -> str | None:
        """``obj`` as PyYAML writes it, or None when only PyYAML can."""
        if type(obj) is not dict or not obj:
            return None
        self._seen = set()
        lines: list[str] = []
        try:
            self._mapping(obj, "", lines)
        except _Fallback:
            return None
        return "".join(lines)

    # (the hot paths look strings up in ``_scalars`` themselves: a call per key and
    # value was most of a document's cost)

    def _mapping(self, value: dict[Any, Any], indent: str, lines: list[str]) -> None:
        seen = self._seen  # (``_once``)
        if id(value) in seen:
            raise _Fallback
        seen.add(id(value))
        scalars = self._scalars
        for key, item in value.items():
            if type(key) is not str or len(key) > _MAX_KEY:
                raise _Fallback
            text = scalars.get(key)
            if text is None:  # not yet styled, or only PyYAML writes it
                text = self._string(key)
            kind = type(item)
            if kind is str:
                shown = scalars.get(item)
                if shown is None:
                    shown = self._string(item)
                lines.append(f"{indent}{text}: {shown}\n")
            elif kind is dict and item:
                lines.append(f"{indent}{text}:\n")
                self._mapping(item, indent + "  ", lines)
            elif kind is list and item:
                lines.append(f"{indent}{text}:\n")
                self._sequence(item, indent, lines)
            elif kind is int:
                lines.append(f"{indent}{text}: {item}\n")
            elif kind is bool:
                lines.append(f"{indent}{text}: {'true' if item else 'false'}\n")
            else:
                lines.append(f"{indent}{text}: {self._scalar(item)}\n")

    def _sequence(self, value: list[Any], indent: str, lines: list[str]) -> None:
        self._once(value)
        inner = indent + "  "
        for item in value:
            kind = type(item)
            if (kind is dict or kind is list) and item:
                start = len(lines)
                if kind is dict:
                    self._mapping(item, inner, lines)
                else:
                    self._sequence(item, inner, lines)
                lines[start] = f"{indent}- {lines[start][len(inner) :]}"
            else:
                lines.append(f"{indent}- {self._scalar(item)}\n")

    def _once(self, value: Any) -> None:
        # PyYAML gives an object met twice an anchor (&id001) and writes an alias after
        if id(value) in self._seen:
            raise _Fallback
        self._seen.add(id(value))

    def _scalar(self, value: Any) -> str:
        kind = type(value)
        if kind is str:
            return self._string(value)
        if kind is bool:
            return "true" if value else "false"
        if kind is int:
            return str(value)
        if value is None:
            return "null"
        if kind is dict or kind is list:  # (empty)
            self._once(value)
            return "{}" if kind is dict else "[]"
        raise _Fallback

    def _string(self, value: str) -> str:
        text = self._scalars.get(value, "")
        if text == "":
            text = self._scalars[value] = self._style(value)
        if text is None:
            raise _Fallback
        return text

    def _style(self, value: str) -> str | None:
        if not value:
            return "''"
        if not _SIMPLE.fullmatch(value) or value.endswith(":") or ": " in value:
            return None
        tag = self._resolve(yaml.ScalarNode, value, (True, False))
        return value if tag == _STR_TAG else f"'{value}'"
