"""Algebraic rules of writes to the in-memory cluster, checked on generated objects."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oper8d.cluster.fields import content
from oper8d.cluster.memory import MemoryCluster

leaf_values = st.one_of(
    st.integers(-2, 2),
    st.sampled_from(["", "x", "y"]),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=2),
    st.just({}),
)


def trees(keys: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.recursive(
        st.dictionaries(keys, leaf_values, max_size=3),
        lambda inner: st.dictionaries(keys, st.one_of(leaf_values, inner), max_size=3),
        max_leaves=8,
    )


def body(spec: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "demo.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "demo"},
    }
    if labels:
        obj["metadata"]["labels"] = labels
    if spec:
        obj["spec"] = spec
    return obj


shared_keys = st.sampled_from(["a", "b", "c"])
label_maps = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db"]))


def live(cluster: MemoryCluster) -> dict[str, Any]:
    found = cluster.get("demo.io/v1", "Widget", "w", "demo")
    assert found is not None
    return found


@given(trees(shared_keys), label_maps, trees(shared_keys), label_maps)
def test_a_sole_manager_ends_with_exactly_what_it_applied_last(
    first: dict, first_labels: dict, second: dict, second_labels: dict
) -> None:
    cluster = MemoryCluster()
    cluster.apply(body(first, first_labels), field_manager="op")
    cluster.apply(body(second, second_labels), field_manager="op")
    assert content(live(cluster)) == content(body(second, second_labels))


@given(trees(shared_keys), label_maps)
def test_applying_the_same_object_again_changes_nothing(spec: dict, labels: dict) -> None:
    cluster = MemoryCluster()
    cluster.apply(body(spec, labels), field_manager="op")
    before = live(cluster)
    cluster.apply(body(spec, labels), field_manager="op")
    assert live(cluster) == before


@given(
    trees(st.sampled_from(["a1", "a2"])),
    trees(st.sampled_from(["a1", "a2"])),
    trees(st.sampled_from(["b1", "b2"])),
)
def test_managers_of_disjoint_fields_never_remove_each_others_fields(
    first: dict, second: dict, others: dict
) -> None:
    cluster = MemoryCluster()
    cluster.apply(body(first, {}), field_manager="op")
    cluster.apply(body(others, {}), field_manager="admin")
    cluster.apply(body(second, {}), field_manager="op")
    assert live(cluster).get("spec", {}) == {**others, **second}


@given(trees(shared_keys), trees(shared_keys))
def test_an_update_keeps_every_field_it_does_not_mention(base: dict, overlay: dict) -> None:
    cluster = MemoryCluster()
    cluster.apply(body(base, {}), field_manager="admin")
    cluster.apply(body(overlay, {}), field_manager="op", method="update")
    spec = live(cluster).get("spec", {})
    for key, value in base.items():
        if key not in overlay:
            assert spec[key] == value
    for key, value in overlay.items():
        if not isinstance(value, dict):
            assert spec[key] == value


@given(trees(shared_keys), trees(shared_keys))
def test_generation_moves_exactly_when_the_spec_changes(first: dict, second: dict) -> None:
    cluster = MemoryCluster()
    cluster.apply(body(first, {}), field_manager="op", method="replace")
    before = live(cluster)
    cluster.apply(body(second, {}), field_manager="op", method="replace")
    after = live(cluster)
    changed = before.get("spec") != after.get("spec")
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + changed
    moved = after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    assert moved == changed
