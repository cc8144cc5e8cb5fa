"""TemplateEngine: expressions, inline-object trees and text templates as the engine uses them."""

from __future__ import annotations

from typing import Any

import pytest

from oper8d.errors import BundleError, ConfigError, PreconditionError, SourcePos
from oper8d.template import Expr, TemplateEngine, TextTemplate, TreeTemplate, documents

POS = SourcePos("operator.yaml", 12, 9)
TEMPLATE_FILE = "templates/extras.yaml"


@pytest.fixture
def engine() -> TemplateEngine:
    return TemplateEngine()


def context(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "spec": {"replicas": 3, "image": "nginx", "labels": {"app": "web"}, "ports": [80, 443]},
        "name": "demo",
        "namespace": "apps",
    }
    base.update(extra)
    return base


# -- expressions -------------------------------------------------------------------------------


def test_bare_and_wrapped_expressions_evaluate_to_native_values(engine: TemplateEngine) -> None:
    assert engine.expression("spec.replicas > 1", POS).evaluate(context()) is True
    assert engine.expression("{{ spec.replicas > 1 }}", POS).evaluate(context()) is True
    assert engine.expression(" {{ spec.replicas * 2 }} ", POS).evaluate(context()) == 6


@pytest.mark.parametrize("constant", [True, False, 0, 2.5])
def test_boolean_and_number_literals_are_constant_expressions(
    engine: TemplateEngine, constant: bool | float
) -> None:
    expr = engine.expression(constant, POS)
    assert isinstance(expr, Expr)
    assert expr.evaluate({}) == constant
    assert expr.references == frozenset()


def test_an_expression_of_another_type_is_a_bundle_error(engine: TemplateEngine) -> None:
    with pytest.raises(BundleError, match="must be a string, a boolean or a number"):
        engine.expression(None, POS)  # type: ignore[arg-type]


def test_an_expression_result_does_not_alias_the_context(engine: TemplateEngine) -> None:
    ctx = context()
    labels = engine.expression("spec.labels", POS).evaluate(ctx)
    labels["added"] = "x"
    assert ctx["spec"]["labels"] == {"app": "web"}


def test_an_expression_yielding_an_iterator_gives_a_list(engine: TemplateEngine) -> None:
    doubled = engine.expression("spec.ports | map('string') ", POS).evaluate(context())
    assert doubled == ["80", "443"]


def test_a_syntax_error_in_an_expression_is_a_bundle_error_at_its_position(
    engine: TemplateEngine,
) -> None:
    with pytest.raises(BundleError) as info:
        engine.expression("spec.replicas >", POS)
    [problem] = info.value.problems
    assert problem.pos == POS
    assert "template syntax error" in problem.message
    assert "spec.replicas >" in problem.message


def test_text_after_a_bare_expression_is_a_syntax_error(engine: TemplateEngine) -> None:
    with pytest.raises(BundleError, match="after the expression"):
        engine.expression("spec.replicas spec.image", POS)


def test_an_undefined_name_in_an_expression_is_a_config_error_quoting_it(
    engine: TemplateEngine,
) -> None:
    with pytest.raises(ConfigError) as info:
        engine.expression("spec.replicaz", POS).evaluate(context())
    assert info.value.pos == POS
    assert info.value.message.startswith(
        "undefined variable: 'dict object' has no attribute 'replicaz' (in spec.replicaz)"
    )


def test_a_wholly_undefined_expression_is_an_error_not_none(engine: TemplateEngine) -> None:
    with pytest.raises(ConfigError, match="undefined variable: 'missing' is undefined"):
        engine.expression("missing", POS).evaluate(context())


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("1 / 0", "division by zero"),
        ("spec.image + 1", "type error"),
        ("spec.image | b64decode", "invalid value"),
        ("spec.image | from_json", "invalid value: Expecting value"),
    ],
)
def test_runtime_failures_of_an_expression_are_config_errors(
    engine: TemplateEngine, source: str, what: str
) -> None:
    with pytest.raises(ConfigError, match=what) as info:
        engine.expression(source, POS).evaluate(context())
    assert info.value.pos == POS


