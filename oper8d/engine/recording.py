"""What one reconcile read and wrote, for the skip of unchanged CRs (``engine.fingerprint``).

``RecordingCluster`` wraps the cluster of one reconcile: it passes every call through and
records, per object, each resourceVersion it read and each one its own writes returned
(``Seen``), the lists it made, and whether the change feed sees all of it (``Feed``, the
``ChangeTracker``). The tracker decides from that record whether the reconcile's view was
consistent and whether a later watch event is news.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from oper8d.cluster.base import Cluster, Method, Propagation
from oper8d.cluster.selectors import Selector, as_selector
from oper8d.kinds import group_of
from oper8d.objects import Obj, resource_version

__all__ = [
    "Feed",
    "ListRead",
    "ObjKey",
    "Reads",
    "RecordingCluster",
    "Seen",
    "obj_key",
    "obj_key_of",
]

#: (group, kind, namespace or "", name)
ObjKey = tuple[str, str, str, str]


class Feed(Protocol):
    """Which objects and lists the change feed reports every change of (``ChangeTracker``)."""

    def sees_object(self, key: ObjKey, obj: Obj | None) -> bool: ...

    def sees_list(self, listed: ListRead) -> bool: ...

    def wrote(self, key: ObjKey, version: str | None) -> None:
        """A write of this operator left the object, which the feed sees, at ``version``."""
        ...


def obj_key(api_version: str, kind: str, namespace: str | None, name: str) -> ObjKey:
    return (group_of(api_version), kind, namespace or "", name)


def obj_key_of(obj: Obj) -> ObjKey:
    meta = obj.get("metadata") or {}
    return obj_key(
        obj.get("apiVersion") or "",
        obj.get("kind") or "",
        meta.get("namespace"),
        meta.get("name") or "",
    )


def _rv(obj: Obj | None) -> str | None:
    """The object's resourceVersion; None: absent."""
    return None if obj is None else resource_version(obj)


@dataclass
class Seen:
    """One object as one reconcile saw it: versions are resourceVersions, None: absent."""

    #: versions read that none of the reconcile's own writes returned
    read: set[str | None] = field(default_factory=set)
    #: versions the reconcile's writes returned (None: it deleted the object)
    written: set[str | None] = field(default_factory=set)
    #: versions read since the reconcile's last write of it (all of them before any)
    since_write: set[str | None] = field(default_factory=set)
    #: the state the reconcile left it in (its last read or write)
    last: str | None = None

    def consistent(self) -> bool:
        """At most one version read since its last write that the reconcile did not write
        itself: a second one means some step acted on a copy that was already stale. (What
        it read before a write of its own, the write superseded.)"""
        return len(self.since_write - self.written) <= 1


@dataclass(frozen=True)
class ListRead:
    group: str
    kind: str
    #: None: all namespaces
    namespace: str | None
    selector: Selector


@dataclass
class Reads:
    """What one reconcile touched: the objects as it saw them, and lists."""

    objects: dict[ObjKey, Seen] = field(default_factory=dict)
    lists: list[ListRead] = field(default_factory=list)
    #: False once a list was made that the change feed does not see
    covered: bool = True
    #: objects read that the feed does not see (an absent object outside its label
    #: selector), until a write of this reconcile that the feed sees supersedes the read
    unseen: set[ObjKey] = field(default_factory=set)
    #: False when the CR changed between the read that handed it over and the recording
    consistent: bool = True


class RecordingCluster:
    """A ``Cluster`` for one reconcile: passes everything through and records what was
    read and written (for ``engine.fingerprint.ChangeTracker``)."""

    def __init__(self, cluster: Cluster, tracker: Feed):
        self.cluster = cluster
        self.reads = Reads()
        #: the last object each write returned (the CR as this reconcile leaves it)
        self._written: dict[ObjKey, Obj] = {}
        self._tracker = tracker
        self._lock = threading.Lock()  # the rollout reads from several threads

    def _saw(self, key: ObjKey, obj: Obj | None, covered: bool, *, wrote: bool = False) -> None:
        with self._lock:
            self._saw_locked(key, _rv(obj), wrote)
            if not covered:
                self.reads.unseen.add(key)
            elif wrote:  # what it read before, it replaced; the feed reports what comes next
                self.reads.unseen.discard(key)

    def _saw_locked(self, key: ObjKey, version: str | None, wrote: bool) -> None:
        seen = self.reads.objects.get(key)
        if seen is None:
            seen = self.reads.objects[key] = Seen()
        if wrote:
            seen.written.add(version)
            seen.since_write.clear()
        else:
            seen.read.add(version)
            seen.since_write.add(version)
        seen.last = version

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        obj = self.cluster.get(api_version, kind, name, namespace)
        key = obj_key(api_version, kind, namespace, name)
        self._saw(key, obj, self._tracker.sees_object(key, obj))
        return obj

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        objs = self.cluster.list(api_version, kind, namespace, label_selector)
        listed = ListRead(group_of(api_version), kind, namespace, as_selector(label_selector))
        with self._lock:
            self.reads.lists.append(listed)
            self.reads.covered = self.reads.covered and self._tracker.sees_list(listed)
            for obj in objs:
                meta = obj.get("metadata") or {}
                key = obj_key(api_version, kind, meta.get("namespace"), meta.get("name") or "")
                self._saw_locked(key, _rv(obj), wrote=False)
        return objs

    def _wrote(self, obj: Obj) -> Obj:
        key = obj_key_of(obj)
        seen = self._tracker.sees_object(key, obj)
        if seen:  # the feed will report this version: an echo, not news
            self._tracker.wrote(key, _rv(obj))
        self._saw(key, obj, seen, wrote=True)
        with self._lock:
            self._written[key] = obj
        return obj

    def note(self, obj: Obj) -> None:
        """Record ``obj`` as read at its version (the CR the reconcile was handed)."""
        key = obj_key_of(obj)
        self._saw(key, obj, self._tracker.sees_object(key, obj))

    def reread(self, obj: Obj) -> None:
        """Read ``obj`` (the CR handed to the reconcile) again once recording began: when
        it changed since the read that handed it over, the reconcile keeps no record (its
        status write would return the edit as if rendered)."""
        meta = obj.get("metadata") or {}
        now = self.get(
            obj.get("apiVersion") or "",
            obj.get("kind") or "",
            meta.get("name") or "",
            meta.get("namespace"),
        )
        if _rv(now) != _rv(obj):
            with self._lock:
                self.reads.consistent = False

    def as_left(self, obj: Obj) -> Obj:
        """``obj`` as the last write of this reconcile returned it (``obj`` if unwritten)."""
        with self._lock:
            return self._written.get(obj_key_of(obj), obj)

    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        return self._wrote(
            self.cluster.apply(obj, field_manager=field_manager, method=method, force=force)
        )

    def update(self, obj: Obj) -> Obj:
        return self._wrote(self.cluster.update(obj))

    def update_status(self, obj: Obj) -> Obj:
        return self._wrote(self.cluster.update_status(obj))

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
    ) -> bool:
        gone = self.cluster.delete(api_version, kind, name, namespace, propagation=propagation)
        key = obj_key(api_version, kind, namespace, name)
        # absent from now on: its DELETED event is expected, any other change is news
        self._saw(key, None, covered=True, wrote=True)
        return gone

    def __getattr__(self, name: str) -> Any:
        # anything else the wrapped cluster offers (create, resource, ...), unrecorded:
        # an object created here is read (and recorded) before a rollout depends on it
        return getattr(self.cluster, name)
