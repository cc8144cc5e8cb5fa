"""Lease-based leader election (oper8d.runtime.leaderelection): the pure acquire / renew /
expiry decisions, and the elector's loop against an in-memory Lease store with the API
server's optimistic concurrency, on a FakeClock.

The loop runs on the test's own thread: ``SteppingStop.wait(timeout)`` advances the fake
clock by ``timeout`` at once and runs whatever the test scheduled for that time.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.errors import ClusterError
from oper8d.runtime.leaderelection import (
    LEASE_API_VERSION,
    LeaderElector,
    LeaseRecord,
    Observation,
    decide,
    observe,
    release_record,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NS, NAME = "ops", "webapp"


# --- fakes -----------------------------------------------------------------------------------
class FakeLeases:
    """Leases in memory: create fails with 409 when the Lease exists, update with 409 when
    its resourceVersion is stale. ``before`` runs before every request (to fail it, let
    time pass, or let another candidate write first)."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], Obj] = {}
        self.version = 0
        self.requests: list[str] = []
        self.before: Callable[[str], None] | None = None

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        assert (api_version, kind) == (LEASE_API_VERSION, "Lease")
        self._request("get")
        lease = self.leases.get((namespace or "", name))
        return copy.deepcopy(lease) if lease else None

    def create(self, obj: Obj) -> Obj:
        self._request("create")
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in self.leases:
            raise ClusterError(f"leases {key} already exists", status=409)
        return self._store(key, obj)

    def update(self, obj: Obj) -> Obj:
        self._request("update")
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        live = self.leases.get(key)
        if live is None:
            raise ClusterError(f"leases {key} not found", status=404)
        if obj["metadata"].get("resourceVersion") != live["metadata"]["resourceVersion"]:
            raise ClusterError("the object has been modified", status=409)
        return self._store(key, obj)

    def write_as(self, holder: str, at: datetime, *, transitions: int = 0) -> None:
        """Another candidate holding (or renewing) the lease."""
        key = (NS, NAME)
        record = LeaseRecord(holder, 15, at, at, transitions)
        self._store(key, {"metadata": {"namespace": NS, "name": NAME}, "spec": record.to_spec()})

    def record(self) -> LeaseRecord:
        return LeaseRecord.from_lease(self.leases[(NS, NAME)])

    def _request(self, verb: str) -> None:
        self.requests.append(verb)
        if self.before is not None:
            self.before(verb)

    def _store(self, key: tuple[str, str], obj: Obj) -> Obj:
        self.version += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("apiVersion", LEASE_API_VERSION)
        stored.setdefault("kind", "Lease")
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.leases[key] = stored
        return copy.deepcopy(stored)


class SteppingStop(threading.Event):
    """A stop event whose ``wait`` moves the fake clock instead of blocking, running the
    actions scheduled on the way; ``set()`` by one of them ends the wait there, as a real
    Event would. Sets itself after ``limit`` seconds so a broken loop ends the test
    instead of hanging it."""

    def __init__(self, clock: FakeClock, limit: float = 600.0) -> None:
        super().__init__()
        self.clock = clock
        self.limit = limit
        self.waits: list[float] = []
        self.schedule: list[tuple[float, Callable[[], None]]] = []

    def at(self, when: float, action: Callable[[], None]) -> None:
        self.schedule.append((when, action))
        self.schedule.sort(key=lambda item: item[0])

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None, "the elector must always wait with a timeout"
        self.waits.append(timeout)
        end = self.clock.monotonic() + timeout
        # run what is due before the wait ends; a set() wakes the waiter at that moment
        while self.schedule and self.schedule[0][0] <= end and not self.is_set():
            when, action = self.schedule.pop(0)
            self.clock.advance(max(0.0, when - self.clock.monotonic()))
            action()
        if not self.is_set():
            self.clock.advance(max(0.0, end - self.clock.monotonic()))
        if self.clock.monotonic() >= self.limit:
            self.set()
        return self.is_set()