# -- trees -------------------------------------------------------------------------------------


def test_a_lone_expression_in_a_tree_keeps_its_type(engine: TemplateEngine) -> None:
    tree = engine.tree(
        {"replicas": "{{ spec.replicas }}", "labels": "  {{ spec.labels }}\n", "on": "{{ true }}"},
        POS,
    )
    assert tree.render(context()) == {"replicas": 3, "labels": {"app": "web"}, "on": True}


def test_mixed_text_renders_to_a_string(engine: TemplateEngine) -> None:
    tree = engine.tree(
        {"image": "{{ spec.image }}:1.2", "count": "{{ spec.replicas }}{{ spec.replicas }}"}, POS
    )
    assert tree.render(context()) == {"image": "nginx:1.2", "count": "33"}


def test_statements_in_a_tree_string_render_to_text(engine: TemplateEngine) -> None:
    tree = engine.tree({"mode": "{% if spec.replicas > 1 %}ha{% else %}single{% endif %}"}, POS)
    assert tree.render(context()) == {"mode": "ha"}


def test_templated_keys_render_to_strings(engine: TemplateEngine) -> None:
    tree = engine.tree({"labels": {"{{ name }}-app": "web", "static": 1}}, POS)
    assert tree.render(context()) == {"labels": {"demo-app": "web", "static": 1}}


def test_a_templated_key_that_is_not_a_string_is_a_config_error(engine: TemplateEngine) -> None:
    tree = engine.tree({"{{ spec.replicas }}": "x"}, POS)
    with pytest.raises(ConfigError, match="key must render to a string, got int"):
        tree.render(context())


def test_templated_keys_that_collide_are_a_config_error(engine: TemplateEngine) -> None:
    tree = engine.tree({"app": 1, "{{ 'app' }}": 2}, POS)
    with pytest.raises(ConfigError, match="key 'app' appears twice"):
        tree.render(context())


def test_templates_inside_nested_lists_are_rendered(engine: TemplateEngine) -> None:
    tree = engine.tree(
        {"containers": [{"name": "web", "args": ["--n", "{{ spec.replicas }}", ["{{ name }}"]]}]},
        POS,
    )
    assert tree.render(context()) == {"containers": [{"name": "web", "args": ["--n", 3, ["demo"]]}]}


def test_key_order_is_kept(engine: TemplateEngine) -> None:
    source = {"z": 1, "a": "{{ name }}", "m": {"k": 1}, "b": "{{ spec.replicas }}"}
    assert list(engine.tree(source, POS).render(context())) == ["z", "a", "m", "b"]


def test_a_tree_without_templates_is_static_and_rendered_as_a_copy(
    engine: TemplateEngine,
) -> None:
    source = {"kind": "ConfigMap", "data": {"a": "1"}, "list": [{"x": 1}]}
    tree = engine.tree(source, POS)
    assert isinstance(tree, TreeTemplate)
    assert tree.is_static
    first = tree.render({})
    first["data"]["a"] = "changed"
    first["list"][0]["x"] = 2
    assert tree.render({}) == source
    assert source["data"] == {"a": "1"}


def test_renders_do_not_share_any_mutable_part(engine: TemplateEngine) -> None:
    tree = engine.tree(
        {
            "metadata": {"name": "{{ name }}", "labels": {"app": "web"}},
            "spec": {"ports": [{"port": 80}], "replicas": "{{ spec.replicas }}"},
            "selector": "{{ spec.labels }}",
        },
        POS,
    )
    assert not tree.is_static
    first = tree.render(context())
    first["metadata"]["labels"]["app"] = "changed"
    first["spec"]["ports"][0]["port"] = 1
    first["selector"]["app"] = "changed"
    second = tree.render(context())
    assert second["metadata"]["labels"] == {"app": "web"}
    assert second["spec"]["ports"] == [{"port": 80}]
    assert second["selector"] == {"app": "web"}


