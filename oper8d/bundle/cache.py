"""The compile cache: Jinja's compiled code of a bundle's templates, kept between processes.

Compiling a bundle's templates (Jinja's parse, code generation and Python's ``compile``) is
most of what loading a big bundle costs, and it gives the same code every time for the same
source. ``bundle.compile`` therefore hands the ``TemplateEngine`` a :class:`CodeStore` for the
bundle: a template whose exact source (and file name, for text templates) was compiled before
is rebuilt from its stored code object, and everything else about the bundle (the YAML parse,
validation, positions, every check) runs as always. A stored entry is looked up by its source,
so an edited file can never get stale code: its new source is simply not found. One store
file per bundle folder holds what its last load compiled (and only that), whether its
``operator.yaml`` and included files passed schema validation (by a sha256 of their data),
and their libyaml parses with positions (by a sha256 of their text; about a third of a warm
load was the parse of a big ``operator.yaml``).

Where: ``$XDG_CACHE_HOME/oper8d`` or ``~/.cache/oper8d``; ``OPER8D_NO_CACHE=1`` turns it off.
The store file name is a hash of the bundle's real path, the limits, the versions of Python,
Jinja, PyYAML, libyaml, the schema libraries and oper8d, and a digest of oper8d's template
and bundle packages and bundle schemas (stricter than the version number, which a
development checkout does not change: each file's status, or all their contents while one
changed moments ago, see ``_code_digest``); the file repeats that key inside.

The security model: the bundle author is trusted, the CR author is not, and the cache holds
code that runs. Its files follow the rules of :mod:`oper8d.cachefiles` (a private folder,
files only this user can write, checksummed, written whole), and a store file must also
repeat its key. Any problem (unreadable, corrupt, foreign, another version) means a normal
compile, silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Any

from oper8d.cachefiles import read_private, trusted_cache_dir, write_private
from oper8d.limits import Limits
from oper8d.template.environment import CodeEntry

if TYPE_CHECKING:
    from oper8d.bundle.fastyaml import Parsed

__all__ = ["CodeStore", "data_key", "open_store"]

#: the first bytes of a store file; a new layout gets a new magic
_MAGIC = b"oper8d-compile-cache 2\n"
#: more store files than this: the oldest are removed when one is written
_MAX_FILES = 64


class CodeStore:
    """The compiled templates of one bundle: read once, written back when they changed."""

    def __init__(
        self,
        folder: Path,
        key: str,
        entries: dict[str, CodeEntry],
        passed: frozenset[str] = frozenset(),
        parses: dict[str, bytes] | None = None,
    ) -> None:
        self._folder = folder
        self._key = key
        self._known = entries
        self._used: dict[str, CodeEntry] = {}
        self._known_passed = passed
        self._passed: set[str] = set()
        # sha256 of a document's text -> its parse, marshalled (each use gets its own data)
        self._known_parses = parses or {}
        self._parses: dict[str, bytes] = {}
        self._changed = False

    @property
    def path(self) -> Path:
        return self._folder / (hashlib.sha256(self._key.encode()).hexdigest()[:40] + ".cache")

    def get(self, key: str) -> CodeEntry | None:
        entry = self._known.get(key)
        if entry is not None:
            self._used[key] = entry
        return entry

    def put(self, key: str, entry: CodeEntry) -> None:
        self._used[key] = entry
        self._changed = True

    def passed(self, check: str) -> bool:
        """Whether ``check`` (a schema check of some data, see ``data_key``) found no
        problem in an earlier load."""
        if check in self._known_passed:
            self._passed.add(check)
            return True
        return False

    def record_pass(self, check: str) -> None:
        self._passed.add(check)
        self._changed = True

    def parsed(self, text: str) -> Parsed | None:
        """The libyaml parse of ``text`` an earlier load kept (``bundle.loader.ParseCache``)."""
        key = _text_key(text)
        stored = self._known_parses.get(key)
        if stored is None:
            return None
        try:
            parsed = marshal.loads(stored)
        except (ValueError, EOFError, TypeError):
            return None
        if not (isinstance(parsed, tuple) and len(parsed) == 3):
            return None
        self._parses[key] = stored
        return parsed

    def record_parsed(self, text: str, parsed: Parsed) -> None:
        try:
            self._parses[_text_key(text)] = marshal.dumps(parsed)
        except ValueError:  # (cannot happen for plain data; the cache is an optimisation)
            return
        self._changed = True

    def save(self) -> None:
        """Write what this load used, if it differs from what was read; errors are ignored
        (the cache is an optimisation)."""
        if (
            not self._changed
            and len(self._used) == len(self._known)
            and self._passed == self._known_passed
            and len(self._parses) == len(self._known_parses)
        ):
            return
        body = marshal.dumps((self._key, self._used, frozenset(self._passed), self._parses))
        with contextlib.suppress(OSError):
            write_private(self.path, _MAGIC, body)
            _prune(self._folder)
        self._known = dict(self._used)
        self._known_passed = frozenset(self._passed)
        self._known_parses = dict(self._parses)
        self._changed = False


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def data_key(check: str, data: Any) -> str | None:
    """A key for "``check`` passed on ``data``" (a sha256 of the check's name and the data
    marshalled), or None for data marshal cannot hold.

    Marshal format 0 writes no references and no interning marks, so equal data of equal
    types always gives the same bytes, however it was built (a fresh parse, the stored
    one); and ``marshal.loads`` turns those bytes back into the data, so different data
    (``1``, ``1.0``, ``True``, ``"1"``, a list or a tuple) never shares a key. A fifth of
    the cost of JSON, which also made ``{1: x}`` and ``{"1": x}`` one key."""
    try:
        blob = marshal.dumps(data, 0)
    except ValueError:
        return None
    digest = hashlib.sha256(check.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(blob)
    return digest.hexdigest()


def open_store(
    root: Path, limits: Limits, environ: Mapping[str, str] | None = None
) -> CodeStore | None:
    """The store of the bundle at ``root`` (empty when nothing usable is stored), or None
    when the cache is off or its folder cannot be trusted."""
    folder = trusted_cache_dir(environ)
    if folder is None:
        return None
    try:
        key = _key(root, limits)
    except (OSError, ValueError):
        return None
    store = CodeStore(folder, key, {})
    entries, passed, parses = _read(store.path, key)
    return CodeStore(folder, key, entries, passed, parses)


def _key(root: Path, limits: Limits) -> str:
    """What stored code depends on besides its source: the bundle folder (one file per
    bundle), the limits, and the code that generates and runs it. Raises OSError."""
    import jinja2
    import yaml

    parts = [
        str(root.resolve()),
        repr(limits),
        sys.version,
        sys.implementation.cache_tag or "",
        jinja2.__version__,
        yaml.__version__,  # the stored parses: PyYAML and the libyaml it runs
        yaml._yaml.get_version_string() if yaml.__with_libyaml__ else "",
        _libraries_status(),  # the stored schema checks
        # the package is imported by now (this module is in it); no import: layering
        str(getattr(sys.modules.get("oper8d"), "__version__", "")),
        _code_digest(),  # stricter than oper8d's version number
    ]
    return "\0".join(parts)


#: the libraries the stored schema checks ran (``bundle/spec_schema.py``), not imported by
#: a warm load: known without an import by the status of their package's first file,
#: which installing another version replaces
_LIBRARIES = ("jsonschema", "referencing", "re2")


def _libraries_status() -> str:
    import importlib.util

    found = []
    for name in _LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
            info = os.stat(origin) if origin else None
        except (ImportError, ValueError, OSError):
            info = None
        status = (info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns) if info else ()
        found.append(f"{name}={origin}{status}")
    return ";".join(found)


#: the oper8d source stored results come from: (folder, file suffix)
_CODE = (("template", ".py"), ("bundle", ".py"), ("schemas", ".json"))
#: a file whose status changed less than this before a load is not known by its status
_SETTLED_NS = 2_000_000_000


def _code_digest(package: Path | None = None, now_ns: int | None = None) -> str:
    """A digest of the oper8d source that stored results come from: the template package
    (code generation, loop guards), the bundle package (parse, validation) and the bundle
    schemas (``package``: the oper8d folder). A change to any of them must not reuse older
    results, even when oper8d's version number did not change (a development checkout).

    The files are known by their status (name, size, inode, modification and change times
    in ns), which costs a fifth of reading and hashing them: any write to a file sets its
    change time to the clock's time, which no program can set back, and a replaced file is
    a new inode. A file could be written again within one tick of the file system's clock
    and keep its status, so when any file changed in the last two seconds (``now_ns``: the
    time now) the contents are hashed instead, as git treats "racily clean" files; a later
    write then comes at least two seconds after the change time seen."""
    if package is None:
        package = Path(__file__).resolve().parent.parent
    now = time.time_ns() if now_ns is None else now_ns
    found: list[tuple[str, str, os.stat_result]] = []
    for folder, suffix in _CODE:
        with os.scandir(package / folder) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(suffix) and not name.startswith(".") and entry.is_file():
                    found.append((f"{folder}/{name}", entry.path, entry.stat()))
    found.sort()
    digest = hashlib.sha256()
    if all(now - info.st_ctime_ns >= _SETTLED_NS for _, _, info in found):
        for name, _, info in found:
            status = (info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
            digest.update(f"{name}\0{status}\0".encode())
        return "status " + digest.hexdigest()
    for name, path, _ in found:
        with open(path, "rb") as stream:
            digest.update(name.encode() + b"\0" + stream.read() + b"\0")
    return "content " + digest.hexdigest()


_Stored = tuple[dict[str, CodeEntry], frozenset[str], dict[str, bytes]]
_NOTHING: _Stored = ({}, frozenset(), {})


def _read(path: Path, key: str) -> _Stored:
    """The entries and passed checks stored at ``path`` under ``key``; nothing when there
    are none or the file is not one this process wrote (wrong owner or mode, corrupt,
    another key)."""
    body = read_private(path, _MAGIC)
    if body is None:
        return _NOTHING
    try:
        stored_key, entries, passed, parses = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return _NOTHING
    if (
        stored_key != key
        or not isinstance(entries, dict)
        or not isinstance(passed, frozenset)
        or not all(isinstance(p, str) for p in passed)
        or not isinstance(parses, dict)
    ):
        return _NOTHING
    return (
        {k: v for k, v in entries.items() if isinstance(k, str) and _is_entry(v)},
        passed,
        {k: v for k, v in parses.items() if isinstance(k, str) and isinstance(v, bytes)},
    )


def _is_entry(value: object) -> bool:
    if not isinstance(value, tuple) or len(value) != 3:
        return False
    native, references, code = value
    return (
        isinstance(native, bool)
        and isinstance(references, frozenset)
        and all(isinstance(r, str) for r in references)
        and isinstance(code, CodeType)
    )


def _prune(folder: Path) -> None:
    """Keep the ``_MAX_FILES`` most recently written store files."""
    files = [p for p in folder.iterdir() if p.suffix == ".cache" and p.is_file()]
    if len(files) <= _MAX_FILES:
        return
    files.sort(key=lambda p: p.stat().st_mtime_ns)
    for old in files[: len(files) - _MAX_FILES]:
        with contextlib.suppress(OSError):
            old.unlink()
