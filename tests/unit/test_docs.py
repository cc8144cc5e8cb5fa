"""Docs generated from the schemas stay in step with them."""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_reference_doc_matches_the_schemas():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gen_reference.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_reference_doc_documents_every_component_field():
    text = (ROOT / "docs/reference.md").read_text()
    for field in ("`dependsOn`", "`forEach`", "`readyWhen`", "`enabled`", "`patches`", "`method`"):
        assert field in text, field


# -- the tutorial, run ------------------------------------------------------------------
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


def test_every_yaml_block_of_the_tutorial_is_a_file_it_writes() -> None:
    blocks = tutorial_blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert [b.line for b in blocks if b.lang == "yaml" and not b.op] == []
    assert sum(b.lang == "bash" for b in blocks) >= 6


def test_the_tutorial_commands_print_what_it_shows(tmp_path: Path) -> None:
    """Each bash block runs (in the folder the previous one left), after the files shown
    before it are written; a text block right after a bash block is its whole output."""
    blocks = tutorial_blocks(TUTORIAL.read_text(encoding="utf-8"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("NO_COLOR", None)
    cwd = tmp_path
    outputs: dict[int, str] = {}
    for block in blocks:
        if block.op:
            target = tmp_path / block.path
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
        elif block.lang == "bash":
            where = tmp_path / ".cwd"
            result = subprocess.run(
                ["bash", "-ec", f"cd {cwd}\n{block.text}pwd > {where}\n"],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert result.returncode == 0, (block.line, result.stdout, result.stderr)
            cwd = Path(where.read_text().strip())
            outputs[block.line] = result.stdout
    previous: Block | None = None
    for block in blocks:
        if block.lang == "text" and previous is not None and previous.lang == "bash":
            assert outputs[previous.line] == block.text, f"tutorial line {block.line}"
        previous = block