def test_rendered_trees_follow_the_context(engine: TemplateEngine) -> None:
    tree = engine.tree({"replicas": "{{ spec.replicas }}"}, POS)
    assert tree.render(context(spec={"replicas": 1})) == {"replicas": 1}
    assert tree.render(context(spec={"replicas": 5})) == {"replicas": 5}


def test_loader_types_are_normalised_to_plain_data(engine: TemplateEngine) -> None:
    import datetime

    class LoaderStr(str):
        pass

    tree = engine.tree({LoaderStr("at"): datetime.date(2024, 1, 2), "t": (1, 2)}, POS)
    rendered = tree.render({})
    assert rendered == {"at": "2024-01-02", "t": [1, 2]}
    assert type(next(iter(rendered))) is str


def test_an_unsupported_value_in_a_tree_is_a_bundle_error_at_its_position(
    engine: TemplateEngine,
) -> None:
    where = SourcePos("operator.yaml", 20, 11)
    with pytest.raises(BundleError, match="unsupported value of type bytes") as info:
        engine.tree({"data": {"blob": b"\x00"}}, POS, {("data", "blob"): where})
    assert info.value.problems[0].pos == where


def test_an_undefined_variable_in_a_tree_names_the_strings_file_line_and_column(
    engine: TemplateEngine,
) -> None:
    string_pos = SourcePos("operator.yaml", 31, 21)
    tree = engine.tree(
        {"spec": {"replicas": "{{ spec.replicaz }}"}},
        POS,
        {(): POS, ("spec",): SourcePos("operator.yaml", 30, 9), ("spec", "replicas"): string_pos},
    )
    with pytest.raises(ConfigError) as info:
        tree.render(context())
    assert info.value.pos == string_pos
    assert str(info.value).startswith(
        "operator.yaml:31:21: undefined variable: 'dict object' has no attribute 'replicaz'"
    )


def test_a_tree_error_without_a_known_position_uses_the_nearest_ancestor(
    engine: TemplateEngine,
) -> None:
    parent = SourcePos("operator.yaml", 30, 9)
    tree = engine.tree({"spec": {"env": ["{{ nope }}"]}}, POS, {("spec",): parent})
    with pytest.raises(ConfigError) as info:
        tree.render(context())
    assert info.value.pos == parent


def test_syntax_errors_in_a_tree_are_all_reported_at_their_positions(
    engine: TemplateEngine,
) -> None:
    first, second = SourcePos("operator.yaml", 40, 5), SourcePos("operator.yaml", 41, 5)
    with pytest.raises(BundleError) as info:
        engine.tree({"a": "{{ oops( }}", "b": "{% if %}"}, POS, {("a",): first, ("b",): second})
    assert [p.pos for p in info.value.problems] == [first, second]
    assert all("template syntax error" in p.message for p in info.value.problems)


def test_an_unknown_filter_is_reported_at_load_time(engine: TemplateEngine) -> None:
    with pytest.raises(BundleError, match="No filter named 'toYaml'"):
        engine.tree({"a": "{{ spec | toYaml }}"}, POS)


def test_comments_alone_do_not_make_a_string_a_template(engine: TemplateEngine) -> None:
    tree = engine.tree({"note": "{# not a template"}, POS)
    assert tree.is_static
    assert tree.render({}) == {"note": "{# not a template"}


# -- live() references --------------------------------------------------------------------------


def test_references_are_the_constant_arguments_of_live_calls(engine: TemplateEngine) -> None:
    tree = engine.tree(
        {
            "ip": "{{ live('db.service').spec.clusterIP }}",
            "list": ["x-{{ live('cache.statefulset') }}"],
            "{{ live('keys.configmap').metadata.name }}": 1,
        },
        POS,
    )
    assert tree.references == {"db.service", "cache.statefulset", "keys.configmap"}


def test_references_are_found_in_expressions(engine: TemplateEngine) -> None:
    expr = engine.expression("live('db.statefulset').status.readyReplicas >= 1", POS)
    assert expr.references == {"db.statefulset"}
    wrapped = engine.expression("{{ live('db.service') is not none }}", POS)
    assert wrapped.references == {"db.service"}


