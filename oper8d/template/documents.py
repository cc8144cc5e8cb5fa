"""Parsing the rendered text of a text template into Kubernetes objects.

Used by ``TextTemplate.render``. The text holds tokens where the template printed values;
``slots.SlotLoader`` parses the structure and puts the values back as scalars. Parsing is
the one YAML parse left on the reconcile path (libyaml: ~340 µs per Deployment-sized
document, ten times the render itself), so each text template keeps a small LRU of parses
keyed by the sha256 of the rendered text and its values: an unchanged render (the common
case between reconciles) skips the parse. Parses are stored marshalled, and every call
returns freshly built objects the caller may mutate.
"""

from __future__ import annotations

import hashlib
import marshal
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from oper8d.errors import ConfigError, SourcePos
from oper8d.limits import Limits, check_structure
from oper8d.template.construct import construct
from oper8d.template.failures import excerpt
from oper8d.template.slotloader import SlotLoader, splice
from oper8d.template.slots import Slots

#: a document of the rendered text is a Secret (its lines are not quoted in errors)
_SECRET_KIND = re.compile(r"^kind:[ \t]*[\"']?Secret[\"']?[ \t]*(#.*)?$", re.MULTILINE)

#: rendered texts remembered per text template (one per CR that renders it differently)
DEFAULT_CACHE_SIZE = 128

#: the template line (1-based) a line of the rendered text (0-based) came from
Origin = Callable[[int], int]


def check_documents(documents: list[dict[str, Any]], limits: Limits, *, written: int) -> None:
    """``limits.check_structure`` of parsed documents: a LimitExceeded when they nest too
    deep or their aliases expand too far. Documents are nearly always a plain tree (no
    object twice: no alias), which one recursive count proves within the limits at a
    third of the general walk's cost; anything else is left to the general walk."""
    if not _fits_as_tree(documents, limits.nesting_depth, written + limits.yaml_alias_nodes):
        check_structure(documents, limits, written=written)


class _NotATree(Exception):
    """An object met twice (an alias), or deeper than the limit: the general walk decides."""


