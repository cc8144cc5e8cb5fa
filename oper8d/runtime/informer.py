"""Informers: a watched local copy of one kind's objects, for the runtime manager.

An ``Informer`` lists a kind (in one namespace or all, optionally by label selector),
keeps the objects in a store and watches for changes from the list's resourceVersion,
calling its handlers for each change. Like client-go's reflector and indexer, it runs
two threads:

* the *reader* talks to the API server: list (in pages of ``page_size``), then watch from
  the list's resourceVersion, listing again after a 410 Gone and retrying any other failure
  after a capped exponential backoff, forever: an informer never gives up and never ends
  the process (``runtime.informer_reader``, a mixin of ``Informer``).
* the *dispatcher* applies what the reader got to the store, in order, and calls the
  handlers on its own thread, one event at a time: ``handler(event, obj, old)``:

  - ``ADDED`` (old None), ``MODIFIED`` (old: the object as handlers last saw it),
    ``DELETED`` (obj: its last state; old: as handlers last saw it);
  - ``RESYNC`` every ``resync_period`` seconds for every stored object (old None).

  A relist is diffed against what handlers were last told, so after a gap they get
  ADDED / MODIFIED / DELETED for exactly what changed (nothing for unchanged objects);
  ``runtime.informer_sync`` holds those rules.

Every object is passed through ``transform`` (default ``runtime.store.drop_unread``: no
managedFields, no last-applied annotation) on the reader thread before it is stored or
handed to handlers, as controller-runtime's cache transforms do; memory per cached object
is what bounds a replica's fleet; then ``runtime.store.share_strings`` makes its repeated
strings one object each. A relist reuses the stored object of every object whose
resourceVersion did not change. Reads (``get``, ``list``, ``by_owner``, ...) return deep
copies. ``observe_write`` puts an
object we just wrote into the store when it is newer than the stored one, so the next
reconcile reads its own writes before the watch event arrives; it calls no handler (the
watch event is dispatched as usual, with ``old`` being what handlers saw last, so
predicates still see every change).

Sharding (``runtime.sharding``): with a ``ShardSlice`` the informer holds only the objects
of that slice. It asks the API server for them (``shardSelector``, Kubernetes 1.36+ with
the ShardedListAndWatch gate) and filters every listed object and event on its side as
well, so the store is the same whether or not the server honoured the selector.
``set_shard`` changes the slice: the watch is closed and the kind listed again, and the
diff tells handlers what entered (ADDED) and what left (DELETED).

``on_watch_event(kind, type)`` is told of every event a watch delivers, before the shard
filter (the manager counts them in ``oper8d_watch_events_total``: what the server sent).
"""

from __future__ import annotations

import builtins
import logging
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from oper8d.clock import Clock, SystemClock
from oper8d.cluster.selectors import as_selector
from oper8d.objects import OWNER_LABEL, Obj, newer
from oper8d.runtime.hashing import ShardSlice
from oper8d.runtime.informer_reader import InformerReader
from oper8d.runtime.informer_sync import Event, Relisted, WatchChange, apply_change, apply_relist
from oper8d.runtime.listwatch import ListWatch, WatchStream
from oper8d.runtime.store import (
    ObjectStore,
    copy_obj,
    drop_unread,
    key_of,
    names_only,
    share_strings,
)

__all__ = ["Handler", "Informer", "ListWatch", "WatchStream"]

log = logging.getLogger("oper8d.informer")

#: ``handler(event, obj, old)``; see the module docstring
Handler = Callable[[str, Obj, Obj | None], None]


_STOP = object()

#: longest real wait of the dispatcher while a resync is due later, so that a clock that
#: is not the system's (a test's FakeClock) is noticed moving on
_RESYNC_POLL = 1.0

#: objects per list request, as client-go's reflector asks
PAGE_SIZE = 500

#: names of departed objects an informer remembers (``held_before``; about 100 bytes each)
MAX_DEPARTED = 100_000


