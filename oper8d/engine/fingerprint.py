"""Skip reconciles that cannot change anything: the steady state of a big fleet.

A reconcile's result depends on the CR (uid, generation, spec, labels, annotations,
finalizers), the bundle (its digest) and what the reconcile read from the cluster: the
config ConfigMaps, lookup()/live() results and the owned objects it listed or applied.
``ChangeTracker`` remembers, per CR, the fingerprint of the first two and the
resourceVersion of everything the third touched (``RecordingCluster`` records every
read and write of one reconcile) after a successful reconcile that left the CR stable.
While nothing of that changed, ``Reconciler`` skips the CR: no render, no request.

It learns of changes from a feed of watch events (``observe``): the runtime's informers,
or ``MemoryCluster.watch``. A reconcile's record holds, per object it read or wrote, every
resourceVersion it saw (read, or returned by its own writes). An event on such an object at
a version the record does not hold, or on a new object matching a selector it listed,
forgets the CR's record, so the next reconcile runs in full. resourceVersions are compared
only for equality (they are opaque): an event at an unknown version is news, whether the
cache that served the reconcile was behind it or not.

The cache a reconcile reads may be behind the feed, so a record is kept only when the
reconcile's view was consistent and nothing moved under it (``finish``):

* events that arrive while a CR is reconciled are replayed against its reads before the
  record is kept: one at a version the reconcile neither read nor wrote refuses it;
* an object read at two versions the reconcile did not write itself (a stale copy, then a
  fresh one, e.g. the rollout's get and prune's list) refuses it: some step acted on the
  stale copy. The CR is read again when the reconcile begins for the same reason: an edit
  between the cache read that handed it over and the start of the recording would
  otherwise come back in the CR a status write returns and pass for rendered.

A reconcile reading something the feed does not see (a kind without an informer, an
object outside the informer's label selector) keeps no record: that CR is always
reconciled in full. An object read absent and then written by the same reconcile (a first
rollout creating it, with the labels the feed selects by) is seen from that write on.

``is_echo`` tells the runtime which events only report this operator's own writes
(``wrote`` keeps the versions they returned), so they wake no reconcile.

Watch events can be lost (a watch that ended while objects changed is relisted and
diffed, but an informer can still lag); so a record also expires ``recheck_after``
seconds after the reconcile that made it (default one hour: every sixth informer resync
at the default 10-minute period runs the CR in full, the others are free).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oper8d.bundle.model import Bundle
from oper8d.clock import Clock, SystemClock
from oper8d.cluster.base import Cluster
from oper8d.cluster.selectors import Selector, as_selector
from oper8d.engine.recording import ListRead, ObjKey, RecordingCluster, obj_key_of
from oper8d.kinds import group_of
from oper8d.objects import Obj

__all__ = ["ChangeTracker", "RecordingCluster", "bundle_digest", "cr_fingerprint"]


def bundle_digest(bundle: Bundle) -> str:
    """sha256 of every file of the bundle (path and bytes) and its operator version: a
    new bundle, even one changing only a template, has a new digest."""
    h = hashlib.sha256(str(bundle.operator_version).encode())
    root = Path(bundle.root)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        h.update(str(path.relative_to(root) if path != root else path.name).encode())
        h.update(b"\0")
        with path.open("rb") as stream:  # in chunks: a big file costs time, not memory
            h.update(hashlib.file_digest(stream, "sha256").digest())
    return h.hexdigest()


def cr_fingerprint(cr: Obj, digest: str) -> str:
    """What of the CR and the bundle a reconcile depends on (status, resourceVersion and
    managedFields excluded: the status is ours, the others change with it)."""
    meta = cr.get("metadata") or {}
    data = {
        "uid": meta.get("uid"),
        "generation": meta.get("generation"),
        "labels": meta.get("labels"),
        "annotations": meta.get("annotations"),
        "finalizers": meta.get("finalizers"),
        "spec": cr.get("spec"),
        "bundle": digest,
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


#: how many versions of one object ``ChangeTracker.is_echo`` remembers
_OWN_KEPT = 4


@dataclass(frozen=True)
class _Change:
    key: ObjKey
    version: str
    deleted: bool
    labels: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Known:
    """What a record keeps of one object (small: a fleet keeps one per object per CR):
    every version the reconcile read or wrote, and the state it left it in."""

    versions: tuple[str | None, ...]
    last: str | None


@dataclass
class _Record:
    fingerprint: str
    objects: dict[ObjKey, _Known]
    lists: list[ListRead]
    at: float


class ChangeTracker:
    """Which CRs are known unchanged since their last stable reconcile (see the module
    docstring). Thread-safe: reconciles run on several workers, events on the informers'
    threads."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        recheck_after: float | None = 3600.0,
        sees_everything: bool = False,
    ):
        self.clock = clock or SystemClock()
        self.recheck_after = recheck_after
        self._everything = sees_everything
        self._scopes: dict[tuple[str, str], list[tuple[str | None, Selector]]] = {}
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}
        self._by_object: dict[ObjKey, set[str]] = {}
        #: lists by (group, kind, label, value) of one ``label=value`` of their selector
        self._by_list: dict[tuple[str, str, str, str], set[str]] = {}
        self._in_flight: dict[int, list[_Change]] = {}
        #: the versions this operator's latest writes of each object returned, until their
        #: watch events come (``is_echo``); a few per object, for a reconcile writing twice
        self._own: dict[ObjKey, list[str]] = {}
        #: how many reconciles were skipped (for benchmarks and metrics)
        self.skipped = 0

    # -- what the feed covers ------------------------------------------------------------
    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> None:
        """Declare that ``observe`` is called for every change of these objects."""
        scopes = self._scopes.setdefault((group_of(api_version), kind), [])
        scopes.append((namespace, as_selector(label_selector)))

    def sees_object(self, key: ObjKey, obj: Obj | None) -> bool:
        if self._everything:
            return True
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        for namespace, selector in self._scopes.get(key[:2], ()):
            if namespace is not None and namespace != key[2]:
                continue
            if selector.empty or (obj is not None and selector.matches(labels)):
                return True
        return False

    def sees_list(self, listed: ListRead) -> bool:
        if self._everything:
            return True
        wanted = set(listed.selector.requirements)
        pinned = {r.key for r in wanted if r.operator == "In"}
        for namespace, selector in self._scopes.get((listed.group, listed.kind), ()):
            if namespace is not None and namespace != listed.namespace:
                continue
            if all(
                r in wanted or (r.operator == "Exists" and r.key in pinned)
                for r in selector.requirements
            ):
                return True
        return False

    def wrote(self, key: ObjKey, version: str | None) -> None:
        """A write of this operator returned the object at ``version`` (``Feed``)."""
        if version:
            with self._lock:
                versions = self._own.setdefault(key, [])
                if version not in versions:
                    versions.append(version)
                    del versions[:-_OWN_KEPT]

    def is_echo(self, event: str, obj: Obj) -> bool:
        """Whether the event reports an object as this operator's own write left it: it
        tells no reconcile anything its writer did not know. A deletion is never an echo
        (a CR's teardown may wait for it)."""
        if event not in ("ADDED", "MODIFIED"):
            return False
        key = obj_key_of(obj)
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            versions = self._own.get(key)
            if not version or versions is None or version not in versions:
                return False
            del versions[: versions.index(version) + 1]  # older ones will not come now
            if not versions:
                del self._own[key]
            return True

    # -- reconciles ----------------------------------------------------------------------
    def unchanged(self, uid: str, fingerprint: str) -> bool:
        """True when the CR's last stable reconcile had this fingerprint and nothing it
        read changed since (and the record has not expired)."""
        with self._lock:
            record = self._records.get(uid)
            if record is None or record.fingerprint != fingerprint:
                return False
            if (
                self.recheck_after is not None
                and self.clock.monotonic() - record.at >= self.recheck_after
            ):
                self._drop(uid)
                return False
            self.skipped += 1
            return True

    def begin(self, cluster: Cluster) -> RecordingCluster:
        """A recorder for one reconcile; events from now on are kept for ``finish``."""
        recorder = RecordingCluster(cluster, self)
        with self._lock:
            self._in_flight[id(recorder)] = []
        return recorder

    def covers(self, recorder: RecordingCluster) -> bool:
        """Whether the feed reports a change of everything ``recorder``'s reconcile read."""
        reads = recorder.reads
        return reads.covered and not reads.unseen

    def finish(self, uid: str, recorder: RecordingCluster, fingerprint: str, stable: bool) -> None:
        """Keep the record of a reconcile that left the CR stable, read only what the feed
        sees and saw each object at one version, unless something it read changed while
        it ran (see the module docstring)."""
        with self._lock:
            changes = self._in_flight.pop(id(recorder), [])
            self._drop(uid)
            reads = recorder.reads
            if not stable or not self.covers(recorder) or not reads.consistent:
                return
            if not all(seen.consistent() for seen in reads.objects.values()):
                return
            known = {
                key: _Known(tuple(seen.read | seen.written), seen.last)
                for key, seen in reads.objects.items()
            }
            if any(_affects(known, reads.lists, ch) for ch in changes):
                return
            self._records[uid] = _Record(fingerprint, known, reads.lists, self.clock.monotonic())
            for key in reads.objects:
                self._by_object.setdefault(key, set()).add(uid)
            for listed in reads.lists:
                self._by_list.setdefault(_list_index(listed), set()).add(uid)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._drop(uid)

    def __len__(self) -> int:
        return len(self._records)

    # -- the feed ------------------------------------------------------------------------
    def observe(self, event: str, obj: Obj, old: Obj | None = None) -> None:
        """A watch event (``ADDED``/``MODIFIED``/``DELETED``; ``RESYNC`` changes nothing).
        Signature of both ``MemoryCluster.watch`` and ``runtime.informer`` handlers."""
        if event not in ("ADDED", "MODIFIED", "DELETED"):
            return
        meta = obj.get("metadata") or {}
        change = _Change(
            key=obj_key_of(obj),
            version=str(meta.get("resourceVersion") or ""),
            deleted=event == "DELETED",
            labels=dict(meta.get("labels") or {}),
        )
        with self._lock:
            if change.deleted:
                self._own.pop(change.key, None)
            for pending in self._in_flight.values():
                pending.append(change)
            candidates = set(self._by_object.get(change.key, ()))
            group, kind = change.key[:2]
            candidates |= self._by_list.get((group, kind, "", ""), set())
            for label, value in change.labels.items():
                candidates |= self._by_list.get((group, kind, label, value), set())
            for uid in candidates:
                record = self._records.get(uid)
                if record is not None and _affects(record.objects, record.lists, change):
                    self._drop(uid)

    def _drop(self, uid: str) -> None:
        record = self._records.pop(uid, None)
        if record is None:
            return
        for key in record.objects:
            _discard(self._by_object, key, uid)
        for listed in record.lists:
            _discard(self._by_list, _list_index(listed), uid)


def _list_index(listed: ListRead) -> tuple[str, str, str, str]:
    """Where a list is indexed: by one ``label=value`` its selector requires (an object
    without that label cannot match), or by kind alone."""
    for req in listed.selector.requirements:
        if req.operator == "In" and len(req.values) == 1:
            return (listed.group, listed.kind, req.key, req.values[0])
    return (listed.group, listed.kind, "", "")


def _affects(objects: dict[ObjKey, _Known], lists: list[ListRead], change: _Change) -> bool:
    """Whether ``change`` may alter what a reconcile that saw ``objects`` and ``lists`` saw:
    a state of an object it did not see (resourceVersions compared only for equality), or
    a new object one of its lists would have returned."""
    seen = objects.get(change.key)
    if seen is not None:
        if change.deleted:
            return seen.last is not None
        return change.version not in seen.versions
    group, kind, namespace, _ = change.key
    return any(
        listed.group == group
        and listed.kind == kind
        and listed.namespace in (None, namespace)
        and listed.selector.matches(change.labels)
        for listed in lists
    )


def _discard(index: dict[Any, set[str]], key: Any, uid: str) -> None:
    uids = index.get(key)
    if uids is not None:
        uids.discard(uid)
        if not uids:
            del index[key]
