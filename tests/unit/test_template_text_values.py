"""Values in text templates as the author and the tenant see them: filters over set blocks
and filter blocks compute from the values, a CR string keeps its text, and keys are the
strings Kubernetes reads."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from bundles import demo_cr, write_bundle

from oper8d.errors import ConfigError
from oper8d.template import TemplateEngine
from oper8d.template.filters import trunc63
from oper8d.testing import run_offline

CONF = "{% set conf %}\nlevel: {{ level }}\n{% endset %}"


def render(source: str, **context: Any) -> list[dict[str, Any]]:
    """``source`` rendered by an engine of its own (a process of its own: its own nonce)."""
    return TemplateEngine().text(source, "t.yaml").render(context)


def test_a_checksum_of_a_set_block_follows_the_values_and_not_the_process() -> None:
    source = CONF + "checksum: {{ conf | sha256 }}\n"
    info = hashlib.sha256(b"\nlevel: info\n").hexdigest()
    assert render(source, level="info") == [{"checksum": info}]
    assert render(source, level="info") == [{"checksum": info}]  # another nonce, same sum
    assert render(source, level="debug") != [{"checksum": info}]


def test_filters_over_a_set_block_see_its_text_with_the_values() -> None:
    source = CONF + "b64: {{ conf | b64encode }}\nsize: {{ conf | length }}\n"
    (obj,) = render(source, level="debug")
    assert base64.b64decode(obj["b64"]).decode() == "\nlevel: debug\n"
    assert obj["size"] == len("\nlevel: debug\n")


def test_a_filter_block_sees_the_values() -> None:
    source = "name: {% filter trunc63 %}{{ a }}-{{ b }}{% endfilter %}\n"
    (obj,) = render(source, a="app", b="x" * 70)
    assert obj == {"name": trunc63("app-" + "x" * 70)}
    assert "oper8d" not in obj["name"]


HOSTILE = "v\nhostNetwork: true\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}"


@pytest.mark.parametrize(
    "line",
    [
        "k: {{ conf | replace('level', 'lvl') }}",
        "k: {{ conf | upper }}",
        "k: {% filter upper %}{{ level }}{% endfilter %}",
        "k: {% filter replace('level', 'l') %}level: {{ level }}{% endfilter %}",
        "k: {{ [conf, 'x'] | join(', ') }}",
    ],
)
def test_what_a_filter_makes_of_a_cr_value_is_one_scalar(line: str) -> None:
    (obj,) = render(CONF + line + "\n", level=HOSTILE)
    assert list(obj) == ["k"]
    assert isinstance(obj["k"], str)
    assert "hostnetwork: true\n---\napiversion" in obj["k"].lower()


#: what a template does with a set block beside filters: each sees the values, as Python
#: does with the text the block would print (they saw its tokens: a cut token in the
#: object, ``'debug' in conf`` false)
OPERATIONS = [
    "conf[-6:-1]",
    "conf[1]",
    "conf.strip().upper()",
    "conf.split(': ')[1].strip()",
    "conf.replace('debug', 'info').strip()",
    "'debug' in conf",
    "conf == '\\nlevel: debug\\n'",
    "conf.startswith('\\nlevel')",
]


@pytest.mark.parametrize("expression", OPERATIONS)
def test_slicing_a_set_block_calling_its_methods_or_comparing_it_sees_the_values(
    expression: str,
) -> None:
    (obj,) = render(CONF + f"k: {{{{ {expression} }}}}\n", level="debug")
    expected = eval(expression, {}, {"conf": "\nlevel: debug\n"})  # the constants above
    assert obj == {"k": expected}
    assert "oper8d" not in str(obj)


@pytest.mark.parametrize("expression", ["conf[1:]", "conf.strip()", "conf.split('level: ')[1]"])
def test_what_an_operation_makes_of_a_cr_value_is_one_scalar(expression: str) -> None:
    (obj,) = render(CONF + f"k: {{{{ {expression} }}}}\n", level=HOSTILE)
    assert list(obj) == ["k"]
    assert "hostNetwork: true\n---\napiVersion" in obj["k"]


JSON = '{% set j %}{"a": "{{ v }}", "l": ["x-{{ v }}"]}{% endset %}'


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("k: {{ j | from_json }}", {"a": "debug", "l": ["x-debug"]}),
        ("k: {{ (j | from_json).a }}", "debug"),
        ("k: {{ (j | from_json).l[0] | upper }}", "X-DEBUG"),
        ("k: {{ (j | from_json).a == 'debug' }}", True),
        ("k: {{ {'b': (j | from_json).a} }}", {"b": "debug"}),
    ],
)
def test_what_from_json_reads_holds_the_values(line: str, expected: Any) -> None:
    # it held the tokens: the object got the token text, not the value (outside tester)
    assert render(JSON + line + "\n", v="debug") == [{"k": expected}]


def test_from_json_reads_a_multi_line_macro_printed_into_its_block() -> None:
    source = (
        '{% macro item() %}{\n"a": "{{ v }}"\n}{% endmacro %}'
        "{% set j %}[{{ item() }}]{% endset %}\nk: {{ j | from_json }}\n"
    )
    assert render(source, v="v") == [{"k": [{"a": "v"}]}]


@pytest.mark.parametrize(
    ("line", "empty", "debug"),
    [
        ("k: {% if b %}set{% else %}unset{% endif %}", "unset", "set"),
        ("k: {{ 'set' if b | trim else 'unset' }}", "unset", "set"),
        ("k: {{ not b }}", True, False),
        ("k: {{ b or 'fallback' }}", "fallback", "debug"),
        ("k: {{ b and 'set' }}", "", "set"),
        ("k: {{ b is eq 'debug' }}", False, True),
        ("k: {{ b | e }}", "", "debug"),
        ("k: {{ b | tojson }}", "", "debug"),
        ("k: {{ {'a': b} }}", {"a": ""}, {"a": "debug"}),
        ("k: {% for c in b %}{{ c }}.{% endfor %}", None, "d.e.b.u.g."),  # (`k:` is null)
    ],
)
def test_tests_and_truth_of_a_set_block_see_its_values(line: str, empty: Any, debug: Any) -> None:
    # they saw its tokens: a block printing an empty value was true (outside tester)
    source = "{% set b %}{{ v }}{% endset %}" + line + "\n"
    assert render(source, v="") == [{"k": empty}]
    assert render(source, v="debug") == [{"k": debug}]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("k: {{ 'debug' in [b] }}", True),
        ("k: {{ {'debug': 1}[b] }}", 1),
        ("k: {{ {'debug': 1}.get(b, 0) }}", 1),
        ("k: {{ b['upper']() }}", "DEBUG"),
        ("k: {{ '{}!'.format(b) }}", "debug!"),
    ],
)
def test_a_set_block_as_an_item_key_or_argument_is_its_values(line: str, expected: Any) -> None:
    # compared, looked up and formatted as its tokens (outside tester)
    assert render("{% set b %}{{ v }}{% endset %}" + line + "\n", v="debug") == [{"k": expected}]


@pytest.mark.parametrize(
    "line",
    [
        "k: {{ name() ~ '-svc' }}",
        "k: {{ name() + '-svc' }}",
        "k: {{ [name(), 'svc'] | join('-') }}",
    ],
)
def test_the_templates_own_text_joins_a_macros_output(line: str) -> None:
    # Helm's `{{ include "fullname" . }}-svc`: refused as a value joined to structure
    source = "{% macro name() %}{{ v }}-app{% endmacro %}" + line + "\n"
    assert render(source, v="demo") == [{"k": "demo-app-svc"}]


@pytest.mark.parametrize("value", ["Please wait...", "  x\ny\n", "x\n\n", "a\n...\n"])
def test_to_yaml_gives_back_the_string_wherever_nindent_puts_it(value: str) -> None:
    # a trailing "..." was dropped, `|2` and `|+` blocks changed once moved (outside tester)
    source = "a: {{ v | to_yaml }}\nb:\n  c: {{ v | to_yaml | nindent(4) }}\n"
    assert render(source, v=value) == [{"a": value, "b": {"c": value}}]


def test_a_filter_block_cannot_carry_printed_structure_out_of_its_place() -> None:
    # upper() of the block once hid the mark that checks where printed structure lands
    source = (
        "spec:\n  containers:\n    - name: w\n      env:\n        - name: NOTE\n"
        "          value: {% filter upper %}{{ v | to_yaml }}{% endfilter %}\n"
    )
    (obj,) = render(source, v="hostNetwork: true\nhostPID: true")
    assert list(obj["spec"]) == ["containers"]
    assert "HOSTNETWORK: TRUE" in obj["spec"]["containers"][0]["env"][0]["value"]


def test_a_set_block_printed_as_structure_stays_structure() -> None:
    source = (
        "{% set labels %}\na: {{ a }}\nb: x\n{% endset %}"
        "one:\n{{ labels | trim | indent(2) }}\n"
        "two:{{ labels | default('') | nindent(2) }}\n"
    )
    (obj,) = render(source, a="1")
    assert obj == {"one": {"a": 1, "b": "x"}, "two": {"a": 1, "b": "x"}}


# -- a CR string keeps its text ------------------------------------------------------------


def configmap_bundle(root: Path, template: str) -> Path:
    return write_bundle(
        root,
        "components:\n  - name: c\n    resources:\n      - name: t\n"
        "        template: templates/t.yaml\n",
        schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        files={"templates/t.yaml": template},
    )


STRINGS = ["01234", "0x1F", "1_000", "~", "null", "yes", "True", "1e3", "0o17", "3", "true"]


def test_a_cr_string_arrives_as_exactly_that_string(tmp_path: Path) -> None:
    bundle = configmap_bundle(
        tmp_path / "b",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n"
        + "".join(f"    a{i}: {{{{ spec.v{i} }}}}\n" for i in range(len(STRINGS)))
        + "data:\n"
        + "".join(f"  d{i}: {{{{ spec.v{i} }}}}\n" for i in range(len(STRINGS))),
    )
    (obj,) = render_offline(bundle, demo_cr(**{f"v{i}": v for i, v in enumerate(STRINGS)}))
    annotations = {k: v for k, v in obj["metadata"]["annotations"].items() if k[0] == "a"}
    assert annotations == {f"a{i}": v for i, v in enumerate(STRINGS)}
    assert obj["data"] == {f"d{i}": v for i, v in enumerate(STRINGS)}


def test_a_string_that_is_a_numbers_text_still_fills_a_number_field() -> None:
    assert render("replicas: {{ n }}\nflag: {{ b }}\n", n="3", b="false") == [
        {"replicas": 3, "flag": False}
    ]


def test_the_bundles_own_literals_read_as_kubectl_reads_them() -> None:
    # sigs.k8s.io/yaml (go-yaml v2): YAML 1.1 octal, hex and underscores, Go's 0o octal,
    # floats without a dot; timestamps and base-60 forms stay strings
    source = "v: [01234, 0x1F, 1_000, 0o17, 1e3, 2024-01-01, 12:30]\n"
    assert render(source) == [{"v": [668, 31, 1000, 15, 1000.0, "2024-01-01", "12:30"]}]


# -- keys are strings ---------------------------------------------------------------------


def test_number_and_boolean_keys_are_their_text_as_kubectl_sends_them(tmp_path: Path) -> None:
    bundle = configmap_bundle(
        tmp_path / "b",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n"
        "    {{ spec.k }}: x\n    {{ spec.o }}: y\ndata: {1: a, 0x10: b, true: c}\n",
    )
    (obj,) = render_offline(bundle, demo_cr(k="123", o="01234"))
    assert {"123": "x", "01234": "y"}.items() <= obj["metadata"]["labels"].items()
    assert obj["data"] == {"1": "a", "16": "b", "true": "c"}


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ("{~: a}", "the key None is null: a Kubernetes object's keys are strings"),
        ("{1.5: a}", "the key 1.5 is a float"),
        ("{1: a, '1': b}", "found the key '1' twice"),
    ],
)
def test_a_key_json_cannot_hold_is_a_clear_error(mapping: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        render(f"data: {mapping}\n")
    assert message in str(caught.value)
    assert str(caught.value).startswith("t.yaml:1: ")


def render_offline(bundle: Path, cr: dict[str, Any]) -> list[dict[str, Any]]:
    run = run_offline(bundle, cr)
    assert run.fatal_error is None, run.fatal_error.message
    return [obj for obj in run.applied.values() if obj["kind"] == "ConfigMap"]


def test_a_printed_mappings_number_keys_are_their_text_too() -> None:
    assert render("data: {{ {1: 'a', false: 'b'} }}\n") == [{"data": {"1": "a", "false": "b"}}]
    with pytest.raises(ConfigError, match="holds a key twice once its keys are text"):
        render("data: {{ {1: 'a', '1': 'b'} }}\n")


@pytest.mark.parametrize("tag", ["!!int", "!!bool", "!!float"])
def test_a_tag_written_before_a_printed_value_is_a_clear_error(tag: str) -> None:
    # was "internal error while rendering: ValueError" with the token text (outside tester)
    with pytest.raises(ConfigError, match="is written before a printed value") as caught:
        render(f"a: {tag} {{{{ x }}}}\n", x="5")
    assert "oper8dslot" not in str(caught.value)
