"""``oper8d validate``: every problem of a bundle (or a CR) as ``file:line:col: message``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bundles import configmap, write_bundle
from click.testing import CliRunner, Result

from oper8d.cli.main import main

REPO = Path(__file__).resolve().parents[2]
WEBAPP = REPO / "examples" / "operators" / "webapp"


def validate(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["validate", *map(str, args)])


def position(path: Path, needle: str) -> str:
    """``<path>:<line>:<col>`` of the first occurrence of ``needle`` in the file (1-based)."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return f"{path}:{number}:{line.index(needle) + 1}"
    raise AssertionError(f"{needle!r} is not in {path}")


def error_lines(result: Result) -> list[str]:
    """The problem lines (the summary line after them is left out)."""
    return [line for line in result.stderr.splitlines() if " problem" not in line]


@pytest.mark.parametrize("example", ["webapp", "stateful", "fanout"])
def test_every_example_bundle_is_valid(example: str) -> None:
    result = validate(REPO / "examples" / "operators" / example)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok: bundle ")
    assert result.stderr == ""


def test_a_valid_bundle_summary_counts_controllers_and_components() -> None:
    result = validate(WEBAPP)
    assert result.stdout == "ok: bundle 'webapp': 1 controller, 5 components\n"


def test_a_bundle_with_several_problems_prints_every_one_at_its_position(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n"
        + configmap("a")
        + """\
  - name: b
    dependsOn: [ghost]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ name }}-b"}}
  - name: c
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ spec.x }"}}
  - include: components/missing.yaml
""",
    )
    operator = bundle / "operator.yaml"
    result = validate(bundle)
    assert result.exit_code == 1
    assert error_lines(result) == [
        f"{position(operator, 'ghost')}: unknown component 'ghost'",
        f"{position(operator, chr(34) + '{{ spec.x }')}: template syntax error: unexpected '}}' "
        "(in {{ spec.x })",
        f"{position(operator, 'components/missing.yaml')}: file 'components/missing.yaml' "
        f"not found in the bundle {bundle}",
    ]
    assert result.stderr.splitlines()[-1] == f"3 problems in bundle {bundle}"
    assert result.stdout == ""
    assert "Traceback" not in result.output


def test_malformed_yaml_is_reported_at_its_line(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", "components:\n" + configmap("a") + "    colour: a: b\n")
    result = validate(bundle)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith(position(bundle / "operator.yaml", "colour").rsplit(":", 1)[0] + ":")
    assert "invalid YAML: mapping values are not allowed here" in line


def test_an_unknown_key_is_reported_where_the_key_is_written(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", "components:\n" + configmap("a") + "    colour: blue\n")
    result = validate(bundle)
    assert result.exit_code == 1
    assert error_lines(result) == [
        f"{position(bundle / 'operator.yaml', 'colour')}: unknown key 'colour' in component 'a'"
    ]


def test_a_syntax_error_in_a_text_template_names_the_template_file_and_line(
    tmp_path: Path,
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        """\
        components:
          - name: a
            resources:
              - name: t
                template: templates/t.yaml
        """,
        files={
            "templates/t.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }\n"
        },
    )
    result = validate(bundle)
    assert result.exit_code == 1
    assert error_lines(result) == [
        f"{bundle / 'templates' / 't.yaml'}:4: template syntax error: unexpected '}}'"
    ]


def test_a_dependency_cycle_is_reported_with_its_path(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        """\
        components:
          - name: a
            dependsOn: [b]
            resources:
              - name: cm
                object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ name }}-a"}}
          - name: b
            dependsOn: [a]
            resources:
              - name: cm
                object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ name }}-b"}}
        """,
    )
    result = validate(bundle)
    assert result.exit_code == 1
    [line] = error_lines(result)
    # placed at the edge that closes the cycle: b's `dependsOn: [a]`
    assert line.startswith(f"{position(bundle / 'operator.yaml', 'a]')}: ")
    assert "dependency cycle: a -> b -> a" in line


def test_an_include_that_leaves_the_bundle_is_refused(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", "components:\n  - include: ../outside.yaml\n")
    result = validate(bundle)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith(f"{position(bundle / 'operator.yaml', '../outside.yaml')}: include: ")
    assert "stays inside the bundle" in line


def test_a_folder_without_operator_yaml_says_what_a_bundle_is(tmp_path: Path) -> None:
    result = validate(tmp_path)
    assert result.exit_code == 1
    assert "no operator.yaml in" in result.stderr
    assert "a bundle is a folder with an operator.yaml" in result.stderr


def test_validate_accepts_the_path_of_operator_yaml_itself() -> None:
    result = validate(WEBAPP / "operator.yaml")
    assert result.exit_code == 0, result.output


# -- --cr ---------------------------------------------------------------------------------
def test_a_valid_cr_is_confirmed() -> None:
    result = validate(WEBAPP, "--cr", WEBAPP / "samples" / "webapp.yaml")
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("; CR hello matches the WebApp schema\n")


def test_a_cr_violating_the_schema_is_reported_at_its_line_with_the_field(
    tmp_path: Path,
) -> None:
    cr = tmp_path / "bad.yaml"
    cr.write_text(
        """\
apiVersion: demo.oper8d.io/v1alpha1
kind: WebApp
metadata:
  name: hello
spec:
  image: nginx
  replicas: 0
  ingress:
    enabled: "yes please"
"""
    )
    result = validate(WEBAPP, "--cr", cr)
    assert result.exit_code == 1
    assert error_lines(result) == [
        f"{cr}:7:13: spec.replicas: must be >= 1 (got 0)",
        f"{cr}:9:14: spec.ingress.enabled: must be true or false (got the string 'yes please')",
    ]
    assert result.stdout == ""


def test_a_cr_of_a_kind_the_bundle_does_not_reconcile_names_the_kinds_it_does(
    tmp_path: Path,
) -> None:
    cr = tmp_path / "other.yaml"
    cr.write_text("apiVersion: demo.oper8d.io/v1alpha1\nkind: Other\nmetadata: {name: x}\n")
    result = validate(WEBAPP, "--cr", cr)
    assert result.exit_code == 1
    assert error_lines(result) == [
        f"{cr}:2:7: kind: bundle 'webapp' has no controller for demo.oper8d.io/v1alpha1 Other "
        "(it reconciles: demo.oper8d.io/v1alpha1 WebApp)"
    ]


def test_a_cr_file_with_malformed_yaml_is_reported_at_its_line(tmp_path: Path) -> None:
    cr = tmp_path / "broken.yaml"
    cr.write_text("apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nspec: {image: [x\n")
    result = validate(WEBAPP, "--cr", cr)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{cr}:4:1: invalid YAML: ")


def test_reading_a_template_computes_none_of_its_arithmetic(tmp_path: Path) -> None:
    """The compiler reads expressions (names used, field paths, constant lookup() names)
    without folding a power or product into a constant: Jinja's own environment computed
    10 ** 10000000 for minutes, then failed with a traceback printing it (found by the fuzz
    test)."""
    bundle = tmp_path / "fanout"
    shutil.copytree(REPO / "examples" / "operators" / "fanout", bundle)
    operator = bundle / "operator.yaml"
    text = operator.read_text()
    field = '    status:\n      huge: "{{ 10 ** 10000000 }}"\n'  # a status field
    assert "    status:\n" in text
    operator.write_text(text.replace("    status:\n", field, 1))
    result = validate(bundle)
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), result.output
    assert not isinstance(result.exception, ValueError)
