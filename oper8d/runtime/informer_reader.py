"""The reader thread of an ``Informer``: list, then watch, retrying forever.

``runtime.informer.Informer`` runs two threads; this mixin is the one that talks to the API
server (the dispatcher, which applies what it reads and calls the handlers, stays in
``runtime.informer``). It lists the kind (in pages of ``page_size``, each page transformed
before the next is read: ``runtime.listwatch.list_in_pages``), then watches from the list's
resourceVersion. BOOKMARK events only move that resourceVersion on; a watch the server ends
(its ``timeoutSeconds``) is opened again from the last resourceVersion; a 410 Gone (the
version is too old, e.g. after an apiserver restart) lists again; any other failure
(apiserver down, 5xx, a kind not served yet) is retried after a capped exponential backoff,
forever: an informer never gives up and never ends the process. What it reads goes to the
dispatcher's queue as a ``Relisted`` or a ``WatchChange`` (``runtime.informer_sync``).

Kept apart from the informer's store, reads and dispatcher so that each is short enough to
read whole; the informer's ``__init__`` sets every attribute declared below.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from oper8d.errors import ClusterError
from oper8d.objects import Obj, resource_version
from oper8d.runtime.informer_sync import Relisted, WatchChange
from oper8d.runtime.listwatch import list_in_pages
from oper8d.runtime.store import key_of, share_strings

if TYPE_CHECKING:
    import queue
    import threading
    from collections.abc import Callable

    from oper8d.runtime.hashing import ShardSlice
    from oper8d.runtime.listwatch import ListWatch, WatchStream

__all__ = ["InformerReader"]

# (the informer's logger: its lines keep their name)
log = logging.getLogger("oper8d.informer")


class InformerReader:
    """The reader thread's methods; ``runtime.informer.Informer`` provides what is declared
    here."""

    if TYPE_CHECKING:  # set by runtime.informer.Informer.__init__
        api_version: str
        kind: str
        namespace: str | None
        label_selector: str | None
        metadata_only: bool
        _cluster: ListWatch
        _lock: threading.Lock
        _stopping: threading.Event
        _sleep: Callable[[float], Any]
        _events: queue.SimpleQueue[Any]
        _stream: WatchStream | None
        _seen: dict[tuple[str, str], Obj]
        _shard: ShardSlice | None
        _relist: bool
        _version: str | None
        _failures: int
        _first_watch_from: str | None
        _watch_timeout: int
        _min_delay: float
        _max_delay: float
        _page_size: int
        _transform: Callable[[Obj], Obj]
        _on_watch_event: Callable[[str, str], None] | None

        def _describe(self) -> str: ...
        def _in_shard(self, obj: Obj) -> bool: ...

    def _query(self) -> dict[str, Any]:
        """Keyword arguments of the list and watch calls beyond the kind and scope (only
        those in use, so a source without sharding or metadata lists is called as before)."""
        query: dict[str, Any] = {}
        selector = self._shard.selector() if self._shard is not None else ""
        if selector:
            query["shard_selector"] = selector
        if self.metadata_only:
            query["metadata_only"] = True
        return query

    def _read(self) -> None:
        """List and watch until stopped; never raises (see the module docstring)."""
        first_watch_from = self._first_watch_from
        while not self._stopping.is_set():
            from_fresh_list = False
            try:
                if self._version is None or self._relist:
                    self._relist = False
                    shard = self._shard
                    items, version = list_in_pages(
                        self._cluster,
                        self.api_version,
                        self.kind,
                        self.namespace,
                        self.label_selector,
                        page_size=self._page_size,
                        keep=self._keep_listed,
                        query=self._query(),
                        stopping=self._stopping.is_set,
                    )
                    if self._stopping.is_set():
                        return
                    self._events.put(Relisted(items, version, shard))
                    self._version, self._failures, from_fresh_list = version, 0, True
                    if first_watch_from is not None:
                        self._version, first_watch_from = first_watch_from, None
                        from_fresh_list = False
                self._watch_once()
            except ClusterError as err:
                if self._stopping.is_set():
                    return
                if err.status == 410:
                    self._version = None  # too old: list again
                    if not from_fresh_list:
                        log.info("%s: %s; listing again", self._describe(), err)
                        continue
                self._retry_later(str(err))
            except Exception as err:  # a bug must not end the informer: log, relist, retry
                if self._stopping.is_set():
                    return
                log.exception("%s: unexpected failure while listing or watching", self._describe())
                self._version = None
                self._retry_later(repr(err))

    def _keep_listed(self, obj: Obj) -> Obj | None:
        """A listed object as the store keeps it (None: outside the shard); the object
        handlers already have when its resourceVersion is unchanged (a relist then holds
        no second copy of the unchanged objects)."""
        if not self._in_shard(obj):
            return None
        version = resource_version(obj)
        with self._lock:
            seen = self._seen.get(key_of(obj))
        if seen is not None and version and resource_version(seen) == version:
            return seen
        return share_strings(self._transform(obj))

    def _watch_once(self) -> None:
        """One watch from ``self._version`` until the server ends it or it is closed."""
        assert self._version is not None
        stream = self._cluster.watch(
            self.api_version,
            self.kind,
            namespace=self.namespace,
            label_selector=self.label_selector,
            resource_version=self._version,
            timeout_seconds=self._watch_timeout,
            **self._query(),
        )
        with self._lock:
            self._stream = stream
        try:
            if self._stopping.is_set() or self._relist:
                return
            for event in stream:
                if self._relist:
                    return
                kind, obj = event.get("type"), event.get("object") or {}
                if self._on_watch_event is not None:
                    self._on_watch_event(self.kind, str(kind))
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    if self._in_shard(obj):
                        kept = share_strings(self._transform(obj), keys=True)
                        self._events.put(WatchChange(kind, kept))
                elif kind != "BOOKMARK":
                    log.debug("%s: ignoring a %s watch event", self._describe(), kind)
                    continue
                self._version = resource_version(obj) or self._version
                self._failures = 0
        finally:
            with self._lock:
                self._stream = None
            stream.close()

    def _retry_later(self, why: str) -> None:
        self._failures += 1
        delay = min(self._max_delay, self._min_delay * 2 ** (self._failures - 1))
        log.warning("%s: %s; retry %d in %.1fs", self._describe(), why, self._failures, delay)
        self._sleep(delay)