class Informer(InformerReader):
    """A listed and watched kind; see the module docstring.

    ``watch_timeout`` is the ``timeoutSeconds`` of each watch; failures are retried after
    ``min_retry_delay`` seconds, doubling up to ``max_retry_delay``. ``sleep`` waits
    between retries (default: a wait that ``stop()`` interrupts); ``clock`` times the
    resyncs. ``first_watch_from`` is a test hook: the first watch after the first list
    starts from this resourceVersion instead of the list's (a stale one forces a relist).
    ``transform`` is applied to every object received (None: keep objects whole).
    ``page_size`` is the ``limit`` of each list request (0: list in one request).
    ``metadata_only``: list and watch metadata alone and keep each object's name, namespace,
    uid and resourceVersion (``names_only``; ``transform`` is not used): an informer that
    answers "is there an object of this name?" for ``runtime.cache``, not a reader's copy.
    ``on_watch_event`` is called on the reader thread with (kind, event type) for every
    event a watch delivers, even one outside the shard (None: not told).
    """

    def __init__(
        self,
        cluster: ListWatch,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resync_period: float | None = None,
        clock: Clock | None = None,
        watch_timeout: int = 300,
        min_retry_delay: float = 0.5,
        max_retry_delay: float = 30.0,
        sleep: Callable[[float], Any] | None = None,
        first_watch_from: str | None = None,
        shard: ShardSlice | None = None,
        transform: Callable[[Obj], Obj] | None = drop_unread,
        page_size: int = PAGE_SIZE,
        metadata_only: bool = False,
        on_watch_event: Callable[[str, str], None] | None = None,
    ):
        if resync_period is not None and not resync_period > 0:
            raise ValueError(f"resync_period must be > 0 seconds or None, got {resync_period!r}")
        self._cluster = cluster
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.label_selector = label_selector or None
        self._selector = as_selector(self.label_selector)
        self._resync_period = resync_period
        self._clock = clock or SystemClock()
        self._watch_timeout = watch_timeout
        self._min_delay = min_retry_delay
        self._max_delay = max_retry_delay
        self._stopping = threading.Event()
        self._sleep = sleep or self._stopping.wait
        self._first_watch_from = first_watch_from
        self._shard = shard
        self._listed_shard: ShardSlice | None = shard  # the last applied list's (dispatcher)
        self._relist = False
        self._transform = transform or (lambda obj: obj)
        self.metadata_only = metadata_only
        if metadata_only:
            self._transform = partial(names_only, api_version=api_version, kind=kind)
        self._page_size = page_size
        self._on_watch_event = on_watch_event

        self._lock = threading.Lock()
        self._store = ObjectStore()  # what reads see (includes observed writes)
        self._seen: dict[tuple[str, str], Obj] = {}  # what handlers were last told
        self._departed: set[tuple[str, str]] = set()  # keys that left (``held_before``)
        self._departed_overflow = False
        self._handlers: list[Handler] = []
        self._events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._synced = threading.Event()
        self._stream: WatchStream | None = None
        self._version: str | None = None
        self._failures = 0
        self._threads: list[threading.Thread] = []

    def __repr__(self) -> str:
        return f"Informer({self._describe()})"

    def _describe(self) -> str:
        where = f"namespace {self.namespace}" if self.namespace else "all namespaces"
        selector = f", labels {self.label_selector}" if self.label_selector else ""
        names = " (names only)" if self.metadata_only else ""
        return f"{self.api_version} {self.kind} in {where}{selector}{names}"

    # -- lifecycle -----------------------------------------------------------------------
    def add_handler(self, handler: Handler) -> None:
        """Call ``handler`` for every event from now on (add handlers before ``start()``
        to see the initial ADDED events)."""
        with self._lock:
            self._handlers.append(handler)

    def start(self) -> None:
        if self._threads:
            raise RuntimeError(f"{self!r} was already started; create a new Informer")
        name = f"informer-{self.kind}-{self.namespace or 'all'}"
        self._threads = [
            threading.Thread(target=self._read, name=f"{name}-reader", daemon=True),
            threading.Thread(target=self._dispatch_loop, name=f"{name}-dispatch", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop both threads (closing an open watch) and wait up to ``timeout`` seconds
        for them; True when they ended. A handler that is running is not interrupted."""
        self._stopping.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        self._events.put(_STOP)
        # measured with the injected clock: with a FakeClock each join may take ``timeout``
        deadline = self._clock.monotonic() + timeout
        others = [t for t in self._threads if t is not threading.current_thread()]
        for thread in others:
            thread.join(max(0.0, deadline - self._clock.monotonic()))
        return not any(t.is_alive() for t in others)

    def has_synced(self) -> bool:
        """True once the first list is in the store and its events were dispatched."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    @property
    def resource_version(self) -> str | None:
        """The resourceVersion the next watch starts from (None before the first list)."""
        return self._version

    # -- reads ---------------------------------------------------------------------------
    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        with self._lock:
            obj = self._store.get((namespace or "", name))
            return copy_obj(obj) if obj is not None else None

    def count(self, predicate: Callable[[Obj], bool]) -> int:
        """How many stored objects ``predicate`` accepts, without copying any (a metrics
        scrape counts every cached CR). ``predicate`` sees the stored objects themselves
        and must not change them."""
        with self._lock:
            return sum(1 for _key, obj in self._store.items() if predicate(obj))

    def list(self, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        """Stored objects, optionally in one namespace and matching a label selector,
        ordered by (namespace, name) as the API server orders them."""
        selector = as_selector(label_selector)
        owners = [
            r.values
            for r in selector.requirements
            if r.key == OWNER_LABEL
            and r.operator == "In"
            and len(r.values) == 1
            and next(iter(r.values))  # (the index holds non-empty owners only)
        ]
        with self._lock:
            if owners:  # what one CR owns (prune's list): its index, not a scan of the kind
                (owner,) = owners[0]
                candidates = [(key_of(obj), obj) for obj in self._store.by_owner_label(owner)]
            else:
                candidates = sorted(self._store.items())
            found = [
                obj
                for key, obj in candidates
                if (namespace is None or key[0] == namespace)
                and selector.matches((obj.get("metadata") or {}).get("labels"))
            ]
            return [copy_obj(obj) for obj in found]

    def held_before(self, name: str, namespace: str | None = None) -> bool:
        """Whether an object of this name left the store (deleted, or no longer selected)
        since the informer started: its absence now does not show that the name is free
        (another may have just created it, unseen yet). True for every name once more than
        ``MAX_DEPARTED`` names have left."""
        with self._lock:
            return self._departed_overflow or (namespace or "", name) in self._departed

    def by_owner(self, uid: str) -> builtins.list[Obj]:
        """Objects labelled ``oper8d.io/owner-uid: <uid>`` (what one CR deployed)."""
        with self._lock:
            return [copy_obj(obj) for obj in self._store.by_owner_label(uid)]

    def by_owner_reference(self, uid: str) -> builtins.list[Obj]:
        """Objects with an ownerReference to ``uid``."""
        with self._lock:
            return [copy_obj(obj) for obj in self._store.by_owner_reference(uid)]

    def by_uid(self, uid: str) -> Obj | None:
        """The stored object with ``metadata.uid`` ``uid`` (maps an owner uid to its CR)."""
        with self._lock:
            obj = self._store.by_uid(uid)
            return copy_obj(obj) if obj is not None else None

    # -- sharding ------------------------------------------------------------------------
    @property
    def shard(self) -> ShardSlice | None:
        return self._shard

    def set_shard(self, shard: ShardSlice | None) -> None:
        """Hold only the objects of ``shard`` from now on (None: all); see the docstring."""
        with self._lock:
            if shard == self._shard:
                return
            self._shard, self._relist = shard, True
            stream = self._stream
        if stream is not None:
            stream.close()

    @property
    def complete_slice(self) -> ShardSlice | None:
        """The slice the store holds every object of (None: unsharded, all of them): the
        one the last applied list asked for, within the current one. Right after
        ``set_shard`` a bucket just added is not in it until its list arrives."""
        with self._lock:
            listed, current = self._listed_shard, self._shard
        if current is None or listed is None:
            return current if listed is None else listed
        return ShardSlice(current.key, current.buckets & listed.buckets)

    def _in_shard(self, obj: Obj) -> bool:
        shard = self._shard
        return shard is None or shard.contains(obj)

    # -- read-your-writes ----------------------------------------------------------------
    def observe_write(self, obj: Obj) -> None:
        """Store ``obj`` (as the API server returned it from a write) when its
        resourceVersion is newer than the stored one's (compared as integers when both
        are; otherwise it replaces). Objects outside this informer's namespace are
        ignored; one that no longer matches its label selector leaves the store."""
        meta = obj.get("metadata") or {}
        if obj.get("kind") != self.kind or not meta.get("name"):
            return
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return
        if not self._in_shard(obj):
            return
        key = key_of(obj)
        with self._lock:
            stored = self._store.get(key)
            if stored is not None and newer(obj, stored) is False:
                return  # the store already has this state or a later one
            if self._selector.matches(meta.get("labels")):
                self._store.put(key, self._transform(share_strings(obj, keys=True)))
            elif stored is not None:
                self._store.remove(key)

    # -- the dispatcher thread -----------------------------------------------------------
    def _dispatch_loop(self) -> None:
        next_resync: float | None = None
        while True:
            wait = None
            if next_resync is not None:
                wait = min(_RESYNC_POLL, max(0.0, next_resync - self._clock.monotonic()))
            try:
                item = self._events.get(timeout=wait)
            except queue.Empty:
                item = None
            if item is _STOP or self._stopping.is_set():
                return
            if isinstance(item, Relisted):
                self._notify(self._apply_replace(item))
                if not self._synced.is_set():
                    self._synced.set()
                    if self._resync_period is not None:
                        next_resync = self._clock.monotonic() + self._resync_period
            elif isinstance(item, WatchChange):
                self._notify([self._apply_change(item)])
            if next_resync is not None and self._clock.monotonic() >= next_resync:
                next_resync = self._clock.monotonic() + (self._resync_period or 0.0)
                with self._lock:
                    stored = [obj for _, obj in sorted(self._store.items())]
                self._notify([("RESYNC", obj, None) for obj in stored])

    def _apply_change(self, change: WatchChange) -> Event:
        with self._lock:
            event = apply_change(self._seen, self._store, change, self._departed)
            self._bound_departed()
            return event

    def _apply_replace(self, listing: Relisted) -> builtins.list[Event]:
        with self._lock:
            self._seen, events = apply_relist(self._seen, self._store, listing, self._departed)
            self._listed_shard = listing.shard
            self._bound_departed()
        return events

    def _bound_departed(self) -> None:
        if len(self._departed) > MAX_DEPARTED:  # from now on every name may have been held
            self._departed.clear()
            self._departed_overflow = True

    def _notify(self, events: builtins.list[Event]) -> None:
        with self._lock:
            handlers = list(self._handlers)
        for event, obj, old in events:
            if self._stopping.is_set():
                return
            try:
                obj_copy = copy_obj(obj)
                old_copy = copy_obj(old) if old is not None else None
            except RecursionError:  # deeper than the manager allows: never end the thread
                log.error("%s: %s nests too deep to copy; skipped", self._describe(), event)
                continue
            for handler in handlers:
                try:
                    handler(event, obj_copy, old_copy)
                except Exception:  # one failing handler must not stop the others or the informer
                    log.exception("%s: a handler failed on %s", self._describe(), event)