def test_references_are_found_in_text_templates(engine: TemplateEngine) -> None:
    template = engine.text(
        "{% if live('db.service') %}\nip: {{ live('db.service').spec.clusterIP }}\n{% endif %}\n"
        "secret: {{ live('db.secret') }}\n",
        TEMPLATE_FILE,
    )
    assert template.references == {"db.service", "db.secret"}


def test_live_calls_with_a_computed_argument_are_not_references(engine: TemplateEngine) -> None:
    expr = engine.expression("live(component ~ '.service') or live(name) or live(3)", POS)
    assert expr.references == frozenset()


# -- text templates -----------------------------------------------------------------------------


MULTI_DOCUMENT = """\
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}-svc
spec:
  ports:
{% for port in spec.ports %}
    - port: {{ port }}
{% endfor %}
---
{% if spec.replicas > 5 %}
apiVersion: v1
kind: ConfigMap
metadata:
  name: big
{% endif %}
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-cm
data:
  created: 2024-01-02
"""


def test_a_text_template_renders_to_its_non_empty_documents(engine: TemplateEngine) -> None:
    template = engine.text(MULTI_DOCUMENT, TEMPLATE_FILE)
    assert isinstance(template, TextTemplate)
    assert template.file == TEMPLATE_FILE
    assert template.render(context()) == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "demo-svc"},
            "spec": {"ports": [{"port": 80}, {"port": 443}]},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "demo-cm"},
            "data": {"created": "2024-01-02"},  # a string, as Kubernetes and Helm see it
        },
    ]


def test_a_text_template_keeps_its_trailing_newline(engine: TemplateEngine) -> None:
    assert engine.text("a: 1\n", TEMPLATE_FILE).render_text({}) == "a: 1\n"


