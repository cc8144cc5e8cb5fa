"""Docs stay true: the reference generated from the schemas is in step with them, and the
tutorial's commands print what it shows."""

import os
import subprocess
import sys
from pathlib import Path

from tutorial import TUTORIAL, Block, tutorial_blocks, write_file_block

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
def test_every_yaml_block_of_the_tutorial_is_a_file_it_writes() -> None:
    blocks = tutorial_blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert [b.line for b in blocks if b.lang == "yaml" and not b.op] == []
    assert sum(b.lang == "bash" for b in blocks) >= 8
    # the tutorial's bundle keeps a test file, and its commands run `oper8d test` on it
    assert any(b.path == "greeter/tests/greeter.yaml" for b in blocks)
    assert any(b.lang == "bash" and b.text.startswith("oper8d test .") for b in blocks)


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
            write_file_block(block, tmp_path)
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
