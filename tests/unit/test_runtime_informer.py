"""An Informer (``runtime.informer``) listing and watching the in-memory API server
(``memory_api.MemoryApi``): what its handlers hear and what its reads return. The same
behaviour against a real kube-apiserver is in tests/integration/test_informer.py."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from memory_api import STUCK, MemoryApi

from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.engine.deploy import OWNER_LABEL
from oper8d.runtime.informer import Informer
from oper8d.runtime.store import LAST_APPLIED


class Heard:
    """What the handlers were told: (event, name, data of obj, data of old)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any, Any]] = []
        self.changed = threading.Condition()

    def __call__(self, event: str, obj: Obj, old: Obj | None) -> None:
        with self.changed:
            self.events.append(
                (event, obj["metadata"]["name"], obj.get("data"), old and old.get("data"))
            )
            self.changed.notify_all()

    def wait_for(self, count: int) -> list[tuple[str, str, Any, Any]]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.events) >= count, STUCK), self.events
            return list(self.events)


@pytest.fixture
def api() -> MemoryApi:
    return MemoryApi(FakeClock())


@pytest.fixture
def start(api: MemoryApi) -> Iterator[Callable[..., tuple[Informer, Heard]]]:
    informers: list[Informer] = []

    def run(**options: Any) -> tuple[Informer, Heard]:
        informer = Informer(api, "v1", "ConfigMap", **options)
        heard = Heard()
        informer.add_handler(heard)
        informer.start()
        informers.append(informer)
        assert informer.wait_for_sync(STUCK)
        return informer, heard

    yield run
    for informer in informers:
        assert informer.stop()


def configmap(name: str, ns: str = "a", **labels: str) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"v": "1"}}


def test_handlers_hear_the_listed_objects_then_every_change_in_order(
    api: MemoryApi, start: Callable[..., tuple[Informer, Heard]]
) -> None:
    api.create(configmap("early"))
    informer, heard = start()
    assert heard.wait_for(1) == [("ADDED", "early", {"v": "1"}, None)]

    live = api.create(configmap("late"))
    live["data"] = {"v": "2"}
    api.update(live)
    api.delete("v1", "ConfigMap", "early", "a")

    assert heard.wait_for(4)[1:] == [
        ("ADDED", "late", {"v": "1"}, None),
        ("MODIFIED", "late", {"v": "2"}, {"v": "1"}),
        ("DELETED", "early", {"v": "1"}, {"v": "1"}),
    ]
    assert [o["metadata"]["name"] for o in informer.list()] == ["late"]
    assert informer.get("early", "a") is None


def test_reads_answer_from_the_cache_by_namespace_labels_owner_and_uid(
    api: MemoryApi, start: Callable[..., tuple[Informer, Heard]]
) -> None:
    owned = api.create(configmap("owned", **{OWNER_LABEL: "cr-1"}))
    api.create(configmap("other", ns="b", tier="web"))
    informer, heard = start()
    heard.wait_for(2)
    api.cluster.reset_requests()

    assert [o["metadata"]["name"] for o in informer.list("b")] == ["other"]
    assert [o["metadata"]["name"] for o in informer.list(label_selector="tier")] == ["other"]
    assert [o["metadata"]["name"] for o in informer.by_owner("cr-1")] == ["owned"]
    found = informer.by_uid(owned["metadata"]["uid"])
    assert found is not None and found["metadata"]["name"] == "owned"
    assert sum(api.cluster.requests.values()) == 0


def test_reads_are_copies_a_caller_cannot_change_the_cache_through(
    api: MemoryApi, start: Callable[..., tuple[Informer, Heard]]
) -> None:
    api.create(configmap("cm"))
    informer, heard = start()
    heard.wait_for(1)

    read = informer.get("cm", "a")
    assert read is not None
    read["data"]["v"] = "changed by the caller"
    assert (informer.get("cm", "a") or {})["data"] == {"v": "1"}


def test_an_informer_with_a_label_selector_holds_only_what_it_selects(
    api: MemoryApi, start: Callable[..., tuple[Informer, Heard]]
) -> None:
    api.create(configmap("web", tier="web"))
    api.create(configmap("db", tier="db"))
    informer, heard = start(label_selector="tier=web", namespace="a")
    api.create(configmap("web-2", tier="web"))
    api.create(configmap("web-elsewhere", ns="b", tier="web"))

    assert [e[1] for e in heard.wait_for(2)] == ["web", "web-2"]
    assert [o["metadata"]["name"] for o in informer.list()] == ["web", "web-2"]


