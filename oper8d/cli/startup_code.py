"""What Python compiles at every start of the ``oper8d`` process, kept between processes.

Two kinds of code are compiled afresh at every import, from the same input each time:

- ``@dataclass`` writes the source text of the methods it adds to a class (``__init__``,
  ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``/``__delattr__`` of a frozen one)
  and compiles it with ``exec``: on CPython 3.11 ~0.5 ms per class, ~25 ms for the 53
  classes an ``oper8d render`` imports;
- ``re.compile`` parses a pattern and compiles it into a program for the regular
  expression engine: ~20 ms for the ~100 patterns that the libraries (PyYAML's reader alone
  ~6 ms) and oper8d compile when imported.

Together they were a fifth of a warm ``oper8d render`` (``docs/benchmarks.md``).
:func:`reused_startup_code` is a context manager (``cli/process.py`` wraps the command in
it) under which both are built from what an earlier process compiled from the same input:

- the methods of oper8d's own classes: ``exec`` in the ``dataclasses`` module is, for the
  block, a function that looks the whole text up and compiles only text it does not hold,
  as ``exec`` compiles it (without this module's ``__future__`` flags); classes of other
  packages pass through;
- the regular expressions modules compile as they are imported (Python caches a compiled
  pattern only within a process): ``re``'s compile step looks up the pattern and its
  flags and builds the pattern from the stored program (``_sre.compile``, as that step
  does), parsing only patterns it does not hold. Patterns compiled by running code (which
  may be made from data) are compiled as usual and not kept.

The input itself is the key (the whole text; the pattern and flags), so stored code is
reused only for exactly what it was compiled from, and compiling that input gives that
code: a class or pattern is the same with or without the store (tests compare every oper8d
dataclass's methods and every pattern a render compiles, both ways). Both hooks replace
private functions of the standard library, so they are installed only on the Pythons whose
``re`` compile step and ``dataclasses`` are as described (CPython 3.11 to 3.13); on any
other nothing changes. The store is one file per Python build in the cache folder, whose
magic line names that build, trusted and written by the rules of :mod:`oper8d.cachefiles`
(it holds code that runs).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import marshal
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import Any

from oper8d.cachefiles import read_private, trusted_folder, write_private

__all__ = ["StoredCode", "reused_startup_code"]

_MAGIC = b"oper8d-startup-code 1 "
#: more stored entries than this (oper8d's methods and the patterns of its libraries
#: number ~700): keep only what the process that writes used, so the file, which every
#: process reads whole, stays small after upgrades (at 2,048 methods reading it cost as
#: much as compiling them)
_MAX_ENTRIES = 1024
#: a store that served this many times more than was compiled is not rewritten: a few
#: patterns differ in every process (``tokenize`` builds one from a set, whose order
#: changes with hash randomization), and writing the whole file after every command would
#: cost more than compiling them
_REWRITE_RATIO = 20
#: the Pythons whose ``dataclasses`` and ``re._compiler.compile`` the hooks are made for
_SUPPORTED = ((3, 11), (3, 12), (3, 13))

#: a stored regular expression: its flags (the pattern's own included), its program, the
#: number of groups, and group names by index and by name
_Program = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


@contextlib.contextmanager
def reused_startup_code(folder: Path | None) -> Iterator[StoredCode]:
    """Within the block, oper8d's dataclasses and every regular expression reuse code
    stored in ``folder`` (None: no store, nothing changes); what is compiled in the block
    is stored when it ends. Yields the store, which counts what it served."""
    supported = sys.implementation.name == "cpython" and sys.version_info[:2] in _SUPPORTED
    compiler = getattr(re, "_compiler", None)
    if folder is None or not supported or compiler is None or hasattr(dataclasses, "exec"):
        yield StoredCode({})  # (no store, another Python, or already hooked)
        return
    tag = _python_tag()
    path = folder / f"startup-{tag}.code"
    magic = _MAGIC + tag.encode() + b"\n"  # a file renamed from another Python's is refused
    store = StoredCode(_load(folder, path, magic), compiler)
    dataclasses.exec = store.exec  # type: ignore[attr-defined]
    compiler.compile = store.compile_pattern
    try:
        yield store
    finally:
        compiler.compile = store.stock_compile
        del dataclasses.exec  # type: ignore[attr-defined]
        store.save(folder, path, magic)


class StoredCode:
    """The code of each input seen, as stored and as compiled in this process; ``stored``
    and ``compiled`` count the inputs served each way."""

    def __init__(self, known: dict[Any, Any], compiler: Any = None) -> None:
        self._known = known
        self._used: dict[Any, Any] = {}
        # re's compile step, and the engine's constructor that it ends with
        self.stock_compile: Any = getattr(compiler, "compile", None)
        self.build_pattern: Any = getattr(getattr(compiler, "_sre", None), "compile", None)
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

    def compile_pattern(self, pattern: Any, flags: int = 0) -> re.Pattern[Any]:
        """``re._compiler.compile`` as ``re`` calls it, for a pattern not in its own
        in-process cache."""
        if not isinstance(pattern, str | bytes) or flags & re.DEBUG:
            stock: re.Pattern[Any] = self.stock_compile(pattern, flags)
            return stock
        key = (type(pattern).__name__, pattern, int(flags))
        program = self._known.get(key)
        if program is None:
            if not _importing():  # made by running code, maybe from data: not kept
                made: re.Pattern[Any] = self.stock_compile(pattern, flags)
                return made
            program = _program(pattern, flags)
            self.compiled += 1
        else:
            self.stored += 1
        self._used[key] = program
        built: re.Pattern[Any] = self.build_pattern(pattern, *program)
        return built

    def save(self, folder: Path, path: Path, magic: bytes) -> None:
        """Write the store when this process compiled something new (more than a few
        inputs, when the store served the rest); errors are ignored (the store is an
        optimisation)."""
        if not self.compiled or self.compiled * _REWRITE_RATIO < self.stored:
            return
        entries = {**self._known, **self._used}
        if len(entries) > _MAX_ENTRIES:
            entries = self._used
        if trusted_folder(folder) is not None:
            with contextlib.suppress(OSError, ValueError):
                write_private(path, magic, marshal.dumps(entries))


def _ours(module: str) -> bool:
    return module == "oper8d" or module.startswith("oper8d.")


def _compiled(source: Any) -> Any:
    """What ``exec`` runs for ``source``: text is compiled as ``dataclasses`` compiles it,
    without the ``__future__`` flags of this module."""
    if isinstance(source, str):
        return compile(source, "<string>", "exec", dont_inherit=True)
    return source


def _importing() -> bool:
    """Whether a module is being imported: the patterns worth keeping are those a module
    compiles as it loads, the same in every process. Patterns running code compiles can
    be made from data (a render compiles one from a fresh nonce each time), so keeping
    them would only grow the store and rewrite it after every command."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _program(pattern: str | bytes, flags: int) -> _Program:
    """What ``re._compiler.compile`` hands ``_sre.compile`` for ``pattern`` (the same
    steps, on the Pythons of ``_SUPPORTED``), as plain data marshal can keep."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return (
        int(flags | parsed.state.flags),
        [int(op) for op in code],  # (its opcodes are an int subclass marshal refuses)
        parsed.state.groups - 1,
        groupindex,
        tuple(indexgroup),
    )


def _python_tag() -> str:
    """Code objects and regular expression programs are only valid for the Python that
    made them: the implementation, its version and its build."""
    import hashlib

    build = f"{sys.implementation.cache_tag}\0{sys.version}".encode()
    return hashlib.sha256(build).hexdigest()[:16]


def _load(folder: Path, path: Path, magic: bytes) -> dict[Any, Any]:
    """The stored code by input; nothing when there is none or it is not trusted."""
    if trusted_folder(folder) is None:
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
    return {k: v for k, v in entries.items() if _is_entry(k, v)}


def _is_entry(key: object, value: object) -> bool:
    if isinstance(key, str):
        return isinstance(value, CodeType)
    return (
        isinstance(key, tuple)
        and len(key) == 3
        and isinstance(value, tuple)
        and len(value) == 5
        and isinstance(value[0], int)
        and isinstance(value[1], list)
        and isinstance(value[2], int)
        and isinstance(value[3], dict)
        and isinstance(value[4], tuple)
    )
