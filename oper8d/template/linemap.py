"""Where each line of a text template's rendered text came from in the template.

YAML errors and checks of rendered objects find a line of the *rendered* text; the user
edits the *template*. Loops, conditions and macros make the two differ, so the rendered
line number alone points at the wrong line. :func:`render_with_lines` renders again (only
when an error is reported: the reconcile path never pays for it) and follows the
template's generated code as it yields each chunk of text: Jinja's debug info
(``Template.get_corresponding_lineno``) maps the line of code that yielded a chunk to the
template line of the node it prints. A chunk of the template's own text that spans lines
is found in the source from that line on, so each of its lines gets its own template line;
a printed value (a macro's text, ``nindent``) keeps the line that printed it.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import GeneratorType

from jinja2 import Template

__all__ = ["render_with_lines"]


def render_with_lines(
    template: Template, chunks: Iterator[str], source: str
) -> tuple[str, list[int]]:
    """The text ``chunks`` (the template's root render generator) make, and for each of its
    lines (0-based) the 1-based template line it starts at."""
    offsets = _line_offsets(source)
    parts: list[str] = []
    lines: list[int] = []
    pending = True  # the next chunk starts a rendered line
    for chunk in chunks:
        if not chunk:
            continue
        line = _yielded_at(template, chunks)
        if pending:
            lines.append(_literal_line(source, offsets, line, chunk) or line)
            pending = False
        newlines = chunk.count("\n")
        if newlines:
            literal = _literal_line(source, offsets, line, chunk)
            count = newlines - 1 if chunk.endswith("\n") else newlines
            lines.extend(literal + i if literal else line for i in range(1, count + 1))
            pending = chunk.endswith("\n")
        parts.append(chunk)
    return "".join(parts), lines or [1]


def _yielded_at(template: Template, chunks: Iterator[str]) -> int:
    frame = chunks.gi_frame if isinstance(chunks, GeneratorType) else None
    if frame is None:
        return 1
    return template.get_corresponding_lineno(frame.f_lineno)


def _line_offsets(source: str) -> list[int]:
    offsets = [0]
    for index, char in enumerate(source):
        if char == "\n":
            offsets.append(index + 1)
    return offsets


#: a chunk of template text starts at most this many lines after its node's line (the
#: newlines a `-%}` strips)
_SLACK = 8


def _literal_line(source: str, offsets: list[int], line: int, chunk: str) -> int | None:
    """The template line ``chunk`` starts on when it is the template's own text starting
    on ``line`` or a few lines later; None when it is a printed value."""
    if not chunk or line < 1 or line > len(offsets):
        return None
    start = offsets[line - 1]
    end = offsets[min(line - 1 + _SLACK, len(offsets) - 1)]
    found = source.find(chunk, start, max(end, start) + len(chunk))
    if found < 0:
        return None
    # the line holding offset ``found``
    low, high = line - 1, len(offsets) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if offsets[mid] <= found:
            low = mid
        else:
            high = mid - 1
    return low + 1
