"""Resource limits: how much time and memory bundle templates and CR input may make oper8d use.

A CR author is less trusted than the bundle author (docs/security.md), and some limits are
here because of CR values (a forEach over a CR list, a YAML alias bomb in a CR file); others
bound what a template may compute, so that a mistake in a bundle fails with a clear error
instead of exhausting the operator's memory or blocking a worker forever.

One frozen :class:`Limits` is created by the caller (the CLI from its ``--limit`` flags,
tests directly) and passed down explicitly: to the bundle compiler, which gives it to the
``TemplateEngine``, and to the YAML loaders. There are no module-level settings. Every limit
has a name (the dataclass field, written in camelCase in messages and flags, e.g.
``templateSeconds``), and every hit raises :class:`LimitExceeded` naming it, so an error in
a CR's condition tells the reader which limit was reached and how to raise it.

:func:`check_structure` bounds what parsed YAML may expand to: YAML aliases make shared
(even self-containing) objects that every later walk (JSON, diff, apply) expands, so an
alias bomb of a few hundred bytes becomes gigabytes there. Text templates check their parsed
documents with it (``template.compiled.TextTemplate.render``).

:func:`check_expanded` bounds what a value may expand to *before* C code walks it: a
template can build a small DAG of shared lists (``{% set s1 = [s0, s0] %}`` thirty times)
whose ``str()``, ``json.dumps`` or hash runs for minutes inside one C call, where neither the
render's budget nor an asynchronous deadline (``template.deadline``) can stop it. Counting
the expansion first costs at most ``limit`` steps and fails as soon as it passes the limit.

:func:`bounded_work` pauses the cyclic garbage collector for work these limits bound (a
bundle load, an offline run, a short command): it builds many objects and leaves little
garbage, and the collector's passes over everything the process holds cost more than that.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import re
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass
from typing import Any

from oper8d.errors import Oper8dError

__all__ = [
    "LimitExceeded",
    "Limits",
    "bounded_work",
    "camel",
    "check_expanded",
    "check_structure",
    "nests_deeper",
    "parse_limit_overrides",
]


@contextlib.contextmanager
def bounded_work() -> Iterator[None]:
    """No cyclic garbage collection inside (see the module docstring); the collector is
    restored afterwards, so a caller that had it off keeps it off (nested uses, tests
    running commands in-process); what the work left is collected once it is back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Every limit with its default; raise one with ``--limit NAME=VALUE`` (docs/security.md)."""

    #: seconds one template render may take (an inline object, a text template, an expression)
    template_seconds: float = 5.0
    #: bytes of text one resource may render to (a text template's output, a string of an object)
    rendered_bytes: int = MiB
    #: bytes of the longest string one template operation may build (``'a' * n``, ``~``,
    #: ``'%0*d' | format``, ``center``/``ljust``/``zfill``/``indent`` widths, ...)
    string_bytes: int = MiB
    #: items of the longest list one template operation may build (``[x] * n``, ``+``)
    sequence_items: int = 100_000
    #: bits of the largest integer a template may compute (``10 ** n``, ``<<``, ``*``)
    int_bits: int = 4096
    #: loop iterations (``{% for %}`` bodies, all loops together) of one template render
    loop_iterations: int = 1_000_000
    #: nodes that YAML aliases (``*name``) may add to one document when expanded
    yaml_alias_nodes: int = 10_000
    #: nesting depth of YAML documents (bundle files, CR files, rendered text) and templates
    nesting_depth: int = 100
    #: items a ``forEach`` may expand to (one component instance each)
    for_each_items: int = 1000
    #: bytes of a CR file (the API server's default object limit, 1.5 MiB)
    cr_bytes: int = 3 * MiB // 2
    #: bytes of any other file oper8d reads whole (bundle files, golden files, CRD and
    #: schema files given to a command), refused from its size before it is read
    file_bytes: int = 4 * MiB

    def replace(self, **changes: float | int) -> Limits:
        """A copy with some limits changed (snake_case field names)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


class LimitExceeded(Oper8dError):
    """A limit of :class:`Limits` was reached. ``limit`` is its camelCase name.

    Template code raising it gets the template's position added by ``template.failures``
    (a ``ConfigError`` at render time, a ``BundleError`` at load time); loaders turn it into
    a problem at the file and line where it was hit.
    """

    def __init__(self, limit: str, detail: str) -> None:
        self.limit = camel(limit)
        self.detail = detail
        super().__init__(
            f"limit {self.limit} exceeded: {detail} (raise it with --limit {self.limit}=N "
            "if this is intended; see docs/security.md)"
        )


