"""``CachedCluster`` over sharded informers (``runtime.sharding``): an informer that holds one
slice of the hash space answers only for that slice. A read of an object outside it goes to
the API server (a template reading a CR of another shard finds it), while the controller's
own read (``within_shards()``) sees only this replica's CRs, without a request."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from memory_api import STUCK, MemoryApi

from oper8d.clock import FakeClock
from oper8d.runtime.cache import CachedCluster
from oper8d.runtime.hashing import ShardKey, ShardSlice, bucket_of
from oper8d.runtime.informer import Informer

Obj = dict[str, Any]
LOW = frozenset(range(32))


class CountingApi(MemoryApi):
    """Counts the reads that reach the API server."""

    reads = 0

    def get(self, *args: Any, **kwargs: Any) -> Obj | None:
        self.reads += 1
        return super().get(*args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> list[Obj]:
        self.reads += 1
        return super().list(*args, **kwargs)


def configmap(name: str, ns: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}


@pytest.fixture
def api() -> CountingApi:
    api = CountingApi(FakeClock())
    # namespaces that differ early: FNV-1a spreads those over the hash space
    for i in range(40):
        api.create(configmap("cm", hashlib.sha256(str(i).encode()).hexdigest()[:8]))
    return api


@pytest.fixture
def informer(api: CountingApi) -> Iterator[Callable[[ShardKey], Informer]]:
    started: list[Informer] = []

    def start(key: ShardKey) -> Informer:
        inf = Informer(api, "v1", "ConfigMap", shard=ShardSlice(key, LOW))
        inf.start()
        started.append(inf)
        assert inf.wait_for_sync(STUCK)
        return inf

    yield start
    for inf in started:
        assert inf.stop()


def split(api: CountingApi, key: ShardKey) -> tuple[list[Obj], list[Obj]]:
    objs = api.cluster.list("v1", "ConfigMap")
    inside = [o for o in objs if bucket_of(o, key) in LOW]
    outside = [o for o in objs if bucket_of(o, key) not in LOW]
    assert inside and outside
    return inside, outside


def test_by_namespace_reads_outside_the_slice_go_to_the_api_server(
    api: CountingApi, informer: Callable[[ShardKey], Informer]
) -> None:
    cache = CachedCluster(api, {("v1", "ConfigMap"): informer("namespace")})
    inside, outside = split(api, "namespace")
    api.reads = 0
    for obj in inside:
        ns = obj["metadata"]["namespace"]
        assert cache.get("v1", "ConfigMap", "cm", ns) == obj
        assert cache.get("v1", "ConfigMap", "absent", ns) is None
        assert cache.list("v1", "ConfigMap", ns) == [obj]
    assert api.reads == 0  # the slice is served from the informer, misses included
    for obj in outside:
        ns = obj["metadata"]["namespace"]
        assert cache.get("v1", "ConfigMap", "cm", ns) == obj
        assert cache.list("v1", "ConfigMap", ns) == [obj]
    assert api.reads == 2 * len(outside)
    # a list of every namespace is more than any one slice
    assert len(cache.list("v1", "ConfigMap")) == len(inside) + len(outside)


def test_by_uid_a_miss_is_never_final_so_it_asks_the_api_server(
    api: CountingApi, informer: Callable[[ShardKey], Informer]
) -> None:
    cache = CachedCluster(api, {("v1", "ConfigMap"): informer("uid")})
    inside, outside = split(api, "uid")
    api.reads = 0
    for obj in inside:
        assert cache.get("v1", "ConfigMap", "cm", obj["metadata"]["namespace"]) == obj
    assert api.reads == 0
    for obj in outside:
        assert cache.get("v1", "ConfigMap", "cm", obj["metadata"]["namespace"]) == obj
    assert api.reads == len(outside)


@pytest.mark.parametrize("key", ["namespace", "uid"])
def test_the_controllers_view_sees_only_the_slice_without_requests(
    api: CountingApi, informer: Callable[[ShardKey], Informer], key: ShardKey
) -> None:
    cache = CachedCluster(api, {("v1", "ConfigMap"): informer(key)}).within_shards()
    inside, outside = split(api, key)
    api.reads = 0
    for obj in inside:
        assert cache.get("v1", "ConfigMap", "cm", obj["metadata"]["namespace"]) == obj
    for obj in outside:
        assert cache.get("v1", "ConfigMap", "cm", obj["metadata"]["namespace"]) is None
    assert sorted(o["metadata"]["uid"] for o in cache.list("v1", "ConfigMap")) == sorted(
        o["metadata"]["uid"] for o in inside
    )
    assert api.reads == 0


def test_a_bucket_just_added_is_not_trusted_before_its_list_arrived(api: CountingApi) -> None:
    inf = Informer(api, "v1", "ConfigMap", shard=ShardSlice("namespace", LOW))
    assert inf.complete_slice == ShardSlice("namespace", LOW)
    inf.set_shard(ShardSlice("namespace", frozenset(range(16, 48))))
    # not listed yet: only the buckets both slices share are complete
    assert inf.complete_slice == ShardSlice("namespace", frozenset(range(16, 32)))
    inf.start()  # its first list is of the new slice
    try:
        assert inf.wait_for_sync(STUCK)
        assert inf.complete_slice == ShardSlice("namespace", frozenset(range(16, 48)))
    finally:
        assert inf.stop()
