"""Watches and concurrent writers on the in-memory cluster."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from oper8d.cluster.memory import MemoryCluster
from oper8d.errors import ClusterError


def counter(value: int = 0) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "counter", "namespace": "demo"},
        "data": {"value": str(value)},
    }


def test_watch_reports_every_change_in_order() -> None:
    cluster = MemoryCluster()
    events: list[tuple[str, str | None, str]] = []
    cluster.watch(
        lambda kind, obj: events.append(
            (kind, obj["data"]["value"], obj["metadata"]["resourceVersion"])
        )
    )
    cluster.apply(counter(1), field_manager="op")
    cluster.apply(counter(1), field_manager="op")  # no change: no event
    cluster.apply(counter(2), field_manager="op")
    cluster.delete("v1", "ConfigMap", "counter", "demo")
    assert events == [("ADDED", "1", "1"), ("MODIFIED", "2", "2"), ("DELETED", "2", "3")]


def test_watch_handlers_get_copies_they_may_change() -> None:
    cluster = MemoryCluster()
    cluster.watch(lambda kind, obj: obj["data"].clear())
    seen: list[dict] = []
    cluster.watch(lambda kind, obj: seen.append(obj))
    cluster.apply(counter(1), field_manager="op")
    assert seen[0]["data"] == {"value": "1"}
    live = cluster.get("v1", "ConfigMap", "counter", "demo")
    assert live is not None and live["data"] == {"value": "1"}


def test_unsubscribed_handlers_hear_nothing_more() -> None:
    cluster = MemoryCluster()
    events: list[str] = []
    stop = cluster.watch(lambda kind, obj: events.append(kind))
    cluster.apply(counter(1), field_manager="op")
    stop()
    cluster.apply(counter(2), field_manager="op")
    assert events == ["ADDED"]


def test_a_handler_may_write_and_its_events_follow_in_order() -> None:
    cluster = MemoryCluster()
    events: list[tuple[str, str]] = []

    def mirror(kind: str, obj: dict) -> None:
        events.append((kind, obj["metadata"]["name"]))
        if obj["metadata"]["name"] == "counter" and kind == "ADDED":
            copy = counter(0)
            copy["metadata"]["name"] = "mirror"
            cluster.apply(copy, field_manager="mirror")

    cluster.watch(mirror)
    cluster.apply(counter(1), field_manager="op")
    assert events == [("ADDED", "counter"), ("ADDED", "mirror")]
    assert cluster.get("v1", "ConfigMap", "mirror", "demo") is not None


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads often so that reads and writes of different threads interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("frequent_thread_switches")
def test_concurrent_read_modify_write_with_retries_loses_no_update() -> None:
    cluster = MemoryCluster()
    cluster.apply(counter(0), field_manager="op")
    threads, increments = 8, 25
    conflicts = 0
    conflicts_lock = threading.Lock()
    start = threading.Barrier(threads)

    def work() -> None:
        nonlocal conflicts
        start.wait()
        for _ in range(increments):
            while True:
                live = cluster.get("v1", "ConfigMap", "counter", "demo")
                assert live is not None
                live["data"]["value"] = str(int(live["data"]["value"]) + 1)
                try:
                    cluster.update(live)
                    break
                except ClusterError as err:
                    assert err.status == 409
                    with conflicts_lock:
                        conflicts += 1

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    live = cluster.get("v1", "ConfigMap", "counter", "demo")
    assert live is not None and live["data"]["value"] == str(threads * increments)
    assert cluster.requests["update"] == threads * increments + conflicts


@pytest.mark.usefixtures("frequent_thread_switches")
def test_events_from_concurrent_writers_arrive_in_resource_version_order() -> None:
    cluster = MemoryCluster()
    versions: list[int] = []
    cluster.watch(lambda kind, obj: versions.append(int(obj["metadata"]["resourceVersion"])))

    def work(worker: int) -> None:
        for i in range(20):
            obj = counter(i)
            obj["metadata"]["name"] = f"c{worker}"
            cluster.apply(obj, field_manager=f"w{worker}")

    workers = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert versions == sorted(versions) and len(versions) == 80
