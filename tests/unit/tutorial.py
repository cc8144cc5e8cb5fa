"""The tutorial (docs/tutorial.md) as a test sees it: its fenced blocks, and the files its
marker comments (``<!-- file: PATH -->``, ``<!-- append: PATH -->``, ``<!-- insert after
"TEXT": PATH -->``) say to write. Used by test_docs (which runs its commands) and by the
RBAC test of the bundle it builds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs/tutorial.md"
_FENCE = re.compile(r"^```(\w*)$")
_MARKER = re.compile(r"^<!-- (file|append|insert after \"(?P<anchor>.+)\"): (?P<path>\S+) -->$")


@dataclass(frozen=True)
class Block:
    """A fenced block of the tutorial: its language, text, the line it starts at, and the
    file operation its marker comment asks for (``file``, ``append``, ``insert after``)."""

    lang: str
    text: str
    line: int
    op: str = ""
    path: str = ""
    anchor: str = ""


def tutorial_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start = i
        marker = _MARKER.match(lines[i - 1]) if i else None
        i += 1
        body: list[str] = []
        while not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        op = marker[1].split(" ")[0] if marker else ""
        blocks.append(
            Block(
                fence[1],
                "\n".join(body) + "\n",
                start + 1,
                op,
                marker["path"] if marker else "",
                (marker["anchor"] or "") if marker else "",
            )
        )
        i += 1
    return blocks


def write_file_block(block: Block, root: Path) -> None:
    """Do what a file block's marker says, under ``root``."""
    target = root / block.path
    target.parent.mkdir(parents=True, exist_ok=True)
    if block.op == "file":
        target.write_text(block.text, encoding="utf-8")
    elif block.op == "append":
        target.write_text(target.read_text(encoding="utf-8") + block.text, "utf-8")
    else:
        old = target.read_text(encoding="utf-8")
        anchor_line = next(ln for ln in old.splitlines() if block.anchor in ln)
        new = old.replace(anchor_line + "\n", anchor_line + "\n" + block.text, 1)
        assert new != old, f"tutorial line {block.line}: anchor not found"
        target.write_text(new, encoding="utf-8")