def camel(name: str) -> str:
    """``template_seconds`` -> ``templateSeconds``; a camelCase name is returned as it is."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("-", "_")


def parse_limit_overrides(pairs: tuple[str, ...] | list[str], base: Limits) -> Limits:
    """``base`` with ``NAME=VALUE`` pairs applied (``templateSeconds=30``, ``cr_bytes=4Mi``).

    Raises ``ValueError`` with a message for the user on an unknown name or a bad value.
    """
    fields = {f.name: f for f in dataclasses.fields(Limits)}
    changes: dict[str, float | int] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        key = _snake(name.strip())
        if not sep or key not in fields:
            known = ", ".join(camel(n) for n in fields)
            raise ValueError(f"unknown limit {name.strip()!r} (known: {known})")
        value = _number(raw.strip(), float if fields[key].type == "float" else int)
        if value is not None and fields[key].type == "int":
            value = int(value)
        if value is None or value <= 0:
            raise ValueError(f"limit {camel(key)} needs a positive number, got {raw.strip()!r}")
        changes[key] = value
    return base.replace(**changes)


_SUFFIXES = {"Ki": 1024, "Mi": MiB, "Gi": 1024 * MiB, "k": 1000, "M": 1000**2, "G": 1000**3}


def _number(raw: str, kind: type) -> float | None:
    factor = 1
    for suffix, size in _SUFFIXES.items():
        if raw.endswith(suffix):
            raw, factor = raw[: -len(suffix)], size
            break
    try:
        value = kind(raw) if kind is int else float(raw)
    except ValueError:
        return None
    return value * factor


def nests_deeper(value: Any, depth: int) -> bool:
    """Whether ``value`` (JSON-shaped data) has mappings or lists more than ``depth``
    levels deep; without recursion, so any depth is measured safely."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            if level > depth:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return False


