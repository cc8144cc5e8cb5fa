"""The in-memory cluster's indexed lookups of list items find what a plain scan finds.

``present_only`` (which field owners keep after a write) looks list items up through
``ItemFinder``; a wrong index would silently drop or keep ownership, so the index is held
to ``is_item``'s scan on generated lists and path elements.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oper8d.cluster.fields import MISSING, get_path, present_only
from oper8d.cluster.listtypes import ItemFinder, ListType, is_item, item_id

scalars = st.one_of(st.sampled_from(["a", "b", "80"]), st.integers(0, 2), st.none())
items = st.one_of(
    scalars,
    st.dictionaries(st.sampled_from(["name", "port", "protocol", "x"]), scalars, max_size=3),
)
list_types = st.sampled_from(
    [ListType("set"), ListType("map", ("name",)), ListType("map", ("port", "protocol"))]
)


def scan(values: list[Any], part: str) -> Any:
    return next((x for x in values if is_item(x, part)), MISSING)


@given(st.lists(items, max_size=6), st.lists(st.tuples(items, list_types), max_size=6))
def test_the_finder_finds_the_first_item_a_scan_finds(
    values: list[Any], wanted: list[tuple[Any, ListType]]
) -> None:
    finder = ItemFinder()
    parts = [item_id(item, list_type) for item, list_type in wanted]
    parts += ['k:["name"]', "x:1", 'k:{"name":"a"}', 'v:"a"']
    for part in parts:
        assert finder.find(values, part, MISSING) is scan(values, part)


@given(st.lists(items, max_size=6), list_types)
def test_owned_paths_into_lists_stay_exactly_while_their_items_are_there(
    values: list[Any], list_type: ListType
) -> None:
    tree = {"spec": {"ports": values}}
    paths = [("spec", "ports", item_id(v, list_type)) for v in values]
    paths += [(*p, "name") for p in paths]
    paths.append(("spec", "ports", 'k:{"name":"gone"}'))
    kept = present_only({"m": paths}, tree).get("m", frozenset())
    assert kept == {p for p in paths if get_path(tree, p) is not MISSING}
