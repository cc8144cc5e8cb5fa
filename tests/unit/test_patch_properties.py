"""Algebraic properties of the patch functions, checked with hypothesis."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import jsonpatch
import jsonpointer
from hypothesis import given
from hypothesis import strategies as st

from oper8d.engine.patch import json_patch, route_strategic_patch, strategic_merge
from oper8d.errors import ConfigError

TEXT = st.text(alphabet="xyzé ", max_size=5)
KINDS = st.sampled_from([None, "Pod", "Deployment", "CronJob", "Service", "WebApp"])
#: field names of built-in kinds (so merge-key lists come up), directives, and odd keys
KEYS = st.sampled_from(
    [
        *("spec", "template", "containers", "name", "env", "metadata", "finalizers"),
        *("status", "conditions", "type", "$patch", "$retainKeys", "$setElementOrder/containers"),
    ]
) | st.text(alphabet="abc-/~.", min_size=1, max_size=4).filter(
    # jsonpatch reads a map key "-" as the end-of-array token (a library limitation;
    # no Kubernetes field is named "-")
    lambda key: key != "-"
)
PLAIN_KEYS = st.text(alphabet="abcdef", min_size=1, max_size=3)
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | TEXT

#: arbitrary JSON objects, as the API server would hold them
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)
OBJECTS = st.dictionaries(KEYS, JSON, max_size=5)

#: patches of plain maps: no directives, no nulls, no lists
PLAIN_PATCHES = st.recursive(
    st.booleans() | st.integers(-5, 5) | TEXT,
    lambda inner: st.dictionaries(PLAIN_KEYS, inner, min_size=1, max_size=3),
    max_leaves=10,
).filter(lambda p: isinstance(p, dict))


def leaves(tree: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(tree, dict):
        return [leaf for key, value in tree.items() for leaf in leaves(value, (*path, key))]
    return [(path, tree)]


def lookup(tree: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


@given(original=OBJECTS, kind=KINDS)
def test_merging_an_empty_patch_changes_nothing(original: dict[str, Any], kind: str) -> None:
    assert strategic_merge(original, {}, kind=kind) == original


@given(original=OBJECTS, patch=PLAIN_PATCHES, kind=KINDS)
def test_every_leaf_of_a_plain_patch_is_in_the_result(
    original: dict[str, Any], patch: dict[str, Any], kind: str
) -> None:
    result = strategic_merge(original, patch, kind=kind)

    for path, value in leaves(patch):
        assert lookup(result, path) == value


@given(original=OBJECTS, patch=PLAIN_PATCHES, kind=KINDS)
def test_merging_a_plain_patch_twice_is_merging_it_once(
    original: dict[str, Any], patch: dict[str, Any], kind: str
) -> None:
    once = strategic_merge(original, patch, kind=kind)

    assert strategic_merge(once, patch, kind=kind) == once


@given(original=OBJECTS, patch=OBJECTS, kind=KINDS)
def test_merging_never_changes_its_inputs(
    original: dict[str, Any], patch: dict[str, Any], kind: str
) -> None:
    original_before, patch_before = copy.deepcopy(original), copy.deepcopy(patch)

    with contextlib.suppress(ConfigError):  # a malformed random patch may be refused
        strategic_merge(original, patch, kind=kind)

    assert original == original_before
    assert patch == patch_before


NAMES = st.sampled_from(["app", "proxy", "log", "init"])
CONTAINER = st.fixed_dictionaries({"name": NAMES}, optional={"image": TEXT, "args": st.lists(TEXT)})
PATCH_ITEM = CONTAINER | st.builds(lambda n: {"name": n, "$patch": "delete"}, NAMES)


@given(
    original=st.lists(CONTAINER, max_size=4, unique_by=lambda c: c["name"]),
    patch=st.lists(PATCH_ITEM, max_size=6),
)
def test_items_of_a_merge_list_stay_unique_by_their_key(
    original: list[dict[str, Any]], patch: list[dict[str, Any]]
) -> None:
    result = strategic_merge(
        {"spec": {"containers": original}}, {"spec": {"containers": patch}}, kind="Pod"
    )

    names = [c["name"] for c in result["spec"]["containers"]]
    assert len(names) == len(set(names))
    deleted = {i["name"] for i in patch if "$patch" in i}
    added = {i["name"] for i in patch if "$patch" not in i}
    kept = {c["name"] for c in original} - deleted
    assert set(names) == kept | added


# jsonpatch.make_patch diffs a value that moved as a `move`, and gets list positions
# wrong doing so (it emits moves that do not reproduce b, even with jsonpatch's own
# apply). So b is drawn as edits of a whose new leaves never equal a's: no moves.
OLD_LEAVES = st.integers(0, 9) | st.text(alphabet="xyz", min_size=1, max_size=3)
NEW_LEAVES = st.integers(100, 109) | st.text(alphabet="uvw", min_size=1, max_size=3)


def trees(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda inner: (
            st.lists(inner, min_size=1, max_size=3)
            | st.dictionaries(KEYS, inner, min_size=1, max_size=3)
        ),
        max_leaves=6,
    )


OLD_TREES, NEW_TREES = trees(OLD_LEAVES), trees(NEW_LEAVES)


@st.composite
def edits_of(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with keys kept, dropped, edited, replaced or added, list items edited or
    appended, and scalars replaced."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            choice = draw(st.sampled_from(["keep", "drop", "edit", "replace"]))
            if choice == "keep":
                out[key] = item
            elif choice == "edit":
                out[key] = draw(edits_of(item))
            elif choice == "replace":
                out[key] = draw(NEW_TREES)
        return out | draw(st.dictionaries(KEYS, NEW_TREES, max_size=2))
    if isinstance(value, list):
        choice = draw(st.sampled_from(["keep", "edit", "append", "replace"]))
        if choice == "edit":
            return [draw(edits_of(item)) for item in value]
        if choice == "append":
            return value + draw(st.lists(NEW_TREES, min_size=1, max_size=2))
        return value if choice == "keep" else draw(NEW_TREES)
    return draw(st.just(value) | NEW_LEAVES)


@st.composite
def object_pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    a = draw(st.dictionaries(KEYS, OLD_TREES, max_size=5))
    return a, draw(edits_of(a))


@given(pair=object_pairs())
def test_applying_the_json_patch_from_a_to_b_turns_a_into_b(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    a, b = pair
    a_before, b_before = copy.deepcopy(a), copy.deepcopy(b)
    operations = jsonpatch.make_patch(a, b).patch

    assert json_patch(a, operations) == b_before
    assert a == a_before


@given(a=OBJECTS, b=OBJECTS, c=OBJECTS)
def test_json_patch_agrees_with_jsonpatch_applying_to_a_deep_copy(
    a: dict[str, Any], b: dict[str, Any], c: dict[str, Any]
) -> None:
    # any op sequence, moves included: copy-on-write must not change the outcome
    operations = jsonpatch.make_patch(a, b).patch + jsonpatch.make_patch(b, c).patch
    a_before, operations_before = copy.deepcopy(a), copy.deepcopy(operations)
    try:
        expected: Any = jsonpatch.apply_patch(a, copy.deepcopy(operations))
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
        expected = ConfigError

    try:
        got: Any = json_patch(a, operations)
    except ConfigError:
        got = ConfigError

    assert got == expected
    assert a == a_before
    assert operations == operations_before


LEVEL = st.text(alphabet="abc-", min_size=1, max_size=5)
INTERNAL_NAMES = st.builds(lambda c, r: f"{c}.{r}", LEVEL, LEVEL)


@given(target=INTERNAL_NAMES, other=INTERNAL_NAMES, body=st.dictionaries(PLAIN_KEYS, SCALARS))
def test_routing_returns_a_body_only_for_the_object_it_addresses(
    target: str, other: str, body: dict[str, Any]
) -> None:
    component, resource = target.split(".")
    routed = {component: {resource: body}}

    assert route_strategic_patch(routed, target) == body
    if other != target:
        assert route_strategic_patch(routed, other) is None
