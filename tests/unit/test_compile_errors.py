"""Bundles that must not compile, and how the error reads: every problem is a BundleError
whose text names file:line (bundle.compile)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bundles import build

from oper8d.errors import BundleError


def compile_error(tmp_path: Path, controller: str, files: dict[str, str] | None = None) -> str:
    with pytest.raises(BundleError) as info:
        build(tmp_path, controller, files=files)
    return str(info.value)


def line_of(tmp_path: Path, text: str, file: str = "operator.yaml") -> int:
    """1-based line of the first line of ``file`` containing ``text``."""
    for number, line in enumerate((tmp_path / file).read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {file}")


def cm(name: str, extra: str = "") -> str:
    return f"""
  - name: {name}
{extra}
    resources:
      - name: cm
        object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: "{name}"}}}}"""


def test_a_dependency_cycle_is_named_with_the_positions_of_its_edges(tmp_path: Path) -> None:
    body = (
        "components:"
        + cm("a", "    dependsOn: [c]")
        + cm("b", "    dependsOn: [a]")
        + cm("c", "    dependsOn: [b]")
    )
    message = compile_error(tmp_path, body)
    assert "dependency cycle" in message
    assert re.search(r"a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c", message)
    for dep in ("dependsOn: [c]", "dependsOn: [a]", "dependsOn: [b]"):
        assert f"operator.yaml:{line_of(tmp_path, dep)}:" in message


def test_a_cycle_through_an_inferred_live_edge_is_rejected(tmp_path: Path) -> None:
    body = """
    components:
      - name: a
        dependsOn: [b]
        resources:
          - name: cm
            object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
      - name: b
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: b}
              data: {x: "{{ live('a.cm').metadata.name }}"}
    """
    message = compile_error(tmp_path, body)
    assert "dependency cycle" in message
    assert f"operator.yaml:{line_of(tmp_path, 'dependsOn: [b]')}:" in message


def test_an_unknown_depends_on_suggests_the_closest_name(tmp_path: Path) -> None:
    body = "components:" + cm("database") + cm("app", "    dependsOn: [databse]")
    message = compile_error(tmp_path, body)
    assert "unknown component 'databse'" in message
    assert "did you mean 'database'?" in message
    assert f"operator.yaml:{line_of(tmp_path, 'dependsOn: [databse]')}" in message


def test_a_component_that_fails_to_compile_is_its_only_problem(tmp_path: Path) -> None:
    """References to it (dependsOn, live()) are not "unknown component" problems too,
    which sorted before its own and hid the cause (found by an outside tester)."""
    broken = cm("database").replace('metadata: {name: "database"}', 'metadata: {name: "{{ x }"}')
    app = cm("app", "    dependsOn: [database]").replace(
        'metadata: {name: "app"}', "metadata: {name: \"{{ live('database.cm').metadata.name }}\"}"
    )
    message = compile_error(tmp_path, "components:" + broken + app)
    assert "unknown component" not in message
    assert f"operator.yaml:{line_of(tmp_path, '{{ x }')}" in message
    assert message.count("operator.yaml:") == 1


def test_live_of_an_unknown_component_is_an_error(tmp_path: Path) -> None:
    body = """
    components:
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: app}
              data: {x: "{{ live('nothere.cm').metadata.name }}"}
    """
    message = compile_error(tmp_path, body)
    assert "unknown component 'nothere'" in message
    assert "operator.yaml:" in message


def test_live_of_an_unknown_resource_suggests_the_closest(tmp_path: Path) -> None:
    body = """
    components:
      - name: db
        resources:
          - name: service
            object: {apiVersion: v1, kind: Service, metadata: {name: db}}
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: app}
              data: {x: "{{ live('db.servce').metadata.name }}"}
    """
    message = compile_error(tmp_path, body)
    assert "component 'db' has no resource 'servce'" in message
    assert "did you mean 'service'?" in message
    assert f"operator.yaml:{line_of(tmp_path, '- name: cm')}" in message


@pytest.mark.parametrize(
    ("where", "snippet"),
    [
        ("edge condition", "dependsOn: [{component: db, when: \"live('db.nope').status.x\"}]"),
        ("readiness", "readyWhen: [{expr: \"live('db.nope').status.x\"}]"),
    ],
)
def test_live_of_an_unknown_resource_in_conditions_is_an_error(
    tmp_path: Path, where: str, snippet: str
) -> None:
    body = "components:" + cm("db") + cm("app", f"    {snippet}")
    message = compile_error(tmp_path, body)
    assert "component 'db' has no resource 'nope'" in message, where
    assert f"operator.yaml:{line_of(tmp_path, snippet[:20])}" in message


def test_live_of_an_unknown_resource_in_a_status_field_is_an_error(tmp_path: Path) -> None:
    body = "components:" + cm("db") + "\nstatus:\n  x: \"live('db.nope').status.x\"\n"
    message = compile_error(tmp_path, body)
    assert "component 'db' has no resource 'nope'" in message
    assert f"operator.yaml:{line_of(tmp_path, 'db.nope')}" in message


def test_duplicate_component_names_are_an_error_naming_both_places(tmp_path: Path) -> None:
    body = "components:" + cm("app") + cm("app")
    message = compile_error(tmp_path, body)
    assert "duplicate component 'app'" in message
    lines = [
        n
        for n, text in enumerate((tmp_path / "operator.yaml").read_text().splitlines(), 1)
        if "- name: app" in text
    ]
    assert len(lines) == 2
    for line in lines:
        assert f"operator.yaml:{line}:" in message


def test_a_template_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    body = """
    components:
      - name: app
        resources:
          - name: docs
            template: templates/app.yaml
    """
    template = """\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app
    data:
      x: {{ spec.x | }}
    """
    message = compile_error(tmp_path, body, files={"templates/app.yaml": template})
    assert "templates/app.yaml:6" in message
    assert "syntax" in message


def test_an_inline_template_syntax_error_names_the_line_in_operator_yaml(
    tmp_path: Path,
) -> None:
    body = """
    components:
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: app}
              data: {x: "{{ spec.x ) }}"}
    """
    message = compile_error(tmp_path, body)
    assert f"operator.yaml:{line_of(tmp_path, 'spec.x )')}:" in message


def test_an_include_of_a_missing_file_names_the_include_line(tmp_path: Path) -> None:
    body = """
    components:
      - include: components/missing.yaml
    """
    message = compile_error(tmp_path, body)
    assert "components/missing.yaml" in message
    assert f"operator.yaml:{line_of(tmp_path, 'include:')}:" in message


def test_errors_inside_an_included_file_name_that_file(tmp_path: Path) -> None:
    body = """
    components:
      - name: db
        resources:
          - name: cm
            object: {apiVersion: v1, kind: ConfigMap, metadata: {name: db}}
      - include: components/app.yaml
    """
    included = """\
    name: app
    dependsOn: [dbb]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: app}}
    """
    message = compile_error(tmp_path, body, files={"components/app.yaml": included})
    assert "components/app.yaml:2" in message
    assert "did you mean 'db'?" in message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    body = "components:" + cm("a", "    dependsOn: [nope1]") + cm("b", "    dependsOn: [nope2]")
    with pytest.raises(BundleError) as info:
        build(tmp_path, body)
    assert len(info.value.problems) == 2
    assert all(p.pos is not None and p.pos.line for p in info.value.problems)
