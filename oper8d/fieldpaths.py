"""Field paths as users write them: ``spec.replicas``, ``metadata.annotations[a.b/c]``.

One spelling for every place a path is read or shown: ``leaveToOthers:`` entries, the
``oper8d.io/leave-to-others`` annotation, the CR fields errors name. Keys are joined by
``.``; a key that holds ``.``, ``[`` or ``]`` (an annotation or label key such as
``sidecar.istio.io/status``) is written in brackets; ``[0]`` is a list index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["format_field_path", "parse_field_path"]

_PART = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
_NEEDS_BRACKETS = re.compile(r"[.\[\]]")


def parse_field_path(text: str) -> tuple[str, ...] | None:
    """The keys of ``text`` (indices as their digits), or None when it is not a path: an
    empty key, an unclosed bracket, a stray ``.``."""
    parts: list[str] = []
    at = 0
    while at < len(text):
        if parts and text[at] == ".":
            at += 1
            if at == len(text) or text[at] == "[":
                return None
        match = _PART.match(text, at)
        if match is None:
            return None
        bracketed, plain = match.groups()
        part = bracketed if bracketed is not None else plain
        if not part:
            return None
        parts.append(part)
        at = match.end()
        if at < len(text) and text[at] not in ".[":
            return None
    return tuple(parts) or None


def format_field_path(parts: Sequence[str | int]) -> str:
    """``("metadata", "annotations", "a.b/c")`` -> ``metadata.annotations[a.b/c]``."""
    out = ""
    for part in parts:
        text = str(part)
        if isinstance(part, int) or _NEEDS_BRACKETS.search(text):
            out += f"[{text}]"
        else:
            out += f".{text}" if out else text
    return out