def _fits_as_tree(value: Any, depth_limit: int, size_limit: int) -> bool:
    """Whether ``value`` is a tree of at most ``depth_limit`` levels whose size, counted as
    ``check_structure`` counts it, is at most ``size_limit``: then it would pass."""
    seen: set[int] = set()

    def size(node: Any, level: int) -> int:
        if level > depth_limit or id(node) in seen:
            raise _NotATree
        seen.add(id(node))  # every node stays referenced by ``value``: ids stay unique
        total = 1
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                total += size(child, level + 1)
            else:
                total += 1 + (len(child) // 64 if isinstance(child, str) else 0)
        return total

    try:
        return size(value, 1) <= size_limit
    except (_NotATree, RecursionError):
        return False


class DocumentCache:
    """Parses rendered multi-document YAML, remembering the last ``size`` distinct texts."""

    def __init__(
        self, file: str, size: int = DEFAULT_CACHE_SIZE, scalar_tags: dict[str, str] | None = None
    ) -> None:
        """``scalar_tags``: shared by the text templates of one engine (``SlotLoader``)."""
        self.file = file
        self._size = size
        self._scalar_tags = scalar_tags
        self._parsed: OrderedDict[bytes, bytes] = OrderedDict()
        # the runtime may reconcile several CRs at once; OrderedDict moves are not atomic
        self._lock = threading.Lock()

    def parse(self, text: str, slots: Slots, origin: Origin | None = None) -> list[dict[str, Any]]:
        """The non-empty documents of ``text``, each a mapping, ``slots`` filled in.
        ``origin``: for errors, the template line of a rendered line."""
        digest = hashlib.sha256(text.encode("utf-8"))
        try:
            digest.update(marshal.dumps(slots.values))
            if slots.placed:  # what a placed value's text and landing are
                placed = [(i, p.text, p.typed, p.pad) for i, p in slots.placed.items()]
                digest.update(marshal.dumps(placed))
        except ValueError:  # a value marshal cannot hold: correct, just not cached
            return self._load(text, slots, origin)
        key = digest.digest()
        with self._lock:
            blob = self._parsed.get(key)
            if blob is not None:
                self._parsed.move_to_end(key)
        if blob is not None:
            return marshal.loads(blob)  # type: ignore[no-any-return]
        documents = self._load(text, slots, origin)
        try:
            blob = marshal.dumps(documents)
        except ValueError:  # an explicit !!timestamp or similar: correct, just not cached
            return documents
        with self._lock:
            self._parsed[key] = blob
            while len(self._parsed) > self._size:
                self._parsed.popitem(last=False)
        return documents

    def _load(self, text: str, slots: Slots, origin: Origin | None) -> list[dict[str, Any]]:
        documents: list[dict[str, Any]] = []
        loader = SlotLoader(text, slots)
        loader.scalar_tags = self._scalar_tags
        try:
            index = 0
            while loader.check_node():
                index += 1
                node = loader.get_node()
                document = construct(loader, node)
                if slots.spliceable:
                    document = self._spliced(document, slots)
                if document is None:
                    continue  # empty document, e.g. a disabled {% if %} between '---'
                if not isinstance(document, dict):
                    raise ConfigError(
                        f"document {index} of the rendered template is a "
                        f"{type(document).__name__}, not a mapping; every document must be "
                        "a Kubernetes object",
                        pos=self._pos(origin, node.start_mark.line),
                    )
                documents.append(document)
        except yaml.YAMLError as exc:
            raise self._yaml_error(exc, text, slots, origin) from exc
        except ValueError as exc:  # what a value's place makes of it (``slots``)
            raise ConfigError(str(exc), pos=SourcePos(self.file)) from None
        finally:
            loader.dispose()
        return documents

    def _spliced(self, document: Any, slots: Slots) -> Any:
        try:
            return splice(document, slots)
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc), pos=SourcePos(self.file)) from None

    def _pos(self, origin: Origin | None, rendered_line: int) -> SourcePos:
        return SourcePos(self.file, origin(rendered_line) if origin is not None else 0)

    def _yaml_error(
        self, exc: yaml.YAMLError, text: str, slots: Slots, origin: Origin | None
    ) -> ConfigError:
        # positions are in the rendered text: ``origin`` gives the template's lines, and
        # the lines are quoted as rendered, unless the text renders a Secret, whose values
        # must not reach a message
        lines = text.splitlines()
        secret = _SECRET_KIND.search(text) is not None

        def at(mark: Any) -> str:
            if mark is None:
                return ""
            # values stay out of the quote (a value may be a secret the text does not mark)
            line = lines[mark.line] if mark.line < len(lines) else ""
            line_text = slots.hide(line).strip()
            if not line_text:
                return " at the end of the text"
            where = (
                f"line {mark.line + 1} of the rendered text"
                if origin is None
                else f"line {origin(mark.line)}"
            )
            if secret:
                return f" at {where} (not quoted: the text renders a Secret)"
            return f" at {where} (rendered: {excerpt(line_text)!r})"

        problem_mark = getattr(exc, "problem_mark", None)
        message = f"{getattr(exc, 'problem', None) or exc}{at(problem_mark)}"
        context = getattr(exc, "context", None)
        if context:
            message += f", {context}{at(getattr(exc, 'context_mark', None))}"
        mark = problem_mark or getattr(exc, "context_mark", None)
        return ConfigError(
            f"the rendered template is not valid YAML: {message}",
            pos=self._pos(origin, mark.line) if mark is not None else SourcePos(self.file),
        )


def key_line(text: str, slots: Slots, document: int, path: Sequence[str | int]) -> int | None:
    """The line (0-based) of the key or item at ``path`` in non-empty document ``document``
    of ``text``, or of the deepest parent of it there; None when there is no such
    document."""
    loader = SlotLoader(text, slots)
    try:
        index = -1
        while loader.check_node():
            node = loader.get_node()
            if not isinstance(node, yaml.MappingNode):
                continue
            index += 1
            if index == document:
                return _line_of(node, path)
        return None
    finally:
        loader.dispose()


def _line_of(node: yaml.Node, path: Sequence[str | int]) -> int:
    line: int = node.start_mark.line
    for step in path:
        if isinstance(node, yaml.MappingNode):
            pair = next(
                (
                    (k, v)
                    for k, v in node.value
                    if isinstance(k, yaml.ScalarNode) and k.value == step
                ),
                None,
            )
            if pair is None:
                break
            line, node = pair[0].start_mark.line, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if not 0 <= step < len(node.value):
                break
            node = node.value[step]
            line = node.start_mark.line
        else:
            break
    return line
