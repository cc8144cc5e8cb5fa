"""What compiling each template source once and rendering a tree's strings in one Jinja
context must not change (template.environment, template.tree, template.compiled,
bundle.compile): results, isolation between strings, and the position of every error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bundles import build

from oper8d.errors import BundleError, ConfigError, SourcePos
from oper8d.template import TemplateEngine

POS = SourcePos("operator.yaml", 1, 1)


def at(line: int, col: int = 9) -> SourcePos:
    return SourcePos("operator.yaml", line, col)


def context(**extra: Any) -> dict[str, Any]:
    return {"spec": {"replicas": 3, "labels": {"app": "web"}}, "name": "demo", **extra}


# -- one compile per source ----------------------------------------------------------------


def test_the_same_string_in_two_trees_renders_the_same_value() -> None:
    engine = TemplateEngine()
    first = engine.tree({"replicas": "{{ spec.replicas }}", "name": "{{ name }}-a"}, POS)
    second = engine.tree({"count": "{{ spec.replicas }}", "label": "{{ name }}-a"}, POS)
    assert first.render(context()) == {"replicas": 3, "name": "demo-a"}
    assert second.render(context()) == {"count": 3, "label": "demo-a"}


def test_each_occurrence_of_a_string_fails_at_its_own_position() -> None:
    engine = TemplateEngine()
    source = "{{ spec.missing.value }}"
    trees = [
        engine.tree({"data": {"x": source}}, POS, {("data", "x"): at(line)}) for line in (10, 20)
    ]
    expressions = [engine.expression(source, at(line)) for line in (30, 40)]
    failures = []
    for render in [*(t.render for t in trees), *(e.evaluate for e in expressions)]:
        with pytest.raises(ConfigError) as info:
            render(context())
        failures.append(info.value.pos)
    assert failures == [at(10), at(20), at(30), at(40)]


def test_a_bare_expression_repeated_fails_at_each_position() -> None:
    engine = TemplateEngine()
    first = engine.expression("spec.missing.value > 1", at(5))
    second = engine.expression("spec.missing.value > 1", at(6))
    assert first.source == second.source
    for expr, pos in ((first, at(5)), (second, at(6))):
        with pytest.raises(ConfigError) as info:
            expr.evaluate(context())
        assert info.value.pos == pos


def test_a_syntax_error_repeated_is_reported_at_every_occurrence() -> None:
    engine = TemplateEngine()
    with pytest.raises(BundleError) as info:
        engine.tree({"a": "{{ oops( }}", "b": ["{{ oops( }}"]}, POS, {("a",): at(3), ("b",): at(4)})
    assert [p.pos for p in info.value.problems] == [at(3), at(4)]
    with pytest.raises(BundleError) as again:
        engine.expression("{{ oops( }}", at(7))
    assert [p.pos for p in again.value.problems] == [at(7)]


def test_a_repeated_expression_keeps_its_live_references() -> None:
    engine = TemplateEngine()
    sources = ["{{ live('db.service').spec.clusterIP }}", "{{ live('db.service').spec.clusterIP }}"]
    trees = [engine.tree({"ip": source}, POS) for source in sources]
    assert [t.references for t in trees] == [{"db.service"}, {"db.service"}]


# -- one context per tree render ------------------------------------------------------------


def test_a_variable_set_in_one_string_is_not_seen_by_the_next() -> None:
    tree = TemplateEngine().tree(
        {
            "first": "{% set shared = 'leaked' %}{{ shared }}",
            "second": "{{ shared | default('unset') }}",
            "third": "{{ result | default('unset') }}",
        },
        POS,
    )
    assert tree.render(context()) == {"first": "leaked", "second": "unset", "third": "unset"}


def test_an_expression_result_is_not_seen_by_the_next_string() -> None:
    tree = TemplateEngine().tree(
        {"replicas": "{{ spec.replicas }}", "after": "{{ result is defined }}"}, POS
    )
    assert tree.render(context()) == {"replicas": 3, "after": False}


def test_a_macro_defined_in_one_string_is_undefined_in_the_next() -> None:
    tree = TemplateEngine().tree(
        {"a": "{% macro m() %}x{% endmacro %}{{ m() }}", "b": "{{ m is defined }}"}, POS
    )
    assert tree.render(context()) == {"a": "x", "b": False}


def test_a_context_variable_shadowed_in_one_string_is_back_in_the_next() -> None:
    tree = TemplateEngine().tree(
        {"a": "{% set name = 'other' %}{{ name }}", "b": "{{ name }}", "c": ["{{ name }}"]}, POS
    )
    assert tree.render(context()) == {"a": "other", "b": "demo", "c": ["demo"]}


def test_a_string_with_blocks_renders_inside_a_tree() -> None:
    tree = TemplateEngine().tree(
        {"a": "{% block b %}in-{{ name }}{% endblock %}", "b": "{{ name }}"}, POS
    )
    assert tree.render(context()) == {"a": "in-demo", "b": "demo"}


def test_autoescape_in_one_string_does_not_escape_the_next() -> None:
    tree = TemplateEngine().tree(
        {"a": "{% autoescape true %}{{ v }}{% endautoescape %}", "b": "{{ v }}"}, POS
    )
    assert tree.render(context(v="<b>")) == {"a": "&lt;b&gt;", "b": "<b>"}


def test_the_failing_string_of_a_tree_is_the_one_reported() -> None:
    positions = {("a",): at(2), ("b",): at(3), ("c", 0): at(4), ("c", 1): at(5)}
    tree = TemplateEngine().tree(
        {"a": "{{ name }}", "b": "{{ spec.replicas }}", "c": ["{{ name }}", "{{ nope }}"]},
        POS,
        positions,
    )
    with pytest.raises(ConfigError) as info:
        tree.render(context())
    assert info.value.pos == at(5)
    assert "nope" in str(info.value)


def test_a_templated_key_that_fails_is_reported_at_its_position() -> None:
    tree = TemplateEngine().tree(
        {"{{ name }}": "{{ name }}", "{{ nope }}": 1}, POS, {("{{ nope }}",): at(8)}
    )
    with pytest.raises(ConfigError) as info:
        tree.render(context())
    assert info.value.pos == at(8)


def test_a_render_after_a_failure_starts_clean() -> None:
    tree = TemplateEngine().tree(
        {"a": "{% set x = 1 %}{{ x }}{{ spec.fail.here }}", "b": "{{ x | default('unset') }}"},
        POS,
    )
    with pytest.raises(ConfigError):
        tree.render(context())
    assert tree.render(context(spec={"fail": {"here": "!"}})) == {"a": "1!", "b": "unset"}


# -- positions of inline objects in a bundle -----------------------------------------------


MANY_RESOURCES = """
components:
  - name: first
    resources:
      - name: a
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: a}
          data:
            ok: "{{ name }}"
      - name: b
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: b}
          data:
            broken: "{{ spec.x ) }}"
  - name: second
    resources:
      - name: c
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: c}
          data:
            also: "{{ spec.y ) }}"
    patches:
      - target: {resource: c}
        patch:
          data:
            patched: "{{ spec.z ) }}"
