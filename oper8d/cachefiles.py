"""Files kept between oper8d processes (``$XDG_CACHE_HOME/oper8d``): where they live and
the rules for trusting one.

The caches hold code that runs (compiled templates, compiled dataclass methods), so a file
is trusted only when nobody but this user could have written it: the folder is created
0700 and used only when it is a real folder of this user that group and others cannot
enter; a file is read only when it is a regular file of this user that nobody else can
write, begins with the expected magic line and its body matches the sha256 written after
that line. Files are written to a new private file (0600) and renamed into place, so a
reader never sees half a file; what a killed writer left is removed by a later one. Any
problem means "nothing stored", silently: a cache is an optimisation.
``OPER8D_NO_CACHE=1`` turns every cache off.

:func:`parsed_once` keeps what a parser made of a file (plain data) as ``marshal`` output,
which Python reads several times faster than it parses JSON.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from oper8d.fileio import FileRefused, read_bounded

__all__ = [
    "cache_dir",
    "parsed_once",
    "private_folder",
    "read_private",
    "trusted_cache_dir",
    "trusted_folder",
    "write_private",
]

_DIGEST = 32  # sha256
#: bound of a cache file read back: what oper8d writes for a bundle within the limits is far
#: smaller (a few hundred KiB), so a larger file is not one of ours and is ignored unread
MAX_FILE_BYTES = 64 * 1024 * 1024


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The cache folder, or None when ``OPER8D_NO_CACHE`` is set (to anything but ``0``
    or empty) or no home folder is known."""
    env = os.environ if environ is None else environ
    if env.get("OPER8D_NO_CACHE", "") not in ("", "0"):
        return None
    base = env.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        home = env.get("HOME") or os.path.expanduser("~")
        if not home or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "oper8d"


def trusted_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """:func:`cache_dir`, created if missing, when :func:`private_folder` trusts it; None
    when the cache is off, no home folder is known or the folder cannot be trusted."""
    return trusted_folder(cache_dir(environ))


def trusted_folder(folder: Path | None) -> Path | None:
    """``folder``, created if missing, when :func:`private_folder` trusts it, else None."""
    if folder is None:
        return None
    try:
        return folder if private_folder(folder) else None
    except OSError:
        return None


def private_folder(folder: Path) -> bool:
    """Create ``folder`` 0700 if missing, and its parent (the cache base, ``~/.cache``)
    when that is missing too, but nothing above: a home folder that does not exist is
    not made. Whether it is a real folder of this user that nobody else can enter or
    write. Raises OSError."""
    for missing in (folder.parent, folder):
        with contextlib.suppress(FileExistsError):
            missing.mkdir(mode=0o700)
    info = os.lstat(folder)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def read_private(path: Path, magic: bytes) -> bytes | None:
    """The body of the file at ``path`` written by :func:`write_private` with ``magic``, or
    None when there is none or it cannot be trusted (a link, another owner, writable by
    others, another magic, a body that does not match its checksum)."""
    try:
        data = read_bounded(path, MAX_FILE_BYTES, follow_links=False, accept=_private_file)
    except (OSError, FileRefused):
        return None
    head, digest = data[: len(magic)], data[len(magic) : len(magic) + _DIGEST]
    body = data[len(magic) + _DIGEST :]
    if head != magic or hashlib.sha256(body).digest() != digest:
        return None
    return body


def _private_file(info: os.stat_result) -> bool:
    """A file of this user that nobody else can write."""
    return info.st_uid == os.getuid() and not info.st_mode & 0o022


def write_private(path: Path, magic: bytes, body: bytes) -> None:
    """Write ``magic``, the sha256 of ``body`` and ``body`` to a new private file beside
    ``path``, then rename it over ``path``. Raises OSError."""
    import secrets  # (only a process that changed a cache writes: a warm render does not)

    data = magic + hashlib.sha256(body).digest() + body
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _remove_stale_temporaries(path)


#: a temporary file older than this, beside a file just written, was left by a writer that
#: was killed before its rename (a live one renames within milliseconds)
_STALE_NS = 600_000_000_000


def _remove_stale_temporaries(path: Path) -> None:
    """Remove the temporary files of ``path`` that killed writers left behind, judged by
    the time of the file just written (no clock needed)."""
    prefix = f".{path.name}."
    with contextlib.suppress(OSError):
        written = os.stat(path).st_mtime_ns
        with os.scandir(path.parent) as entries:
            for entry in entries:
                name = entry.name
                ours = name.startswith(prefix) and name.endswith(".tmp") and entry.is_file()
                if ours and entry.stat().st_mtime_ns < written - _STALE_NS:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


def parsed_once(folder: Path | None, name: str, source: bytes, parse: Callable[[], Any]) -> Any:
    """``parse()``, the plain data (dicts, lists, strings, numbers) parsed from ``source``,
    kept in ``folder`` (None: not kept) as ``name`` between processes. What is kept is
    used only for the same ``source`` read by the same Python build (the magic line names
    both: marshal's format is the build's), from a folder :func:`private_folder` trusts;
    anything else is parsed again and kept."""
    folder = trusted_folder(folder)
    if folder is None:
        return parse()
    build = f"{sys.implementation.cache_tag} {sys.version}".encode()
    digest = hashlib.sha256(source).hexdigest().encode()
    magic = b"oper8d-parsed 1 " + build + b" " + digest + b"\n"
    path = folder / name
    body = read_private(path, magic)
    if body is not None:
        with contextlib.suppress(ValueError, EOFError, TypeError):
            return marshal.loads(body)
    data = parse()
    with contextlib.suppress(OSError, ValueError):
        write_private(path, magic, marshal.dumps(_shared_strings(data)))
    return data


def _shared_strings(data: Any) -> Any:
    """``data`` with equal strings made one object, which marshal then writes once (a
    schema repeats its keys and type names thousands of times): a third smaller, faster
    to read."""
    if isinstance(data, dict):
        return {_shared_strings(key): _shared_strings(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_shared_strings(value) for value in data]
    return sys.intern(data) if type(data) is str else data
