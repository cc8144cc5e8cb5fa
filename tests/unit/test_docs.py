"""Docs generated from the schemas stay in step with them."""

import subprocess
import sys
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
