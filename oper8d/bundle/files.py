"""Bundle paths kept inside the bundle folder, and bundle files read whole.

``bundle.loader`` reads ``operator.yaml`` and included files through :class:`BundleFiles`,
``bundle.components`` text templates through :func:`read_bundle_text`; ``bundletest`` and
``manifests`` use :func:`resolve_path` and :func:`read_regular_file`. ``bundle.loader``
exports these names too, where their callers import them.

A path written in a bundle is relative to the bundle folder and may not leave it (no
absolute path, no ``..``, no symlink out); only regular files are read (a FIFO or a device
in a bundle would block or never end), refused from their size before they are read
(``oper8d.fileio``); text must be UTF-8.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.fileio import FileTooLarge, NotRegularFile, read_bounded
from oper8d.limits import LimitExceeded, Limits

__all__ = ["BundleFiles", "decode_utf8", "read_bundle_text", "read_regular_file", "resolve_path"]


def _relative(relpath: str, pos: SourcePos) -> PurePosixPath:
    """``relpath`` as a relative path inside the bundle (``resolve_path``'s rules)."""
    if not isinstance(relpath, str) or not relpath.strip():
        raise BundleError(Problem("empty path: write a path relative to the bundle folder", pos))
    pure = PurePosixPath(relpath.replace("\\", "/"))
    if pure.is_absolute() or (len(relpath) > 1 and relpath[0].isalpha() and relpath[1] == ":"):
        raise BundleError(
            Problem(
                f"path {relpath!r} is absolute: bundle paths are relative to the bundle folder",
                pos,
            )
        )
    if ".." in pure.parts:
        raise BundleError(
            Problem(f"path {relpath!r} uses '..': bundle paths may not leave the bundle", pos)
        )
    if "\0" in relpath:
        raise BundleError(Problem(f"path {relpath!r} holds a NUL character", pos))
    return pure


def _real(path: Path, relpath: str, pos: SourcePos) -> Path:
    """``path.resolve()``; a symlink loop (or a path the system cannot follow) is an
    error at ``pos``."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as err:  # 3.11 raises RuntimeError("Symlink loop ...")
        reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
        raise BundleError(Problem(f"path {relpath!r} cannot be followed: {reason}", pos)) from None


def resolve_path(root: Path, relpath: str, *, pos: SourcePos) -> Path:
    """The real path of the bundle file ``relpath``, refusing anything outside the bundle.

    Rejected, each with a BundleError at ``pos`` (where the path is written): an empty path,
    an absolute path, any ``..`` component, and a path that leaves ``root`` through a symlink.
    The file need not exist.
    """
    pure = _relative(relpath, pos)
    real_root = _real(root, relpath, pos)
    return _inside(real_root, _real(real_root / pure, relpath, pos), relpath, pos)


def _inside(real_root: Path, real: Path, relpath: str, pos: SourcePos) -> Path:
    if not real.is_relative_to(real_root):
        raise BundleError(
            Problem(
                f"path {relpath!r} leads outside the bundle through a symlink (to {real}); "
                "copy the file into the bundle instead",
                pos,
            )
        )
    return real


class BundleFiles:
    """:func:`resolve_path` for the files of one bundle during one load, without its
    repeated work: the bundle folder's real path and the real path of each folder holding
    a file are found once (each ``Path.resolve`` checks every folder from ``/`` down, and
    that was most of reading a text template). A file's own name is looked at each time:
    when it is a symlink, or cannot be looked at, the path is resolved in full."""

    def __init__(self, root: Path, *, limits: Limits | None = None) -> None:
        """``limits``: its ``fileBytes`` bounds each file."""
        self.root = root
        self._max_bytes = (limits if limits is not None else Limits()).file_bytes
        self._real_root: Path | None = None
        # the real folders holding the files, as text plus "/" ("" when outside the bundle)
        self._folders: dict[PurePosixPath, str] = {}

    def read(
        self, relpath: str, file: str, *, resolve_at: SourcePos, where: SourcePos, missing: str = ""
    ) -> bytes:
        """:func:`read_regular_file` of :meth:`resolve` (at ``resolve_at``) of ``relpath``."""
        path = self.resolve(relpath, pos=resolve_at)
        return read_regular_file(path, file, where, max_bytes=self._max_bytes, missing=missing)

    def resolve(self, relpath: str, *, pos: SourcePos) -> Path:
        pure = _relative(relpath, pos)
        real_root = self._real_root
        if real_root is None:
            real_root = self._real_root = _real(self.root, relpath, pos)
        folder = self._folders.get(pure.parent)
        if folder is None:
            real_folder = _real(real_root / pure.parent, relpath, pos)
            inside = real_folder.is_relative_to(real_root)
            folder = os.path.join(real_folder, "") if inside else ""
            self._folders[pure.parent] = folder
        if folder and pure.name:
            real = folder + pure.name
            try:
                simple = not stat.S_ISLNK(os.lstat(real).st_mode)
            except FileNotFoundError:
                simple = True  # (as Path.resolve: a missing file is its own real path)
            except OSError:
                simple = False
            if simple:  # inside the bundle, as its folder is
                return Path(real)
        return _inside(real_root, _real(real_root / pure, relpath, pos), relpath, pos)


def read_regular_file(
    path: Path,
    file: str,
    where: SourcePos,
    *,
    max_bytes: int,
    limit: str = "file_bytes",
    missing: str = "",
) -> bytes:
    """The bytes of ``path``, which must be a regular file (not a FIFO, device or folder)
    of at most ``max_bytes`` (the value of the limit named ``limit``), both checked before
    anything is read (``fileio.read_bounded``); ``file`` names it in errors placed at
    ``where`` (``missing``: the message when it does not exist)."""
    try:
        return read_bounded(path, max_bytes)
    except FileNotFoundError:
        message = missing or f"file {file!r} not found"
        raise BundleError(Problem(message, where)) from None
    except IsADirectoryError:
        raise BundleError(Problem(f"{file!r} is a folder, not a YAML file", where)) from None
    except NotRegularFile as err:
        if err.folder:
            raise BundleError(Problem(f"{file!r} is a folder, not a YAML file", where)) from None
        raise BundleError(
            Problem(f"{file!r} is not a regular file (a pipe or a device?): not read", where)
        ) from None
    except FileTooLarge as err:
        exceeded = LimitExceeded(limit, f"{file!r} holds {err.size} bytes, more than {max_bytes}")
        raise BundleError(Problem(str(exceeded), where)) from None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise BundleError(Problem(f"cannot read {file!r}: {reason}", where)) from None


def decode_utf8(raw: bytes, file: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise BundleError(
            Problem("not UTF-8 text: save the file as UTF-8", SourcePos(file, line, col))
        ) from None


def read_bundle_text(
    root: Path, relpath: str, *, pos: SourcePos, files: BundleFiles | None = None
) -> str:
    """The UTF-8 text of the bundle file ``relpath`` (a text template), kept inside the
    bundle by :func:`resolve_path` (``files``: the load's resolver of ``root``) and read
    only when it is a regular file."""
    files = files if files is not None else BundleFiles(root)
    file = PurePosixPath(relpath.replace("\\", "/")).as_posix()
    return decode_utf8(files.read(relpath, file, resolve_at=pos, where=pos), file)
