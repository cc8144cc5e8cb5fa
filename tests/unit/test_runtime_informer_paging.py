"""An Informer's initial list read in pages (``runtime.listwatch.list_in_pages``): every page
is transformed before the next one is asked for, writes made while the pages are read
arrive through the watch, and a continue token that expired mid-list is followed by one
list without a limit, as client-go's pager does. The same against a real kube-apiserver
(its own continue tokens) is in tests/integration/test_informer.py."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from memory_api import STUCK

from oper8d.clock import FakeClock
from oper8d.errors import ClusterError
from oper8d.objects import Obj
from oper8d.runtime.informer import Informer
from oper8d.runtime.listwatch import PagedList
from oper8d.runtime.store import drop_unread


class PagedSource:
    """ConfigMaps served as an API server serves them: a list is a snapshot read in pages
    (``continue`` = snapshot id and offset), a watch replays every change after its
    resourceVersion and waits for more. ``after_page(number)`` runs after each page is
    served; ``expire()`` makes every continue token given so far answer 410."""

    def __init__(self, names: list[str]):
        self.version = 0
        self.objects: dict[str, Obj] = {}
        self.log: list[tuple[int, str, Obj]] = []
        self.changed = threading.Condition()
        #: (limit, continue token) of every list request, in order
        self.requests: list[tuple[int, str]] = []
        self.after_page: Callable[[int], None] = lambda number: None
        self.watched_from: list[str] = []
        self._snapshots: list[tuple[list[Obj], str]] = []
        self._expired_below = 0
        #: a watch from a version below this one is answered 410 (compacted away)
        self.compacted = 0
        for name in names:
            self.write(name, "1")

    def write(self, name: str, value: str | None) -> None:
        """Create or change ConfigMap ``name`` (None: delete it)."""
        with self.changed:
            self.version += 1
            meta = {"name": name, "namespace": "a", "resourceVersion": str(self.version)}
            if value is None:  # the event carries the last state
                event, last = "DELETED", self.objects.pop(name)
                obj = {**last, "metadata": meta}
            else:
                data = {"v": value}
                obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
                event = "ADDED" if name not in self.objects else "MODIFIED"
                self.objects[name] = obj
            self.log.append((self.version, event, obj))
            self.changed.notify_all()

    def expire(self) -> None:
        self._expired_below = len(self._snapshots)

    def list_page(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        limit: int,
        continue_token: str = "",
        shard_selector: str | None = None,
    ) -> tuple[list[Obj], str, str]:
        self.requests.append((limit, continue_token))
        with self.changed:
            if continue_token:
                snapshot_id, offset = (int(part) for part in continue_token.split(":"))
                if snapshot_id < self._expired_below:
                    raise ClusterError("The provided continue parameter is too old", status=410)
            else:
                objects = [self.objects[name] for name in sorted(self.objects)]
                self._snapshots.append((objects, str(self.version)))
                snapshot_id, offset = len(self._snapshots) - 1, 0
            objects, version = self._snapshots[snapshot_id]
        end = offset + limit if limit > 0 else len(objects)
        # a fresh copy per page, as a parsed response is, with what the cache drops
        items = [_as_served(obj) for obj in objects[offset:end]]
        token = f"{snapshot_id}:{end}" if end < len(objects) else ""
        self.after_page(len(self.requests))
        return items, version, token

    def list_with_version(self, *args: Any, **kwargs: Any) -> tuple[list[Obj], str]:
        raise AssertionError("a paged source is listed in pages")

    def watch(self, *args: Any, resource_version: str, **kwargs: Any) -> Stream:
        self.watched_from.append(resource_version)
        if int(resource_version) < self.compacted:
            raise ClusterError("too old resource version", status=410)
        return Stream(self, int(resource_version))


def _as_served(obj: Obj) -> Obj:
    served = {**obj, "metadata": {**obj["metadata"]}, "data": dict(obj["data"])}
    served["metadata"]["managedFields"] = [{"manager": "test", "fieldsV1": {"f:data": {}}}]
    return served


class Stream:
    def __init__(self, source: PagedSource, after: int):
        self.source, self.after, self.closed, self.sent = source, after, False, 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.sent = 0
        while True:
            with self.source.changed:
                self.source.changed.wait_for(self._more)
                if self.closed:
                    return
                batch, self.sent = self.source.log[self.sent :], len(self.source.log)
            for version, event, obj in batch:
                if version > self.after:
                    yield {"type": event, "object": _as_served(obj)}

    def _more(self) -> bool:
        return self.closed or len(self.source.log) > self.sent

    def close(self) -> None:
        with self.source.changed:
            self.closed = True
            self.source.changed.notify_all()


class Heard:
    """(event, name, value) of every handler call, and what was transformed when."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []
        self.changed = threading.Condition()

    def __call__(self, event: str, obj: Obj, old: Obj | None) -> None:
        with self.changed:
            self.events.append((event, obj["metadata"]["name"], obj["data"]["v"]))
            self.changed.notify_all()

    def wait_for(self, count: int) -> list[tuple[str, str, str | None]]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.events) >= count, STUCK), self.events
            return list(self.events)


@pytest.fixture
def run() -> Iterator[Callable[..., tuple[Informer, Heard]]]:
    informers: list[Informer] = []

    def start(source: PagedSource, **options: Any) -> tuple[Informer, Heard]:
        informer = Informer(source, "v1", "ConfigMap", clock=FakeClock(), **options)
        heard = Heard()
        informer.add_handler(heard)
        informers.append(informer)
        informer.start()
        return informer, heard

    yield start
    for informer in informers:
        assert informer.stop()


