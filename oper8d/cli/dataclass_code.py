"""Compiled dataclass methods kept between ``oper8d`` processes.

``@dataclass`` writes the source text of the methods it adds to a class (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` of a frozen
one) and compiles it with ``exec`` each time the class is made, that is at every import.
On CPython 3.11 that costs about 0.5 ms per class: the 53 classes an ``oper8d render``
imports took ~25 ms, a ninth of the whole command (``docs/benchmarks.md``).

:func:`reused_dataclass_code` is a context manager (``cli/process.py`` wraps the command in
it) under which the methods of oper8d's own classes are made from code an earlier process
compiled from the same text. ``dataclasses`` calls ``exec`` with that text: for the
duration of the block, ``exec`` in the ``dataclasses`` module is a function that looks the
whole text up in the stored code and compiles it only when it is not there. So the code
is always the code of exactly that text (a changed class, or another Python that writes
other text, is compiled afresh), compiled the way ``exec`` compiles it (no ``__future__``
flags of the caller), and a class is the same with or without the store (a test compares
every oper8d dataclass's methods both ways). Classes of other packages are passed through
unchanged. The store is one file per Python build in the cache folder, trusted and written
by the rules of :mod:`oper8d.cachefiles` (it holds code that runs).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import marshal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import Any

from oper8d.cachefiles import private_folder, read_private, write_private

__all__ = ["StoredCode", "reused_dataclass_code"]

_MAGIC = b"oper8d-dataclass-code 2 "
#: more stored texts than this (all of oper8d's methods number ~500): keep only what the
#: process that writes used, so the file, which every process reads whole, stays small
#: after upgrades (at 2,048 texts reading it cost as much as compiling)
_MAX_ENTRIES = 640


@contextlib.contextmanager
def reused_dataclass_code(folder: Path | None) -> Iterator[StoredCode]:
    """Within the block, oper8d's dataclasses reuse code stored in ``folder`` (None: no
    store, nothing changes); code compiled in the block is stored when it ends. Yields
    the store, which counts what it served."""
    if folder is None or hasattr(dataclasses, "exec"):  # (no store, or already hooked)
        yield StoredCode({})
        return
    tag = _python_tag()
    path = folder / f"dataclasses-{tag}.code"
    magic = _MAGIC + tag.encode() + b"\n"  # a file renamed from another Python's is refused
    store = StoredCode(_load(folder, path, magic))
    dataclasses.exec = store.exec  # type: ignore[attr-defined]
    try:
        yield store
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
        store.save(folder, path, magic)


class StoredCode:
    """The code of each source text seen, as stored and as compiled in this process;
    ``stored`` and ``compiled`` count the texts served each way."""

    def __init__(self, known: dict[str, CodeType]) -> None:
        self._known = known
        self._used: dict[str, CodeType] = {}
        self.stored = 0
        self.compiled = 0

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        """``exec`` as ``dataclasses`` calls it: the text of a class's methods."""
        name = globals.get("__name__") if isinstance(globals, dict) else None
        if not isinstance(source, str) or not isinstance(name, str) or not _ours(name):
            builtins.exec(_compiled(source), globals, locals)
            return
        code = self._known.get(source)
        if code is None:
            code = _compiled(source)
            self.compiled += 1
        else:
            self.stored += 1
        self._used[source] = code
        builtins.exec(code, globals, locals)

    def save(self, folder: Path, path: Path, magic: bytes) -> None:
        """Write the store when this process compiled something new; errors are ignored
        (the store is an optimisation)."""
        if not self.compiled:
            return
        entries = {**self._known, **self._used}
        if len(entries) > _MAX_ENTRIES:
            entries = self._used
        with contextlib.suppress(OSError, ValueError):
            if private_folder(folder):
                write_private(path, magic, marshal.dumps(entries))


def _ours(module: str) -> bool:
    return module == "oper8d" or module.startswith("oper8d.")


def _compiled(source: Any) -> Any:
    """What ``exec`` runs for ``source``: text is compiled as ``dataclasses`` compiles it,
    without the ``__future__`` flags of this module."""
    if isinstance(source, str):
        return compile(source, "<string>", "exec", dont_inherit=True)
    return source


def _python_tag() -> str:
    """Code objects are only valid for the Python that made them: the implementation,
    its version and its build."""
    import hashlib

    build = f"{sys.implementation.cache_tag}\0{sys.version}".encode()
    return hashlib.sha256(build).hexdigest()[:16]


def _load(folder: Path, path: Path, magic: bytes) -> dict[str, CodeType]:
    """The stored code by source text; nothing when there is none or it is not trusted."""
    try:
        if not private_folder(folder):
            return {}
    except OSError:
        return {}
    body = read_private(path, magic)
    if body is None:
        return {}
    try:
        entries = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return {}
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, CodeType)}