hooks:
  afterDeploy:
    - name: hook
      resources:
        - name: d
          object:
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: d}
            data:
              hooked: "{{ spec.w ) }}"
"""


def line_of(root: Path, text: str) -> int:
    for number, line in enumerate((root / "operator.yaml").read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in operator.yaml")


def test_errors_in_inline_objects_at_every_depth_name_their_own_lines(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as info:
        build(tmp_path, MANY_RESOURCES)
    lines = sorted(p.pos.line for p in info.value.problems if p.pos is not None)
    expected = [line_of(tmp_path, f"spec.{v} )") for v in "xyzw"]
    assert lines == sorted(expected)


RUNTIME_FAILURES = """
components:
  - name: first
    resources:
      - name: a
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: a}
          data: {v: "{{ spec.missing.value }}"}
  - name: second
    resources:
      - name: b
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: b}
          data: {v: "{{ spec.missing.value }}"}
"""


def test_a_repeated_string_failing_in_two_components_reports_each_line(tmp_path: Path) -> None:
    bundle = build(tmp_path, RUNTIME_FAILURES)
    lines = [
        n
        for n, text in enumerate((tmp_path / "operator.yaml").read_text().splitlines(), 1)
        if "spec.missing.value" in text
    ]
    reported = []
    for component in bundle.controllers[0].components:
        tree = component.resources[0].object
        assert tree is not None
        with pytest.raises(ConfigError) as info:
            tree.render({"spec": {}})
        assert info.value.pos is not None
        reported.append(info.value.pos.line)
    assert reported == lines
    assert len(set(lines)) == 2
