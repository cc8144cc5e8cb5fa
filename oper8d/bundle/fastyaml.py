"""The fast path of the bundle loader: libyaml's event stream, built into plain data.

Loading a big bundle with ruamel.yaml's round-trip loader (pure Python) took most of an
``oper8d render``. libyaml (PyYAML's C parser) reports the same start marks for every node,
so :func:`fast_load` builds the plain data and the two position maps from its events in one
iterative pass.

It covers the common subset only and gives up (returns ``None``) on anything else, so that
:mod:`oper8d.bundle.loader` falls back to ruamel, which keeps its messages and its YAML 1.2
reading: any parse error, an empty or null document or a second document, anchors and aliases
(the alias limits live in the ruamel path), empty values (ruamel places them at the next
token), directives (``%YAML 1.1`` reads ``yes`` as true), explicit tags, merge keys, duplicate
keys, keys that are not plain strings, nesting near ``nestingDepth``, NEL / LS / PS or a lone
CR in the text (line breaks the two count differently), and plain scalars whose YAML 1.2 value
is anything but a string, ``null``, a boolean, a decimal integer or a simple decimal float
(hex, octal, binary, underscores, leading zeros, ``1e3``, ``.inf`` / ``.nan`` go to ruamel).
Plain scalars are resolved as YAML 1.2 reads them: ``yes`` / ``on`` stay strings; timestamps
stay the text written. libyaml and ruamel may still disagree on rare malformed text (one
accepting what the other rejects); a check of both paths over the examples and the unit tests
found none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from yaml import YAMLError as _YAMLError
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from oper8d.errors import SourcePos

# libyaml is optional in PyYAML; without it the ruamel loader does all the work
_CLoader: Any = getattr(yaml, "CSafeLoader", None)

PathKey = tuple[str | int, ...]
#: path -> (line, column), both 1-based: positions before they become ``SourcePos``es
RawPositions = dict[PathKey, tuple[int, int]]
#: ``(data, positions, key_positions)`` of one document, made only of what ``marshal``
#: writes, so a parse can be kept between processes (``bundle.cache``)
Parsed = tuple[Any, RawPositions, RawPositions]

_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_TRUE = frozenset(("true", "True", "TRUE"))
_FALSE = frozenset(("false", "False", "FALSE"))
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]*(?:[eE][-+]?[0-9]+)?")
# a superset of what YAML 1.2 (as ruamel reads it) resolves to a number, plus the merge and
# value keys; of these only _INT and _FLOAT are built here. Timestamps need no care: they
# stay the text written, as any string does.
_NUMBERISH = re.compile(
    r"[-+]?(?:[0-9_]+(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|\.(?:inf|Inf|INF|nan|NaN|NAN)|0[box][0-9a-fA-F_]+)|<<|="
)


# line breaks the two parsers may count differently (YAML 1.1 breaks, a lone CR)
_ODD_BREAKS = re.compile("[\x85\u2028\u2029]|\r(?!\n)")


class _GiveUp(Exception):
    """The document needs the ruamel loader."""


def available() -> bool:
    """Whether PyYAML was built with libyaml."""
    return _CLoader is not None


def _plain(value: str) -> Any:
    """A plain (unquoted, untagged) scalar as YAML 1.2 reads it."""
    if not value:  # an empty value: ruamel places it at the next token, libyaml does not
        raise _GiveUp
    if value in _NULLS:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if _NUMBERISH.fullmatch(value) is None:
        return value
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    raise _GiveUp  # hex, octal, underscores, .inf, a leading zero, 1e3, a merge key ...


def fast_load(
    text: str, file: str, max_depth: int
) -> tuple[Any, SourcePositions, SourcePositions] | None:
    """``(data, positions, key_positions)`` of the one document in ``text``, as the ruamel
    path would build them, or ``None`` when the document needs the ruamel path."""
    parsed = fast_parse(text, max_depth)
    if parsed is None:
        return None
    data, positions, key_positions = parsed
    return data, SourcePositions(file, positions), SourcePositions(file, key_positions)


def fast_parse(text: str, max_depth: int) -> Parsed | None:
    """:func:`fast_load` with positions as ``(line, column)`` pairs (no file name): the
    form ``bundle.cache`` keeps."""
    if _CLoader is None or _ODD_BREAKS.search(text):
        return None
    try:
        return _build(text, max_depth)
    except (_GiveUp, _YAMLError, RecursionError, ValueError):
        return None


class SourcePositions(Mapping[PathKey, SourcePos]):
    """``raw`` as the ``SourcePos``es of ``file``, each made when first asked for: a load
    asks for a small part of them (the templated strings, the nodes a check names), and
    making them all was a sixth of a warm load of a big bundle."""

    __slots__ = ("_file", "_made", "raw")

    def __init__(self, file: str, raw: RawPositions) -> None:
        self._file = file
        self.raw = raw
        self._made: dict[PathKey, SourcePos] = {}

    def __getitem__(self, path: PathKey) -> SourcePos:
        made = self.get(path)
        if made is None:
            raise KeyError(path)
        return made  # type: ignore[no-any-return]

    def get(self, path: PathKey, default: Any = None) -> Any:  # (no KeyError round trip)
        made = self._made.get(path)
        if made is not None:
            return made
        found = self.raw.get(path)
        if found is None:
            return default
        made = self._made[path] = SourcePos(self._file, found[0], found[1])
        return made

    def __iter__(self) -> Iterator[PathKey]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


def _build(text: str, max_depth: int) -> Parsed:
    positions: RawPositions = {}
    key_positions: RawPositions = {}
    # one frame per open container: [container, its path, pending key or None]
    stack: list[list[Any]] = []
    root: Any = None
    have_root = False  # root may be a plain null
    documents = 0
    loader = _CLoader(text)
    try:
        while True:
            event: Any = loader.get_event()
            kind = type(event)
            if kind is ScalarEvent or kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.anchor is not None:
                    raise _GiveUp
                mark = event.start_mark
                pos = (mark.line + 1, mark.column + 1)
                if kind is ScalarEvent:
                    if event.tag is not None:
                        raise _GiveUp
                    value: Any = _plain(event.value) if event.implicit[0] else event.value
                else:
                    if event.tag is not None:
                        raise _GiveUp
                    value = {} if kind is MappingStartEvent else []
                if not stack:
                    if have_root:
                        raise _GiveUp
                    root, have_root = value, True
                    positions[()] = pos if kind is not ScalarEvent else (1, 1)
                else:
                    frame = stack[-1]
                    parent = frame[0]
                    if type(parent) is list:
                        path = (*frame[1], len(parent))
                        positions[path] = pos
                        parent.append(value)
                    elif frame[2] is None:  # a mapping key
                        if type(value) is not str or value in parent:
                            raise _GiveUp
                        frame[2] = (value, pos)
                        continue
                    else:
                        key, key_pos = frame[2]
                        frame[2] = None
                        path = (*frame[1], key)
                        key_positions[path] = key_pos
                        positions[path] = pos
                        parent[key] = value
                if kind is not ScalarEvent:
                    if len(stack) + 2 >= max_depth:
                        raise _GiveUp
                    stack.append([value, path if stack else (), None])
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                stack.pop()
            elif kind is DocumentStartEvent:
                documents += 1
                if documents > 1 or event.version is not None or event.tags:
                    raise _GiveUp
            elif kind is AliasEvent:
                raise _GiveUp
            elif kind is StreamEndEvent:
                break
    finally:
        loader.dispose()
    if root is None:  # no document, or a null one: ruamel's "empty file" error
        raise _GiveUp
    return root, positions, key_positions
