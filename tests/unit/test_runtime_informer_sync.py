"""What a list or watch event changes in an informer's store (``runtime.informer_sync``):
the events handlers are told, and the names that left, which the cache may no longer
take for free (``Informer.held_before``)."""

from __future__ import annotations

from typing import Any

from oper8d.runtime.informer_sync import Relisted, WatchChange, apply_change, apply_relist
from oper8d.runtime.store import Key, ObjectStore


def cm(name: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "a", "resourceVersion": version},
    }


def test_a_deleted_object_is_told_and_its_name_remembered_as_departed() -> None:
    seen: dict[Key, Any] = {}
    store, departed = ObjectStore(), set[Key]()

    added = apply_change(seen, store, WatchChange("ADDED", cm("x", "1")), departed)
    deleted = apply_change(seen, store, WatchChange("DELETED", cm("x", "2")), departed)

    assert (added[0], deleted[0]) == ("ADDED", "DELETED")
    assert store.get(("a", "x")) is None and departed == {("a", "x")}


def test_a_relist_tells_what_changed_and_remembers_what_is_gone() -> None:
    seen: dict[Key, Any] = {}
    store, departed = ObjectStore(), set[Key]()
    seen, _ = apply_relist(seen, store, Relisted([cm("x", "1"), cm("y", "1")], "1"), departed)

    seen, events = apply_relist(seen, store, Relisted([cm("y", "2"), cm("z", "2")], "2"), departed)

    assert sorted((e[0], e[1]["metadata"]["name"]) for e in events) == [
        ("ADDED", "z"),
        ("DELETED", "x"),
        ("MODIFIED", "y"),
    ]
    assert departed == {("a", "x")}
    assert sorted(key for key, _ in store.items()) == [("a", "y"), ("a", "z")]
