"""oper8's name rules: truncation to 63 characters and CR-scoped names."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.template.names import scoped_name, truncate_name

NAME_ALPHABET = st.characters(codec="ascii", categories=["Ll", "Nd", "Pd"])
names = st.text(NAME_ALPHABET, max_size=200)
long_names = st.text(NAME_ALPHABET, min_size=64, max_size=200)


def sha_prefix(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:4]


@given(names)
def test_truncated_names_fit_in_a_kubernetes_name(name: str) -> None:
    assert len(truncate_name(name)) <= 63


@given(st.text(NAME_ALPHABET, max_size=63))
def test_names_that_fit_are_unchanged(name: str) -> None:
    assert truncate_name(name) == name


@given(long_names)
def test_long_names_keep_59_characters_and_four_hex_digits_of_their_sha256(name: str) -> None:
    truncated = truncate_name(name)
    assert len(truncated) == 63
    assert truncated[:59] == name[:59]
    assert truncated[59:] == sha_prefix(name)


@given(names)
def test_truncation_is_idempotent(name: str) -> None:
    assert truncate_name(truncate_name(name)) == truncate_name(name)


tails = st.text(NAME_ALPHABET, min_size=3, max_size=100)


@given(st.text(NAME_ALPHABET, min_size=59, max_size=59), tails, tails)
def test_long_names_with_a_common_prefix_differ_unless_their_digests_collide(
    prefix: str, tail_a: str, tail_b: str
) -> None:
    # two different names, both longer than 63 characters, sharing their first 59
    a, b = prefix + "-" + tail_a + "x", prefix + "-" + tail_b + "y"
    # the truncated forms differ exactly when the 4-hex-digit digests differ (a 16-bit
    # collision is possible: that is oper8's rule, kept for compatibility)
    assert (truncate_name(a) == truncate_name(b)) == (sha_prefix(a) == sha_prefix(b))


def test_two_known_long_names_with_a_common_prefix_get_different_names() -> None:
    prefix = "a" * 59
    first, second = truncate_name(prefix + "-first"), truncate_name(prefix + "-second")
    assert first != second
    assert first.startswith(prefix) and second.startswith(prefix)


def test_a_smaller_limit_truncates_to_that_limit() -> None:
    name = "x" * 30
    assert truncate_name(name, limit=20) == "x" * 16 + sha_prefix(name)


def test_a_limit_too_small_for_the_digest_is_rejected() -> None:
    with pytest.raises(ValueError, match="limit"):
        truncate_name("abcdefgh", limit=4)


def test_scoped_names_join_cr_name_and_name() -> None:
    assert scoped_name("webapp", "db") == "webapp-db"


@given(st.text(NAME_ALPHABET, min_size=1, max_size=100), names)
def test_scoped_names_are_truncated_like_any_name(cr_name: str, name: str) -> None:
    assert scoped_name(cr_name, name) == truncate_name(f"{cr_name}-{name}")
    assert len(scoped_name(cr_name, name)) <= 63
