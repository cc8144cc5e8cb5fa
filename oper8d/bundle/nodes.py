"""Values inside a loaded bundle document, each with a way to find the positions below it.

Used by the bundle compiler (``bundle.compile``, ``bundle.edges``) only, hence the
underscored names: a ``_Node`` is a value with its document and path, so every problem can
name ``file:line:col``; a ``_PositionIndex`` hands the positions below an inline object to
the template engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from oper8d.bundle.fastyaml import SourcePositions
from oper8d.bundle.loader import Document, PathKey
from oper8d.errors import SourcePos

__all__: list[str] = []


class _PositionIndex:
    """The positions below a path of one document, relative to that path (what
    ``TemplateEngine.tree`` takes for an inline object).

    Scanning every position of the document for each inline object made a bundle's load
    time grow with the square of its size; this groups the positions by their first
    ``n`` path elements in one pass, once per prefix length asked for (inline objects
    sit at two or three depths)."""

    def __init__(self, doc: Document) -> None:
        self._doc = doc
        self._by_length: dict[int, dict[PathKey, Mapping[PathKey, SourcePos]]] = {}

    def below(self, path: PathKey) -> Mapping[PathKey, SourcePos]:
        n = len(path)
        groups = self._by_length.get(n)
        if groups is None:
            positions = self._doc.positions
            if isinstance(positions, SourcePositions):  # (made lazily: group the raw ones)
                groups = dict(positions.below(n))
            else:
                made: dict[PathKey, dict[PathKey, SourcePos]] = {}
                for p, pos in positions.items():
                    if len(p) >= n:
                        made.setdefault(p[:n], {})[p[n:]] = pos
                groups = dict(made)
            self._by_length[n] = groups
        return groups.get(path, {})


@dataclass(frozen=True)
class _Node:
    """A value inside a loaded document, with a way to find positions below it."""

    doc: Document
    path: PathKey
    value: Any

    def child(self, key: str | int) -> _Node:
        value: Any = None
        if isinstance(self.value, dict):
            value = self.value.get(key)
        elif isinstance(self.value, list) and isinstance(key, int) and key < len(self.value):
            value = self.value[key]
        return _Node(self.doc, (*self.path, key), value)

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default) if isinstance(self.value, dict) else default

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    @property
    def pos(self) -> SourcePos:
        return self.doc.pos(self.path)

    def items(self) -> Iterator[_Node]:
        if isinstance(self.value, list):
            for i in range(len(self.value)):
                yield self.child(i)
