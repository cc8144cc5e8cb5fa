"""``oper8d_watch_events_total``: every event an informer's watch receives is counted by kind
and type, including events the shard filter then drops (the count says what the API server
sent a replica, which is what server-side sharding is meant to cut)."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from memory_api import STUCK, MemoryApi
from prometheus_client.parser import text_string_to_metric_families

from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.runtime.hashing import ShardSlice, bucket_of
from oper8d.runtime.informer import Informer
from oper8d.runtime.metrics import Metrics


def watch_events(metrics: Metrics) -> dict[tuple[str, str], float]:
    """(kind, type) -> count, read from the exposition as a scraper would."""
    text = metrics.exposition().decode()
    return {
        (s.labels["kind"], s.labels["type"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "oper8d_watch_events_total"
    }


def configmap(name: str, ns: str) -> Obj:
    meta = {"name": name, "namespace": ns}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"v": "1"}}


def test_watch_events_are_counted_by_kind_and_type_even_those_outside_the_shard() -> None:
    api = MemoryApi(FakeClock())
    metrics = Metrics(runtime_collectors=False)
    # namespaces that differ early: FNV-1a spreads them over the hash space
    namespaces = [hashlib.sha256(str(i).encode()).hexdigest()[:8] for i in range(20)]
    low = ShardSlice("namespace", frozenset(range(32)))
    inside = [ns for ns in namespaces if low.contains({"metadata": {"namespace": ns}})]
    assert inside and len(inside) < len(namespaces)
    assert all(bucket_of({"metadata": {"namespace": ns}}, "namespace") < 32 for ns in inside)

    heard: list[str] = []
    done = threading.Condition()

    def handler(event: str, obj: Obj, old: Any) -> None:
        with done:
            heard.append(event)
            done.notify_all()

    # the in-memory API server ignores shardSelector, as one before 1.36 does
    informer = Informer(api, "v1", "ConfigMap", shard=low, on_watch_event=metrics.watch_event)
    informer.add_handler(handler)
    informer.start()
    try:
        assert informer.wait_for_sync(STUCK)
        assert watch_events(metrics) == {}  # the list is not a watch event
        for ns in namespaces:
            api.create(configmap("cm", ns))
        api.delete("v1", "ConfigMap", "cm", inside[0])
        # the handler hears only the slice's objects; hearing the last event (an inside one)
        # means the reader counted every event before it
        with done:
            assert done.wait_for(lambda: len(heard) >= len(inside) + 1, STUCK), heard
        assert heard == ["ADDED"] * len(inside) + ["DELETED"]
        assert watch_events(metrics) == {
            ("ConfigMap", "ADDED"): len(namespaces),
            ("ConfigMap", "DELETED"): 1,
        }
    finally:
        assert informer.stop()