def test_text_template_renders_return_objects_the_caller_may_mutate(
    engine: TemplateEngine,
) -> None:
    template = engine.text(MULTI_DOCUMENT, TEMPLATE_FILE)
    first = template.render(context())
    first[0]["metadata"]["name"] = "changed"
    first.pop()
    second = template.render(context())
    assert second[0]["metadata"]["name"] == "demo-svc"
    assert len(second) == 2


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rendered texts parsed from now on (the parse cache's misses)."""
    parses: list[str] = []

    class CountingLoader(documents.SlotLoader):
        def __init__(self, text: str, slots: Any) -> None:
            parses.append(text)
            super().__init__(text, slots)

    monkeypatch.setattr(documents, "SlotLoader", CountingLoader)
    return parses


def test_an_unchanged_render_is_not_parsed_again(
    engine: TemplateEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    parses = count_parses(monkeypatch)
    template = engine.text("replicas: {{ spec.replicas }}\n", TEMPLATE_FILE)
    template.render(context())
    template.render(context())
    assert len(parses) == 1
    assert template.render(context(spec={"replicas": 9})) == [{"replicas": 9}]
    assert len(parses) == 2


def test_the_parse_cache_is_bounded_and_owned_by_each_template(
    engine: TemplateEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    parses = count_parses(monkeypatch)
    source = "n: {{ n }}\n"
    one, other = engine.text(source, TEMPLATE_FILE), engine.text(source, TEMPLATE_FILE)
    one.render({"n": 1})
    other.render({"n": 1})  # another template: its own cache
    assert len(parses) == 2
    for n in range(2, 200):
        one.render({"n": n})
    assert len(parses) == 200  # 2 + 198 distinct texts
    one.render({"n": 1})  # evicted from the bounded cache: parsed again
    assert len(parses) == 201


def test_a_document_that_is_not_a_mapping_is_a_config_error_naming_file_and_document(
    engine: TemplateEngine,
) -> None:
    template = engine.text("a: 1\n---\n- just\n- a list\n", TEMPLATE_FILE)
    with pytest.raises(ConfigError) as info:
        template.render({})
    assert info.value.pos == SourcePos(TEMPLATE_FILE, 3)  # the template's line of it
    assert "document 2 of the rendered template is a list, not a mapping" in info.value.message


def test_rendered_text_that_is_not_yaml_is_a_config_error_quoting_the_line(
    engine: TemplateEngine,
) -> None:
    template = engine.text("a: 1\nb: [unclosed, {{ value }}\n", TEMPLATE_FILE)
    with pytest.raises(ConfigError) as info:
        template.render({"value": "x"})
    assert info.value.pos == SourcePos(TEMPLATE_FILE, 2)
    assert "not valid YAML" in info.value.message
    assert "b: [unclosed, {{…}}" in info.value.message  # the line, its values left out
    assert "oper8d render" not in info.value.message  # the command that just failed


def test_an_undefined_variable_in_a_text_template_names_file_and_line(
    engine: TemplateEngine,
) -> None:
    template = engine.text(
        "kind: ConfigMap\ndata:\n{% for k in spec.labels %}\n  {{ k }}: {{ spec.nope }}\n"
        "{% endfor %}\n",
        TEMPLATE_FILE,
    )
    with pytest.raises(ConfigError) as info:
        template.render(context())
    assert info.value.pos == SourcePos(TEMPLATE_FILE, 4)
    assert "undefined variable: 'dict object' has no attribute 'nope'" in info.value.message
    assert "(in {{ k }}: {{ spec.nope }})" in info.value.message


def test_an_error_inside_a_filter_is_reported_at_the_template_line_using_it(
    engine: TemplateEngine,
) -> None:
    template = engine.text("a: 1\nb: 2\nc: {{ 'x' | b64decode }}\n", TEMPLATE_FILE)
    with pytest.raises(ConfigError) as info:
        template.render({})
    assert info.value.pos == SourcePos(TEMPLATE_FILE, 3)


def test_a_syntax_error_in_a_text_template_names_file_and_line(engine: TemplateEngine) -> None:
    with pytest.raises(BundleError) as info:
        engine.text("a: 1\nb: {{ spec.x }\n", TEMPLATE_FILE)
    [problem] = info.value.problems
    assert problem.pos == SourcePos(TEMPLATE_FILE, 2)
    assert str(problem).startswith(f"{TEMPLATE_FILE}:2: template syntax error")


# -- errors raised on purpose by context functions ------------------------------------------------


def waiting_require(condition: bool, message: str) -> bool:
    if not condition:
        raise PreconditionError(message)
    return True


def failing_config_error(message: str) -> None:
    raise ConfigError(message, field="spec.mode")


def test_precondition_errors_from_context_functions_pass_through_unchanged(
    engine: TemplateEngine,
) -> None:
    ctx = context(require=waiting_require)
    with pytest.raises(PreconditionError, match=r"^waiting for the db$") as info:
        engine.tree({"a": "{{ require(false, 'waiting for the db') }}"}, POS).render(ctx)
    assert info.value.pos is None
    with pytest.raises(PreconditionError, match=r"^waiting for the db$"):
        engine.expression("require(false, 'waiting for the db')", POS).evaluate(ctx)
    with pytest.raises(PreconditionError, match=r"^waiting for the db$"):
        engine.text("a: {{ require(false, 'waiting for the db') }}\n", TEMPLATE_FILE).render(ctx)


def test_config_errors_from_context_functions_pass_through_unchanged(
    engine: TemplateEngine,
) -> None:
    ctx = context(config_error=failing_config_error)
    with pytest.raises(ConfigError) as info:
        engine.text("a: {{ config_error('mode must be ha') }}\n", TEMPLATE_FILE).render(ctx)
    assert info.value.message == "mode must be ha"
    assert info.value.field == "spec.mode"
    assert info.value.pos is None


def test_context_values_shadow_the_engines_globals(engine: TemplateEngine) -> None:
    ctx = context(truncate_name=lambda name: "shadowed")
    assert engine.expression("truncate_name('x')", POS).evaluate(ctx) == "shadowed"
    assert engine.expression("truncate_name('x' * 70) | length", POS).evaluate(context()) == 63