class Callbacks:
    """Records the elector's callbacks with the time and what ``is_leader`` said then."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.elector: LeaderElector | None = None
        self.calls: list[tuple[str, float, bool]] = []

    def started(self) -> None:
        assert self.elector is not None
        self.calls.append(("started", self.clock.monotonic(), self.elector.is_leader))

    def stopped(self) -> None:
        assert self.elector is not None
        self.calls.append(("stopped", self.clock.monotonic(), self.elector.is_leader))

    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]


def elector(
    leases: FakeLeases, clock: FakeClock, identity: str = "me", **options: Any
) -> LeaderElector:
    return LeaderElector(
        leases,
        name=NAME,
        namespace=NS,
        identity=identity,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        clock=clock,
        **options,
    )


def run(candidate: LeaderElector, stop: SteppingStop) -> Callbacks:
    callbacks = Callbacks(stop.clock)
    callbacks.elector = candidate
    candidate.run(stop, callbacks.started, callbacks.stopped)
    return callbacks


def api_down(verb: str) -> None:
    raise ClusterError("cannot reach the API server", status=None)


# --- the pure decisions ----------------------------------------------------------------------
def test_an_absent_lease_is_created_with_us_as_holder_and_no_transitions() -> None:
    decision = decide(None, identity="me", now=5.0, wall_now=T0, lease_duration_seconds=15)
    assert decision.action == "create"
    assert decision.record == LeaseRecord("me", 15, T0, T0, 0)


def test_a_lease_held_by_another_is_not_taken_before_its_duration_passes_locally() -> None:
    held = Observation(LeaseRecord("other", 15, T0, T0, 3), at=100.0)
    decision = decide(held, identity="me", now=114.0, wall_now=T0, lease_duration_seconds=15)
    assert decision.action == "wait"
    assert decision.record is None
    assert decision.expires_in == pytest.approx(1.0)


def test_a_lease_unchanged_for_its_duration_is_taken_and_counts_a_transition() -> None:
    held = Observation(LeaseRecord("other", 15, T0, T0, 3), at=100.0)
    later = T0 + timedelta(seconds=20)
    decision = decide(held, identity="me", now=115.0, wall_now=later, lease_duration_seconds=10)
    assert decision.action == "acquire"
    assert decision.record == LeaseRecord("me", 10, later, later, 4)


def test_a_released_lease_is_taken_at_once() -> None:
    released = Observation(LeaseRecord("", 1, T0, T0, 2), at=50.0)
    decision = decide(released, identity="me", now=50.0, wall_now=T0, lease_duration_seconds=15)
    assert decision.action == "acquire"
    assert decision.record is not None and decision.record.transitions == 3


def test_renewing_our_own_lease_moves_only_the_renew_time() -> None:
    acquired = T0 - timedelta(hours=1)
    ours = Observation(LeaseRecord("me", 15, acquired, acquired, 7), at=0.0)
    decision = decide(ours, identity="me", now=999.0, wall_now=T0, lease_duration_seconds=15)
    assert decision.action == "renew"
    assert decision.record == LeaseRecord("me", 15, acquired, T0, 7)


def test_expiry_is_judged_by_the_local_clock_not_the_remote_renew_time() -> None:
    # the holder's clock is an hour behind ours: its fresh renewTime looks ancient
    stale_looking = LeaseRecord("other", 15, T0 - timedelta(hours=1), T0 - timedelta(hours=1))
    just_seen = Observation(stale_looking, at=100.0)
    assert (
        decide(just_seen, identity="me", now=101.0, wall_now=T0, lease_duration_seconds=15).action
        == "wait"
    )
    # and an hour ahead: a renewTime in the future does not keep a dead holder's lease alive
    future = LeaseRecord("other", 15, T0 + timedelta(hours=1), T0 + timedelta(hours=1))
    long_seen = Observation(future, at=100.0)
    assert (
        decide(long_seen, identity="me", now=115.0, wall_now=T0, lease_duration_seconds=15).action
        == "acquire"
    )


def test_the_expiry_clock_restarts_only_when_the_record_changes() -> None:
    first = LeaseRecord("other", 15, T0, T0, 0)
    seen = observe(None, first, now=10.0)
    assert observe(seen, LeaseRecord("other", 15, T0, T0, 0), now=20.0).at == 10.0
    renewed = LeaseRecord("other", 15, T0, T0 + timedelta(seconds=2), 0)
    assert observe(seen, renewed, now=20.0) == Observation(renewed, 20.0)


@given(
    elapsed=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    duration=st.integers(min_value=1, max_value=3600),
    holder=st.text(min_size=1, max_size=20).filter(lambda h: h != "me"),
    transitions=st.integers(min_value=0, max_value=2**31 - 2),
)
def test_another_holders_lease_is_taken_exactly_when_unchanged_for_its_duration(
    elapsed: float, duration: int, holder: str, transitions: int
) -> None:
    held = Observation(LeaseRecord(holder, duration, T0, T0, transitions), at=0.0)
    decision = decide(held, identity="me", now=elapsed, wall_now=T0, lease_duration_seconds=15)
    if elapsed < duration:
        assert decision.action == "wait"
    else:
        assert decision.action == "acquire"
        assert decision.record == LeaseRecord("me", 15, T0, T0, transitions + 1)


@given(
    holder=st.text(max_size=30),
    duration=st.integers(min_value=0, max_value=10**6),
    transitions=st.integers(min_value=0, max_value=2**31 - 1),
    acquired=st.datetimes(timezones=st.just(UTC)),
    renewed=st.none() | st.datetimes(timezones=st.just(UTC)),
)
def test_a_record_survives_the_round_trip_through_a_lease_spec(
    holder: str, duration: int, transitions: int, acquired: datetime, renewed: datetime | None
) -> None:
    record = LeaseRecord(holder, duration, acquired, renewed, transitions)
    assert LeaseRecord.from_lease({"spec": record.to_spec()}) == record


def test_lease_times_are_written_as_microsecond_utc() -> None:
    at = datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=UTC)
    spec = LeaseRecord("me", 15, at, at, 0).to_spec()
    assert spec["renewTime"] == spec["acquireTime"] == "2026-03-04T05:06:07.000890Z"


def test_a_lease_without_a_spec_reads_as_free_and_already_expired() -> None:
    record = LeaseRecord.from_lease({"metadata": {"name": NAME}})
    assert record == LeaseRecord()
    assert (
        decide(
            Observation(record, 0.0), identity="me", now=0.0, wall_now=T0, lease_duration_seconds=15
        ).action
        == "acquire"
    )


def test_releasing_clears_the_holder_and_keeps_the_transition_count() -> None:
    held = LeaseRecord("me", 15, T0, T0, 5)
    later = T0 + timedelta(seconds=30)
    assert release_record(held, later) == LeaseRecord("", 1, later, later, 5)


@pytest.mark.parametrize(
    ("lease", "deadline", "retry", "complaint"),
    [
        (15.0, 15.0, 2.0, "renew_deadline"),
        (15.0, 10.0, 10.0, "retry_period"),
        (15.0, 10.0, 0.0, "retry_period"),
        (2.5, 1.0, 0.5, "whole seconds"),
        (0.0, 1.0, 0.5, "whole seconds"),
    ],
)
def test_timings_that_could_let_two_leaders_overlap_are_rejected(
    lease: float, deadline: float, retry: float, complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        LeaderElector(
            FakeLeases(),
            name=NAME,
            namespace=NS,
            identity="me",
            lease_duration=lease,
            renew_deadline=deadline,
            retry_period=retry,
        )


# --- the loop --------------------------------------------------------------------------------
def test_a_candidate_creates_the_lease_leads_and_releases_it_on_stop() -> None:
    clock, leases = FakeClock(), FakeLeases()
    candidate = elector(leases, clock)
    stop = SteppingStop(clock)
    stop.at(5.0, stop.set)
    calls = run(candidate, stop)
    assert calls.calls[0] == ("started", 0.0, True)
    assert calls.calls[1][0] == "stopped" and calls.calls[1][2] is False
    assert len(calls.calls) == 2
    released = leases.record()
    assert (released.holder, released.lease_duration_seconds, released.transitions) == ("", 1, 0)
    assert released.renew_time == T0 + timedelta(seconds=5)
    assert not candidate.is_leader and candidate.leader is None


def test_a_leader_renews_every_retry_period_with_one_request_each() -> None:
    clock, leases = FakeClock(), FakeLeases()
    stop = SteppingStop(clock)
    renew_times: list[datetime | None] = []
    for second in (1.0, 3.0, 5.0):
        stop.at(second, lambda: renew_times.append(leases.record().renew_time))
    stop.at(6.0, stop.set)
    run(elector(leases, clock, release_on_stop=False), stop)
    assert renew_times == [T0, T0 + timedelta(seconds=2), T0 + timedelta(seconds=4)]
    assert leases.requests == ["get", "create", "update", "update"]  # stopped before t=6
    assert leases.record().acquire_time == T0


def test_stopping_without_release_leaves_the_lease_held_as_a_crash_would() -> None:
    clock, leases = FakeClock(), FakeLeases()
    stop = SteppingStop(clock)
    stop.at(3.0, stop.set)
    calls = run(elector(leases, clock, release_on_stop=False), stop)
    assert calls.names() == ["started", "stopped"]
    assert leases.record().holder == "me"


def test_a_candidate_waits_while_the_holder_renews_and_takes_over_once_it_goes_quiet() -> None:
    clock, leases = FakeClock(), FakeLeases()
    leases.write_as("other", T0, transitions=2)
    stop = SteppingStop(clock)
    # the other holder renews every 5 s until t=30, then dies without releasing
    for second in range(5, 31, 5):
        stop.at(second, lambda: leases.write_as("other", clock.now(), transitions=2))
    stop.at(60.0, stop.set)
    candidate = elector(leases, clock)
    calls = run(candidate, stop)
    started_at = calls.calls[0][1]
    assert calls.names() == ["started", "stopped"]
    # the last renewal (t=30) is first seen at the candidate's next read, t=30 or t=32;
    # the candidate takes over 15 s of unchanged lease later, not a retry period after
    assert 45.0 <= started_at <= 47.0
    assert leases.record().transitions == 3


def test_a_leader_that_cannot_renew_for_the_deadline_stops_leading_then_leads_again() -> None:
    clock, leases = FakeClock(), FakeLeases()
    stop = SteppingStop(clock)
    stop.at(1.0, lambda: setattr(leases, "before", api_down))
    stop.at(30.0, lambda: setattr(leases, "before", None))
    stop.at(40.0, stop.set)
    calls = run(elector(leases, clock), stop)
    assert calls.names() == ["started", "stopped", "started", "stopped"]
    lost_at = calls.calls[1][1]
    assert lost_at == pytest.approx(10.0)  # the renew deadline after the last renewal (t=0)
    assert calls.calls[2][1] >= 30.0
    assert leases.record().transitions == 0  # the same holder throughout: no transition


def test_api_errors_are_retried_and_never_escape_run() -> None:
    clock, leases = FakeClock(), FakeLeases()
    failures = iter([ClusterError("boom", status=500), RuntimeError("unexpected")] * 3)

    def flaky(verb: str) -> None:
        error = next(failures, None)
        if error is not None:
            raise error

    leases.before = flaky
    stop = SteppingStop(clock)
    stop.at(30.0, stop.set)
    calls = run(elector(leases, clock), stop)
    assert calls.names() == ["started", "stopped"]
    assert calls.calls[0][1] == pytest.approx(12.0)  # six failed attempts, 2 s apart
    assert leases.record().holder == ""


def test_stopping_while_the_api_is_down_returns_without_raising() -> None:
    clock, leases = FakeClock(), FakeLeases()
    stop = SteppingStop(clock)
    stop.at(1.0, lambda: setattr(leases, "before", api_down))
    stop.at(5.0, stop.set)
    calls = run(elector(leases, clock), stop)
    assert calls.names() == ["started", "stopped"]
    assert leases.record().holder == "me"  # not released: it expires on its own


def test_a_leader_stops_at_once_when_another_holder_took_the_lease() -> None:
    clock, leases = FakeClock(), FakeLeases()
    stop = SteppingStop(clock)
    stop.at(3.0, lambda: leases.write_as("intruder", clock.now(), transitions=1))
    stop.at(18.0, stop.set)  # before the intruder's lease, seen at t=4, could expire
    candidate = elector(leases, clock)
    calls = run(candidate, stop)
    assert calls.names() == ["started", "stopped"]
    assert calls.calls[1][1] == pytest.approx(4.0)  # the first renewal after the takeover
    assert candidate.leader == "intruder"
    assert leases.record().holder == "intruder"  # not "released" by the one who lost it


def test_is_leader_turns_false_at_the_renew_deadline_while_a_renewal_hangs() -> None:
    clock, leases = FakeClock(), FakeLeases()
    candidate = elector(leases, clock, release_on_stop=False)
    during_hang: list[bool] = []

    def hang(verb: str) -> None:
        if verb == "update" and not during_hang:
            during_hang.append(candidate.is_leader)
            clock.advance(7.9)  # renewed at t=0, this renewal started at t=2
            during_hang.append(candidate.is_leader)
            clock.advance(0.2)
            during_hang.append(candidate.is_leader)

    stop = SteppingStop(clock)
    stop.at(1.0, lambda: setattr(leases, "before", hang))
    stop.at(20.0, stop.set)
    calls = Callbacks(clock)
    calls.elector = candidate
    candidate.run(stop, calls.started, calls.stopped)
    assert during_hang == [True, True, False]
    # the late renewal succeeded, but too late to count: leadership was given up and retaken
    assert calls.names() == ["started", "stopped", "started", "stopped"]


def test_a_lost_race_to_create_the_lease_leaves_the_candidate_waiting() -> None:
    clock, leases = FakeClock(), FakeLeases()

    def other_creates_first(verb: str) -> None:
        if verb == "create":
            leases.before = None
            leases.write_as("other", clock.now())

    leases.before = other_creates_first
    stop = SteppingStop(clock)
    stop.at(10.0, stop.set)
    candidate = elector(leases, clock)
    calls = run(candidate, stop)
    assert calls.calls == []
    assert candidate.leader == "other"
    assert leases.record().holder == "other"


def test_a_candidate_that_never_led_writes_nothing_when_stopped() -> None:
    clock, leases = FakeClock(), FakeLeases()
    leases.write_as("other", T0)
    stop = SteppingStop(clock)
    stop.at(5.0, lambda: leases.write_as("other", clock.now()))
    stop.at(10.0, stop.set)
    calls = run(elector(leases, clock), stop)
    assert calls.calls == []
    assert set(leases.requests) == {"get"}


def test_a_candidate_whose_lease_survived_its_restart_renews_it_without_a_transition() -> None:
    clock, leases = FakeClock(), FakeLeases()
    leases.write_as("me", T0 - timedelta(seconds=3), transitions=4)
    stop = SteppingStop(clock)
    stop.at(1.0, stop.set)
    calls = run(elector(leases, clock, release_on_stop=False), stop)
    assert calls.calls[0][:2] == ("started", 0.0)
    record = leases.record()
    assert (record.holder, record.transitions, record.renew_time) == ("me", 4, T0)
    assert record.acquire_time == T0 - timedelta(seconds=3)


def test_every_wait_is_bounded_so_stop_is_noticed_promptly() -> None:
    clock, leases = FakeClock(), FakeLeases()
    leases.write_as("other", T0)
    stop = SteppingStop(clock)
    stop.at(40.0, stop.set)
    run(elector(leases, clock), stop)
    assert stop.waits and max(stop.waits) <= 2.0


def test_an_error_in_on_started_leading_still_stops_leading_and_releases_the_lease() -> None:
    clock, leases = FakeClock(), FakeLeases()
    candidate = elector(leases, clock)
    stopped: list[bool] = []

    def broken_start() -> None:
        raise RuntimeError("controllers failed to start")

    with pytest.raises(RuntimeError, match="controllers failed to start"):
        candidate.run(SteppingStop(clock), broken_start, lambda: stopped.append(True))
    assert stopped == [True]
    assert not candidate.is_leader
    assert leases.record().holder == ""
