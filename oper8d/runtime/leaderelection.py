"""Lease-based leader election: only one replica of an operator reconciles at a time.

Used by the runtime manager (``oper8d run``), which starts its controllers in
``on_started_leading`` and stops them in ``on_stopped_leading``. The lock is a
``coordination.k8s.io/v1`` Lease written with get / create / update and
``metadata.resourceVersion`` (never apply), so when two candidates race the API
server's 409 picks one winner. The rules are client-go's ``leaderelection``:

* a candidate takes the lease when it is absent, released (``holderIdentity`` ""),
  held by itself, or expired; ``leaseTransitions`` counts changes of holder;
* "expired" is judged with the *local monotonic clock*: ``leaseDurationSeconds``
  have passed since this candidate last saw the record change. Remote timestamps
  (``renewTime``) are never compared with the local wall clock, so clock skew
  between machines does not matter, only their rates;
* the leader renews every ``retry_period``; when no renewal has succeeded for
  ``renew_deadline`` (shorter than the lease duration, so it stops before anyone
  else may take over) it stops leading and competes again;
* on stop the holder releases the lease (holder "", ``leaseDurationSeconds`` 1)
  so a standby takes over at its next retry instead of after the lease expires.

The decisions are the pure functions ``observe`` and ``decide`` (tested with a
FakeClock); ``LeaderElector`` is the loop around them and the only part doing I/O.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from oper8d.clock import Clock, SystemClock, rfc3339
from oper8d.errors import ClusterError
from oper8d.objects import Obj

__all__ = [
    "LEASE_API_VERSION",
    "Decision",
    "LeaderElector",
    "LeaseClient",
    "LeaseRecord",
    "Observation",
    "decide",
    "observe",
    "release_record",
]

log = logging.getLogger("oper8d.leaderelection")

LEASE_API_VERSION = "coordination.k8s.io/v1"
LEASE_KIND = "Lease"


class LeaseClient(Protocol):
    """What the elector needs from a cluster (``KubeCluster`` has it)."""

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None: ...

    def create(self, obj: Obj) -> Obj: ...

    def update(self, obj: Obj) -> Obj: ...


# -- the record and the pure decisions -------------------------------------------------------
@dataclass(frozen=True)
class LeaseRecord:
    """The election state kept in a Lease's spec."""

    holder: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    transitions: int = 0

    @classmethod
    def from_lease(cls, lease: Obj) -> LeaseRecord:
        """The record in ``lease['spec']``; missing fields read as client-go reads them
        (empty holder, zero duration and transitions, no times)."""
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=_int(spec.get("leaseDurationSeconds")),
            acquire_time=_parse_micro_time(spec.get("acquireTime")),
            renew_time=_parse_micro_time(spec.get("renewTime")),
            transitions=_int(spec.get("leaseTransitions")),
        )

    def to_spec(self) -> dict[str, Any]:
        """The Lease spec holding this record (the whole spec, as client-go writes it)."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = _micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = _micro_time(self.renew_time)
        return spec


@dataclass(frozen=True)
class Observation:
    """A record as last seen, and the local monotonic time it was first seen in that form."""

    record: LeaseRecord
    at: float

    def expires_in(self, now: float) -> float:
        """Seconds (local monotonic) until the record expires; <= 0 once it has."""
        return self.at + self.record.lease_duration_seconds - now


@dataclass(frozen=True)
class Decision:
    """What to do with the lease: ``create`` / ``acquire`` / ``renew`` write ``record``;
    ``wait`` means another candidate holds it for ``expires_in`` more seconds."""

    action: Literal["create", "acquire", "renew", "wait"]
    record: LeaseRecord | None = None
    expires_in: float = 0.0


def observe(previous: Observation | None, record: LeaseRecord, now: float) -> Observation:
    """The observation after reading ``record`` at monotonic time ``now``: the expiry
    clock restarts only when the record changed (any renewal changes ``renewTime``)."""
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def decide(
    observed: Observation | None,
    *,
    identity: str,
    now: float,
    wall_now: datetime,
    lease_duration_seconds: int,
) -> Decision:
    """Whether ``identity`` may write the lease, and the record to write.

    ``observed`` is None when no Lease exists. ``now`` is the local monotonic time (for
    expiry); ``wall_now`` goes into ``acquireTime`` / ``renewTime``."""
    if observed is None:
        first = LeaseRecord(identity, lease_duration_seconds, wall_now, wall_now, 0)
        return Decision("create", first)
    current = observed.record
    if current.holder == identity:
        renewed = replace(
            current, lease_duration_seconds=lease_duration_seconds, renew_time=wall_now
        )
        return Decision("renew", renewed)
    remaining = observed.expires_in(now)
    if current.holder and remaining > 0:
        return Decision("wait", expires_in=remaining)
    taken = LeaseRecord(
        identity, lease_duration_seconds, wall_now, wall_now, current.transitions + 1
    )
    return Decision("acquire", taken)


def release_record(current: LeaseRecord, wall_now: datetime) -> LeaseRecord:
    """The record a holder writes when it gives the lease up (client-go's
    ReleaseOnCancel): no holder, 1-second duration, times now, transitions kept."""
    return LeaseRecord("", 1, wall_now, wall_now, current.transitions)


def _micro_time(dt: datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 in UTC with microseconds."""
    return f"{rfc3339(dt)[:-1]}.{dt.astimezone(UTC).microsecond:06d}Z"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _parse_micro_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:  # unreadable times only matter for display; expiry is local
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


