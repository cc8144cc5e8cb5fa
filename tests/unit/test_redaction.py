"""The masking rules (oper8d.redaction): Secret values are masked by structure in objects,
as whole values (a whole string, a quoted one) anywhere, and inside longer text only when
they look like secrets, never as fragments of other words; what is too short, too plain or
public to mask is left as it is."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from oper8d.redaction import (
    REDACTED,
    SensitiveValues,
    looks_secret,
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
    for whole in ("abc", "true", "5432", "notes"):
        assert sensitive.redact(whole) == whole
    # long enough numbers are secrets (PINs, account numbers): as whole values
    assert masking("123456").redact("123456") == REDACTED
    assert masking("123456").redact("pin '123456' rejected") == "pin '***' rejected"


def test_a_short_value_is_masked_as_a_whole_value_never_inside_other_text() -> None:
    # a Secret's `username: shop`: image paths, hosts and sentences keep the word
    sensitive = masking("shop")
    for text in ("shop/api:1", "registry.io/shop/api:1", "welcome to the shop", "shop:8080"):
        assert sensitive.redact(text) == text
    assert sensitive.redact("shop") == REDACTED  # a field that holds the value itself
    assert sensitive.redact("user 'shop' unknown") == "user '***' unknown"
    assert sensitive.redact('{"user": "shop"}') == '{"user": "***"}'
    assert sensitive.redact("c2hvcA==") == REDACTED  # its base64


def test_a_value_that_looks_secret_is_masked_inside_longer_text() -> None:
    sensitive = masking("s3cret-pw", "Hunter22", "correcthorsebatterystaple")
    assert sensitive.redact("postgres://app:s3cret-pw@db/x?pw=Hunter22") == (
        "postgres://app:***@db/x?pw=***"
    )
    assert sensitive.redact("passphrase correcthorsebatterystaple, ok") == "passphrase ***, ok"
    assert [
        looks_secret(v) for v in ("postgres", "12345678", "dbadmin", "Postgres", "a1b2c3d4")
    ] == [
        False,
        False,
        False,
        True,
        True,
    ]


def test_the_forms_a_value_takes_in_a_message_are_masked() -> None:
    value = 'pa"ss\\word'
    sensitive = masking(value)
    encoded = base64.b64encode(value.encode()).decode()
    assert sensitive.redact(f'json {{"pw": "pa\\"ss\\\\word"}} b64 {encoded}') == (
        'json {"pw": "***"} b64 ***'
    )
    assert sensitive.redact(f"repr {value!r}") == "repr '***'"


def test_a_mask_that_makes_another_value_stand_alone_is_masked_too() -> None:
    sensitive = masking("aaaa1234", "***:b")
    assert sensitive.redact("aaaa1234:b") == REDACTED  # -> "***:b", a whole value again


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
# values that look secret: letters and digits, 8 to 12 characters
secret_words = st.from_regex(r"[ab]{4,8}[12]{4}", fullmatch=True)
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
    # lines of 8 to 10 characters of two kinds and more
    st.lists(
        st.from_regex(r"[ab*]{5,7}1{3}(\n[ab*]{5,7}1{3})?", fullmatch=True),
        min_size=1,
        max_size=4,
    ),
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


@given(st.lists(st.text(alphabet="ab", min_size=4, max_size=7), min_size=1, max_size=3), st.data())
def test_a_plain_value_is_masked_whole_and_quoted_and_kept_inside_text(
    marked: list[str], data: st.DataObject
) -> None:
    sensitive = masking(*marked)
    words = data.draw(st.lists(st.sampled_from(marked), min_size=2, max_size=6))
    text = " ".join(words)
    assert sensitive.redact(text) == text
    assert sensitive.redact(words[0]) == REDACTED
    assert sensitive.redact(" ".join(f"'{w}'" for w in words)) == " ".join(["'***'"] * len(words))


def test_offline_random_strings_are_visibly_fake_from_12_characters_on() -> None:
    from oper8d.engine.session import SeededRandoms

    demo, other = SeededRandoms("default/demo"), SeededRandoms("default/other")
    value = demo.get("pw", 16)
    assert value.startswith("offline") and len(value) == 16 and value.isalnum()
    assert value == SeededRandoms("default/demo").get("pw", 16)  # deterministic
    assert value != other.get("pw", 16) and value != demo.get("token", 16)
    short = demo.get("pw", 11)
    assert len(short) == 11 and not short.startswith("offline")
