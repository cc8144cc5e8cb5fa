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

:func:`bounded_work` pauses the cyclic garbage collector for work these limits bound (a
bundle load, an offline run, a short command): it builds many objects and leaves little
garbage, and the collector's passes over everything the process holds cost more than that.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from oper8d.errors import Oper8dError

__all__ = [
    "LimitExceeded",
    "Limits",
    "bounded_work",
    "camel",
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