# -- the elector --------------------------------------------------------------------------
class LeaderElector:
    """Competes for the Lease ``namespace/name`` as ``identity``; see the module docstring.

    ``run()`` blocks its thread until ``stop`` is set. The callbacks run on that thread
    and must return promptly (start and stop the real work on other threads): while they
    run, the lease is not renewed. ``release_on_stop=False`` leaves the lease held when
    stopping, as a crashed process would (the next leader waits for it to expire)."""

    def __init__(
        self,
        cluster: LeaseClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Clock | None = None,
        release_on_stop: bool = True,
    ):
        _check_timing(lease_duration, renew_deadline, retry_period)
        if not identity:
            raise ValueError("leader election needs a non-empty identity (e.g. the pod name)")
        self.cluster = cluster
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration_seconds = int(lease_duration)
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock or SystemClock()
        self.release_on_stop = release_on_stop
        # read and written by the run() thread only
        self._lease: Obj | None = None  # the last Lease the server returned to us
        self._observed: Observation | None = None
        # shared with other threads (is_leader, leader)
        self._lock = threading.Lock()
        self._leading = False
        self._renewed_at = 0.0  # monotonic start of the last successful write
        self._holder = ""

    @property
    def is_leader(self) -> bool:
        """True between ``on_started_leading`` and ``on_stopped_leading``, and only while
        the last successful renewal is younger than ``renew_deadline``; so it turns False
        on time even when a renewal request hangs."""
        with self._lock:
            if not self._leading:
                return False
            return self.clock.monotonic() - self._renewed_at < self.renew_deadline

    @property
    def leader(self) -> str | None:
        """The holder this candidate last saw in the Lease (None: nobody)."""
        with self._lock:
            return self._holder or None

    def run(
        self,
        stop: threading.Event,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
    ) -> None:
        """Acquire, lead, renew, re-acquire after losing, until ``stop`` is set; then
        release the lease if we hold it. API errors are logged and retried."""
        try:
            while self._acquire(stop):
                with self._lock:
                    self._leading = True
                log.info("%s became leader of lease %s", self.identity, self._describe())
                try:
                    on_started_leading()
                    self._renew(stop)
                finally:
                    with self._lock:
                        self._leading = False
                    log.info("%s stopped leading lease %s", self.identity, self._describe())
                    on_stopped_leading()
        finally:
            if self.release_on_stop:
                self._release()

    # -- the loops --------------------------------------------------------------------------
    def _acquire(self, stop: threading.Event) -> bool:
        """Try every ``retry_period`` (sooner when the holder's lease is about to
        expire) until acquired (True) or stopped (False)."""
        while not stop.is_set():
            outcome = self._try_acquire_or_renew()
            if outcome == "written":
                return True
            wait = self.retry_period
            if outcome == "held" and self._observed is not None:
                wait = min(wait, max(0.0, self._observed.expires_in(self.clock.monotonic())))
            stop.wait(wait)
        return False

    def _renew(self, stop: threading.Event) -> None:
        """Renew every ``retry_period`` until stopped, until no renewal succeeded for
        ``renew_deadline``, or until another holder is seen."""
        while True:
            left = self._renewed_at + self.renew_deadline - self.clock.monotonic()
            if left <= 0:
                log.warning(
                    "%s could not renew lease %s for %ss; giving up leadership",
                    self.identity,
                    self._describe(),
                    self.renew_deadline,
                )
                return
            if stop.wait(min(self.retry_period, left)):
                return
            if self.clock.monotonic() >= self._renewed_at + self.renew_deadline:
                continue  # the deadline passed while waiting: give up, do not renew late
            if self._try_acquire_or_renew() == "held":
                log.warning("%s lost lease %s to %s", self.identity, self._describe(), self.leader)
                return

    # -- one attempt ----------------------------------------------------------------------
    def _try_acquire_or_renew(self) -> Literal["written", "held", "failed"]:
        """One attempt to write the lease for us: ``written``; ``held`` by another
        candidate whose lease has not expired; or ``failed`` (an API error or a lost
        race, logged)."""
        started = self.clock.monotonic()
        if self._fast_renew(started):
            return "written"
        try:
            lease = self.cluster.get(LEASE_API_VERSION, LEASE_KIND, self.name, self.namespace)
        except Exception as err:  # the elector outlives any API failure
            self._log_failure("read", err)
            return "failed"
        if lease is None:
            self._observed = None
        else:
            record = LeaseRecord.from_lease(lease)
            self._observed = observe(self._observed, record, self.clock.monotonic())
            self._lease = lease
        with self._lock:
            self._holder = self._observed.record.holder if self._observed else ""
        decision = decide(
            self._observed,
            identity=self.identity,
            now=self.clock.monotonic(),
            wall_now=self.clock.now(),
            lease_duration_seconds=self.lease_duration_seconds,
        )
        if decision.record is None:
            return "held"
        return "written" if self._write(decision.action, decision.record, started) else "failed"

    def _fast_renew(self, started: float) -> bool:
        """client-go's fast path: a leader whose last write still stands renews with that
        write's resourceVersion, without reading first. A 409 (or any failure) falls
        back to reading the lease."""
        observed = self._observed
        if self._lease is None or observed is None or observed.record.holder != self.identity:
            return False
        if observed.expires_in(started) <= 0:
            return False
        renewed = replace(
            observed.record,
            lease_duration_seconds=self.lease_duration_seconds,
            renew_time=self.clock.now(),
        )
        return self._write("renew", renewed, started)

    def _write(self, action: str, record: LeaseRecord, started: float) -> bool:
        try:
            if action == "create":
                written = self.cluster.create(self._new_lease(record))
            else:
                written = self.cluster.update(self._updated_lease(record))
        except Exception as err:  # the elector outlives any API failure
            self._log_failure(action, err)
            return False
        self._lease = written
        self._observed = Observation(LeaseRecord.from_lease(written), self.clock.monotonic())
        with self._lock:
            self._renewed_at = started
            self._holder = self._observed.record.holder
        return True

    def _release(self) -> None:
        """Give the lease up if we hold it (one read and one write; failures are logged,
        the lease then expires on its own)."""
        if self._observed is None or self._observed.record.holder != self.identity:
            return
        try:
            lease = self.cluster.get(LEASE_API_VERSION, LEASE_KIND, self.name, self.namespace)
            if lease is None or LeaseRecord.from_lease(lease).holder != self.identity:
                return
            self._lease = lease
            released = release_record(LeaseRecord.from_lease(lease), self.clock.now())
            written = self.cluster.update(self._updated_lease(released))
        except Exception as err:  # stopping must not fail
            self._log_failure("release", err, then="it will expire instead")
            return
        self._lease = written
        self._observed = Observation(LeaseRecord.from_lease(written), self.clock.monotonic())
        with self._lock:
            self._holder = ""
        log.info("%s released lease %s", self.identity, self._describe())

    def _new_lease(self, record: LeaseRecord) -> Obj:
        return {
            "apiVersion": LEASE_API_VERSION,
            "kind": LEASE_KIND,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }

    def _updated_lease(self, record: LeaseRecord) -> Obj:
        """The last Lease we read or wrote with its spec replaced; its resourceVersion
        makes the update fail with 409 if anyone wrote since."""
        assert self._lease is not None
        meta = {k: v for k, v in self._lease["metadata"].items() if k != "managedFields"}
        return {
            "apiVersion": LEASE_API_VERSION,
            "kind": LEASE_KIND,
            "metadata": meta,
            "spec": record.to_spec(),
        }

    def _describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _log_failure(self, action: str, err: Exception, *, then: str = "will retry") -> None:
        where = f"{action} of lease {self._describe()} by {self.identity}"
        if isinstance(err, ClusterError) and err.status == 409:
            # another candidate wrote first (or our cached version was stale): the next
            # attempt reads the lease again and decides anew
            log.info("%s lost a race (%s); %s", where, err, then)
        elif isinstance(err, ClusterError):
            log.warning("%s failed (%s); %s", where, err, then)
        else:
            log.error("%s failed unexpectedly; %s", where, then, exc_info=err)


def _check_timing(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """client-go's rules: a leader gives up (renew_deadline) before others may take over
    (lease_duration), and retries at least once before giving up."""
    if lease_duration < 1 or lease_duration != int(lease_duration):
        raise ValueError(
            f"lease_duration {lease_duration!r}: give whole seconds >= 1 "
            "(the Lease stores leaseDurationSeconds as an integer)"
        )
    if not 0 < renew_deadline < lease_duration:
        raise ValueError(
            f"renew_deadline {renew_deadline!r} must be > 0 and shorter than lease_duration "
            f"{lease_duration!r}, or two leaders could overlap"
        )
    if not 0 < retry_period < renew_deadline:
        raise ValueError(
            f"retry_period {retry_period!r} must be > 0 and shorter than renew_deadline "
            f"{renew_deadline!r}, so a renewal is retried before giving up"
        )
