"""Horizontal sharding: N replicas share the CRs, each reconciling only its buckets.

Membership: every replica keeps one Lease of its own (``<group>-<identity>``, labelled
with the group) renewed every ``retry_period``, like the leader elector's. A Lease whose
record has not changed for ``lease_duration`` seconds of *our* clock (client-go's rule: no
clock agreement needed) is expired; a Lease marked stopped leaves at once.

Assignment: ``runtime.hashing`` cuts the hash space into buckets and gives each bucket to
one live member by rendezvous hashing, so a join or a leave moves about 1/N of them.

Handover, so that two replicas never reconcile one CR at once: each Lease also lists the
buckets its holder *claims* (those it works on, and those it is about to). A replica

1. stops taking CRs of a bucket it no longer owns, waits for that bucket's in-flight
   reconciles to end, and only then drops the bucket from its claims;
2. claims a bucket it now owns only while no live Lease claims it, and starts working on
   it only after its claim was written and a list of the Leases read *after* that write
   shows no other claim. Writes and reads of Leases are linearizable, so of two replicas
   claiming at once, the later writer sees the earlier claim (both may back off; they try
   again next round);
3. drops every bucket when it could not renew its Lease for ``renew_deadline``, which is
   shorter than the ``lease_duration`` the others wait before ignoring its claims.

Leaving: a replica that stops gracefully (``release()``, after its in-flight reconciles
ended) deletes its Lease, so the others take its buckets at their next round. The Lease of
a replica that died is deleted by a survivor once it has not changed for ``lease_duration``
plus ``gc_grace`` seconds; the delete carries the resourceVersion that was judged expired
as a precondition, so a Lease its holder renewed in the meantime is never deleted (and its
claims never vanish under it).

``tick()`` is one round and is what the unit tests drive with a FakeClock; ``run()`` loops
it. ``enter()``/``leave()`` bracket each reconcile (``GatedReconciler``).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from oper8d.clock import Clock, SystemClock
from oper8d.engine.reconcile import ReconcileResult
from oper8d.errors import ClusterError
from oper8d.objects import Obj
from oper8d.runtime.hashing import (
    BUCKETS,
    ShardKey,
    ShardSlice,
    assign,
    bucket_of,
    format_buckets,
)
from oper8d.runtime.shardlease import (
    GROUP_LABEL,
    OwnLease,
    ShardLeases,
    delete_peer,
    lease_name,
    read_group,
)

__all__ = ["GROUP_LABEL", "GatedReconciler", "ShardLeases", "Sharding", "lease_name"]

log = logging.getLogger("oper8d.sharding")


@dataclass(frozen=True)
class Member:
    """A live peer as last read from its Lease."""

    identity: str
    claims: frozenset[int]


class Sharding:
    """This replica's membership and buckets; see the module docstring."""

    def __init__(
        self,
        api: ShardLeases,
        *,
        group: str,
        namespace: str,
        identity: str,
        key: ShardKey = "namespace",
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        gc_grace: float | None = None,
        clock: Clock | None = None,
        on_change: Callable[[Sharding], None] | None = None,
    ):
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError(
                "sharding needs lease_duration > renew_deadline > retry_period > 0, got "
                f"{lease_duration}, {renew_deadline}, {retry_period}"
            )
        self.api = api
        self.group = group
        self.namespace = namespace
        self.identity = identity
        self.key: ShardKey = key
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        #: a dead peer's Lease is deleted after lease_duration + gc_grace (default: one more
        #: lease_duration)
        self.gc_grace = lease_duration if gc_grace is None else gc_grace
        self.clock = clock or SystemClock()
        self.on_change = on_change
        self.lease = OwnLease(
            api,
            group=group,
            namespace=namespace,
            identity=identity,
            lease_duration=lease_duration,
            clock=self.clock,
        )
        self.name = self.lease.name
        self._lock = threading.Lock()
        self._held: set[int] = set()
        self._releasing: set[int] = set()
        self._claiming: set[int] = set()
        self._desired: frozenset[int] = frozenset()
        self._in_flight: collections.Counter[int] = collections.Counter()
        self._members: tuple[str, ...] = (identity,)
        # run()/tick() thread only
        self._renewed_at: float | None = None
        self._seen: dict[str, tuple[str, float]] = {}  # lease name -> (record, observed at)
        self._stopped = False

    # -- what the workers ask ------------------------------------------------------------
    def enter(self, obj: Obj) -> int | None:
        """Start work on ``obj``: its bucket when this replica holds it (call ``leave``
        after), else None (do not touch it)."""
        bucket = bucket_of(obj, self.key)
        with self._lock:
            if not self._working(bucket):
                return None
            self._in_flight[bucket] += 1
            return bucket

    def leave(self, bucket: int) -> None:
        """End the work ``enter`` allowed on ``bucket``."""
        with self._lock:
            self._in_flight[bucket] -= 1

    def accepts(self, obj: Obj) -> bool:
        """Whether this replica works on ``obj`` now."""
        bucket = bucket_of(obj, self.key)
        with self._lock:
            return self._working(bucket)

    def _working(self, bucket: int) -> bool:
        # a Lease not renewed for renew_deadline may look expired to the others soon:
        # refuse at once, without waiting for the next round to notice
        renewed = self._renewed_at
        if renewed is None or self.clock.monotonic() - renewed > self.renew_deadline:
            return False
        return bucket in self._held and bucket not in self._releasing

    def wanted(self) -> ShardSlice:
        """What the informers should hold: buckets held, being claimed, or owned."""
        with self._lock:
            return ShardSlice(self.key, frozenset(self._held | self._claiming | self._desired))

    @property
    def held(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._held - self._releasing)

    @property
    def members(self) -> tuple[str, ...]:
        with self._lock:
            return self._members

    # -- the rounds ----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Tick every ``retry_period`` until ``stop`` is set (then ``release()`` it)."""
        while not stop.is_set():
            try:
                self.tick()
            except Exception:  # a bug must not end membership silently: log and go on
                log.exception("sharding round failed")
            stop.wait(self.retry_period)

    def tick(self) -> None:
        """One round: renew our Lease, read the others, then claim, confirm and release
        (nothing once ``release()`` was called)."""
        if self._stopped:
            return
        now = self.clock.monotonic()
        with self._lock:
            written = frozenset(self._claiming)
        if self.lease.write(self._claims()):
            with self._lock:
                self._renewed_at = now
        else:
            written = frozenset()
            self._check_renew_deadline(now)
        peers = self._read_peers(now)
        if peers is None:
            return
        changed = self._decide(peers, written)
        if changed:
            self.lease.write(self._claims())  # publish released buckets at once
            if self.on_change is not None:
                self.on_change(self)

    def _decide(self, peers: dict[str, Member], written: frozenset[int]) -> bool:
        members = tuple(sorted({self.identity, *peers}))
        desired = assign(members)[self.identity]
        claimed_by_others: set[int] = set()
        for peer in peers.values():
            claimed_by_others |= peer.claims
        acquired: list[int] = []
        released: list[int] = []
        with self._lock:
            before = (frozenset(self._held), frozenset(self._desired), self._members)
            self._members, self._desired = members, desired
            for b in written & self._claiming:
                self._claiming.discard(b)
                if b in desired and b not in claimed_by_others:
                    self._held.add(b)
                    acquired.append(b)
            self._claiming = {
                b
                for b in (desired - self._held) | self._claiming
                if b in desired and b not in claimed_by_others
            }
            self._releasing = (self._releasing | (self._held - desired)) - desired
            for b in sorted(self._releasing):
                if self._in_flight[b] <= 0:
                    self._held.discard(b)
                    self._releasing.discard(b)
                    released.append(b)
            after = (frozenset(self._held), frozenset(self._desired), self._members)
        if before[2] != members:
            log.info("shard members of %s: %s", self.group, ", ".join(members))
        held = len(after[0])
        if acquired:
            log.info(
                "shard %s: took buckets %s (holds %d of %d)",
                self.identity,
                format_buckets(acquired),
                held,
                BUCKETS,
            )
        if released:
            log.info(
                "shard %s: handed over buckets %s (holds %d of %d)",
                self.identity,
                format_buckets(released),
                held,
                BUCKETS,
            )
        return before != after

    def _claims(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._held | self._claiming)

    def _check_renew_deadline(self, now: float) -> None:
        if self._renewed_at is None or now - self._renewed_at <= self.renew_deadline:
            return
        with self._lock:
            lost = set(self._held)
            self._held.clear()
            self._releasing.clear()
            self._claiming.clear()
        if lost:
            log.warning(
                "shard %s: Lease %s/%s not renewed for %.0fs: stopped working on buckets %s",
                self.identity,
                self.namespace,
                self.name,
                now - self._renewed_at,
                format_buckets(lost),
            )
            if self.on_change is not None:
                self.on_change(self)

    def _read_peers(self, now: float) -> dict[str, Member] | None:
        try:
            leases = read_group(self.api, self.namespace, self.group)
        except ClusterError as err:
            log.warning("shard %s: cannot list the group's Leases: %s", self.identity, err)
            return None
        peers: dict[str, Member] = {}
        for lease in leases:
            if lease.name == self.name or not lease.identity or lease.identity == self.identity:
                continue
            seen = self._seen.get(lease.name)
            if seen is None or seen[0] != lease.record:
                self._seen[lease.name] = seen = (lease.record, now)
            unchanged = now - seen[1]
            forgotten = lease.stopped or unchanged > self.lease_duration + self.gc_grace
            if forgotten and delete_peer(self.api, self.namespace, lease, by=self.identity):
                del self._seen[lease.name]
            if lease.stopped or unchanged > self.lease_duration:
                continue
            peers[lease.identity] = Member(lease.identity, lease.claims)
        for gone in set(self._seen) - {lease.name for lease in leases}:
            del self._seen[gone]
        return peers

    # -- leaving -------------------------------------------------------------------------
    def release(self) -> None:
        """Leave the group (after in-flight reconciles ended): delete our Lease, so the
        others take over at their next round instead of after ``lease_duration``. Buckets
        with reconciles still running stay claimed: the Lease then expires as a dead
        replica's would. No round runs after this."""
        with self._lock:
            busy = {b for b, n in self._in_flight.items() if n > 0}
            self._held &= busy
            self._releasing = set(self._held)
            self._claiming.clear()
            self._desired = frozenset()
        self._stopped = True
        if busy:
            self.lease.write(self._claims())
            log.warning(
                "shard %s: reconciles of buckets %s still running: Lease %s/%s left to expire",
                self.identity,
                format_buckets(busy),
                self.namespace,
                self.name,
            )
        elif self.lease.delete():
            log.info(
                "shard %s: left the group, deleted Lease %s/%s",
                self.identity,
                self.namespace,
                self.name,
            )
        elif self.lease.write(frozenset(), stopped=True):
            log.info(
                "shard %s: left the group, Lease %s/%s marked stopped",
                self.identity,
                self.namespace,
                self.name,
            )


class Reconciles(Protocol):
    def reconcile_object(self, cr: Obj) -> ReconcileResult: ...


class GatedReconciler:
    """A reconciler that only touches CRs of buckets this replica holds, and counts its
    in-flight reconciles per bucket so a bucket is handed over only once they ended."""

    def __init__(self, inner: Reconciles, sharding: Sharding):
        self.inner = inner
        self.sharding = sharding

    def reconcile_object(self, cr: Obj) -> ReconcileResult:
        bucket = self.sharding.enter(cr)
        if bucket is None:
            # not ours now (a bucket in handover, or gone to another replica): look again
            # after a round; a CR that left our informers is then not read again
            meta = cr.get("metadata") or {}
            log.debug(
                "not reconciling %s/%s now: bucket %d is not held by this replica",
                meta.get("namespace"),
                meta.get("name"),
                bucket_of(cr, self.sharding.key),
            )
            return ReconcileResult(requeue_after=self.sharding.retry_period)
        try:
            return self.inner.reconcile_object(cr)
        finally:
            self.sharding.leave(bucket)
