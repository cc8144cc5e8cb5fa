"""The controller's work queue: deduplicating, delaying and rate-limiting, like client-go's.

The manager (``runtime/manager.py``) puts the keys of CRs that need a reconcile here (from
informer events, requeue decisions and retries) and its worker threads take them out:

- a key is queued at most once, however often it is added (``add``);
- a key is never handed to two workers at once: one added while it is being processed is
  marked dirty and queued again when its worker calls ``done``;
- fair: ready keys are taken in the order they were queued, and a key added again while
  processed goes to the back, so a CR whose events never stop is reconciled at most once
  per pass over the other queued CRs (tests/unit/test_runtime_queue_fairness.py);
- two priorities: a key added with ``high_priority`` (a CR woken because an object it
  deployed changed: its rollout may be done) is taken before the keys queued normally (new
  CRs, timed requeues, retries), so a burst of new CRs does not hold back the last step of
  the rollouts already under way. Every ``FAIR_EVERY``-th take is of the oldest key of
  either priority, so normal keys are never starved; a key re-queued by ``done`` (added
  while processed) goes to the back of the normal ones, so a hot key is never ahead;
- ``add_after`` queues a key after a delay (the earliest pending delay wins); a worker taking
  the key drops its pending delay, since the reconcile that starts decides anew when the key
  is next due (otherwise a CR woken early by an event is reconciled again by its timer);
- ``add_if_idle`` queues a key only when it is neither queued, in flight nor delayed (a
  periodic resync must not pull a waiting CR ahead of its backoff);
- ``add_rate_limited`` queues a key after its own exponential backoff (``base_delay * 2**n``
  after ``n`` failures, capped at ``max_delay``) or the overall token bucket's delay
  (``rate_per_second``, ``burst``), whichever is longer; ``forget`` resets the backoff;
- ``get`` blocks until a key is ready, the timeout passes or the queue shuts down;
- ``shutdown`` wakes every waiting ``get`` (it returns ``None``) and drops later adds.

There is no timer thread: ``get`` moves due delayed keys to the ready queue itself, measuring
time with the injected clock. With a ``FakeClock``, ``clock.advance(s)`` then
``get(timeout=0)`` is deterministic (a blocking ``get`` measures its timeout in the fake
clock's time too, so it returns only when the clock is advanced or another thread adds a key).
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from collections import deque
from collections.abc import Hashable
from typing import Protocol

from oper8d.clock import Clock, SystemClock

__all__ = ["FAIR_EVERY", "QueueObserver", "WorkQueue"]

#: every this many takes, the oldest queued key is taken, whatever its priority
FAIR_EVERY = 4
_HIGH, _NORMAL = 0, 1


class QueueObserver(Protocol):
    """Told what the queue does, for metrics (``runtime.metrics.QueueMetrics``).

    Called with the queue's lock held: keep it quick and never call back into the queue."""

    def added(self, key: Hashable) -> None:
        """``key`` was queued, or marked to be queued again once its worker is done
        (not called for an add that was deduplicated)."""
        ...

    def started(self, key: Hashable, waited_seconds: float) -> None:
        """A worker took ``key`` ``waited_seconds`` after it was queued."""
        ...

    def depth(self, n: int) -> None:
        """The number of ready keys is now ``n``."""
        ...


class _TokenBucket:
    """The overall limit on rate-limited adds: ``burst`` at once, then ``rate`` per second.

    Reserving always succeeds; the caller waits out the returned delay (tokens may go
    negative, so a burst of reservations is spread out rather than refused)."""

    def __init__(self, rate: float, burst: int, now: float):
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._last = now

    def reserve(self, now: float) -> float:
        if math.isinf(self._rate):
            return 0.0
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(self._burst, self._tokens + elapsed * self._rate)
        self._tokens -= 1.0
        return -self._tokens / self._rate if self._tokens < 0 else 0.0