def check_structure(value: Any, limits: Limits, *, written: int) -> None:
    """Raise ``LimitExceeded`` when ``value`` (parsed YAML, shared objects where the text had
    aliases) nests deeper than ``nestingDepth``, contains itself, or expands to more than
    ``written`` (the text's length) plus ``yamlAliasNodes`` nodes; a string counts one node
    per 64 characters. Linear in the number of distinct objects, never expanding anything."""
    done: dict[int, tuple[int, int]] = {}  # id -> (expanded size, depth)
    pending: set[int] = set()
    keep: list[Any] = []  # keeps ids unique while we look at them
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, finished = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if finished:
            size, depth = 1, 1
            for child in children:
                if isinstance(child, dict | list):
                    child_size, child_depth = done[id(child)]
                    size += child_size
                    depth = max(depth, child_depth + 1)
                else:
                    size += 1 + (len(child) // 64 if isinstance(child, str) else 0)
            if depth > limits.nesting_depth:
                raise LimitExceeded(
                    "nesting_depth", f"the YAML nests more than {limits.nesting_depth} levels deep"
                )
            if size > written + limits.yaml_alias_nodes:
                raise LimitExceeded(
                    "yaml_alias_nodes",
                    f"the YAML aliases expand to more than {limits.yaml_alias_nodes} nodes",
                )
            done[key] = (size, depth)
            pending.discard(key)
            continue
        if key in done:
            continue
        if key in pending:
            raise LimitExceeded("yaml_alias_nodes", "a YAML alias refers to a node containing it")
        pending.add(key)
        keep.append(node)
        stack.append((node, True))
        stack.extend((child, False) for child in children if isinstance(child, dict | list))


def check_expanded(value: Any, limit: int, what: str) -> int:
    """The size of ``value`` written out, as a serialiser or ``str()`` expands it: a
    string's length, one per item of a list, tuple or set and per entry of a mapping (keys
    and values counted too), an integer's decimal digits, one for anything else (an
    iterator is not consumed). A shared object counts every time it is reached, as the C
    code this check precedes would expand it; a value containing itself is too large.

    Raises ``LimitExceeded("rendered_bytes")``, naming ``what`` ("the value given to
    to_json"), when the size passes ``limit``. Each distinct container is looked at once
    (its size remembered by id), so the work is at most the size of the value in memory,
    itself at most its expanded size: ``limit`` steps at most, and no recursion."""
    # (a string, the usual value, needs no walk)
    size = len(value) if type(value) is str else _plain_size(value)
    if size is None:
        return _Expansion(limit, what).size(value)
    if size > limit:
        raise _expanded_too_large(what, limit)
    return size


def _plain_size(value: Any) -> int | None:
    """``check_expanded`` of small plain data (strings, numbers, lists and dicts of them),
    walked as it is written out; None, after a few items or at anything else, for
    ``_Expansion`` to count. This walk is several times faster for an object of a few
    fields, but only counting by ids bounds the work on shared data."""
    size = 0
    room = _PLAIN_WALK_ITEMS
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is not dict and kind is not list and kind is not tuple:
            return None
        size += len(node)
        room -= len(node)
        if room < 0:
            return None
        items_size, inner = _items_size((*node, *node.values()) if kind is dict else node)
        size += items_size
        stack += inner
    return size


def _items_size(items: tuple[Any, ...] | list[Any]) -> tuple[int, list[Any]]:
    """The size of the strings and numbers among ``items``, and the other items."""
    if len(items) > 8 and set(map(type, items)) == _STR:  # (counted in C)
        return sum(map(len, items)), []
    size = 0
    inner: list[Any] = []
    for child in items:
        kind = type(child)
        if kind is str:
            size += len(child)
        elif kind is int:
            size += 1 + child.bit_length() * 78 // 256  # (``_digits``, inline)
        elif kind in _ATOMS:
            size += 1
        else:  # a container, or an object counted by itself
            inner.append(child)
    return size, inner


class _Pending:
    """A container whose own size is known, waiting for the sizes of the containers in it."""

    __slots__ = ("inner", "node", "size")

    def __init__(self, node: Any, size: int, inner: list[Any]) -> None:
        self.node = node
        self.size = size
        self.inner = inner


#: counted as one unit each where they are met inside a container
_ATOMS = frozenset({float, bool, type(None)})
#: items ``check_expanded`` walks plainly before it counts containers by id
_PLAIN_WALK_ITEMS = 2048
_STR = frozenset({str})


class _Expansion:
    """One ``check_expanded`` count."""

    __slots__ = ("kept", "limit", "sizes", "started", "what", "work")

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.work = 0  # items looked at so far, each a unit of the expanded size
        self.sizes: dict[int, int] = {}  # id -> expanded size, of the containers counted
        self.started: set[int] = set()  # ids of the containers being counted
        # what ``sizes`` has ids of, kept so that no id is reused meanwhile (a mapping
        # other than dict may make its values as they are read)
        self.kept: list[Any] = []

    def size(self, value: Any) -> int:
        limit, sizes, started, kept = self.limit, self.sizes, self.started, self.kept
        total, inner = self.own(value)
        if not inner:
            return self._checked(total)
        started.add(id(value))
        stack: list[Any] = [_Pending(value, total, inner), *inner]
        while stack:
            node = stack.pop()
            if type(node) is _Pending:
                total = node.size
                for child in node.inner:
                    total += sizes[id(child)]
                sizes[id(node.node)] = self._checked(total)
                kept.append(node.node)
                continue
            key = id(node)
            if key in sizes:
                continue
            if key in started:  # inside itself: endless when written out
                raise _expanded_too_large(self.what, limit)
            total, inner = self.own(node)
            if inner:
                started.add(key)
                stack.append(_Pending(node, total, inner))
                stack.extend(inner)
            else:
                sizes[key] = self._checked(total)
                kept.append(node)
        return sizes[id(value)]

    def _checked(self, size: int) -> int:
        if size > self.limit:
            raise _expanded_too_large(self.what, self.limit)
        return size

    def own(self, node: Any) -> tuple[int, list[Any]]:
        """The size of ``node`` without the containers in it, and those containers."""
        kind = type(node)
        if kind is list or kind is tuple:
            items: Any = node
        elif kind is dict:
            items = None
        elif isinstance(node, str | bytes | bytearray):
            return len(node), []
        elif isinstance(node, int) and not isinstance(node, bool):
            return _digits(node), []
        elif isinstance(node, Mapping):
            items = None
        # (an items view's items are (key, value) tuples, each counted as one)
        elif isinstance(node, list | tuple | set | frozenset | KeysView | ValuesView | ItemsView):
            items = node
        else:
            return 1, []
        size = len(node)
        self.work += size
        if self.work > self.limit:  # before looking at the items
            raise _expanded_too_large(self.what, self.limit)
        if items is None:
            items = (*node, *node.values()) if kind is dict else (*_pairs(node),)
        elif kind is not list and kind is not tuple:
            items = (*items,)
        items_size, inner = _items_size(items)
        return size + items_size, inner


def _digits(number: int) -> int:
    """At least the number of decimal digits of ``number`` (78/256 > log10(2))."""
    return 1 + number.bit_length() * 78 // 256


def _pairs(mapping: Mapping[Any, Any]) -> Iterator[Any]:
    for key, item in mapping.items():
        yield key
        yield item


def _expanded_too_large(what: str, limit: int) -> LimitExceeded:
    return LimitExceeded("rendered_bytes", f"{what} would be larger than {limit} bytes written out")
