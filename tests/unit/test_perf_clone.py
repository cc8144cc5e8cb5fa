"""The in-memory cluster's copies and field paths (cluster.fields: clone, used by every
read through store.out, and get_path, used for every owned field of every write): made
faster, and still a copy the caller may change freely and the same lookups."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oper8d.cluster.fields import MISSING, clone, differs, get_path
from oper8d.cluster.memory import MemoryCluster

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
)
json_like = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=30,
)


def containers(value: Any) -> Iterator[Any]:
    """Every dict and list inside ``value``, ``value`` included."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from containers(item)


@given(json_like)
def test_a_clone_equals_the_original_and_shares_no_dict_or_list_with_it(value: Any) -> None:
    copied = clone(value)
    assert copied == value
    assert type(copied) is type(value)
    originals = {id(c) for c in containers(value)}
    assert not originals & {id(c) for c in containers(copied)}


@given(st.dictionaries(st.text(max_size=3), json_like, min_size=1, max_size=4))
def test_changing_a_clone_everywhere_leaves_the_original_as_it_was(value: dict[str, Any]) -> None:
    before = repr(value)
    copied = clone(value)
    for container in list(containers(copied)):
        if isinstance(container, dict):
            container["added"] = 1
        else:
            container.append("added")
    assert repr(value) == before


def test_tuples_become_lists_and_other_mappings_become_dicts() -> None:
    source = {"ports": (80, 443), "labels": MappingProxyType({"app": ("web",)})}
    copied = clone(source)
    assert copied == {"ports": [80, 443], "labels": {"app": ["web"]}}
    assert type(copied["labels"]) is dict


def test_values_that_are_not_json_are_kept_as_they_are() -> None:
    when = datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)

    class Name(str):
        pass

    name = Name("web")
    copied = clone({"at": when, "items": [name]})
    assert copied["at"] is when
    assert copied["items"][0] is name


def test_objects_read_from_the_cluster_can_be_changed_without_changing_the_cluster() -> None:
    cluster = MemoryCluster()
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "web"}},
            "data": {"key": "value"},
        },
        field_manager="test",
    )
    read = cluster.get("v1", "ConfigMap", "cm", "default")
    assert read is not None
    read["metadata"]["labels"]["app"] = "changed"
    read["data"]["key"] = "changed"
    listed = cluster.list("v1", "ConfigMap", "default")[0]
    listed["data"].clear()
    again = cluster.get("v1", "ConfigMap", "cm", "default")
    assert again is not None
    assert again["metadata"]["labels"] == {"app": "web"}
    assert again["data"] == {"key": "value"}


def test_paths_find_values_through_maps_and_keyed_lists() -> None:
    obj = {
        "metadata": {
            "finalizers": ["a/b"],
            "ownerReferences": [{"uid": "u1", "name": "owner"}],
            "labels": MappingProxyType({"app": "web"}),
        },
        "spec": {"ports": [{"port": 80}], "empty": {}},
    }
    assert get_path(obj, ("metadata", "ownerReferences", 'k:{"uid":"u1"}', "name")) == "owner"
    assert get_path(obj, ("metadata", "finalizers", 'v:"a/b"')) == "a/b"
    assert get_path(obj, ("metadata", "labels", "app")) == "web"
    assert get_path(obj, ("spec", "empty")) == {}
    assert get_path(obj, ()) is obj
    for missing in (
        ("metadata", "ownerReferences", 'k:{"uid":"u2"}'),
        ("spec", "ports", "0"),  # list items are addressed by identity, never by index
        ("spec", "replicas"),
        ("spec", "empty", "x"),
        ("metadata", "labels", "app", "deeper"),
    ):
        assert get_path(obj, missing) is MISSING


def test_a_map_present_before_and_after_is_unchanged_whatever_its_kind() -> None:
    assert not differs({"a": 1}, MappingProxyType({"b": 2}))
    assert differs({"a": 1}, [1])
    assert differs("x", "y")
    assert not differs([1], [1])