def test_a_sharded_informer_holds_its_slice_even_when_the_server_ignores_the_selector(
    api: MemoryApi, start: Callable[..., tuple[Informer, Heard]]
) -> None:
    import hashlib

    from oper8d.runtime.hashing import ShardSlice, bucket_of

    # names that differ early: FNV-1a spreads those over the hash space
    namespaces = [hashlib.sha256(str(i).encode()).hexdigest()[:8] for i in range(40)]
    for ns in namespaces:
        api.create(configmap("cm", ns))
    bucket = {ns: bucket_of({"metadata": {"namespace": ns}}, "namespace") for ns in namespaces}
    low = ShardSlice("namespace", frozenset(range(32)))
    informer, heard = start(shard=low)
    inside = sorted(ns for ns in namespaces if bucket[ns] < 32)
    assert inside and len(inside) < len(namespaces)
    heard.wait_for(len(inside))
    assert sorted(o["metadata"]["namespace"] for o in informer.list()) == inside

    # a change outside the slice is not heard of; one inside is
    outside = next(ns for ns in namespaces if bucket[ns] >= 32)
    for ns in (outside, inside[0]):
        live = api.get("v1", "ConfigMap", "cm", ns)
        live["data"] = {"v": "2"}
        api.update(live)
    events = heard.wait_for(len(inside) + 1)
    assert events[len(inside)][0] == "MODIFIED"
    assert informer.get("cm", outside) is None

    # the other half: what enters is ADDED, what leaves is DELETED
    informer.set_shard(ShardSlice("namespace", frozenset(range(32, 64))))
    events = heard.wait_for(len(inside) + 1 + len(namespaces))
    changes = events[len(inside) + 1 :]
    assert sorted(e[0] for e in changes) == sorted(
        ["DELETED"] * len(inside) + ["ADDED"] * (len(namespaces) - len(inside))
    )
    assert {o["metadata"]["namespace"] for o in informer.list()} == set(namespaces) - set(inside)


class ServerShaped:
    """A ListWatch serving objects as a real API server does, with managedFields: one
    listed ConfigMap, then one ADDED by the watch."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    @staticmethod
    def obj(name: str, rv: str) -> Obj:
        cm = configmap(name)
        cm["metadata"].update(
            resourceVersion=rv,
            managedFields=[{"manager": "kubectl", "operation": "Apply", "fieldsV1": {}}],
            annotations={LAST_APPLIED: '{"kind": "ConfigMap"}', "keep": "me"},
        )
        return cm

    def list_with_version(self, *args: Any, **kwargs: Any) -> tuple[list[Obj], str]:
        return [self.obj("listed", "1")], "1"

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        outer = self

        class Stream:
            def __iter__(self) -> Iterator[dict[str, Any]]:
                yield {"type": "ADDED", "object": outer.obj("watched", "2")}
                outer.closed.wait(STUCK)

            def close(self) -> None:
                outer.closed.set()

        return Stream()


@pytest.mark.parametrize("transform", ["default", None])
def test_the_cache_keeps_no_managed_fields_nor_kubectls_last_applied_copy(
    transform: str | None,
) -> None:
    options: dict[str, Any] = {} if transform == "default" else {"transform": None}
    informer = Informer(ServerShaped(), "v1", "ConfigMap", **options)
    heard = Heard()
    informer.add_handler(heard)
    informer.start()
    try:
        heard.wait_for(2)
        informer.observe_write(ServerShaped.obj("written", "3"))
        for name in ("listed", "watched", "written"):
            meta = informer.get(name, "a")["metadata"]  # type: ignore[index]
            if transform is None:  # kept whole when asked
                assert meta["managedFields"] and LAST_APPLIED in meta["annotations"]
            else:
                assert "managedFields" not in meta
                assert meta["annotations"] == {"keep": "me"}
    finally:
        assert informer.stop()


def test_count_answers_as_a_filtered_list_would_without_copying_the_cache(
    api: MemoryApi, start: Callable[..., tuple[Informer, Heard]]
) -> None:
    # the shard gauge counts every cached CR on each /metrics scrape
    for i in range(5):
        api.create(configmap(f"cm{i}", tier="web" if i % 2 else "db"))
    informer, heard = start()
    heard.wait_for(5)
    seen: list[Obj] = []

    def web(obj: Obj) -> bool:
        seen.append(obj)
        return (obj["metadata"].get("labels") or {}).get("tier") == "web"

    assert informer.count(web) == sum(1 for o in informer.list() if web(o)) == 2
    stored = seen[:5]  # what count handed over: the cached objects, not copies
    assert all(informer.count(lambda o, s=s: o is s) == 1 for s in stored)
