"""One controller of a bundle running for real: the informers of its CR kind and of the kinds
it deploys, the event handlers that enqueue CRs, and the workers that reconcile them.

Created by the manager. Keys are ``(namespace, name)`` of CRs. An event on an owned object
enqueues the CR that owns it (owner reference, or the ``oper8d.io/owner-uid`` label), so a
Deployment becoming available wakes its CR at once instead of at the next requeue. The echo
of the CR's own write (the object at the version that write returned) wakes nothing: the
reconcile that wrote it knew. Events that arrive while the CR is reconciled are judged when
its reconcile ends, once its writes are known, so a rollout is not reconciled again for
each object it created.

With a ``ChangeTracker`` (``engine.fingerprint``, shared with the reconciler), every event
of the informers is handed to it before the CR is queued, so a reconcile of a CR whose
inputs did not change is skipped, and one whose owned objects drifted is not.

A CR waiting for its objects to become ready is requeued after the bundle's
``whileWaiting``, doubled at each consecutive wait up to ``max_wait_requeue``: the owned
objects' events wake it the moment one changes, so the timed requeue is only a safety net
(for readiness no watched object reports) and need not poll. When everything its reconcile
read is watched (``ReconcileResult.watched``), the requeue is ``max_wait_requeue`` at once:
a change that could end the wait is an event.

What it needs of its collaborators is declared here as protocols (``EventSource``,
``CrSource``, ``Reconciles``), so it runs over fakes in the unit tests; time comes from
the injected clock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.clock import Clock, SystemClock
from oper8d.cluster.base import ClusterReader
from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import ReconcileResult
from oper8d.engine.references import ReferenceWarnings
from oper8d.errors import Problem, ReconcileError
from oper8d.kinds import api_version_problem, group_of
from oper8d.logs import cr_key, new_reconcile_id, reconcile_context
from oper8d.objects import OWNER_LABEL, Obj
from oper8d.runtime.events import EventRecorder
from oper8d.runtime.informer import Handler
from oper8d.runtime.metrics import Metrics
from oper8d.runtime.predicates import cr_update_matters, is_paused
from oper8d.runtime.queue import WorkQueue

log = logging.getLogger("oper8d.controller")

Key = tuple[str | None, str]


class EventSource(Protocol):
    """Tells handlers about changes to one kind (``runtime.informer.Informer``)."""

    def add_handler(self, handler: Handler) -> None: ...


class CrSource(EventSource, Protocol):
    """An ``EventSource`` of CRs that also answers from its cache."""

    def list(
        self, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]: ...

    def by_uid(self, uid: str) -> Obj | None: ...


class ScopedSource(Protocol):
    """What a ``ChangeTracker`` needs to know of an informer: which objects it sees."""

    api_version: str
    kind: str
    namespace: str | None
    label_selector: str | None


class Reconciles(Protocol):
    """Reconciles one CR (``engine.reconcile.Reconciler``)."""

    def reconcile_object(self, cr: Obj) -> ReconcileResult: ...


@dataclass
class ControllerRuntime:
    """The running parts of one controller (see the module docstring)."""

    bundle: Bundle
    spec: ControllerSpec
    #: where the CR is read before each reconcile (the manager's cache)
    cluster: ClusterReader
    reconciler: Reconciles
    queue: WorkQueue
    cr_informers: Sequence[CrSource]
    owned_informers: Sequence[EventSource]
    metrics: Metrics
    events: EventRecorder | None = None
    clock: Clock = field(default_factory=SystemClock)
    #: fed every event of the informers (the reconciler's ``ReconcilerOptions.changes``);
    #: the informers must then be ``ScopedSource``s too
    changes: ChangeTracker | None = None
    #: the longest a waiting CR's timed requeue backs off to (seconds)
    max_wait_requeue: float = 300.0

    def __post_init__(self) -> None:
        self._workers: list[threading.Thread] = []
        #: consecutive reconciles of a key that ended waiting for readiness
        self._waits: dict[Hashable, int] = {}
        self._in_flight = 0
        self._idle = threading.Condition()
        #: owned-object events of each CR being reconciled, handled when it ends (_wake)
        self._deferred: dict[Hashable, list[tuple[str, Obj]]] = {}
        #: the reference warnings each CR was told of (engine.references): new ones only
        self._references = ReferenceWarnings()
        for inf in self.cr_informers:
            inf.add_handler(self._on_cr_event)
        for owned in self.owned_informers:
            owned.add_handler(self._on_owned_event)
        if self.changes is not None:
            sources: list[EventSource] = [*self.cr_informers, *self.owned_informers]
            for source in sources:
                scoped = cast(ScopedSource, source)
                self.changes.watch(
                    scoped.api_version, scoped.kind, scoped.namespace, scoped.label_selector
                )

    # -- event handlers ------------------------------------------------------------------
    def _on_cr_event(self, event: str, obj: Obj, old: Obj | None) -> None:
        if self.changes is not None:  # before the CR is queued: its reconcile must know
            self.changes.observe(event, obj, old)
        if event == "DELETED":
            uid = str(obj["metadata"].get("uid") or "")
            self._references.forget(uid)
            if self.changes is not None:
                self.changes.forget(uid)
            return
        if is_paused(obj):
            return
        if event == "MODIFIED" and not cr_update_matters(old, obj):
            return
        meta = obj["metadata"]
        key = (meta.get("namespace"), meta["name"])
        if event == "RESYNC":  # a CR in rollout keeps its backoff; a queued one its place
            self.queue.add_if_idle(key)
        else:
            self.queue.add(key)

    def _on_owned_event(self, event: str, obj: Obj, old: Obj | None) -> None:
        if self.changes is not None:
            self.changes.observe(event, obj, old)
        if event == "RESYNC":  # nothing changed; the CR informer's resync queues each CR
            return
        key = self._owner_key(obj)
        if key is None:
            return
        with self._idle:
            pending = self._deferred.get(key)
            if pending is not None:  # its reconcile runs: decided once its writes are known
                pending.append((event, obj))
                return
        self._wake(key, event, obj)

    def _wake(self, key: Key, event: str, obj: Obj) -> None:
        """Queue the owner of an object that changed, unless the change is the echo of
        its own reconcile's write (which knew what it wrote)."""
        if self.changes is not None and self.changes.is_echo(event, obj):
            return
        # ahead of new CRs: the object may be what the CR's rollout waits on (queue.py)
        self.queue.add(key, high_priority=True)

    def _owner_key(self, obj: Obj) -> Key | None:
        meta = obj.get("metadata") or {}
        kind = self.spec.resource
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") != kind.kind or api_version_problem(ref.get("apiVersion")):
                continue
            if group_of(ref["apiVersion"]) == kind.group:
                return (meta.get("namespace") if kind.namespaced else None, ref["name"])
        uid = (meta.get("labels") or {}).get(OWNER_LABEL)
        if uid:
            for inf in self.cr_informers:
                cr = inf.by_uid(uid)
                if cr is not None:
                    return (cr["metadata"].get("namespace"), cr["metadata"]["name"])
        return None

    # -- workers -------------------------------------------------------------------------
    def start_workers(self, count: int) -> None:
        for i in range(count):
            t = threading.Thread(
                target=self._work, name=f"oper8d-{self.spec.name}-worker-{i}", daemon=True
            )
            t.start()
            self._workers.append(t)

    def enqueue_all(self) -> None:
        for inf in self.cr_informers:
            for cr in inf.list():
                if not is_paused(cr):
                    self.queue.add((cr["metadata"].get("namespace"), cr["metadata"]["name"]))

    def _work(self) -> None:
        while self.process_next():
            pass

    def process_next(self, timeout: float | None = None) -> bool:
        """Take the next key from the queue and reconcile it (what each worker does in a
        loop); False when the queue shut down or ``timeout`` seconds passed with no key."""
        key = self.queue.get(timeout)
        if key is None:
            return False
        with self._idle:
            self._in_flight += 1
            self._deferred[key] = []
        try:
            self._reconcile(key)
        finally:
            with self._idle:
                pending = self._deferred.pop(key, [])
            for event, obj in pending:
                self._wake(cast(Key, key), event, obj)
            self.queue.done(key)
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()
        return True

    def _reconcile(self, key: Hashable) -> None:
        namespace, name = cast(Key, key)
        # every line logged and every event recorded from here on names this reconcile
        with reconcile_context(new_reconcile_id(), cr_key(namespace, name)):
            self._reconcile_in_context(key, namespace, name)

    def _reconcile_in_context(self, key: Hashable, namespace: str | None, name: str) -> None:
        started = self.clock.monotonic()
        kind = self.spec.resource
        before = self.cluster.get(kind.api_version, kind.kind, name, namespace)
        if before is None:  # deleted (and finalized) since it was queued
            self.queue.forget(key)
            self._waits.pop(key, None)
            return
        try:
            # the CR just read is the one reconciled: one cache read, not two
            result = self.reconciler.reconcile_object(before)
        except Exception as err:  # a bug must not kill the worker: log, back off, retry
            log.exception("reconcile of %s/%s crashed", namespace, name)
            self.metrics.reconcile_total(self.spec.name, "error")
            self.queue.add_rate_limited(key)
            self._record_error(before, err)
            return
        self.metrics.reconcile_duration(self.spec.name, self.clock.monotonic() - started)
        self._after(key, before, result)

    def _after(self, key: Hashable, before: Obj | None, result: ReconcileResult) -> None:
        err = result.error
        if result.paused:
            outcome = "paused"
        elif err is not None and isinstance(err, ReconcileError) and err.fatal:
            outcome = "error"
        elif result.requeue_after is not None:
            outcome = "requeue"
        else:
            outcome = "success"
        self.metrics.reconcile_total(self.spec.name, outcome)
        if outcome == "error" and result.requeue_after is None:
            self.queue.add_rate_limited(key)
        else:
            self.queue.forget(key)
            if result.requeue_after is not None:
                self.queue.add_after(key, self._requeue_delay(key, result))
            else:
                self._waits.pop(key, None)
        if self.events is not None and before is not None and result.status is not None:
            self.events.record_transition(before, before.get("status") or {}, result.status)
        if before is not None and result.warnings is not None:
            self._warn(before, result.warnings)
        if result.skipped:  # a resync of an unchanged CR: not worth a line per CR
            log.debug("reconcile of %s/%s skipped: nothing changed", key[0], key[1])  # type: ignore[index]
            return
        log.info(
            "reconciled %s/%s: %s%s",
            key[0],  # type: ignore[index]
            key[1],  # type: ignore[index]
            outcome,
            f" ({err})" if err is not None else "",
        )

    def _requeue_delay(self, key: Hashable, result: ReconcileResult) -> float:
        """``result.requeue_after``, or for a CR still waiting for readiness the backed-off
        wait (see the module docstring)."""
        after = cast(float, result.requeue_after)
        # a component waiting on a precondition or its verification reports that as an
        # expected (non-fatal) error: still waiting, not failing
        expected = result.error is None or not getattr(result.error, "fatal", True)
        waiting = expected and not result.stable and result.rollout is not None and after > 0
        if not waiting:
            self._waits.pop(key, None)
            return after
        n = self._waits.get(key, 0)
        self._waits[key] = n + 1
        if result.watched:  # its objects' events wake it: the timer is only a safety net
            return max(after, self.max_wait_requeue)
        return min(after * 2.0 ** min(n, 32), max(after, self.max_wait_requeue))

    def _warn(self, cr: Obj, warnings: Sequence[Problem]) -> None:
        """Log each reference warning the CR was not told of yet, with a Warning Event:
        once per CR and warning, so a steady CR costs no request."""
        for warning in self._references.new(str(cr["metadata"].get("uid") or ""), warnings):
            log.warning("%s", warning)
            if self.events is not None:
                self.events.record(
                    cr,
                    type_="Warning",
                    reason="UnresolvedReference",
                    note=str(warning),
                    action="Reconcile",
                )

    def _record_error(self, cr: Obj | None, err: BaseException) -> None:
        if self.events is not None and cr is not None:
            self.events.record(
                cr, type_="Warning", reason="ReconcileCrashed", note=repr(err), action="Reconcile"
            )

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no reconcile is running (for a graceful stop); False when some still
        ran after ``timeout`` seconds of the injected clock."""
        deadline = self.clock.monotonic() + timeout
        with self._idle:
            while self._in_flight:
                left = deadline - self.clock.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def join_workers(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds (of the injected clock; with a FakeClock each
        join may take ``timeout``) for the worker threads to end; True when they all did."""
        deadline = self.clock.monotonic() + timeout
        for t in self._workers:
            t.join(max(0.0, deadline - self.clock.monotonic()))
        return not any(t.is_alive() for t in self._workers)


def owned_kinds(spec: ControllerSpec) -> list[tuple[str, str]]:
    """Kinds to watch for a controller: what its bundle deploys literally. Kinds only a
    text template names are read uncached, and so is the Secret keeping random strings:
    watching Secrets would need list/watch on every Secret (docs/security.md)."""
    return sorted(set(spec.deployed_kinds()))
