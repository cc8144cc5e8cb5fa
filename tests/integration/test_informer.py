"""Informers against a real kube-apiserver: list then watch, handlers in order, bookmarks,
relists after 410 Gone and after gaps, retries while the apiserver is away, resyncs,
stop(), and CachedCluster reading its own writes.

Waits are on conditions that handlers or a wrapped cluster signal, each with a timeout;
nothing sleeps for a fixed time.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from test_kube_cluster import crd, install_crd, new_namespace

from oper8d.clock import FakeClock
from oper8d.cluster.kube import KubeCluster
from oper8d.cluster.kube.transport import EventStream
from oper8d.envtest import Environment
from oper8d.errors import ClusterError
from oper8d.runtime.cache import CachedCluster
from oper8d.runtime.informer import Informer

pytestmark = pytest.mark.integration

WAIT = 30.0  # seconds any single expected thing may take before the test fails

#: every ConfigMap of these tests carries it and the informers select it, so the
#: kube-root-ca.crt ConfigMap that kube-controller-manager adds to each namespace (at a
#: moment of its choosing) stays out of what the tests watch
OURS = "test=informer"

GROUP = "inf.oper8d.io"
GADGETS = f"{GROUP}/v1"


# -- helpers ----------------------------------------------------------------------------


class Recorder:
    """A handler that keeps (event, name, data) and lets the test wait for what it expects."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []
        self._changed = threading.Condition()

    def __call__(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._changed:
            self.events.append((event, obj["metadata"]["name"], obj.get("data")))
            self._changed.notify_all()

    def wait_for(self, done: Callable[[list[tuple[str, str, Any]]], bool]) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: done(self.events), WAIT)

    def saw(self, event: str, name: str) -> Callable[[list[tuple[str, str, Any]]], bool]:
        return lambda events: any(e[:2] == (event, name) for e in events)

    def names(self, start: int = 0) -> list[tuple[str, str]]:
        with self._changed:
            return [(event, name) for event, name, _ in self.events[start:]]


class FlakyCluster:
    """A KubeCluster whose list and watch the test can take down (as if the apiserver
    were unreachable) or make answer 410 Gone once; it records the watches opened."""

    def __init__(self, cluster: KubeCluster):
        self.cluster = cluster
        self.lists = 0
        self.refused = 0
        self.watch_versions: list[str] = []
        self._down = False
        self._gone_once = False
        self._streams: list[EventStream] = []
        self._changed = threading.Condition()

    def list_with_version(self, *args: Any, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        self._refuse_when_down()
        result = self.cluster.list_with_version(*args, **kwargs)
        with self._changed:
            self.lists += 1
        return result

    def watch(self, *args: Any, **kwargs: Any) -> EventStream:
        self._refuse_when_down()
        with self._changed:
            if self._gone_once:
                self._gone_once = False
                raise ClusterError("test: too old resource version", status=410)
        stream = self.cluster.watch(*args, **kwargs)
        with self._changed:
            self.watch_versions.append(kwargs["resource_version"])
            self._streams.append(stream)
            self._changed.notify_all()
        return stream

    def _refuse_when_down(self) -> None:
        with self._changed:
            if self._down:
                self.refused += 1
                self._changed.notify_all()
                raise ClusterError("test: cannot reach the API server", status=None)

    def take_down(self) -> None:
        """Refuse new requests and break the open watches."""
        with self._changed:
            self._down = True
            streams, self._streams = self._streams, []
        for stream in streams:
            stream.close()

    def bring_up(self, *, gone_once: bool = False) -> None:
        with self._changed:
            self._down = False
            self._gone_once = gone_once

    def wait_for(self, done: Callable[[FlakyCluster], bool]) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: done(self), WAIT)


def configmap(ns: str, name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"test": "informer"}},
        "data": data,
    }


