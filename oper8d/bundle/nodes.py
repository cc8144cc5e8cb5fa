"""Values inside a loaded bundle document, each with a way to find the positions below it.

Used by the bundle compiler (``bundle.compile``, its mixins, ``bundle.edges``) only, hence
the underscored names: a ``_Node`` is a value with its document and path, so every problem can
name ``file:line:col``; a ``_Below`` hands the positions below an inline object to the
template engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from oper8d.bundle.loader import Document, PathKey
from oper8d.errors import SourcePos

__all__: list[str] = []


class _Below(Mapping[PathKey, SourcePos]):
    """The positions of a document below ``prefix``, keyed by their path relative to it
    (what ``TemplateEngine.tree`` takes for an inline object). A lookup is one lookup in
    the document's positions: nothing is grouped or copied for each inline object (the
    tree asks for a few positions, those of its templated strings)."""

    __slots__ = ("_positions", "_prefix")

    def __init__(self, positions: Mapping[PathKey, SourcePos], prefix: PathKey) -> None:
        self._positions = positions
        self._prefix = prefix

    def get(self, path: PathKey, default: Any = None) -> Any:
        found = self._positions.get(self._prefix + path)
        return default if found is None else found

    def __getitem__(self, path: PathKey) -> SourcePos:
        found = self.get(path)
        if found is None:
            raise KeyError(path)
        return found  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[PathKey]:
        n, prefix = len(self._prefix), self._prefix
        return (path[n:] for path in self._positions if path[:n] == prefix)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Node(NamedTuple):
    """A value inside a loaded document, with a way to find positions below it. A named
    tuple, immutable as a frozen dataclass is: a big bundle's compile makes a thousand of
    them, and a frozen dataclass took three times as long to make."""

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
