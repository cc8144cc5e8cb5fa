"""Deterministic YAML output (render, manifests) with PyYAML's libyaml emitter when present.

Key order is kept as rendered; multi-line strings are written as ``|`` blocks so rendered
config files stay readable in CI diffs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_Base):  # type: ignore[misc, valid-type]
    """A private dumper subclass, so our representers never touch PyYAML's global ones."""


def _str(dumper: Any, data: str) -> Any:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def dump(obj: Any) -> str:
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120
    )


def dump_all(objs: Iterable[Any]) -> str:
    return "---\n".join(dump(o) for o in objs)
