"""Read bundle YAML files into plain Python data that remembers where every node came from.

``bundle.compile`` loads ``operator.yaml`` and every included component file with
:func:`load_yaml_file`, validates the result (``bundle.validate``) and builds the model; every
error it reports points at ``file:line:col`` through :meth:`Document.pos`. Paths written in a
bundle go through :func:`resolve_path`, which keeps them inside the bundle folder.

Parsing uses libyaml's event stream when the document allows (``bundle.fastyaml``: the common
subset, read exactly as below), otherwise ruamel.yaml's round-trip loader, once per file,
because it is the loader that records the line and column of each mapping key, mapping value
and sequence item. Its tree is then converted to plain ``dict`` / ``list`` / ``str`` / ``int``
/ ``float`` / ``bool`` / ``None``, so nothing downstream sees ruamel types. ruamel is the slow
loader (see docs/benchmarks.md): it runs when a bundle is loaded, never while reconciling, and
is imported only when a document needs it.

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

import math
import os
import stat
import warnings
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from oper8d.bundle.fastyaml import Parsed, RawPositions, SourcePositions, fast_parse
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.fileio import FileTooLarge, NotRegularFile, read_bounded
from oper8d.limits import LimitExceeded, Limits
from oper8d.objects import json_key_text

if TYPE_CHECKING:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.constructor import RoundTripConstructor
    from ruamel.yaml.error import MarkedYAMLError

PathKey = tuple[str | int, ...]


class ParseCache(Protocol):
    """Parses of the libyaml path kept by their text (``bundle.cache.CodeStore``): the
    parse is a pure function of the text (and ``nestingDepth``, part of the store's key)."""

    def parsed(self, text: str) -> Parsed | None: ...

    def record_parsed(self, text: str, parsed: Parsed) -> None: ...


def _json_shaped_constructor() -> type[RoundTripConstructor]:
    """The round-trip constructor, except that timestamps are kept as the text written.

    ``add_constructor`` on a subclass copies the table, so ruamel's own constructor is left
    untouched for anyone else in the process. Built on use: ruamel is imported only when a
    document needs it (most take the libyaml path of ``bundle.fastyaml``).
    """
    from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor
    from ruamel.yaml.nodes import Node

    class _JsonShapedConstructor(RoundTripConstructor):
        def construct_object(self, node: Node, deep: bool = False) -> Any:
            # ruamel raises these for some tags on the wrong kind of node (``!!int x``):
            # marked with the node's start, the error names the line it is on
            try:
                return super().construct_object(node, deep=deep)
            except (AttributeError, TypeError, ValueError) as err:
                problem = f"a value cannot be built from what is written: {err}"
                raise ConstructorError(problem=problem, problem_mark=node.start_mark) from None

    _JsonShapedConstructor.add_constructor(
        "tag:yaml.org,2002:timestamp", _JsonShapedConstructor.construct_yaml_str
    )
    return _JsonShapedConstructor


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
        return _nearest(self.positions, tuple(path), self.file)

    def key_pos(self, path: Sequence[str | int]) -> SourcePos:
        """Where the mapping key of ``path`` is written; falls back to :meth:`pos`."""
        found = self.key_positions.get(tuple(path))
        return found if found is not None else self.pos(path)


def _nearest(positions: Mapping[PathKey, SourcePos], path: PathKey, file: str) -> SourcePos:
    for end in range(len(path), -1, -1):
        found = positions.get(path[:end])
        if found is not None:
            return found
    return SourcePos(file)


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


def _decode(raw: bytes, file: str) -> str:
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
    return _decode(files.read(relpath, file, resolve_at=pos, where=pos), file)


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
    return load_yaml_text(_decode(raw, file), file, limits, cache)


def load_cr_file(path: str, limits: Limits | None = None) -> Document:
    """Load a CR file given on the command line: a regular file of at most ``crBytes``
    (the API server's default object size limit), holding one YAML document."""
    limits = limits if limits is not None else Limits()
    raw = read_regular_file(
        Path(path), path, SourcePos(path), max_bytes=limits.cr_bytes, limit="cr_bytes"
    )
    return load_yaml_text(_decode(raw, path), path, limits)


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


def load_yaml_text_ruamel(text: str, file: str, limits: Limits) -> Document:
    """:func:`load_yaml_text` through ruamel only: the reference the libyaml fast path
    (``bundle.fastyaml``) must agree with, and the path for everything it gives up on."""
    from ruamel.yaml import YAML
    from ruamel.yaml.composer import MaxDepthExceededError
    from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError

    yaml = YAML(typ="rt")
    yaml.Constructor = _json_shaped_constructor()
    yaml.max_depth = limits.nesting_depth
    try:
        with warnings.catch_warnings():
            # YAML allows defining an anchor again (the later one counts); ruamel warns
            warnings.simplefilter("ignore", ReusedAnchorWarning)
            tree = yaml.load(text)
    except MaxDepthExceededError as err:
        mark = err.problem_mark
        where = SourcePos(file, mark.line + 1, mark.column + 1) if mark else SourcePos(file)
        too_deep = LimitExceeded(
            "nesting_depth", f"the YAML nests more than {limits.nesting_depth} levels deep"
        )
        raise BundleError(Problem(str(too_deep), where)) from None
    except MarkedYAMLError as err:
        raise BundleError(_yaml_problem(err, file)) from None
    except YAMLError as err:  # unmarked errors are rare; still never a traceback
        raise BundleError(
            Problem(f"invalid YAML: {_one_line(str(err))}", SourcePos(file))
        ) from None
    except RecursionError:
        too_deep = LimitExceeded(
            "nesting_depth", f"the YAML nests more than {limits.nesting_depth} levels deep"
        )
        raise BundleError(Problem(str(too_deep), SourcePos(file))) from None
    except (AttributeError, TypeError, ValueError) as err:
        # ruamel raises these for some tags on the wrong kind of node (``!!set`` on a scalar)
        message = (
            "invalid YAML: a value cannot be built from what is written (a tag such as "
            f"!!set or !!omap on the wrong kind of node?): {_one_line(str(err))}"
        )
        raise BundleError(Problem(message, SourcePos(file))) from None
    if tree is None:
        raise BundleError(Problem("empty file: expected a YAML mapping or list", SourcePos(file)))
    converter = _Converter(file, limits.yaml_alias_nodes)
    data = converter.convert(tree, ())
    root_line, root_col = _root_position(tree)
    converter.positions.setdefault((), (root_line, root_col))
    return Document(
        data,
        file,
        SourcePositions(file, converter.positions),
        SourcePositions(file, converter.key_positions),
    )


def _root_position(tree: Any) -> tuple[int, int]:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(tree, CommentedMap | CommentedSeq) and tree.lc.line is not None:
        return tree.lc.line + 1, tree.lc.col + 1
    return 1, 1


def _yaml_problem(err: MarkedYAMLError, file: str) -> Problem:
    """One line from ruamel's multi-line message: the problem, at its mark."""
    mark = err.problem_mark or err.context_mark
    pos = SourcePos(file, mark.line + 1, mark.column + 1) if mark else SourcePos(file)
    problem = _one_line(err.problem or err.context or "malformed YAML")
    if problem.startswith("found duplicate key"):
        # ruamel: 'found duplicate key "a" with value "2" (original value: "1")'
        key = problem.split('"')[1] if problem.count('"') >= 2 else "?"
        return Problem(f"duplicate key {key!r}: each key may appear once in a mapping", pos)
    if problem == "but found another document":
        return Problem(
            "a second YAML document starts here; this file must hold exactly one document "
            "(remove the '---' separator)",
            pos,
        )
    context = _one_line(err.context) if err.context else ""
    if context and context not in problem:
        problem = f"{problem} ({context})"
    return Problem(f"invalid YAML: {problem}", pos)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Converter:
    """Walks a ruamel tree once, producing plain data and the position maps.

    An alias is the same ruamel object met again: the first time a container is met it is
    written in the file, every later time it is an alias being expanded, and the nodes it
    adds count against ``alias_nodes`` (a string counts one node per 64 characters)."""

    def __init__(self, file: str, alias_nodes: int) -> None:
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        self._map_type = CommentedMap
        self._seq_type = CommentedSeq
        self.file = file
        # (line, column) as the libyaml path keeps them: one kind of position map either way
        self.positions: RawPositions = {}
        self.key_positions: RawPositions = {}
        # ids of the containers being converted: a self-referencing alias would never end
        self._active: set[int] = set()
        # containers met once (their objects kept alive, so ids stay theirs)
        self._met: dict[int, Any] = {}
        self._strings: dict[int, tuple[Any, str]] = {}
        self._alias_nodes_left = alias_nodes
        self._alias_nodes = alias_nodes
        self._in_alias = 0

    def _pos(self, line: int, col: int) -> tuple[int, int]:
        return line + 1, col + 1

    def _count(self, node: Any, path: PathKey) -> None:
        weight = 1 + (len(node) // 64 if isinstance(node, str) else 0)
        self._alias_nodes_left -= weight
        if self._alias_nodes_left < 0:
            limit = LimitExceeded(
                "yaml_alias_nodes",
                f"the YAML aliases expand to more than {self._alias_nodes} nodes",
            )
            raise BundleError(Problem(str(limit), self._here(path)))

    def convert(self, node: Any, path: PathKey) -> Any:
        if isinstance(node, self._map_type | self._seq_type):
            if id(node) in self._active:
                raise BundleError(
                    Problem("an alias refers to the node that contains it", self._here(path))
                )
            alias = id(node) in self._met
            self._met[id(node)] = node
            self._in_alias += alias
            self._active.add(id(node))
            try:
                if self._in_alias:
                    self._count(node, path)
                if isinstance(node, self._map_type):
                    return self._mapping(node, path)
                return self._sequence(node, path)
            finally:
                self._active.discard(id(node))
                self._in_alias -= alias
        return self._scalar(node, path)

    def _scalar(self, node: Any, path: PathKey) -> Any:
        if type(node) is not str and isinstance(node, str):  # ruamel's (anchored) string
            known = self._strings.get(id(node))
            if known is not None:  # an alias of it: the same text, not a copy; counted
                self._count(node, path)
                return known[1]
            value = _scalar(node)
            self._strings[id(node)] = (node, value)
        else:
            try:
                value = _scalar(node)
            except _NotJson as err:
                raise BundleError(Problem(str(err), self._here(path))) from None
        if self._in_alias:
            self._count(node, path)
        return value

    def _here(self, path: PathKey) -> SourcePos:
        return _nearest(SourcePositions(self.file, self.positions), path, self.file)

    def _mapping(self, node: CommentedMap, path: PathKey) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # merged keys (``<<: *base``) have no entry in lc.data: they keep the parent's position
        known = _marks(node)
        for raw_key, value in node.items():
            marks = known.get(raw_key)
            key = self._key(raw_key, path, marks)
            child = (*path, key)
            if marks is not None:
                self.key_positions[child] = self._pos(marks[0], marks[1])
                self.positions[child] = self._pos(marks[2], marks[3])
            out[key] = self.convert(value, child)
        return out

    def _sequence(self, node: CommentedSeq, path: PathKey) -> list[Any]:
        out: list[Any] = []
        known = _marks(node)
        for index, value in enumerate(node):
            marks = known.get(index)
            if marks is not None:
                self.positions[(*path, index)] = self._pos(marks[0], marks[1])
            out.append(self.convert(value, (*path, index)))
        return out

    def _key(self, raw_key: Any, path: PathKey, marks: list[int] | None) -> str:
        key = _scalar(raw_key) if isinstance(raw_key, int) else raw_key  # ruamel's int types
        text = json_key_text(key)
        if text is not None:
            return text
        where = SourcePos(self.file, marks[0] + 1, marks[1] + 1) if marks else self._here(path)
        if key is None:
            what = "the key is null"
        elif isinstance(key, float):
            what = f"the key {key!r} is a float"
        elif isinstance(key, tuple | Mapping):  # ruamel's complex keys (``? [a, b]``)
            what = "the key is a list or a mapping"
        else:
            what = f"the key {str(key)!r} is not a plain string"
        raise BundleError(
            Problem(f"{what}: a Kubernetes object's keys are strings; quote the key", where)
        )


def _marks(node: CommentedMap | CommentedSeq) -> dict[Any, list[int]]:
    """The positions ruamel kept of a container's entries. It keeps none (``lc.data`` is
    None) for a mapping made of merged keys only (``<<: [{a: 1}, {b: 2}]``) or a sequence
    with a tag (``!foo [x]``, ``!!str [x]``): their entries then take the container's."""
    data: dict[Any, list[int]] | None = node.lc.data
    return data if data is not None else {}


def _scalar(value: Any) -> Any:
    """A ruamel scalar as the plain Python value it stands for."""
    from ruamel.yaml.comments import TaggedScalar
    from ruamel.yaml.scalarbool import ScalarBoolean

    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, ScalarBoolean):  # an anchored boolean; an int subclass in ruamel
        return bool(value)
    if isinstance(value, str):
        return str(value)  # drops LiteralScalarString & co.
    if isinstance(value, int):
        return int(value)  # HexInt, OctalInt, ScalarInt ...
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(f"{value!r} is not a JSON number: an object cannot hold it")
        return float(value)
    if isinstance(value, TaggedScalar):  # an unknown tag such as ``!secret x``: keep the text
        return str(value.value)
    if isinstance(value, bytes):  # (its text would be "b'...'")
        raise _NotJson(
            "a !!binary value is bytes, which an object cannot hold: write its base64 text"
        )
    if isinstance(value, AbstractSet):
        raise _NotJson("a !!set is not JSON: write a list or a mapping")
    # (timestamps are strings already: see _json_shaped_constructor); anything else is a
    # type a tag made (``!!pairs`` gives a list of tuples), whose Python text would land
    # in the object
    raise _NotJson(f"a {type(value).__name__} made by a YAML tag is not JSON: remove the tag")


class _NotJson(ValueError):
    """A YAML value a Kubernetes object (JSON) cannot hold."""