class WorkQueue:
    """A thread-safe queue of keys (e.g. ``("namespace", "name")``); see the module docstring."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        base_delay: float = 0.005,
        max_delay: float = 300.0,
        rate_per_second: float = 10.0,
        burst: int = 100,
        observer: QueueObserver | None = None,
    ):
        if not 0 <= base_delay <= max_delay or math.isinf(max_delay):
            raise ValueError(
                f"WorkQueue backoff base_delay={base_delay!r}, max_delay={max_delay!r}: "
                "give finite seconds with 0 <= base_delay <= max_delay"
            )
        if not rate_per_second > 0 or burst < 1:
            raise ValueError(
                f"WorkQueue token bucket rate_per_second={rate_per_second!r}, burst={burst!r}: "
                "the rate must be > 0 (math.inf for no overall limit) and burst >= 1"
            )
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._base_delay = float(base_delay)
        self._max_delay = float(max_delay)
        self._bucket = _TokenBucket(rate_per_second, burst, self._clock.monotonic())
        self._observer = observer
        self._cond = threading.Condition()
        # Ready keys by priority, as (seq, key); _entry holds each ready key's live (lane,
        # seq), so an entry left behind by a move to the high lane is skipped when it comes up.
        self._lanes: tuple[deque[tuple[int, Hashable]], ...] = (deque(), deque())
        self._entry: dict[Hashable, tuple[int, int]] = {}
        self._takes = 0
        # Keys wanted but not yet handed out: in a lane, or waiting for their worker's done().
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._queued_at: dict[Hashable, float] = {}
        # Delayed keys: a heap of (due, seq, key); _due_at holds each key's live entry, so a
        # superseded (later) entry left in the heap is skipped when it comes up.
        self._delayed: list[tuple[float, int, Hashable]] = []
        self._due_at: dict[Hashable, float] = {}
        self._seq = itertools.count()
        self._failures: dict[Hashable, int] = {}
        self._shutting_down = False

    # --- adding ---------------------------------------------------------------------------

    def add(self, key: Hashable, *, high_priority: bool = False) -> None:
        """Queue ``key`` now, unless it is queued already (``high_priority`` moves a queued
        key ahead of the normal ones); if it is being processed, queue it again when its
        worker calls ``done``. Ignored after ``shutdown``."""
        with self._cond:
            self._add_locked(key, self._clock.monotonic(), _HIGH if high_priority else _NORMAL)

    def add_after(self, key: Hashable, seconds: float) -> None:
        """Queue ``key`` in ``seconds`` (at once when ``seconds <= 0``). When the key already
        waits for a delay, the earlier of the two stands."""
        seconds = float(seconds)
        if math.isnan(seconds):
            raise ValueError(f"cannot delay work queue key {key!r} by NaN seconds")
        with self._cond:
            now = self._clock.monotonic()
            if seconds <= 0:
                self._add_locked(key, now)
                return
            if self._shutting_down:
                return
            due = now + seconds
            if key in self._due_at and self._due_at[key] <= due:
                return
            self._due_at[key] = due
            heapq.heappush(self._delayed, (due, next(self._seq), key))
            # A waiting get() may now have to wake earlier than it planned.
            self._cond.notify_all()

    def add_if_idle(self, key: Hashable) -> None:
        """``add``, unless ``key`` is queued, being processed or waiting for a delay."""
        with self._cond:
            if key in self._dirty or key in self._processing or key in self._due_at:
                return
            self._add_locked(key, self._clock.monotonic())

    def add_rate_limited(self, key: Hashable) -> None:
        """Queue ``key`` after its backoff or the overall rate limit, whichever is longer,
        and count one more failure for it."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            # Exponent capped so 2.0**n cannot overflow; the product is capped by max_delay.
            backoff = min(self._max_delay, self._base_delay * 2.0 ** min(failures, 1000))
            overall = self._bucket.reserve(self._clock.monotonic())
        self.add_after(key, max(backoff, overall))

    def forget(self, key: Hashable) -> None:
        """Reset ``key``'s failure count (call it after a successful reconcile)."""
        with self._cond:
            self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        """How many times ``key`` was added rate-limited since it was last forgotten."""
        with self._cond:
            return self._failures.get(key, 0)

    # --- taking ---------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> Hashable | None:
        """The next ready key, marked in flight until ``done(key)``; ``None`` when ``timeout``
        seconds (``None``: no limit) pass with nothing ready, or once the queue shuts down."""
        with self._cond:
            now = self._clock.monotonic()
            deadline = None if timeout is None else now + max(0.0, timeout)
            while True:
                if self._shutting_down:
                    return None
                self._promote_due_locked(now)
                if self._entry:
                    return self._start_locked(self._take_locked(), now)
                wait = self._wait_seconds_locked(now, deadline)
                if wait is not None and wait <= 0:
                    return None
                self._cond.wait(wait)
                now = self._clock.monotonic()

    def done(self, key: Hashable) -> None:
        """The worker has finished with ``key``; queue it again if it was added meanwhile."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty and not self._shutting_down:
                self._enqueue_locked(key, _NORMAL)

    def shutdown(self) -> None:
        """Stop: every waiting and later ``get`` returns ``None``, adds are ignored.
        Keys in flight may still be passed to ``done``."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        """The number of ready keys (the queue's depth); delayed keys count once due."""
        with self._cond:
            if not self._shutting_down:
                self._promote_due_locked(self._clock.monotonic())
            return len(self._entry)

    # --- internals (callers hold self._cond) ------------------------------------------------

    def _add_locked(self, key: Hashable, now: float, lane: int = _NORMAL) -> None:
        if self._shutting_down:
            return
        if key in self._dirty:
            entry = self._entry.get(key)
            if entry is not None and lane < entry[0]:
                self._enqueue_locked(key, lane)  # moved ahead; the old entry goes stale
            return
        self._dirty.add(key)
        self._queued_at[key] = now
        if self._observer is not None:
            self._observer.added(key)
        if key in self._processing:
            return  # queued by done()
        self._enqueue_locked(key, lane)

    def _enqueue_locked(self, key: Hashable, lane: int) -> None:
        seq = next(self._seq)
        self._entry[key] = (lane, seq)
        self._lanes[lane].append((seq, key))
        self._depth_changed_locked()
        self._cond.notify()

    def _take_locked(self) -> Hashable:
        """The next ready key (there is one): the first high-priority one, or every
        ``FAIR_EVERY``-th take the oldest of either priority."""
        for lane in self._lanes:  # drop stale heads, so each head is a live entry
            while lane and self._entry.get(lane[0][1], (None, None))[1] != lane[0][0]:
                lane.popleft()
        self._takes += 1
        heads = [lane for lane in self._lanes if lane]
        if self._takes % FAIR_EVERY == 0:
            chosen = min(heads, key=lambda lane: lane[0][0])
        else:
            chosen = heads[0]
        _seq, key = chosen.popleft()
        del self._entry[key]
        return key

    def _start_locked(self, key: Hashable, now: float) -> Hashable:
        self._dirty.discard(key)
        self._processing.add(key)
        self._due_at.pop(key, None)  # its heap entry goes stale
        queued_at = self._queued_at.pop(key, now)
        if self._observer is not None:
            self._observer.started(key, max(0.0, now - queued_at))
        self._depth_changed_locked()
        return key

    def _promote_due_locked(self, now: float) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key = heapq.heappop(self._delayed)
            if self._due_at.get(key) != due:
                continue  # superseded by an earlier delay that was already promoted
            del self._due_at[key]
            self._add_locked(key, now)

    def _next_due_locked(self) -> float | None:
        while self._delayed:
            due, _, key = self._delayed[0]
            if self._due_at.get(key) == due:
                return due
            heapq.heappop(self._delayed)  # stale entry
        return None

    def _wait_seconds_locked(self, now: float, deadline: float | None) -> float | None:
        """How long get() may block: until the timeout or the next delayed key is due."""
        waits = []
        if deadline is not None:
            waits.append(deadline - now)
        next_due = self._next_due_locked()
        if next_due is not None:
            waits.append(next_due - now)
        if not waits:
            return None
        return min(min(waits), threading.TIMEOUT_MAX)

    def _depth_changed_locked(self) -> None:
        if self._observer is not None:
            self._observer.depth(len(self._entry))
