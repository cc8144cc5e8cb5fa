"""The compiler looks for ``lookup()`` and ``random_string()`` calls only in the data that
may hold one: ``reads.may_mention_calls`` never says no when a string of the data names a
call (the walk string by string, ``reads.mentions_calls``, would find it)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oper8d.bundle.reads import may_mention_calls, mentions_calls

_words = st.sampled_from(
    ["lookup", "random_string", "look", "up", "random_", "string", "{{ ", " }}", "(", "x"]
)
_strings = st.one_of(
    st.lists(_words, max_size=4).map("".join),
    st.text(max_size=6),
    st.lists(st.one_of(_words, st.text(max_size=3)), max_size=4).map("é".join),
)
_data = st.recursive(
    st.one_of(_strings, st.integers(), st.none(), st.booleans(), st.floats(allow_nan=False)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_strings, inner, max_size=4)
    ),
    max_leaves=20,
)


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings_in(v)]
    return []


@given(_data)
def test_data_with_a_string_naming_a_call_is_always_searched(value: Any) -> None:
    if any(mentions_calls(s) for s in _strings_in(value)):
        assert may_mention_calls(value)


def test_data_without_either_name_is_not_searched_and_odd_data_always_is() -> None:
    assert not may_mention_calls({"a": ["{{ live('db') }}", 1, None], "look-up": "no"})
    assert may_mention_calls({"a": ["x", {"b": "{{ lookup('v1', 'Secret', 'x') }}"}]})
    assert may_mention_calls(["é {{ random_string(8) }}"])
    assert may_mention_calls({"a": object()})  # not plain data: searched string by string