def gadget(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": GADGETS, "kind": "Gadget", "metadata": {"name": name, "namespace": ns}}


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def compact_etcd(env: Environment, revision: str) -> None:
    """Compact etcd's history up to ``revision`` (the apiserver does this every few
    minutes anyway), so a watch from before it is 410 Gone however it is served."""
    body = json.dumps({"revision": revision}).encode()
    request = urllib.request.Request(f"{env.etcd_url}/v3/kv/compaction", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s)


@pytest.fixture
def ns(cluster: KubeCluster) -> Iterator[str]:
    name = new_namespace(cluster)
    yield name
    cluster.delete("v1", "Namespace", name)


RunInformer = Callable[..., tuple[Informer, Recorder]]


@pytest.fixture
def run_informer() -> Iterator[RunInformer]:
    """Start an informer with a Recorder as its handler; all are stopped at teardown."""
    running: list[Informer] = []

    def run(
        cluster: Any, api_version: str = "v1", kind: str = "ConfigMap", **options: Any
    ) -> tuple[Informer, Recorder]:
        if kind == "ConfigMap":
            options.setdefault("label_selector", OURS)
        informer = Informer(cluster, api_version, kind, **options)
        recorder = Recorder()
        informer.add_handler(recorder)
        informer.start()
        running.append(informer)
        return informer, recorder

    yield run
    for informer in running:
        informer.stop()


# -- list and watch ---------------------------------------------------------------------


def test_existing_objects_are_reported_as_added_before_the_informer_has_synced(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    cluster.apply(configmap(ns, "a", v="1"), field_manager="test")
    cluster.apply(configmap(ns, "b", v="1"), field_manager="test")

    informer, recorder = run_informer(cluster, namespace=ns)

    assert informer.wait_for_sync(WAIT) and informer.has_synced()
    assert recorder.names() == [("ADDED", "a"), ("ADDED", "b")]
    assert names(informer.list()) == ["a", "b"]
    assert informer.get("a", ns)["data"] == {"v": "1"}  # type: ignore[index]


def test_creates_updates_and_deletes_reach_handlers_in_order(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    informer, recorder = run_informer(cluster, namespace=ns)
    assert informer.wait_for_sync(WAIT)

    cluster.apply(configmap(ns, "cm", v="1"), field_manager="test")
    cluster.apply(configmap(ns, "cm", v="2"), field_manager="test")
    cluster.delete("v1", "ConfigMap", "cm", ns)

    assert recorder.wait_for(recorder.saw("DELETED", "cm"))
    assert recorder.events == [
        ("ADDED", "cm", {"v": "1"}),
        ("MODIFIED", "cm", {"v": "2"}),
        ("DELETED", "cm", {"v": "2"}),
    ]
    assert informer.get("cm", ns) is None


def test_an_informer_of_one_namespace_sees_nothing_of_another(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    other = new_namespace(cluster)
    try:
        informer, recorder = run_informer(cluster, namespace=ns)
        assert informer.wait_for_sync(WAIT)
        cluster.apply(configmap(other, "elsewhere"), field_manager="test")
        cluster.apply(configmap(ns, "here"), field_manager="test")
        assert recorder.wait_for(recorder.saw("ADDED", "here"))
    finally:
        cluster.delete("v1", "Namespace", other)
    assert recorder.names() == [("ADDED", "here")]


def test_a_list_bigger_than_the_informers_page_is_read_in_pages_and_seen_whole(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    created = [f"cm{i}" for i in range(7)]
    for name in created:
        cluster.apply(configmap(ns, name, v="1"), field_manager="test")
    cluster.reset_requests()

    informer, recorder = run_informer(cluster, namespace=ns, page_size=3)

    assert informer.wait_for_sync(WAIT)
    # the server answers at most 3 a page: 7 objects take 3 requests or more
    assert cluster.requests["list"] >= 3
    assert names(informer.list()) == created
    assert recorder.names() == [("ADDED", name) for name in created]
    # the watch goes on from the list's snapshot
    cluster.apply(configmap(ns, "cm1", v="2"), field_manager="test")
    cluster.apply(configmap(ns, "late", v="1"), field_manager="test")
    assert recorder.wait_for(recorder.saw("ADDED", "late"))
    assert recorder.names(len(created)) == [("MODIFIED", "cm1"), ("ADDED", "late")]
    assert informer.get("cm1", ns)["data"] == {"v": "2"}  # type: ignore[index]


def test_bookmarks_move_the_next_watch_past_changes_in_other_namespaces(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    flaky = FlakyCluster(cluster)
    # bookmarks come shortly before a watch's timeout; the next watch starts from them
    informer, recorder = run_informer(flaky, namespace=ns, watch_timeout=3)
    assert flaky.wait_for(lambda f: len(f.watch_versions) >= 1)
    listed = int(flaky.watch_versions[0])

    other = new_namespace(cluster)
    try:
        cluster.apply(configmap(other, "elsewhere"), field_manager="test")
        assert flaky.wait_for(lambda f: any(int(v) > listed for v in f.watch_versions))
    finally:
        cluster.delete("v1", "Namespace", other)
    assert recorder.events == []  # no event of its own namespace moved it on
    assert int(informer.resource_version or 0) > listed
    assert flaky.lists == 1


# -- relists -----------------------------------------------------------------------------


def test_a_stale_resource_version_makes_the_informer_list_again(
    k8s: client.ApiClient, envtest: Environment, ns: str, run_informer: RunInformer
) -> None:
    cluster = KubeCluster(k8s)
    install_crd(k8s, cluster, crd(GROUP, "Gadget", "gadgets"))
    first = cluster.apply(gadget(ns, "g1"), field_manager="test")
    compact_etcd(envtest, first["metadata"]["resourceVersion"])
    counted = KubeCluster(k8s)

    informer, recorder = run_informer(
        counted, GADGETS, "Gadget", namespace=ns, first_watch_from="1"
    )
    assert informer.wait_for_sync(WAIT)
    cluster.apply(gadget(ns, "g2"), field_manager="test")

    assert recorder.wait_for(recorder.saw("ADDED", "g2"))
    assert counted.requests["list"] == 2  # the watch from "1" was 410 Gone: listed again
    assert recorder.names() == [("ADDED", "g1"), ("ADDED", "g2")]  # g1 unchanged: no event
    assert names(informer.list(ns)) == ["g1", "g2"]


def test_a_relist_after_a_gap_reports_exactly_what_changed(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    for name in ("change", "keep", "remove"):
        cluster.apply(configmap(ns, name, v="1"), field_manager="test")
    flaky = FlakyCluster(cluster)
    resume = threading.Event()
    informer, recorder = run_informer(flaky, namespace=ns, sleep=lambda s: resume.wait(WAIT))
    assert informer.wait_for_sync(WAIT)
    assert flaky.wait_for(lambda f: len(f.watch_versions) == 1)

    flaky.take_down()
    assert flaky.wait_for(lambda f: f.refused >= 1)  # the informer now waits to retry
    start = len(recorder.events)
    cluster.apply(configmap(ns, "change", v="2"), field_manager="test")
    cluster.delete("v1", "ConfigMap", "remove", ns)
    cluster.apply(configmap(ns, "new", v="1"), field_manager="test")
    flaky.bring_up(gone_once=True)  # the next watch is 410 Gone
    resume.set()

    assert recorder.wait_for(lambda events: len(events) >= start + 3)
    assert sorted(recorder.names(start)) == [
        ("ADDED", "new"),
        ("DELETED", "remove"),
        ("MODIFIED", "change"),
    ]
    assert flaky.lists == 2
    assert names(informer.list()) == ["change", "keep", "new"]
    assert informer.get("change", ns)["data"] == {"v": "2"}  # type: ignore[index]


# -- failures and recovery -----------------------------------------------------------------


def test_an_unreachable_apiserver_is_retried_with_capped_backoff_until_it_answers(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    flaky = FlakyCluster(cluster)
    flaky.take_down()
    delays: list[float] = []

    def sleep(seconds: float) -> None:
        delays.append(seconds)
        if len(delays) == 6:
            flaky.bring_up()

    informer, _ = run_informer(
        flaky, namespace=ns, sleep=sleep, min_retry_delay=0.5, max_retry_delay=4.0
    )

    assert informer.wait_for_sync(WAIT)
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_the_informer_recovers_from_an_apiserver_restart(
    envtest: Environment, cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    informer, recorder = run_informer(cluster, namespace=ns, max_retry_delay=1.0)
    cluster.apply(configmap(ns, "before"), field_manager="test")
    assert recorder.wait_for(recorder.saw("ADDED", "before"))

    envtest.restart_apiserver()
    cluster.apply(configmap(ns, "after"), field_manager="test")

    assert recorder.wait_for(recorder.saw("ADDED", "after"))
    assert names(informer.list(ns)) == ["after", "before"]
    assert recorder.names().count(("ADDED", "before")) == 1


def test_stop_ends_an_open_watch_promptly(cluster: KubeCluster, ns: str) -> None:
    flaky = FlakyCluster(cluster)
    informer = Informer(flaky, "v1", "ConfigMap", namespace=ns, watch_timeout=300)  # type: ignore[arg-type]
    informer.start()
    assert flaky.wait_for(lambda f: len(f.watch_versions) == 1)

    assert informer.stop(timeout=5.0)


def test_stop_ends_a_wait_before_a_retry_promptly(cluster: KubeCluster, ns: str) -> None:
    flaky = FlakyCluster(cluster)
    flaky.take_down()
    informer = Informer(flaky, "v1", "ConfigMap", namespace=ns, min_retry_delay=300.0)  # type: ignore[arg-type]
    informer.start()
    assert flaky.wait_for(lambda f: f.refused >= 1)

    assert informer.stop(timeout=5.0)
    assert not informer.has_synced()


# -- resync ------------------------------------------------------------------------------


def test_every_stored_object_is_resynced_each_period(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    cluster.apply(configmap(ns, "a"), field_manager="test")
    cluster.apply(configmap(ns, "b"), field_manager="test")
    clock = FakeClock()
    informer, recorder = run_informer(cluster, namespace=ns, clock=clock, resync_period=60.0)
    assert informer.wait_for_sync(WAIT)

    clock.advance(60)
    assert recorder.wait_for(recorder.saw("RESYNC", "b"))
    clock.advance(60)
    assert recorder.wait_for(lambda events: len(events) == 6)

    assert (
        recorder.names()
        == [("ADDED", "a"), ("ADDED", "b")] + [("RESYNC", "a"), ("RESYNC", "b")] * 2
    )


# -- CachedCluster -------------------------------------------------------------------------


def test_a_cached_cluster_reads_its_own_writes_without_asking_the_api_server(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    informer, _ = run_informer(cluster, namespace=ns)
    assert informer.wait_for_sync(WAIT)
    cached = CachedCluster(cluster, {("v1", "ConfigMap"): informer})

    written = cached.apply(configmap(ns, "mine", v="1"), field_manager="test")
    cluster.reset_requests()
    got = cached.get("v1", "ConfigMap", "mine", ns)
    listed = cached.list("v1", "ConfigMap", ns, label_selector=OURS)

    assert (
        got is not None
        and got["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
    )
    assert names(listed) == ["mine"]
    assert cluster.requests["get"] == cluster.requests["list"] == 0


def test_a_names_only_informer_holds_the_names_of_the_unlabelled_objects_and_no_data(
    cluster: KubeCluster, ns: str, run_informer: RunInformer
) -> None:
    # as the manager watches the owned kinds' objects without the owner label
    # (PartialObjectMetadata over the wire): it tells the cache which names are taken
    cluster.apply(configmap(ns, "labelled", v="1"), field_manager="test")
    cluster.apply(
        {**configmap(ns, "plain", secret="x"), "metadata": {"name": "plain", "namespace": ns}},
        field_manager="test",
    )

    informer, recorder = run_informer(
        cluster, namespace=ns, label_selector="!test", metadata_only=True
    )
    assert informer.wait_for_sync(WAIT)

    plain = informer.get("plain", ns)
    assert plain is not None and set(plain) == {"apiVersion", "kind", "metadata"}
    assert (plain["apiVersion"], plain["kind"]) == ("v1", "ConfigMap")
    assert set(plain["metadata"]) == {"name", "namespace", "uid", "resourceVersion"}
    assert informer.get("labelled", ns) is None

    cluster.apply(
        {**configmap(ns, "later"), "metadata": {"name": "later", "namespace": ns}},
        field_manager="test",
    )
    assert recorder.wait_for(recorder.saw("ADDED", "later"))
    # labelled now: the server's watch reports it gone from the selection
    cluster.apply(configmap(ns, "plain"), field_manager="test")
    assert recorder.wait_for(recorder.saw("DELETED", "plain"))
    assert informer.get("plain", ns) is None
    assert all(data is None for _event, _name, data in recorder.events)
