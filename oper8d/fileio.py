"""Reading a whole file with a bound: the one way oper8d reads a file it is given.

Bundle files, CR files, golden files, CRD and schema files and the cache's own files are
all read with :func:`read_bounded`, which looks at the file before reading any of it: only
a regular file is read (a FIFO or a device would block or never end), and one larger than
the caller's bound is refused from its size, so a 2 GiB template costs a ``stat``, not a
``MemoryError``. Each caller turns the refusal into its own kind of error (a bundle error
naming the file and the limit, "nothing stored" for a cache), so this module imports
nothing of oper8d and sits below every other.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["FileRefused", "FileTooLarge", "NotRegularFile", "read_bounded"]


class FileRefused(Exception):
    """The file was looked at and not read."""


class NotRegularFile(FileRefused):
    """Not a regular file; ``folder``: it is a folder (else a pipe, device or socket)."""

    def __init__(self, folder: bool) -> None:
        self.folder = folder
        super().__init__("a folder" if folder else "not a regular file")


class FileTooLarge(FileRefused):
    """More than ``max_bytes``; ``size`` is what it holds (at least, when it grew while read)."""

    def __init__(self, size: int, max_bytes: int) -> None:
        self.size = size
        self.max_bytes = max_bytes
        super().__init__(f"{size} bytes, more than {max_bytes}")


def read_bounded(
    path: str | Path,
    max_bytes: int,
    *,
    follow_links: bool = True,
    accept: Callable[[os.stat_result], bool] | None = None,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    Raises :class:`NotRegularFile` or :class:`FileTooLarge` before reading anything, and
    ``OSError`` when the file cannot be opened or read. ``follow_links=False``: a symlink
    is not opened (``OSError``). ``accept``: a further check of the opened file's status
    (its owner, its mode: ``cachefiles``), :class:`FileRefused` when it says no. A file
    that grows past the bound while it is read is refused too, and one whose size the
    system does not report (``/proc``) is read up to the bound: at most ``max_bytes + 1``
    bytes are ever read.
    """
    # non-blocking: opening a FIFO must not wait for a writer (the type check refuses it);
    # it changes nothing for a regular file
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:  # (a folder opens here, but os.fdopen would refuse it)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(stat.S_ISDIR(info.st_mode))
        if info.st_size > max_bytes:
            raise FileTooLarge(info.st_size, max_bytes)
        if accept is not None and not accept(info):
            raise FileRefused("refused by its status")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as stream:
        # the size it has and one byte more, to see whether it has more (a read allocates
        # what it asks for: asking for the bound every time cost 4x a plain read); the rest
        # up to the bound only when it grew, or its size is not reported (/proc)
        data = stream.read(info.st_size + 1)
        if len(data) > info.st_size:
            data += stream.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise FileTooLarge(len(data), max_bytes)
    return data
