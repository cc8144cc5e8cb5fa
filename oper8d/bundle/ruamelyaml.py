"""The ruamel path of the bundle loader: every document libyaml's path gives up on.

``bundle.loader.load_yaml_text`` tries ``bundle.fastyaml`` first and comes here for the rest
(anchors and aliases, merge keys, tags, duplicate keys, parse errors ...); the fast path's
tests compare the two through :func:`load_yaml_text_ruamel`, which ``bundle.loader`` exports.
ruamel.yaml's round-trip loader records the line and column of each mapping key, mapping
value and sequence item; its tree is converted to plain data once, so nothing downstream
sees ruamel types. It is the slow loader (docs/benchmarks.md) and is imported only when a
document needs it. The dialect read (YAML 1.2, JSON-shaped data) and the limits on nesting
and aliases are described in ``bundle.loader``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from oper8d.bundle.document import Document, PathKey, nearest
from oper8d.bundle.fastyaml import RawPositions, SourcePositions
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.limits import LimitExceeded, Limits
from oper8d.objects import json_key_text

if TYPE_CHECKING:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.constructor import RoundTripConstructor
    from ruamel.yaml.error import MarkedYAMLError

__all__ = ["load_yaml_text_ruamel"]


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
        return nearest(SourcePositions(self.file, self.positions), path, self.file)

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
