"""The filters templates get beside Jinja's: called directly and from templates."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup

from oper8d.errors import ConfigError, SourcePos
from oper8d.template import TemplateEngine
from oper8d.template.filters import (
    b64decode,
    b64encode,
    from_json,
    indent,
    nindent,
    quote,
    required,
    sha256,
    squote,
    to_json,
    to_yaml,
    trunc63,
)

POS = SourcePos("operator.yaml", 4, 9)

json_scalars = st.none() | st.booleans() | st.integers() | st.text()
json_data = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def render(source: str, **context: Any) -> Any:
    return TemplateEngine().expression(source, POS).evaluate(context)


# -- to_yaml / to_json / from_json ---------------------------------------------------------


@given(json_data)
def test_to_yaml_output_reads_back_as_the_same_data(value: Any) -> None:
    assert yaml.safe_load(to_yaml(value)) == value


def test_to_yaml_writes_block_style_with_sorted_keys_without_trailing_newline() -> None:
    # sorted like Helm's toYaml: live data hashes the same whatever order the server used
    assert to_yaml({"b": 1, "a": [1, 2]}) == "a:\n- 1\n- 2\nb: 1"


def test_to_yaml_writes_multi_line_strings_as_block_scalars() -> None:
    assert to_yaml({"script": "echo a\necho b\n"}) == "script: |\n  echo a\n  echo b\n"
    assert to_yaml({"script": "echo a\necho b"}) == "script: |-\n  echo a\n  echo b"


def test_to_yaml_of_a_scalar_has_no_document_end_marker() -> None:
    assert to_yaml("text") == "text"
    assert to_yaml(3) == "3"


def test_to_yaml_composes_with_nindent_inside_a_text_template() -> None:
    template = TemplateEngine().text(
        "metadata:\n  labels:{{ labels | to_yaml | nindent(4) }}\n", "templates/t.yaml"
    )
    labels = {"app": "web", "tier": "front"}
    assert template.render({"labels": labels}) == [{"metadata": {"labels": labels}}]


@given(json_data)
def test_to_json_and_from_json_round_trip(value: Any) -> None:
    # (Markup: JSON a text template wrote, the only text from_json parses)
    assert from_json(Markup(to_json(value))) == value
    assert from_json(Markup(to_json(value, compact=True))) == value


def test_to_json_writes_number_keys_as_their_text_and_refuses_two_of_one_text() -> None:
    # keys of mixed types gave Python's "'<' not supported" (third outside tester)
    assert to_json({8080: "http", "name": "web"}) == '{"8080": "http", "name": "web"}'
    with pytest.raises(ValueError, match="the keys 1 and '1' are both '1' in JSON"):
        to_json({1: "a", "1": "b"})
    with pytest.raises(TypeError, match="keys must be str"):  # no JSON key: refused, as before
        to_json({(1, 2): "a", "b": 1})


def test_to_json_sorts_keys_like_helm_and_can_be_compact() -> None:
    assert to_json({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'
    assert to_json({"b": 1, "a": [1, 2]}, compact=True) == '{"a":[1,2],"b":1}'


def test_from_json_parses_a_block_a_text_template_writes() -> None:
    template = TemplateEngine().text(
        '{% set raw %}{"a": [1, "{{ n }}"]}{% endset %}\n'
        "k: {{ raw | trim | from_json | to_json }}\n",
        "t.yaml",
    )
    assert template.render({"n": 2}) == [{"k": {"a": [1, "2"]}}]


@pytest.mark.parametrize(
    "source",
    [
        "raw | from_json",  # a CR's or the config's text
        "(raw ~ '') | from_json",
        "raw | replace('1', '1 ') | from_json",
    ],
)
def test_data_from_json_of_a_value_is_one_value_where_it_is_printed(source: str) -> None:
    # what a value's text parses to is that value's data: it lands under `k`, nowhere else
    template = TemplateEngine().text("k: {{ " + source + " }}\nj: {{ 1 }}\n", "t.yaml")
    (obj,) = template.render({"raw": '{"a": [1, 2], "privileged": true}'})
    assert sorted(obj) == ["j", "k"] and obj["k"]["privileged"] is True


# -- base64 / sha256 --------------------------------------------------------------------------


@given(st.text())
def test_b64decode_undoes_b64encode(text: str) -> None:
    assert b64decode(b64encode(text)) == text


def test_b64encode_encodes_utf8_text() -> None:
    assert b64encode("pässword") == base64.b64encode("pässword".encode()).decode()
    assert render("'admin' | b64encode") == "YWRtaW4="


def test_b64decode_rejects_invalid_base64_with_a_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid value"):
        render("'not base64!' | b64decode")


def test_b64decode_rejects_bytes_that_are_not_utf8() -> None:
    with pytest.raises(ValueError, match="not UTF-8"):
        b64decode(base64.b64encode(b"\xff\xfe").decode())


def test_sha256_is_the_hex_digest_of_the_utf8_text() -> None:
    assert sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert render("'abc' | sha256") == sha256("abc")


# -- indent / nindent -------------------------------------------------------------------------


def test_indent_pads_every_line_including_the_first_like_helm() -> None:
    assert indent("a\nb", 2) == "  a\n  b"
    # Jinja's own indent would leave the first line alone: ours replaces it
    assert render("'a\nb' | indent(4)") == "    a\n    b"


def test_nindent_starts_with_a_newline() -> None:
    assert nindent("a\nb", 2) == "\n  a\n  b"


# -- quote / squote ---------------------------------------------------------------------------


@given(st.text())
def test_quote_makes_a_yaml_scalar_that_reads_back_as_the_same_text(text: str) -> None:
    assert yaml.safe_load("value: " + quote(text)) == {"value": text}


# single quotes have no escapes: only characters YAML allows literally, no line breaks
@given(
    st.text(
        st.characters(
            blacklist_categories=["Cc", "Cs", "Zl", "Zp"],
            blacklist_characters="\ufeff\ufffe\uffff",
        )
    )
)
def test_squote_makes_a_yaml_scalar_that_reads_back_as_the_same_text(text: str) -> None:
    assert yaml.safe_load("value: " + squote(text)) == {"value": text}


def test_quote_writes_strings_numbers_booleans_and_none_like_helm() -> None:
    assert quote('say "hi"') == '"say \\"hi\\""'
    assert quote(3) == '"3"'
    assert quote(True) == '"true"'
    assert quote(None) == '""'


def test_squote_doubles_single_quotes() -> None:
    assert squote("it's") == "'it''s'"
    assert squote(False) == "'false'"


# -- required / trunc63 -----------------------------------------------------------------------


@pytest.mark.parametrize("missing", [None, ""])
def test_required_fails_with_the_given_message(missing: Any) -> None:
    with pytest.raises(ConfigError, match=r"spec\.image is required"):
        required(missing, "spec.image is required")


def test_required_passes_present_values_through() -> None:
    assert required(0, "x") == 0
    assert required("nginx", "x") == "nginx"


def test_required_in_a_template_fails_at_the_template_position() -> None:
    with pytest.raises(ConfigError) as info:
        render("spec.image | default(none) | required('set spec.image')", spec={})
    assert info.value.pos == POS
    assert "set spec.image" in str(info.value)


def test_required_catches_an_undefined_attribute() -> None:
    with pytest.raises(ConfigError, match=r"set spec\.image"):
        render("spec.image | required('set spec.image')", spec={})


def test_trunc63_applies_oper8s_name_truncation() -> None:
    long_name = "n" * 70
    assert len(trunc63(long_name)) == 63
    assert render("name | trunc63", name=long_name) == trunc63(long_name)


# -- defaults and undefined input --------------------------------------------------------------


def test_jinjas_default_filter_is_kept() -> None:
    assert render("spec.replicas | default(2)", spec={}) == 2


@pytest.mark.parametrize("name", ["to_yaml", "to_json", "quote", "b64encode", "sha256"])
def test_filters_reject_an_undefined_value_naming_it(name: str) -> None:
    with pytest.raises(ConfigError, match=r"undefined variable: .*'image'"):
        render(f"spec.image | {name}", spec={})


@given(json_data)
def test_to_json_output_is_also_yaml_for_the_same_value(value: Any) -> None:
    assert yaml.safe_load("value: " + to_json(value)) == {"value": value}


def test_quote_keeps_characters_beyond_the_basic_plane_readable_by_yaml() -> None:
    assert yaml.safe_load("v: " + quote("smile 😀")) == {"v": "smile 😀"}


def test_to_yaml_keeps_the_newline_that_ends_a_final_block_scalar() -> None:
    assert yaml.safe_load(to_yaml({"a": "x\n"})) == {"a": "x\n"}
    assert yaml.safe_load(to_yaml(["x\n\n"])) == ["x\n\n"]


def test_to_yaml_writes_shared_values_without_anchors() -> None:
    shared = {"app": "web"}
    assert to_yaml({"a": shared, "b": shared}) == "a:\n  app: web\nb:\n  app: web"
