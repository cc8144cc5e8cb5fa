"""The masking rules (oper8d.redaction): Secret values are masked by structure in objects
and as whole values in text, never as fragments of other words; what is too short, too
plain or public to mask is left as it is."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from oper8d.redaction import (
    REDACTED,
    SensitiveValues,
    mask_secret,
    redact_strings,
    secret_values,
)


def masking(*values: str, public: tuple[str, ...] = ()) -> SensitiveValues:
    sensitive = SensitiveValues(public=public)
    for value in values:
        sensitive.add(value)
    return sensitive


def test_a_value_is_masked_only_where_it_stands_as_a_whole_token() -> None:
    sensitive = masking("hunter22")
    assert sensitive.redact("password=hunter22, then 'hunter22' and (hunter22).") == (
        "password=***, then '***' and (***)."
    )
    assert sensitive.redact("postgres://app:hunter22@db:5432/x") == "postgres://app:***@db:5432/x"
    for name in ("hunter22-db", "my-hunter22", "hunter22.example.com", "hunter22x", "a_hunter22"):
        assert sensitive.redact(f"object {name} applied") == f"object {name} applied"


def test_values_too_short_plain_or_public_are_not_masked_in_text() -> None:
    sensitive = masking("abc", "true", "Yes", "5432", "12345", "notes", public=("notes",))
    line = "abc: true, Yes, port 5432, 12345 replicas, CR default/notes"
    assert sensitive.redact(line) == line
    # long enough numbers are secrets (PINs, account numbers)
    assert masking("123456").redact("pin 123456 rejected") == "pin *** rejected"


def test_the_forms_a_value_takes_in_a_message_are_masked() -> None:
    value = 'pa"ss\\word'
    sensitive = masking(value)
    encoded = base64.b64encode(value.encode()).decode()
    assert sensitive.redact(f'json {{"pw": "pa\\"ss\\\\word"}} b64 {encoded}') == (
        'json {"pw": "***"} b64 ***'
    )
    assert sensitive.redact(f"repr {value!r}") == "repr '***'"


def test_a_mask_that_makes_another_value_stand_alone_is_masked_too() -> None:
    sensitive = masking("aaaa", "***:b")
    assert sensitive.redact("aaaa:b") == REDACTED  # "aaaa" -> "***:b", a value again


def test_a_secret_is_masked_by_structure_whatever_the_length_of_its_values() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "annotations": {"oper8d.io/applied-hash": "c1983", "a": "b"}},
        "stringData": {"user": "x"},
        "data": {"password": base64.b64encode(b"pw").decode()},
    }
    shown = mask_secret(secret)
    assert shown["stringData"] == {"user": REDACTED}
    assert shown["data"] == {"password": REDACTED}
    assert shown["metadata"]["annotations"] == {"oper8d.io/applied-hash": REDACTED, "a": "b"}
    assert secret["stringData"] == {"user": "x"}  # the object itself is not changed
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"user": "x"}}
    assert mask_secret(config_map) == config_map


def test_a_secret_holds_its_values_as_sent_and_decoded() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "stringData": {"a": "plain-text"},
        "data": {"b": base64.b64encode(b"decoded-text").decode(), "c": "not base64!"},
    }
    assert set(secret_values(secret)) == {
        "plain-text",
        base64.b64encode(b"decoded-text").decode(),
        "decoded-text",
        "not base64!",
    }
    assert secret_values({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}) == []


def test_strings_inside_a_structure_are_masked_and_keys_kept() -> None:
    value = {"url": "postgres://app:hunter22@db", "hunter22": ["hunter22", 3]}
    assert redact_strings(value, masking("hunter22")) == {
        "url": "postgres://app:***@db",
        "hunter22": [REDACTED, 3],
    }


# -- properties -------------------------------------------------------------------------
secret_words = st.text(alphabet="ab", min_size=4, max_size=8)
# names: letters joined by '-' and '.', as Kubernetes names and host names are
names = st.from_regex(r"[ab]{1,6}([-.][ab]{1,6}){0,2}", fullmatch=True)


@given(st.lists(secret_words, min_size=1, max_size=3), st.lists(names, max_size=4), st.data())
def test_each_value_standing_alone_becomes_one_mask_and_every_other_word_is_kept(
    marked: list[str], others: list[str], data: st.DataObject
) -> None:
    sensitive = masking(*marked)
    words = data.draw(st.lists(st.sampled_from(marked + others), max_size=8))
    expected = " ".join(REDACTED if w in marked else w for w in words)
    assert sensitive.redact(" ".join(words)) == expected


@given(
    st.lists(st.text(alphabet="ab*\n", min_size=4, max_size=8), min_size=1, max_size=4),
    st.lists(st.text(alphabet="ab*-. x", max_size=8), max_size=4),
    st.data(),
)
def test_no_value_is_left_standing_alone_and_masking_again_changes_nothing(
    marked: list[str], fillers: list[str], data: st.DataObject
) -> None:
    sensitive = masking(*marked)
    words = data.draw(st.lists(st.sampled_from(marked + fillers), max_size=8))
    masked = sensitive.redact(" ".join(words))
    assert not set(masked.split(" ")) & set(marked)
    assert sensitive.redact(masked) == masked


def test_offline_random_strings_are_visibly_fake_from_12_characters_on() -> None:
    from oper8d.engine.session import SeededRandoms

    demo, other = SeededRandoms("default/demo"), SeededRandoms("default/other")
    value = demo.get("pw", 16)
    assert value.startswith("offline") and len(value) == 16 and value.isalnum()
    assert value == SeededRandoms("default/demo").get("pw", 16)  # deterministic
    assert value != other.get("pw", 16) and value != demo.get("token", 16)
    short = demo.get("pw", 11)
    assert len(short) == 11 and not short.startswith("offline")
