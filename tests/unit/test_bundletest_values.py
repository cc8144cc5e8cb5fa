"""Field paths, comparisons and merge patches of bundle tests (oper8d.bundletest.values)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.bundletest.values import (
    contains,
    format_path,
    lookup,
    merge_patch,
    parse_path,
    same,
)

# -- paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("spec.replicas", ("spec", "replicas")),
        (
            "spec.template.spec.containers[0].image",
            ("spec", "template", "spec", "containers", 0, "image"),
        ),
        (
            "spec.template.spec.containers.0.image",
            ("spec", "template", "spec", "containers", 0, "image"),
        ),
        (
            "metadata.labels[app.kubernetes.io/name]",
            ("metadata", "labels", "app.kubernetes.io/name"),
        ),
        ("items[1][2]", ("items", 1, 2)),
        ("[oper8d.io/x].y", ("oper8d.io/x", "y")),
    ],
)
def test_a_path_is_keys_joined_by_dots_with_indexes_and_dotted_keys_in_brackets(
    text: str, parts: tuple[str | int, ...]
) -> None:
    assert parse_path(text) == parts


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("spec..replicas", "empty key"),
        (".spec", "empty key"),
        ("spec.", "ends with '.'"),
        ("", "empty"),
        ("spec[0", "never closed"),
        ("spec]", "has no '['"),
        ("spec[]", "empty or nested"),
        ("spec[0]x", "expected '.' or '['"),
    ],
)
def test_a_malformed_path_is_refused_saying_what_is_wrong(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)):
        parse_path(text)


_keys = st.text(
    alphabet=st.characters(blacklist_characters="[]", blacklist_categories=("Cs",)), min_size=1
).filter(lambda k: not k.isdigit())
_parts = st.lists(st.one_of(_keys, st.integers(min_value=0, max_value=999)), min_size=1)


@given(_parts)
def test_formatting_a_path_and_parsing_it_gives_it_back(parts: list[str | int]) -> None:
    assert parse_path(format_path(parts)) == tuple(parts)


def test_lookup_follows_keys_and_indexes_and_reports_a_missing_step() -> None:
    obj = {"spec": {"containers": [{"image": "nginx"}]}, "data": {"0": "zero"}}
    assert lookup(obj, ("spec", "containers", 0, "image")) == (True, "nginx")
    assert lookup(obj, ("spec", "containers", 1, "image")) == (False, None)
    assert lookup(obj, ("spec", "volumes")) == (False, None)
    assert lookup(obj, ("data", 0)) == (True, "zero")
    assert lookup({"a": None}, ("a",)) == (True, None)


# -- comparisons -------------------------------------------------------------------------


def test_equality_keeps_yamls_types_apart() -> None:
    assert same(3, 3.0)
    assert not same(True, 1)
    assert not same(1, True)
    assert not same("3", 3)
    assert not same({"a": 1}, {"a": 1, "b": 2})
    assert same({"a": [1, {"b": True}]}, {"a": [1, {"b": True}]})
    assert not same([1, 2], [2, 1])


def test_contains_on_a_string_is_a_substring_test() -> None:
    assert contains("component 'migrate' failed", "'migrate' failed")
    assert not contains("component 'migrate' failed", "app")
    assert not contains("123", 12)


def test_contains_on_a_list_needs_an_item_that_matches() -> None:
    env = [{"name": "TOPIC", "value": "images"}, {"name": "QUEUE", "value": "jobs"}]
    assert contains(env, {"name": "TOPIC"})
    assert contains(env, {"name": "TOPIC", "value": "images"})
    assert not contains(env, {"name": "TOPIC", "value": "jobs"})
    assert contains(["migrate", "--to", "2.1.0"], "--to")
    assert not contains(["migrate"], "migr")  # list items are compared whole


def test_contains_on_a_mapping_needs_every_given_key_recursively() -> None:
    labels = {"app": "hello", "tier": "web"}
    assert contains(labels, {"app": "hello"})
    assert not contains(labels, {"app": "other"})
    assert contains(
        {"spec": {"ports": [{"port": 80, "name": "http"}]}}, {"spec": {"ports": [{"port": 80}]}}
    )
    assert not contains(labels, "app")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(_json, _json)
def test_equality_is_symmetric(a: Any, b: Any) -> None:
    assert same(a, b) == same(b, a)


@given(st.lists(_json, min_size=1, max_size=4), st.data())
def test_a_list_contains_each_of_its_items(items: list[Any], data: st.DataObject) -> None:
    item = data.draw(st.sampled_from(items))
    assert contains(items, item)


@given(st.dictionaries(st.text(max_size=3), _json, max_size=4), st.data())
def test_a_mapping_contains_any_part_of_itself(
    mapping: dict[str, Any], data: st.DataObject
) -> None:
    keys = data.draw(
        st.lists(st.sampled_from(sorted(mapping)), unique=True) if mapping else st.just([])
    )
    assert contains(mapping, {k: mapping[k] for k in keys})


# -- merge patch -------------------------------------------------------------------------


def test_a_merge_patch_merges_mappings_replaces_lists_and_removes_nulls() -> None:
    cr = {
        "spec": {
            "image": "nginx",
            "workers": [{"name": "a"}, {"name": "b"}],
            "ingress": {"enabled": True},
        }
    }
    patched = merge_patch(
        cr, {"spec": {"image": None, "workers": [{"name": "solo"}], "ingress": {"host": "x"}}}
    )
    assert patched == {
        "spec": {"workers": [{"name": "solo"}], "ingress": {"enabled": True, "host": "x"}}
    }
    assert cr["spec"]["image"] == "nginx"  # the input is left alone


_patches = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=8,
)


@given(_json, st.dictionaries(st.sampled_from("abc"), _patches, max_size=3))
def test_applying_a_merge_patch_twice_changes_nothing_more(
    target: Any, patch: dict[str, Any]
) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
