"""The order of merged lists: Go's stable sort and value comparison, as apimachinery uses them.

Expected orders of whole merges come from apimachinery (testenv's strategic-merge tool);
tests/integration/test_smp_apimachinery.py compares many more."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oper8d.engine.patch import strategic_merge
from oper8d.engine.patch.ordering import go_equal, go_stable_sort


@given(st.lists(st.tuples(st.integers(0, 5), st.integers())))
def test_with_a_proper_order_go_stable_sort_is_a_stable_sort(items: list[tuple[int, int]]) -> None:
    assert go_stable_sort(items, lambda a, b: a[0] < b[0]) == sorted(items, key=lambda i: i[0])


def test_values_compare_as_go_compares_decoded_json() -> None:
    assert go_equal(1, 1.0)
    assert not go_equal(True, 1)
    assert not go_equal("1", 1)
    assert go_equal(None, None)


def names_after(original_names: str, patch: dict[str, Any]) -> list[str]:
    original = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"template": {"spec": {"containers": [{"name": n} for n in original_names]}}},
    }
    result = strategic_merge(original, patch, kind="Deployment", api_version="apps/v1")
    return [c["name"] for c in result["spec"]["template"]["spec"]["containers"]]


EMPTY_ORDER = {
    "spec": {
        "template": {
            "spec": {
                "$setElementOrder/containers": [],
                "containers": [{"name": "new1"}, {"name": "c", "image": "2"}, {"name": "new2"}],
            }
        }
    }
}


def test_an_empty_set_element_order_sorts_new_items_as_go_does() -> None:
    # apimachinery compares items missing from the order as "less" both ways, so Go's
    # insertion sort moves them about: new2 first, new1 last
    assert names_after("abc", EMPTY_ORDER) == ["new2", "a", "b", "c", "new1"]


def test_lists_longer_than_twenty_items_sort_in_blocks_as_go_does() -> None:
    names = "abcdefghijklmnopqrstuvwxy"

    assert names_after(names, EMPTY_ORDER) == ["new2", *names, "new1"]
