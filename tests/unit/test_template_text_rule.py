"""The text-template rule as a bundle author meets it: structure comes only from the
template's literal text; data from the structure filters lands where its token stands; the
Helm idioms docs/bundle-format.md lists work, and the others fail with a clear message."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from oper8d.errors import BundleError, ConfigError
from oper8d.template import TemplateEngine


def render(source: str, **context: Any) -> list[dict[str, Any]]:
    return TemplateEngine().text(source, "t.yaml").render(context)


# -- the Helm idioms that work ------------------------------------------------------------

LABELS = "{% macro labels() %}app: {{ name }}\ntier: web{% endmacro %}"


def test_a_macro_printed_with_nindent_is_the_templates_structure() -> None:
    source = LABELS + "metadata:\n  labels:\n    {{- labels() | nindent(4) }}\n"
    assert render(source, name="x: y") == [{"metadata": {"labels": {"app": "x: y", "tier": "web"}}}]


def test_data_alone_on_a_line_joins_the_mapping_or_list_it_stands_in() -> None:
    source = (
        LABELS + "metadata:\n  labels:\n    {{- labels() | nindent(4) }}\n"
        "    {{- extra | to_yaml | nindent(4) }}\n"
        "spec:\n  containers:\n  - name: a\n  {{- more | to_yaml | nindent(2) }}\n"
    )
    (obj,) = render(source, name="w", extra={"team": "t", "x": "1\n---"}, more=[{"name": "b"}])
    assert obj["metadata"]["labels"] == {"app": "w", "tier": "web", "team": "t", "x": "1\n---"}
    assert obj["spec"]["containers"] == [{"name": "a"}, {"name": "b"}]


def test_data_alone_under_a_key_is_that_keys_value() -> None:
    source = "resources:\n  {{- r | to_yaml | nindent(2) }}\nlist:\n  {{ l | to_json }}\n"
    r = {"limits": {"cpu": "1"}}
    assert render(source, r=r, l=[1, "2"]) == [{"resources": r, "list": [1, "2"]}]


def test_data_as_a_whole_scalar_is_itself_and_a_string_stays_a_string() -> None:
    source = "a: {{ x | to_json }}\nb: {{ n | quote }}\nc: {{ n | to_yaml }}\nd: {{ n }}\n"
    assert render(source, x={"k": [1]}, n="3") == [{"a": {"k": [1]}, "b": "3", "c": "3", "d": 3}]


def test_data_inside_a_scalar_is_its_text_there() -> None:
    source = (
        "a: '{{ x | to_json }}'\nb: --opts={{ x | to_json }}\n"
        "c: |\n  {{- x | to_yaml | nindent(2) }}\n"
    )
    (obj,) = render(source, x={"k": "v', hostNetwork: 'y"})
    assert obj["a"] == obj["b"][len("--opts=") :] == '{"k": "v\', hostNetwork: \'y"}'
    assert obj["c"] == "k: 'v'', hostNetwork: ''y'\n"


def test_a_checksum_a_suffix_and_from_json_of_template_text() -> None:
    source = (
        "{% macro name() %}web{% endmacro %}"
        '{% macro cfg() %}{"port": {{ port }}, "host": "{{ host }}"}{% endmacro %}'
        "a: {{ name() ~ '-svc' }}\nb: {{ name() }}-svc\n"
        "c: {{ (cfg() | from_json).port }}\nd: {{ (cfg() | from_json).host }}\n"
        "e: {{ cfg() | sha256 | length }}\n"
    )
    (obj,) = render(source, port="80", host='h", "x": "y')
    assert obj == {"a": "web-svc", "b": "web-svc", "c": 80, "d": 'h", "x": "y', "e": 64}


def test_caller_and_set_blocks_are_template_text() -> None:
    source = (
        "{% macro box() %}outer:\n  {{ caller() }}{% endmacro %}"
        "{% set more %}extra: {{ v }}{% endset %}"
        "{% call box() %}inner: {{ v }}{% endcall %}\n{{ more }}\n"
    )
    assert render(source, v="x\ny: 1") == [{"outer": {"inner": "x\ny: 1"}, "extra": "x\ny: 1"}]


# -- what computes on template text gives a value -------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("m() | upper", "K: X\nJ: 1"),
        ("m()[:4]", "k: x"),
        ("m().split(':')[0]", "k"),
        ("m() | replace('1', '2')", "k: x\nj: 2"),
        ("'j: 1' in m()", True),
        ("m() | length", 9),
        ("m() ~ v", "k: x\nj: 1x"),
    ],
)
def test_an_operation_on_template_text_sees_its_value(expression: str, expected: Any) -> None:
    source = "{% macro m() %}k: {{ v }}\nj: 1{% endmacro %}out: {{ " + expression + " }}\n"
    (obj,) = render(source, v="x")
    assert obj["out"] == expected


def test_choosing_template_text_keeps_it_template_text() -> None:
    source = "{% macro m() %}k: {{ v }}\nj: 1{% endmacro %}{{ m() if m() else 'none' }}\n"
    assert render(source, v="x") == [{"k": "x", "j": 1}]


# -- what fails, clearly ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "what"),
    [
        ("(1, 2)", "a tuple cannot be printed"),
        ("namespace(a=1)", "a Namespace cannot be printed"),
        ("{'a': 1}.items()", "a dict_items cannot be printed"),
        ("m", "a Macro cannot be printed"),
        ("cycler(1, 2)", "a Cycler cannot be printed"),
        ("{'a': (1, 2)}", "a tuple cannot be printed"),
    ],
)
def test_printing_what_is_not_data_is_an_error(expression: str, what: str) -> None:
    with pytest.raises(ConfigError, match=what):
        render("{% macro m() %}x{% endmacro %}a: {{ " + expression + " }}\n")


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("{% autoescape false %}a: {{ x }}{% endautoescape %}", "autoescape"),
        ("{% block b %}a: 1{% endblock %}", "block"),
        ("{% for x in xs recursive %}{{ loop(x) }}{% endfor %}", "recursive loops"),
    ],
)
def test_statements_text_templates_refuse_are_bundle_errors(source: str, why: str) -> None:
    with pytest.raises(BundleError, match=why):
        TemplateEngine().text(source, "t.yaml")


def test_a_key_that_spliced_data_brings_twice_is_an_error() -> None:
    source = "labels:\n  app: a\n  {{- l | to_yaml | nindent(2) }}\n"
    with pytest.raises(ConfigError, match="the key 'app' appears twice"):
        render(source, l={"app": "b"})


def test_nothing_may_be_nested_under_spliced_data() -> None:
    source = "labels:\n  {{ l | to_yaml | nindent(2) }}\n    x: 1\n"
    with pytest.raises(ConfigError, match="nothing may be nested"):
        render(source, l={"app": "b"})


def test_a_lone_surrogate_in_a_block_scalar_is_a_clean_error() -> None:
    with pytest.raises(ConfigError, match="lone surrogate"):
        render("c: |\n  {{ x }}\n", x="\ud800")


# -- a CR's data keys come before a mapping's methods -----------------------------------------


def test_a_field_named_like_a_mapping_method_is_the_field() -> None:
    source = "a: {{ spec.items }}\nb: {{ spec.keys }}\nc: {{ spec.values | length }}\n"
    spec = {"items": ["x"], "keys": "k", "values": [1, 2]}
    assert render(source, spec=spec) == [{"a": ["x"], "b": "k", "c": 2}]
    expression = TemplateEngine().expression("spec.items", pos=None)  # type: ignore[arg-type]
    assert expression.evaluate({"spec": spec}) == ["x"]


@pytest.mark.parametrize("line", ["{{ k }}: 1", "list:\n  - {{ i }}", "'{{ k }}': 1"])
def test_a_value_spelling_a_splice_mark_is_only_its_text(line: str) -> None:
    # a tenant who learned the nonce must not copy other printed data into its mapping
    engine = TemplateEngine()
    nonce = engine._nonce
    source = (
        "secret:\n  {{ data | to_yaml | nindent(2) }}\nmine:\n  "
        + line.replace("\n", "\n  ")
        + "\n"
    )
    template = engine.text(source, "t.yaml")
    data = {"password": "S3CRET"}
    (obj,) = template.render({"data": data, "k": f"{nonce}0m", "i": f"{nonce}0s"})
    assert obj["secret"] == data
    assert "S3CRET" not in str(obj["mine"])


# -- an outside tester's findings ----------------------------------------------------------


def test_data_in_a_macros_block_scalar_keeps_its_lines_when_the_macro_is_indented() -> None:
    # nindent of the macro moved the token but not the later lines of the data it placed
    source = (
        "{% macro appconfig() -%}\napp.yaml: |\n  auth:\n    enabled: true\n  user:\n"
        "    {{- prefs | to_yaml | nindent(4) }}\n{%- endmacro %}\n"
        "data:\n  {{- appconfig() | nindent(2) }}\n"
    )
    hostile = {"a": 1, "auth": {"enabled": False}}
    (obj,) = render(source, prefs=hostile)
    app = yaml.safe_load(obj["data"]["app.yaml"])
    assert app == {"auth": {"enabled": True}, "user": hostile}


def test_a_key_printed_beside_a_merge_key_cannot_replace_the_templates_own() -> None:
    source = (
        "x-defaults: &defaults\n  serviceAccountName: app\n"
        "spec:\n  <<: *defaults\n  securityContext:\n    runAsNonRoot: true\n"
        "  {{ key }}: {{ value | to_json }}\n"
    )
    with pytest.raises(ConfigError, match=re.escape("found the key '{{…}}' twice")):
        render(source, key="securityContext", value={"privileged": True})
    assert render(source, key="hostname", value="web")[0]["spec"]["securityContext"] == {
        "runAsNonRoot": True
    }


def test_spliced_data_continued_by_the_next_line_is_refused_not_leaked() -> None:
    source = "description: {{ d | to_yaml | nindent(2) }}\n    (managed by oper8d)\n"
    assert render(source, d="hello") == [{"description": "hello (managed by oper8d)"}]
    with pytest.raises(ConfigError, match="continued by the next line"):
        render(source, d=["a", "b"])


def test_a_value_printed_many_times_is_bounded_while_it_is_computed_on() -> None:
    source = (
        "{% macro cfg() %}{% for u in users %}{{ u }}: {{ base }}\n{% endfor %}{% endmacro %}"
        "checksum: {{ cfg() | sha256 }}\n"
    )
    with pytest.raises(ConfigError, match="renderedBytes"):
        render(source, base="x" * 500_000, users=[f"u{i}" for i in range(50)])


def test_an_indentation_indicator_counts_from_the_blocks_parent() -> None:
    source = "data:\n  nested:\n    script: |2\n        hello {{ v }}\n        end\n"
    expected = yaml.safe_load(source.replace("{{ v }}", "x"))
    assert render(source, v="x") == [expected]
    with pytest.raises(ConfigError, match="would end the block"):
        render(source, v="x\n  y: z")


def test_a_quoted_key_is_the_string_it_quotes() -> None:
    source = (
        "labels:\n{% for k, v in labels.items() %}  {{ k | quote }}: {{ v | quote }}\n{% endfor %}"
    )
    assert render(source, labels={"team": "a", "5": "b"}) == [{"labels": {"team": "a", "5": "b"}}]


def test_indent_says_it_takes_one_width() -> None:
    with pytest.raises(ConfigError, match="indent takes one argument, the width"):
        render("a: {{ v | indent(2, true) }}\n", v="x")


# -- a second outside tester's findings -----------------------------------------------------


def test_a_key_a_value_makes_cannot_replace_a_key_merged_in_with_a_merge_key() -> None:
    source = (
        "x-common: &common\n  managed-by: oper8d\n  tier: restricted\n"
        "metadata:\n  labels:\n    <<: *common\n"
        "    {%- for k, v in labels.items() %}\n    {{ k }}: {{ v | quote }}\n    {%- endfor %}\n"
    )
    assert render(source, labels={"team": "a"})[0]["metadata"]["labels"] == {
        "managed-by": "oper8d",
        "tier": "restricted",
        "team": "a",
    }
    with pytest.raises(ConfigError, match="twice"):
        render(source, labels={"tier": "privileged"})


def test_what_a_render_prints_is_bounded_as_it_prints() -> None:
    source = '{% for i in range(n) %}k{{ i }}: "{{ prefix ~ i }}"\n{% endfor %}'
    with pytest.raises(ConfigError, match="renderedBytes"):
        render(source, prefix="p" * 300_000, n=50)


def test_indenting_template_text_is_bounded_with_the_data_placed_in_it() -> None:
    source = "{% macro m() %}a: |\n  {{ big | to_yaml }}{% endmacro %}{{ m() | indent(20000) }}\n"
    with pytest.raises(ConfigError, match="renderedBytes"):
        render(source, big=[f"item{i}" for i in range(20_000)])


@pytest.mark.parametrize("expression", ["v | to_yaml | nindent(8) | indent(-4)", "v | nindent(-3)"])
def test_a_negative_indent_is_refused(expression: str) -> None:
    with pytest.raises(ConfigError, match="a width of 0 or more"):
        render("x: {{ " + expression + " }}\n", v={"a": 1})


@pytest.mark.parametrize("line_break", ["\x85", "\u2028", "\u2029"])
def test_a_block_header_ended_by_any_yaml_line_break_holds_no_token(line_break: str) -> None:
    (obj,) = render(f"a: |{line_break}  {{{{ v }}}}{line_break}  x\nb: c\n", v="hello")
    assert "oper8dslot" not in str(obj) and "hello" in obj["a"] and obj["b"] == "c"


def test_trimmed_yaml_of_data_is_still_that_data() -> None:
    source = (
        "annotations:\n  {{- labels | to_yaml | trim | nindent(2) }}\n"
        "tolerations:\n- {{ t | to_yaml | nindent(2) | trim }}\n"
    )
    t = {"key": "k", "operator": "Exists"}
    assert render(source, labels={"a": "1"}, t=t) == [
        {"annotations": {"a": "1"}, "tolerations": [t]}
    ]


def test_a_value_printed_as_a_bare_json_key_is_that_key() -> None:
    source = '{% set j %}{ {{ k }}: "v" }{% endset %}\nout: {{ j | from_json }}\n'
    assert render(source, k="name") == [{"out": {"name": "v"}}]
