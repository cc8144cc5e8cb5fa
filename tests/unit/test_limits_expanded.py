"""``limits.check_expanded`` measures a value as C code would write it out, shared parts
expanded every time, in time bounded by the limit however much the value expands."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup

from oper8d.limits import LimitExceeded, check_expanded

BIG = 2**62


def written_size(value: Any) -> int:
    """What check_expanded counts, by the plain recursive definition."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return 1
    if isinstance(value, int):
        return 1 + value.bit_length() * 78 // 256
    if isinstance(value, dict):
        return len(value) + sum(written_size(k) + written_size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return len(value) + sum(written_size(item) for item in value)
    return 1


def shared_lists(levels: int) -> list[Any]:
    """``{% set s0 = ['x'] %}{% set s1 = [s0, s0] %}`` ... ``levels`` times."""
    value: list[Any] = ["x"]
    for _ in range(levels):
        value = [value, value]
    return value


json_data = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=6)
        | st.dictionaries(st.text(max_size=8), children, max_size=6)
        | st.lists(children, max_size=4).map(tuple)
    ),
    max_leaves=20,
)


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("", 0),
        ("abc", 3),
        (["ab", "c"], 5),
        (("ab", "c"), 5),
        ({"a": "bc"}, 4),
        ({"a": ["b", None]}, 1 + 1 + 2 + 1 + 1),
        ([True, 1.5, None, 7], 8),
        ([], 0),
        ({}, 0),
        (None, 1),
        (Markup("<b>"), 3),
        (b"abcd", 4),
        (object(), 1),
        ([object()], 2),
    ],
)
def test_the_size_of_plain_values(value: Any, size: int) -> None:
    assert check_expanded(value, BIG, "the value") == size


@settings(max_examples=60)
@given(json_data)
def test_the_size_is_the_plain_recursive_count(value: Any) -> None:
    assert check_expanded(value, BIG, "the value") == written_size(value)


@settings(max_examples=30)
@given(json_data)
def test_shared_and_repeated_parts_count_every_time(value: Any) -> None:
    # past a few thousand items the count goes by ids of containers: it must agree
    repeated = [value] * 3000
    assert check_expanded(repeated, BIG, "the value") == 3000 + 3000 * written_size(value)
    assert check_expanded({"a": repeated, "b": [repeated]}, BIG, "the value") == (
        2 + 2 + 1 + 2 * (3000 + 3000 * written_size(value))
    )


def test_an_integer_counts_at_least_its_digits() -> None:
    for number in (0, 9, 10, 99, 2**64, -(10**300), 10**1233):
        assert check_expanded(number, BIG, "the value") >= len(str(abs(number)))


def test_thirty_levels_of_shared_lists_are_measured_at_once() -> None:
    value = shared_lists(30)
    start = time.perf_counter()
    # each level: 2 items plus the level below twice; the bottom ['x'] is 2
    assert check_expanded(value, BIG, "the value") == 2**32 - 2
    with pytest.raises(LimitExceeded) as caught:
        check_expanded(value, 1024 * 1024, "the value given to to_json")
    assert time.perf_counter() - start < 0.1
    assert caught.value.limit == "renderedBytes"
    assert "the value given to to_json would be larger than 1048576 bytes written out" in str(
        caught.value
    )


def test_a_value_containing_itself_is_too_large() -> None:
    looped: list[Any] = ["x"]
    looped.append([looped])
    with pytest.raises(LimitExceeded):
        check_expanded(looped, BIG, "the value")
    mapping: dict[str, Any] = {}
    mapping["self"] = mapping
    with pytest.raises(LimitExceeded):
        check_expanded({"a": mapping}, BIG, "the value")


@pytest.mark.parametrize(
    "make",
    [
        lambda: "x" * 101,
        lambda: ["x"] * 10**6,
        lambda: {"a": ["x"] * 10**6},
        lambda: [{"k": "v" * 60}] * 10,
        lambda: [["x"] * 60, ["y"] * 60],
        lambda: shared_lists(8),
    ],
    ids=["string", "list", "nested-list", "shared-dicts", "two-lists", "shared-lists"],
)
def test_a_value_past_the_limit_fails_without_walking_it(make: Callable[[], Any]) -> None:
    value = make()
    start = time.perf_counter()
    with pytest.raises(LimitExceeded):
        check_expanded(value, 100, "the value")
    assert time.perf_counter() - start < 0.05


def test_the_work_is_bounded_by_the_limit_for_distinct_containers_too() -> None:
    value = [[str(n)] for n in range(100_000)]  # no sharing: 100,000 small lists
    start = time.perf_counter()
    with pytest.raises(LimitExceeded):
        check_expanded(value, 1000, "the value")
    assert time.perf_counter() - start < 0.05


def test_other_mappings_views_and_sets_are_counted_like_their_items() -> None:
    data = {"ab": "cd", "e": ["f"]}
    size = written_size(data)
    assert check_expanded(OrderedDict(data), BIG, "v") == size
    assert check_expanded(MappingProxyType(data), BIG, "v") == size
    assert check_expanded(data.keys(), BIG, "v") == 2 + 3
    assert check_expanded(data.values(), BIG, "v") == 2 + 2 + 2
    assert check_expanded(data.items(), BIG, "v") == 2 + (2 + 4) + (2 + 1 + 2)
    assert check_expanded({"ab", "c"}, BIG, "v") == 2 + 3
    assert check_expanded(frozenset({"ab"}), BIG, "v") == 1 + 2


def test_an_iterator_is_one_and_is_not_consumed() -> None:
    items = iter(["a", "b"])
    generator = (n for n in range(3))
    assert check_expanded([items, generator, range(10**9)], BIG, "v") == 3 + 3
    assert list(items) == ["a", "b"]
    assert list(generator) == [0, 1, 2]


def test_a_value_at_the_limit_passes() -> None:
    assert check_expanded(["x" * 98], 99, "v") == 99
    with pytest.raises(LimitExceeded):
        check_expanded(["x" * 99], 99, "v")
