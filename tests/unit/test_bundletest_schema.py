"""The bundle test JSON Schema (schemas/bundle-test.schema.json) and the doc that
explains it (docs/testing-bundles.md) stay usable and in step with each other."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from oper8d.bundle.loader import load_yaml_text
from oper8d.bundle.validate import load_schema, validate_document

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "testing-bundles.md"

#: mappings whose keys are the user's own (a CR, a merge patch, a status, a count by kind)
FREE_FORM = {"cr", "crPatch", "status", "if"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return load_schema("bundle-test.schema.json")


def walk(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema, skipping values that are instance data (examples, defaults, ...)."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            if key not in ("examples", "default", "const", "enum"):
                yield from walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{where}/{index}")


def test_the_schema_is_a_valid_draft_2020_12_schema_with_the_id_modelines_use(
    schema: dict[str, Any],
) -> None:
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "https://oper8d.io/schemas/bundle-test.schema.json"


def test_every_property_is_described_and_every_definition_titled(schema: dict[str, Any]) -> None:
    defs = schema["$defs"]
    for name, definition in defs.items():
        assert definition.get("title") and definition.get("description"), name
    for where, node in walk(schema, "bundle-test"):
        if re.search(r"/(if|then|else)(/|$)", where):
            continue
        for prop, sub in node.get("properties", {}).items():
            target = defs.get(sub.get("$ref", "").rsplit("/", 1)[-1], {})
            assert sub.get("description") or target.get("description"), f"{where}/{prop}"


def test_objects_reject_unknown_keys_except_the_free_form_parts(schema: dict[str, Any]) -> None:
    for where, node in walk(schema, "bundle-test"):
        if "/if/" in where:
            continue  # a condition matches values, it does not define them
        if node.get("type") == "object" and where.rsplit("/", 1)[-1] not in FREE_FORM:
            assert "additionalProperties" in node, where


def _doc_blocks() -> list[str]:
    """Every YAML block of the doc, completed into a whole test file: a list of cases gets
    ``cases:``, the keys of one case get a case around them."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    files = []
    for block in blocks:
        if re.search(r"^cases:", block, re.M):
            files.append(block)
        elif block.startswith("  - name:"):
            files.append("cases:\n" + block)
        elif block.startswith("    "):
            files.append("cases:\n  - name: x\n    crFile: samples/x.yaml\n" + block)
        else:
            raise AssertionError(f"a YAML block of the doc the test cannot place:\n{block}")
    return files


def test_the_doc_has_an_example_of_each_kind_of_check() -> None:
    text = "\n".join(_doc_blocks())
    for key in ("render:", "error:", "rollout:", "golden:", "expect:", "count:", "statuses:"):
        assert key in text, key


@pytest.mark.parametrize("block", _doc_blocks())
def test_every_example_in_the_doc_is_a_valid_test_file(block: str, schema: dict[str, Any]) -> None:
    problems = validate_document(load_yaml_text(block, "doc.md"), schema)
    assert problems == [], "\n".join(map(str, problems))


def test_a_wrong_file_gets_messages_that_name_the_case_and_the_fix(
    schema: dict[str, Any],
) -> None:
    text = """\
cases:
  - name: both
    cr: {}
    crFile: x.yaml
    render: {golden: g.yaml}
  - name: a condition
    crFile: x.yaml
    rollout:
      condition: {type: Ready, status: False}
  - name: a selector
    crFile: x.yaml
    render:
      expect:
        - name: hello-app
      count: {deployment: 1}
"""
    problems = [str(p) for p in validate_document(load_yaml_text(text, "t.yaml"), schema)]
    assert problems == [
        "t.yaml:2:5: test case 'both': has 'cr' and 'crFile': give exactly one of 'cr' or 'crFile'",
        "t.yaml:9:40: status: must be one of 'True', 'False' or 'Unknown' (got false); put it "
        'in quotes: "False"',
        "t.yaml:14:11: object expectation 'hello-app': missing required key 'kind'",
        "t.yaml:15:15: key 'deployment' is not a valid kind name: a capital letter followed by "
        "letters and digits (CamelCase), as in an object's `kind`",
    ]
