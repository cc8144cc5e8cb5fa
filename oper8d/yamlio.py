"""Deterministic YAML output for ``oper8d render`` (stream, folder, golden files), and the
structure limits of parsed YAML.

PyYAML's libyaml emitter when present (the pure-Python one otherwise; same bytes). Key
order is kept as rendered; multi-line strings are written as ``|`` blocks and long
strings are never folded across lines, so rendered config files stay readable and a
changed value is a one-line diff in CI.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from oper8d.limits import LimitExceeded, Limits

__all__ = ["check_structure", "dump", "dump_all"]

_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

#: no line folding: a long string stays on its own line
_NO_WRAP = 2**31 - 1


class _Dumper(_Base):  # type: ignore[misc]
    """A private dumper subclass, so our representers never touch PyYAML's global ones."""


def _str(dumper: Any, data: str) -> Any:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def dump(obj: Any) -> str:
    """One YAML document, keys in their given order."""
    return yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=_NO_WRAP,
    )


def dump_all(objs: Iterable[Any]) -> str:
    """Documents separated by ``---`` lines."""
    return "---\n".join(dump(o) for o in objs)


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
