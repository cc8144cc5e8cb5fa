"""``bundle.plain_schema.plainly_valid``, the check that lets a valid CR spec skip
jsonschema: whenever it says valid, the jsonschema validator of ``bundle.spec_schema``
finds no problem (generated schemas and values), and it does say valid for the specs of the
examples and the generated bundle, so a render of them never imports jsonschema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator

from benchmarks.gen import write_bundle
from oper8d.bundle import load_bundle
from oper8d.bundle.plain_schema import CHECKED_KEYWORDS, plainly_valid
from oper8d.bundle.spec_schema import apply_defaults, openapi_validator, validate_instance

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-5, max_value=5)
    | st.sampled_from([0.0, 2.0, 2.5, -1.5])
    | st.sampled_from(["", "a", "ab", "abc", "x y"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=8,
)

_TYPE_NAMES = ["string", "integer", "number", "boolean", "object", "array", "null", "bogus"]


def _keywords(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    small = st.integers(min_value=-1, max_value=3)
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(_TYPE_NAMES) | st.lists(st.sampled_from(_TYPE_NAMES)),
            "nullable": st.booleans(),
            "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            "additionalProperties": st.booleans() | inner,
            "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
            "items": inner,
            "enum": st.lists(json_values, max_size=3),
            "minimum": small | st.just(1.5),
            "maximum": small | st.just(1.5),
            "exclusiveMinimum": st.booleans(),
            "exclusiveMaximum": st.booleans(),
            "minLength": small.filter(lambda n: n >= 0),
            "maxLength": small.filter(lambda n: n >= 0),
            "minItems": small.filter(lambda n: n >= 0),
            "maxItems": small.filter(lambda n: n >= 0),
            "format": st.sampled_from(["int32", "date-time", "anything"]),
            "x-kubernetes-int-or-string": st.booleans(),
            "x-kubernetes-preserve-unknown-fields": st.booleans(),
            "description": st.just("ignored"),
            "default": json_values,
            # keywords the quick check leaves to jsonschema
            "pattern": st.sampled_from(["^a", "b$"]),
            "x-kubernetes-list-type": st.sampled_from(["set", "atomic"]),
            "uniqueItems": st.booleans(),
        },
    )


schemas = st.recursive(_keywords(st.just({})), _keywords, max_leaves=6)


def _jsonschema_problems(instance: Any, schema: Any) -> list[Any]:
    return list(openapi_validator()(schema).iter_errors(instance))


@settings(max_examples=400, deadline=None)
@given(schema=schemas, instance=json_values)
def test_what_the_quick_check_accepts_jsonschema_accepts(schema: Any, instance: Any) -> None:
    if plainly_valid(instance, schema):
        assert _jsonschema_problems(instance, schema) == []


@settings(max_examples=200, deadline=None)
@given(schema=schemas, instance=json_values)
def test_validate_instance_reports_what_jsonschema_finds(schema: Any, instance: Any) -> None:
    validator = openapi_validator()
    assume(validator(validator.META_SCHEMA).is_valid(schema))  # what a loaded bundle has
    try:
        expected = bool(_jsonschema_problems(instance, schema))
    except Exception:  # a schema jsonschema cannot use: validate_instance reports it
        expected = True
    assert bool(validate_instance(instance, schema)) == expected


def test_the_checked_keywords_are_those_of_the_installed_jsonschema() -> None:
    custom = {"x-kubernetes-int-or-string", "x-kubernetes-list-type"}
    assert set(Draft4Validator.VALIDATORS) | custom == CHECKED_KEYWORDS
    assert set(openapi_validator().VALIDATORS) == CHECKED_KEYWORDS
    assert openapi_validator()({}).format_checker is None  # format is not checked


def test_the_examples_and_the_generated_bundle_take_the_quick_path(tmp_path: Path) -> None:
    cases = [
        (EXAMPLES / "webapp", EXAMPLES / "webapp" / "samples" / "webapp.yaml"),
        (EXAMPLES / "stateful", EXAMPLES / "stateful" / "samples" / "notes.yaml"),
    ]
    generated = write_bundle(tmp_path / "gen", components=2)
    cr_file = tmp_path / "cr.yaml"
    cr_file.write_text(yaml.safe_dump(generated.cr), encoding="utf-8")
    cases.append((generated.path, cr_file))
    for bundle_path, cr_path in cases:
        bundle = load_bundle(bundle_path, cache=False)
        cr = yaml.safe_load(cr_path.read_text(encoding="utf-8"))
        schema = bundle.controllers[0].resource.schema
        spec = apply_defaults(cr.get("spec") or {}, schema)
        assert plainly_valid(spec, schema), bundle_path


def test_a_warm_render_of_a_valid_cr_never_imports_jsonschema(tmp_path: Path) -> None:
    generated = write_bundle(tmp_path / "gen", components=3)
    cr_file = tmp_path / "cr.yaml"
    cr_file.write_text(yaml.safe_dump(generated.cr), encoding="utf-8")
    code = (
        "import sys\n"
        "from oper8d.cli.main import main\n"
        f"args = ['render', {str(generated.path)!r}, '--cr', {str(cr_file)!r}]\n"
        "for _ in range(2):\n"  # the first fills the compile cache
        "    sys.modules.pop('jsonschema', None)\n"
        "    try:\n"
        "        main(args, standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('jsonschema' in sys.modules, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert proc.stderr.strip().splitlines()[-1] == "False"
