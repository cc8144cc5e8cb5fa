"""Deterministic YAML output for ``oper8d render`` (stream, folder, golden files).

PyYAML's libyaml emitter when present (the pure-Python one otherwise; same bytes). Key
order is kept as rendered; multi-line strings are written as ``|`` blocks and long
strings are never folded across lines, so rendered config files stay readable and a
changed value is a one-line diff in CI.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

__all__ = ["dump", "dump_all"]

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