NAMES = [f"cm{i}" for i in range(7)]


def values(informer: Informer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["data"]["v"] for o in informer.list()}


def test_the_first_list_is_read_in_pages_each_transformed_before_the_next_is_asked_for(
    run: Callable[..., tuple[Informer, Heard]],
) -> None:
    source = PagedSource(NAMES)
    assert isinstance(source, PagedList)
    transformed: list[str] = []
    transformed_when_asked: list[int] = []
    source.after_page = lambda number: transformed_when_asked.append(len(transformed))

    def transform(obj: Obj) -> Obj:
        transformed.append(obj["metadata"]["name"])
        return drop_unread(obj)

    sleeps: list[float] = []
    informer, heard = run(source, page_size=3, transform=transform, sleep=sleeps.append)
    assert informer.wait_for_sync(STUCK)
    assert source.requests == [(3, ""), (3, "0:3"), (3, "0:6")]
    # when page n was served, the n-1 pages before it had been transformed
    assert transformed_when_asked == [0, 3, 6]
    assert heard.wait_for(7) == [("ADDED", name, "1") for name in NAMES]
    assert values(informer) == dict.fromkeys(NAMES, "1")
    assert all("managedFields" not in o["metadata"] for o in informer.list())
    assert source.watched_from == ["7"] and sleeps == []


def test_writes_made_while_the_pages_are_read_arrive_through_the_watch(
    run: Callable[..., tuple[Informer, Heard]],
) -> None:
    source = PagedSource(NAMES)

    def write_between_pages(number: int) -> None:
        if number == 1:
            source.write("cm0", "2")  # already listed
            source.write("cm6", "2")  # on a page not read yet: still the snapshot's
            source.write("cm4", None)
            source.write("new", "1")

    source.after_page = write_between_pages
    informer, heard = run(source, page_size=3)
    events = heard.wait_for(11)
    assert events[:7] == [("ADDED", name, "1") for name in NAMES]
    assert events[7:] == [
        ("MODIFIED", "cm0", "2"),
        ("MODIFIED", "cm6", "2"),
        ("DELETED", "cm4", "1"),
        ("ADDED", "new", "1"),
    ]
    assert source.watched_from == ["7"]  # the snapshot's version, not the pages' later one
    expected = {**dict.fromkeys(NAMES, "1"), "cm0": "2", "cm6": "2", "new": "1"}
    del expected["cm4"]
    assert values(informer) == expected


def test_an_expired_continue_token_is_followed_by_one_list_without_a_limit(
    run: Callable[..., tuple[Informer, Heard]],
) -> None:
    source = PagedSource(NAMES)

    def expire_after_the_first_page(number: int) -> None:
        if number == 1:
            source.write("cm0", None)  # listed on the expired snapshot's first page
            source.write("cm5", "2")
            source.expire()

    source.after_page = expire_after_the_first_page
    sleeps: list[float] = []
    informer, heard = run(source, page_size=3, sleep=sleeps.append)
    assert informer.wait_for_sync(STUCK)
    assert source.requests == [(3, ""), (3, "0:3"), (0, "")]
    survivors = NAMES[1:]
    assert heard.wait_for(6) == [("ADDED", n, "2" if n == "cm5" else "1") for n in survivors]
    assert values(informer) == {n: "2" if n == "cm5" else "1" for n in survivors}
    assert source.watched_from == ["9"] and sleeps == []  # no backoff: relisted at once

    source.write("cm1", "3")
    assert heard.wait_for(7)[-1] == ("MODIFIED", "cm1", "3")


def test_a_relist_after_a_too_old_watch_is_paged_and_tells_only_what_changed(
    run: Callable[..., tuple[Informer, Heard]],
) -> None:
    source = PagedSource(NAMES)
    source.compacted = 2  # a watch from before version 2 is answered 410

    def write_after_the_list(number: int) -> None:
        if number == 3:
            source.write("cm3", "2")

    source.after_page = write_after_the_list
    sleeps: list[float] = []
    informer, heard = run(source, page_size=3, first_watch_from="1", sleep=sleeps.append)
    events = heard.wait_for(8)
    assert events == [*(("ADDED", name, "1") for name in NAMES), ("MODIFIED", "cm3", "2")]
    first, second = [(3, ""), (3, "0:3"), (3, "0:6")], [(3, ""), (3, "1:3"), (3, "1:6")]
    assert source.requests == first + second
    assert source.watched_from == ["1", "8"] and sleeps == []
    assert values(informer) == {**dict.fromkeys(NAMES, "1"), "cm3": "2"}


def test_stopping_while_the_pages_are_read_asks_for_no_further_page(
    run: Callable[..., tuple[Informer, Heard]],
) -> None:
    source = PagedSource(NAMES)
    started: list[Informer] = []
    ready = threading.Event()

    def stop_after_the_first_page(number: int) -> None:
        assert ready.wait(STUCK)
        started[0].stop()

    source.after_page = stop_after_the_first_page
    informer, heard = run(source, page_size=3)
    started.append(informer)
    ready.set()
    assert informer.stop()
    assert source.requests == [(3, "")]
    assert heard.events == [] and not informer.has_synced()
