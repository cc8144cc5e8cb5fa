"""Printed structure stays where it is printed: a check of the lines a text template's
``Markup`` (a macro's output, ``to_yaml``, ``indent``/``nindent`` of those) puts in the text.

A value printed into a text template is a token (``slots``), so it can never be structure.
Structure the template means to print is printed as it is, and its lines are the template's
business, except that their content may come from a CR: ``value: {{ spec.note | to_yaml }}``
prints a multi-line string as a ``|`` block whose lines start at column 2, and at a deeper
key those lines would be read as keys of an outer mapping (``hostNetwork: true`` beside
``containers``). So every multi-line Markup is marked where it is printed, and before the
text is parsed each of its lines after the first must be indented deeper than the line it
was printed on (at the start of a line, at least as deep as where it starts): inside the
place it was printed at, as ``nindent`` puts it. The marks are removed after the check.
"""

from __future__ import annotations

import re

__all__ = ["LayoutError", "check_layout", "mark", "marks_in", "strip_marks"]


class LayoutError(ValueError):
    """Printed structure would leave its place; the message names the rendered line."""


def mark(nonce: str, marks: list[int], text: str) -> str:
    """``text`` with a mark in front, recording how many lines follow its first."""
    marks.append(text.count("\n"))
    return f"{nonce}y{len(marks) - 1}z{text}"


def _pattern(nonce: str) -> re.Pattern[str]:
    return re.compile(re.escape(nonce) + r"y(\d+)z")


def strip_marks(nonce: str, text: str) -> str:
    return _pattern(nonce).sub("", text)


def marks_in(nonce: str, text: str) -> list[int]:
    """The indexes of the marks in ``text``."""
    return [int(index) for index in _pattern(nonce).findall(text)]


def check_layout(nonce: str, marks: list[int], text: str) -> str:
    """``text`` without its marks, once every marked Markup's later lines stay inside the
    place it was printed at; else a LayoutError."""
    if not any(marks):  # none, or only one-line structure (``slots.Slots.structures``)
        return strip_marks(nonce, text) if marks else text
    pattern = _pattern(nonce)
    clean = strip_marks(nonce, text)
    lines = clean.split("\n")
    removed = 0
    for found in pattern.finditer(text):
        at = found.start() - removed  # the mark's position in the clean text
        removed += found.end() - found.start()
        index = int(found.group(1))
        following = marks[index] if index < len(marks) else 0
        if not following:
            continue
        row = clean.count("\n", 0, at)
        start = clean.rfind("\n", 0, at) + 1
        prefix = clean[start:at]
        indent = len(prefix) - len(prefix.lstrip(" "))
        need = len(prefix) if not prefix.strip() else indent + 1
        for number in range(row + 1, min(row + 1 + following, len(lines))):
            line = lines[number]
            depth = len(line) - len(line.lstrip(" "))
            if line.strip() and depth < need:
                raise LayoutError(
                    f"line {number + 1} of the rendered text is indented {depth} spaces, less "
                    f"than the {need} of the place the structure printed on line "
                    f"{row + 1} belongs to: it would leave that place (a CR value could add "
                    "keys elsewhere); print multi-line structure with `| nindent(n)`, or "
                    "`| indent(n)` at the start of its line"
                )
    return clean
