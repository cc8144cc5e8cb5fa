"""The runtime work queue: dedup, one worker per key, delays, backoff, rate limit, shutdown."""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from oper8d.clock import FakeClock
from oper8d.runtime.queue import WorkQueue

#: a join timeout for threads that must finish at once: only hit when the queue is broken
_STUCK = 10.0


def unlimited_queue(clock: FakeClock, **kwargs: float) -> WorkQueue:
    """A queue whose overall token bucket never delays, to see per-item backoff alone."""
    return WorkQueue(clock=clock, rate_per_second=math.inf, **kwargs)  # type: ignore[arg-type]


def drain(queue: WorkQueue) -> list[Hashable]:
    """Every key ready now, each marked done as soon as taken."""
    keys = []
    while (key := queue.get(timeout=0)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


class Observer:
    def __init__(self) -> None:
        self.adds: list[Hashable] = []
        self.starts: list[tuple[Hashable, float]] = []
        self.depths: list[int] = []

    def added(self, key: Hashable) -> None:
        self.adds.append(key)

    def started(self, key: Hashable, waited_seconds: float) -> None:
        self.starts.append((key, waited_seconds))

    def depth(self, n: int) -> None:
        self.depths.append(n)


class SignallingClock(FakeClock):
    """Sets ``read`` whenever read: get() reads the clock, holding the queue's lock, just
    before it waits, so once ``read`` is set a shutdown() (which needs that lock) can only
    run after the getter is already waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.read = threading.Event()

    def monotonic(self) -> float:
        self.read.set()
        return super().monotonic()


# --- dedup, order, in-flight exclusivity --------------------------------------------------


def test_a_key_added_many_times_is_processed_once() -> None:
    queue = WorkQueue(clock=FakeClock())
    for _ in range(3):
        queue.add(("ns", "a"))
    assert len(queue) == 1
    assert drain(queue) == [("ns", "a")]


def test_ready_keys_come_out_in_the_order_they_were_added() -> None:
    queue = WorkQueue(clock=FakeClock())
    for key in ["c", "a", "b", "a"]:
        queue.add(key)
    assert drain(queue) == ["c", "a", "b"]


def test_get_returns_none_when_nothing_is_ready_before_the_timeout() -> None:
    assert WorkQueue(clock=FakeClock()).get(timeout=0) is None


def test_a_key_added_while_in_flight_is_not_handed_out_until_done() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.add("a")
    assert queue.get(timeout=0) is None
    assert len(queue) == 0
    queue.done("a")
    assert queue.get(timeout=0) == "a"


def test_a_key_not_added_again_while_in_flight_is_not_requeued_by_done() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    assert queue.get(timeout=0) is None


def test_two_workers_never_hold_the_same_key_at_once() -> None:
    queue = WorkQueue()
    queue.add("a")
    first_holds_key = threading.Event()
    release_first = threading.Event()
    second_got: list[Hashable | None] = []

    def first_worker() -> None:
        key = queue.get()
        first_holds_key.set()
        release_first.wait(_STUCK)
        queue.done(key)

    def second_worker() -> None:
        second_got.append(queue.get())
        queue.done(second_got[-1])

    t1 = threading.Thread(target=first_worker, daemon=True)
    t1.start()
    assert first_holds_key.wait(_STUCK)
    queue.add("a")  # arrives while the first worker reconciles "a"
    queue.add("b")
    t2 = threading.Thread(target=second_worker, daemon=True)
    t2.start()
    t2.join(_STUCK)
    # The second worker gets "b", not the "a" that is still in flight.
    assert second_got == ["b"]
    release_first.set()
    t1.join(_STUCK)
    assert drain(queue) == ["a"]


def test_a_waiting_worker_gets_a_key_added_from_another_thread() -> None:
    queue = WorkQueue()
    got: list[Hashable | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get(timeout=_STUCK)), daemon=True)
    worker.start()
    queue.add("a")
    worker.join(_STUCK)
    assert got == ["a"]


# --- delays -------------------------------------------------------------------------------


def test_a_delayed_key_is_ready_only_once_its_delay_has_passed() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("a", 10)
    assert queue.get(timeout=0) is None
    clock.advance(9.5)
    assert queue.get(timeout=0) is None
    clock.advance(0.5)
    assert queue.get(timeout=0) == "a"


def test_a_waiting_worker_wakes_for_a_delayed_key_added_meanwhile() -> None:
    clock = SignallingClock()
    queue = WorkQueue(clock=clock)
    clock.read.clear()
    got: list[Hashable | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get()), daemon=True)
    worker.start()
    assert clock.read.wait(_STUCK)  # the worker waits with no deadline
    queue.add_after("a", 0.001)
    clock.advance(0.001)
    worker.join(_STUCK)
    assert got == ["a"]


def test_a_zero_or_negative_delay_queues_at_once() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert drain(queue) == ["a", "b"]


def test_of_two_delays_for_one_key_the_earlier_stands_and_the_key_comes_once() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("a", 30)
    queue.add_after("a", 5)
    queue.add_after("a", 60)
    clock.advance(5)
    assert drain(queue) == ["a"]
    clock.advance(100)
    assert drain(queue) == []


def test_delayed_keys_come_out_in_the_order_they_fall_due() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("late", 20)
    queue.add_after("early", 10)
    clock.advance(25)
    assert drain(queue) == ["early", "late"]


def test_a_due_delayed_key_counts_in_the_depth() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("a", 1)
    assert len(queue) == 0
    clock.advance(1)
    assert len(queue) == 1


def test_a_nan_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        WorkQueue(clock=FakeClock()).add_after("a", math.nan)


# --- rate limiting --------------------------------------------------------------------------


def ready_after(queue: WorkQueue, clock: FakeClock, key: Hashable, seconds: float) -> bool:
    """Whether ``key`` is not ready just before ``seconds`` but is at ``seconds``."""
    clock.advance(seconds / 2)
    early = queue.get(timeout=0)
    clock.advance(seconds / 2)
    due = queue.get(timeout=0)
    if due is not None:
        queue.done(due)
    return early is None and due == key


def test_each_failure_doubles_the_backoff_up_to_the_cap() -> None:
    clock = FakeClock()
    queue = unlimited_queue(clock, base_delay=1.0, max_delay=8.0)
    for expected in [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]:
        queue.add_rate_limited("a")
        assert ready_after(queue, clock, "a", expected), expected
    assert queue.num_requeues("a") == 6


def test_backoff_is_per_key() -> None:
    clock = FakeClock()
    queue = unlimited_queue(clock, base_delay=1.0, max_delay=60.0)
    for _ in range(3):
        queue.add_rate_limited("a")
        clock.advance(60)
        drain(queue)
    queue.add_rate_limited("b")
    assert ready_after(queue, clock, "b", 1.0)


def test_forget_resets_the_backoff() -> None:
    clock = FakeClock()
    queue = unlimited_queue(clock, base_delay=1.0, max_delay=60.0)
    for _ in range(4):
        queue.add_rate_limited("a")
        clock.advance(60)
        drain(queue)
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.add_rate_limited("a")
    assert ready_after(queue, clock, "a", 1.0)


def test_a_huge_failure_count_still_gives_the_capped_delay() -> None:
    clock = FakeClock()
    queue = unlimited_queue(clock, base_delay=1.0, max_delay=4.0)
    for _ in range(2000):
        queue.add_rate_limited("a")
    clock.advance(4)
    assert drain(queue) == ["a"]


def test_the_token_bucket_lets_a_burst_through_then_spaces_the_rest() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, base_delay=0.0, rate_per_second=1.0, burst=2)
    for key in ["a", "b", "c", "d"]:
        queue.add_rate_limited(key)
    assert drain(queue) == ["a", "b"]
    clock.advance(1)
    assert drain(queue) == ["c"]
    clock.advance(1)
    assert drain(queue) == ["d"]


def test_the_token_bucket_refills_while_idle() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, base_delay=0.0, rate_per_second=1.0, burst=2)
    queue.add_rate_limited("a")
    queue.add_rate_limited("b")
    drain(queue)
    clock.advance(2)
    queue.add_rate_limited("c")
    queue.add_rate_limited("d")
    assert drain(queue) == ["c", "d"]


def test_a_key_waits_for_the_longer_of_its_backoff_and_the_rate_limit() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock, base_delay=1.0, max_delay=60.0, rate_per_second=0.25, burst=1)
    queue.add_rate_limited("a")  # backoff 1 s, bucket 0 s
    queue.add_rate_limited("b")  # backoff 1 s, bucket 4 s (the burst is spent)
    clock.advance(1)
    assert drain(queue) == ["a"]
    clock.advance(2)
    assert drain(queue) == []
    clock.advance(1)
    assert drain(queue) == ["b"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_delay": -1.0}, "base_delay"),
        ({"base_delay": 10.0, "max_delay": 1.0}, "base_delay <= max_delay"),
        ({"max_delay": math.inf}, "finite"),
        ({"rate_per_second": 0.0}, "rate must be > 0"),
        ({"burst": 0}, "burst >= 1"),
    ],
)
def test_impossible_limits_are_refused_with_the_setting_named(
    kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        WorkQueue(clock=FakeClock(), **kwargs)  # type: ignore[arg-type]


# --- shutdown -----------------------------------------------------------------------------


def test_shutdown_wakes_a_worker_waiting_in_another_thread() -> None:
    clock = SignallingClock()
    queue = WorkQueue(clock=clock)
    clock.read.clear()
    got: list[Hashable | None] = ["not returned"]
    worker = threading.Thread(target=lambda: got.__setitem__(0, queue.get()), daemon=True)
    worker.start()
    assert clock.read.wait(_STUCK)
    queue.shutdown()
    worker.join(_STUCK)
    assert not worker.is_alive()
    assert got == [None]


def test_after_shutdown_ready_keys_are_not_handed_out_and_adds_are_dropped() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add("a")
    queue.shutdown()
    queue.add("b")
    queue.add_after("c", 1)
    queue.add_rate_limited("d")
    clock.advance(600)
    assert queue.shutting_down
    assert queue.get(timeout=0) is None
    assert queue.get() is None  # no timeout: still returns at once


def test_a_key_in_flight_at_shutdown_can_still_be_marked_done() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add("a")
    key = queue.get(timeout=0)
    queue.add("a")
    queue.shutdown()
    queue.done(key)
    assert queue.get(timeout=0) is None


# --- observer -----------------------------------------------------------------------------


def test_the_observer_sees_adds_waits_and_depth() -> None:
    clock = FakeClock()
    observer = Observer()
    queue = WorkQueue(clock=clock, observer=observer)
    queue.add("a")
    queue.add("a")  # deduplicated: not counted
    queue.add("b")
    clock.advance(3)
    assert queue.get(timeout=0) == "a"
    assert observer.adds == ["a", "b"]
    assert observer.starts == [("a", 3.0)]
    assert observer.depths == [1, 2, 1]


def test_the_observer_does_not_count_time_spent_in_a_delay_as_waiting() -> None:
    clock = FakeClock()
    observer = Observer()
    queue = WorkQueue(clock=clock, observer=observer)
    queue.add_after("a", 10)
    clock.advance(10)
    assert queue.get(timeout=0) == "a"
    assert observer.starts == [("a", 0.0)]


def test_taking_a_key_drops_its_pending_delay() -> None:
    # a CR woken early by an event is not reconciled again when its old timer fires: the
    # reconcile that ran sets its own next requeue
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("a", 5)
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    clock.advance(10)
    assert queue.get(timeout=0) is None
    queue.add_after("a", 5)  # set again by the reconcile (or a later one): honoured
    clock.advance(5)
    assert queue.get(timeout=0) == "a"


def test_add_if_idle_leaves_queued_in_flight_and_waiting_keys_alone() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("waiting", 60)
    queue.add_if_idle("waiting")  # a resync does not cut a rollout's backoff short
    assert queue.get(timeout=0) is None
    queue.add("busy")
    assert queue.get(timeout=0) == "busy"
    queue.add_if_idle("busy")  # in flight: not queued again behind itself
    queue.done("busy")
    assert queue.get(timeout=0) is None
    queue.add_if_idle("idle")
    assert queue.get(timeout=0) == "idle"
    clock.advance(60)
    assert queue.get(timeout=0) == "waiting"


# --- property: single-threaded interleavings --------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c"])


class QueueMachine(RuleBasedStateMachine):
    """Any interleaving of add/add_after/get/done/advance: get never hands out a key in
    flight, never a key nobody asked for, and never withholds a key that is due."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.queue = WorkQueue(clock=self.clock)
        self.in_flight: set[str] = set()
        self.wanted: set[str] = set()  # added (or due) since last handed out
        self.delayed: dict[str, float] = {}  # key -> earliest due time

    def _settle_due(self) -> None:
        now = self.clock.monotonic()
        for key, due in list(self.delayed.items()):
            if due <= now:
                self.wanted.add(key)
                del self.delayed[key]

    @rule(key=KEYS)
    def add(self, key: str) -> None:
        self.queue.add(key)
        self.wanted.add(key)

    @rule(key=KEYS, seconds=st.integers(min_value=1, max_value=5))
    def add_after(self, key: str, seconds: int) -> None:
        self.queue.add_after(key, seconds)
        due = self.clock.monotonic() + seconds
        self.delayed[key] = min(due, self.delayed.get(key, due))

    @rule(seconds=st.integers(min_value=0, max_value=3))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule()
    def get(self) -> None:
        self._settle_due()
        key = self.queue.get(timeout=0)
        if key is None:
            assert self.wanted <= self.in_flight, "a wanted key that is not in flight was withheld"
            return
        assert key not in self.in_flight
        assert key in self.wanted
        self.wanted.discard(key)
        self.delayed.pop(key, None)  # the reconcile that starts decides when it is next due
        self.in_flight.add(key)  # type: ignore[arg-type]

    @rule(key=KEYS)
    def add_if_idle(self, key: str) -> None:
        self.queue.add_if_idle(key)
        if key not in self.in_flight and key not in self.delayed:
            self.wanted.add(key)

    @precondition(lambda self: bool(self.in_flight))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.in_flight)))
        self.queue.done(key)
        self.in_flight.discard(key)

    @invariant()
    def depth_counts_wanted_keys_not_in_flight(self) -> None:
        self._settle_due()
        assert len(self.queue) == len(self.wanted - self.in_flight)


TestQueueInterleavings = QueueMachine.TestCase
TestQueueInterleavings.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
