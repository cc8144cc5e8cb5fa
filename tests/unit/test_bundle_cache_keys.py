"""The keys of the compile cache (``oper8d.bundle.cache``): equal inputs always find the
stored result, and an input that differs in any way (a value, a type, a file of oper8d)
never does."""

from __future__ import annotations

import copy
import marshal
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.bundle.cache import data_key

_plain = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _rebuilt(value: object) -> object:
    """``value`` made again with fresh objects, strings interned (as a stored parse is)."""
    if isinstance(value, dict):
        return {sys.intern(str(k)): _rebuilt(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuilt(v) for v in value]
    return value


@given(_plain)
def test_equal_data_has_one_key_however_it_was_built(data: object) -> None:
    key = data_key("operator ()", data)
    assert key is not None
    assert data_key("operator ()", copy.deepcopy(data)) == key
    assert data_key("operator ()", marshal.loads(marshal.dumps(data))) == key
    assert data_key("operator ()", _rebuilt(data)) == key
    shared = [data, data]  # one object twice: no reference in the key
    assert data_key("operator ()", shared) == data_key("operator ()", copy.deepcopy(shared))
    assert data_key("component ()", data) != key


@given(_plain, _plain)
def test_different_data_never_shares_a_key(a: object, b: object) -> None:
    if marshal.dumps(a, 0) != marshal.dumps(b, 0):  # (different, as marshal.loads shows)
        assert data_key("c", a) != data_key("c", b)


@pytest.mark.parametrize(
    "values",
    [
        [1, 1.0, True, "1", [1], (1,), {"1": 1}],
        [{1: "x"}, {"1": "x"}, {True: "x"}],
        [0, False, None, "", [], {}],
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],  # key order is part of the data
    ],
)
def test_values_that_differ_only_in_type_or_order_have_different_keys(
    values: list[object],
) -> None:
    keys = [data_key("check", v) for v in values]
    assert None not in keys
    assert len(set(keys)) == len(keys)


def test_data_marshal_cannot_hold_has_no_key() -> None:
    loop: list[object] = []
    loop.append(loop)
    assert data_key("check", {"a": object()}) is None
    assert data_key("check", loop) is None
