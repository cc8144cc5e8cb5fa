"""What an informer lists and watches through: the ``ListWatch`` protocol (``KubeCluster``
implements it; unit tests use the in-memory API), the ``WatchStream`` it returns, and
``PagedList``: a source that can also list one page at a time (``limit`` and ``continue``, as
client-go's pager asks), so that an informer holds one page of a big list in memory, not all.

``list_in_pages`` is how an informer lists: page after page, each object passed through
the informer's ``keep`` (transform, shard filter) as its page arrives, so the parsed pages
are freed as it goes and the peak is one page plus what is kept. Like client-go's pager, a
continue token that expired mid-list (410: the snapshot was compacted away, after about 5
minutes) falls back to one list without a limit.

Declared apart from ``runtime.informer`` so that the informer module holds the informer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from oper8d.errors import ClusterError
from oper8d.objects import Obj

__all__ = ["ListPage", "ListWatch", "PagedList", "WatchStream", "list_in_pages"]

log = logging.getLogger("oper8d.informer")


#: one page of a list: its objects (with apiVersion and kind), the resourceVersion of the
#: list's snapshot (the same on every page) and the next page's token ("" on the last one)
ListPage = tuple[list[Obj], str, str]


class WatchStream(Protocol):
    """One open watch (``cluster.kube.transport.EventStream``): events
    ``{"type": ..., "object": {...}}`` until the server ends it or it is closed."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None:
        """End the stream; safe from any thread, idempotent."""
        ...


class ListWatch(Protocol):
    """Where an informer lists and watches a kind (``KubeCluster``). Errors are
    ``ClusterError``: 410 on ``watch`` when ``resource_version`` is too old."""

    def list_with_version(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        shard_selector: str | None = None,
        metadata_only: bool = False,
    ) -> tuple[list[Obj], str]:
        """The objects and the resourceVersion a watch continues from (with
        ``metadata_only``: each object's apiVersion, kind and metadata alone)."""
        ...

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str,
        timeout_seconds: int = 300,
        shard_selector: str | None = None,
        metadata_only: bool = False,
    ) -> WatchStream:
        """The changes after ``resource_version``, until ``timeout_seconds`` or ``close()``."""
        ...


@runtime_checkable
class PagedList(Protocol):
    """A ``ListWatch`` that lists in pages (``KubeCluster``); a source without it is listed
    whole with ``list_with_version``."""

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
        metadata_only: bool = False,
    ) -> ListPage:
        """At most ``limit`` objects (0: all), from ``continue_token`` on ("": the first
        page, a new snapshot). A ``ClusterError`` with status 410 when the token expired
        (the snapshot was compacted away): the list has to start again."""
        ...


def list_in_pages(
    source: ListWatch,
    api_version: str,
    kind: str,
    namespace: str | None,
    label_selector: str | None,
    *,
    page_size: int,
    keep: Callable[[Obj], Obj | None],
    query: Mapping[str, Any] | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> tuple[list[Obj], str]:
    """What ``keep`` returned for each listed object (None: left out) and the list's
    resourceVersion. Listed in pages of ``page_size`` when ``source`` is a ``PagedList``
    (0, or another source: in one request); ``query`` holds further keyword arguments of
    the list calls (``shard_selector``, ``metadata_only``). When ``stopping()`` turns true
    between pages, what was kept so far is returned. Errors are the source's
    ``ClusterError``s."""
    extra = dict(query or {})
    if page_size <= 0 or not isinstance(source, PagedList):
        items, version = source.list_with_version(
            api_version, kind, namespace, label_selector, **extra
        )
        return _kept(items, keep), version
    kept: list[Obj] = []
    token = version = ""
    while True:
        try:
            items, listed_version, token = source.list_page(
                api_version,
                kind,
                namespace,
                label_selector,
                limit=page_size,
                continue_token=token,
                **extra,
            )
        except ClusterError as err:
            if err.status != 410 or not token:
                raise
            log.info(
                "%s %s: the list's continue token expired (%s); listing again in one request",
                api_version,
                kind,
                err,
            )
            del kept[:]  # what the expired snapshot gave is replaced by the new list
            items, version, _ = source.list_page(
                api_version, kind, namespace, label_selector, limit=0, **extra
            )
            return _kept(items, keep), version
        version = version or listed_version
        kept += _kept(items, keep)
        del items  # this page's parsed objects go before the next page is read
        if not token or stopping():
            return kept, version


def _kept(items: list[Obj], keep: Callable[[Obj], Obj | None]) -> list[Obj]:
    out = []
    for obj in items:
        kept = keep(obj)
        if kept is not None:
            out.append(kept)
    return out
