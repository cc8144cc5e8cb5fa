"""template.values.normalize: the exact-type fast path gives what the plain definition
gives, for the loader's data and for everything else an inline object may hold."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.template.values import UnsupportedValue, normalize


class _Str(str):
    pass


class _Int(int):
    pass


def reference(value: Any, path: tuple[str | int, ...] = ()) -> Any:
    """The definition: built-in scalars, dicts and lists; dates as ISO strings."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {reference(k, path): reference(v, (*path, k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reference(v, (*path, i)) for i, v in enumerate(value)]
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise UnsupportedValue(value, path)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.text(max_size=5).map(_Str),
    st.integers().map(_Int),
    st.dates(),
)
_keys = st.one_of(st.text(max_size=4), st.text(max_size=4).map(_Str))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.dictionaries(_keys, inner, max_size=4).map(MappingProxyType),
    ),
    max_leaves=20,
)


@given(_values)
def test_normalize_is_the_plain_definition(value: Any) -> None:
    got = normalize(value)
    assert got == reference(value)
    assert _types(got) == _types(reference(value))


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {type(k): _types(v) for k, v in value.items()} or dict
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value)


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"data": {"blob": b"\x00"}}, ("top", "data", "blob")),
        ({"items": [1, {"x": object()}]}, ("top", "items", 1, "x")),
        ([b""], ("top", 0)),
    ],
)
def test_an_unsupported_value_names_its_path(value: Any, path: tuple[Any, ...]) -> None:
    with pytest.raises(UnsupportedValue) as info:
        normalize(value, ("top",))
    assert info.value.path == path
