"""A parsed bundle file: its plain data and where every node is written.

``bundle.loader`` (libyaml's path) and ``bundle.ruamelyaml`` (ruamel's) both make a
:class:`Document`; ``bundle.compile``, ``bundle.validate`` and ``bundletest`` place their
problems with :meth:`Document.pos` and :meth:`Document.key_pos`. ``bundle.loader`` exports
it too, where its callers import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oper8d.errors import SourcePos

__all__ = ["Document", "PathKey", "nearest"]

PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """One parsed YAML file: its plain data and the source position of every node.

    Paths are tuples of mapping keys (``str``) and sequence indexes (``int``) from the root,
    e.g. ``("controllers", 0, "components", 2, "name")``; ``()`` is the root.
    """

    data: Any
    #: bundle-relative path as the user sees it, e.g. ``"operator.yaml"``
    file: str
    #: path -> position of the node's value (for a mapping entry: where its value starts)
    positions: Mapping[PathKey, SourcePos] = field(default_factory=dict)
    #: path -> position of the mapping key itself; used for "unknown key" errors
    key_positions: Mapping[PathKey, SourcePos] = field(default_factory=dict)

    def pos(self, path: Sequence[str | int]) -> SourcePos:
        """The most specific known position of ``path``: its own, else its nearest parent's."""
        return nearest(self.positions, tuple(path), self.file)

    def key_pos(self, path: Sequence[str | int]) -> SourcePos:
        """Where the mapping key of ``path`` is written; falls back to :meth:`pos`."""
        found = self.key_positions.get(tuple(path))
        return found if found is not None else self.pos(path)


def nearest(positions: Mapping[PathKey, SourcePos], path: PathKey, file: str) -> SourcePos:
    """The position of ``path`` in ``positions``, else of its nearest parent, else the file."""
    for end in range(len(path), -1, -1):
        found = positions.get(path[:end])
        if found is not None:
            return found
    return SourcePos(file)
