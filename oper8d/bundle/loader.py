"""Read bundle YAML files into plain Python data that remembers where every node came from.

``bundle.compile`` loads ``operator.yaml`` and every included component file with
:func:`load_yaml_file`, validates the result (``bundle.validate``) and builds the model; every
error it reports points at ``file:line:col`` through :meth:`Document.pos` (``bundle.document``).
Paths written in a bundle go through :func:`resolve_path`, which keeps them inside the bundle
folder, and files are read by ``bundle.files``.

Parsing uses libyaml's event stream when the document allows (``bundle.fastyaml``: the common
subset, read exactly as below), otherwise ruamel.yaml's round-trip loader
(``bundle.ruamelyaml``), once per file, because it is the loader that records the line and
column of each mapping key, mapping value and sequence item. Its tree is then converted to
plain ``dict`` / ``list`` / ``str`` / ``int`` / ``float`` / ``bool`` / ``None``, so nothing
downstream sees ruamel types. ruamel is the slow loader (see docs/benchmarks.md): it runs when
a bundle is loaded, never while reconciling, and is imported only when a document needs it.

YAML dialect: ruamel reads YAML 1.2, so ``on``, ``yes`` and ``no`` stay strings and only
``true`` / ``false`` are booleans. The Kubernetes YAML parser (YAML 1.1) would read ``yes`` as
true; a bundle that means a boolean should write ``true``. Two further choices keep the data
JSON-shaped, as the Kubernetes parser does: timestamps stay strings (``2024-01-01`` is the
string ``"2024-01-01"``) and scalar mapping keys become strings (``1:`` is the key ``"1"``).
Duplicate keys, several documents in one file and an empty file are errors. Merge keys
merge (``<<: *base``, and a list of mappings, ``<<: [*a, *b]``); an unknown tag (``!foo``)
is dropped and its node keeps its data, on a scalar, a mapping or a sequence alike; a tag
that cannot build its node (``!!int x``) or builds a value
JSON has no form for (``!!set``, ``!!binary``, ``!!pairs``) is an error at its line.

Limits (``oper8d.limits.Limits``, passed by the caller): only regular files are read (a FIFO
or a device in a bundle would block or never end), a document may nest at most
``nestingDepth`` levels and its aliases may add at most ``yamlAliasNodes`` nodes when
expanded (an alias bomb is an error, not gigabytes of memory), a bundle file may hold at
most ``fileBytes`` and a CR file read with :func:`load_cr_file` at most ``crBytes``, both
refused from the file's size before it is read (``oper8d.fileio``).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Protocol

from oper8d.bundle.document import Document, PathKey
from oper8d.bundle.fastyaml import Parsed, SourcePositions, fast_parse
from oper8d.bundle.files import (
    BundleFiles,
    decode_utf8,
    read_bundle_text,
    read_regular_file,
    resolve_path,
)
from oper8d.bundle.ruamelyaml import load_yaml_text_ruamel
from oper8d.errors import SourcePos
from oper8d.limits import Limits

# the paths and file reads (bundle.files), the document (bundle.document) and the ruamel
# path (bundle.ruamelyaml) live in their own modules; their callers import them from here
__all__ = [
    "BundleFiles",
    "Document",
    "ParseCache",
    "PathKey",
    "load_cr_file",
    "load_yaml_file",
    "load_yaml_text",
    "load_yaml_text_ruamel",
    "read_bundle_text",
    "read_regular_file",
    "resolve_path",
]


class ParseCache(Protocol):
    """Parses of the libyaml path kept by their text (``bundle.cache.CodeStore``): the
    parse is a pure function of the text (and ``nestingDepth``, part of the store's key)."""

    def parsed(self, text: str) -> Parsed | None: ...

    def record_parsed(self, text: str, parsed: Parsed) -> None: ...


def load_yaml_file(
    root: Path,
    relpath: str,
    *,
    pos: SourcePos | None = None,
    limits: Limits | None = None,
    cache: ParseCache | None = None,
    files: BundleFiles | None = None,
) -> Document:
    """Load the bundle file ``relpath`` (exactly one YAML document) below ``root``.

    ``pos`` is where the file is referenced (an ``include:``); errors about the file as a
    whole (not found, unreadable) point there, errors inside it point into the file.
    ``cache``: where an earlier load's parse of the same text may be (see ``ParseCache``).
    ``files``: the load's resolver of ``root`` (:class:`BundleFiles`).
    """
    files = files if files is not None else BundleFiles(root, limits=limits)
    file = PurePosixPath(relpath.replace("\\", "/")).as_posix()
    where = pos if pos is not None else SourcePos(file)
    missing = f"file {file!r} not found in the bundle {root}"
    raw = files.read(relpath, file, resolve_at=where, where=where, missing=missing)
    return load_yaml_text(decode_utf8(raw, file), file, limits, cache)


def load_cr_file(path: str, limits: Limits | None = None) -> Document:
    """Load a CR file given on the command line: a regular file of at most ``crBytes``
    (the API server's default object size limit), holding one YAML document."""
    limits = limits if limits is not None else Limits()
    raw = read_regular_file(
        Path(path), path, SourcePos(path), max_bytes=limits.cr_bytes, limit="cr_bytes"
    )
    return load_yaml_text(decode_utf8(raw, path), path, limits)


def load_yaml_text(
    text: str, file: str, limits: Limits | None = None, cache: ParseCache | None = None
) -> Document:
    """Parse ``text`` (exactly one YAML document) that came from the bundle file ``file``."""
    limits = limits if limits is not None else Limits()
    parsed = cache.parsed(text) if cache is not None else None
    if parsed is None:
        parsed = fast_parse(text, limits.nesting_depth)
        if parsed is not None and cache is not None:
            cache.record_parsed(text, parsed)
    if parsed is not None:
        data, positions, key_positions = parsed
        return Document(
            data, file, SourcePositions(file, positions), SourcePositions(file, key_positions)
        )
    return load_yaml_text_ruamel(text, file, limits)
