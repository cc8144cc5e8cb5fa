"""The watchdog's hard deadline ends code that never checks the render budget, in the main
thread and in worker threads, and never raises after the block it guards has ended."""

from __future__ import annotations

import random
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from oper8d.limits import LimitExceeded
from oper8d.template.deadline import HardDeadlineExceeded, Watchdog


@pytest.fixture
def watchdog() -> Watchdog:
    return Watchdog()


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Threads take turns every 10 µs (not 5 ms): the watchdog fires near its time, and
    the race test meets the block's end more often."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(interval)


def spin(seconds: float) -> None:
    """Pure Python work for ``seconds``, never looking at any budget."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def spin_forever() -> None:
    while True:
        pass


def ended_after(watchdog: Watchdog, seconds: float, work: Callable[[], object]) -> float:
    """How long ``work`` ran under a deadline of ``seconds`` before the deadline ended it."""
    start = time.monotonic()
    with pytest.raises(HardDeadlineExceeded), watchdog.deadline(seconds):
        work()
    return time.monotonic() - start


def test_a_busy_loop_in_the_main_thread_ends_at_the_deadline(watchdog: Watchdog) -> None:
    assert 0.2 <= ended_after(watchdog, 0.2, spin_forever) < 1.2


def test_a_busy_loop_in_a_worker_thread_ends_at_the_deadline(watchdog: Watchdog) -> None:
    took: list[float] = []
    worker = threading.Thread(target=lambda: took.append(ended_after(watchdog, 0.2, spin_forever)))
    worker.start()
    worker.join(5)
    assert not worker.is_alive()
    assert took and 0.2 <= took[0] < 1.2


def test_wrapping_a_long_word_at_width_one_ends_at_the_deadline(watchdog: Watchdog) -> None:
    # what the wordwrap filter calls: quadratic, in Python, checking no budget
    assert ended_after(watchdog, 0.2, lambda: textwrap.wrap("x" * 300_000, 1)) < 1.2


def test_the_error_is_limit_exceeded_naming_template_seconds(watchdog: Watchdog) -> None:
    with pytest.raises(LimitExceeded) as caught, watchdog.deadline(0.05):
        spin_forever()
    assert caught.value.limit == "templateSeconds"
    assert "the template ran longer than 0.05 s" in str(caught.value)
    assert "--limit templateSeconds=N" in str(caught.value)


def test_the_message_names_the_seconds_inside_the_block_too(watchdog: Watchdog) -> None:
    # the render's failure handling quotes the message before the block ends
    messages = []
    with watchdog.deadline(0.05):
        try:
            spin_forever()
        except HardDeadlineExceeded as exc:
            messages.append(str(exc))
    assert "the template ran longer than 0.05 s" in messages[0]


def test_another_exception_class_can_be_raised(watchdog: Watchdog) -> None:
    with pytest.raises(TimeoutError), watchdog.deadline(0.05, TimeoutError):
        spin_forever()


def test_a_block_ending_in_time_gets_no_exception_later(watchdog: Watchdog) -> None:
    with watchdog.deadline(0.05):
        spin(0.01)
    spin(0.2)  # past the deadline, outside the block: nothing arrives


def test_a_long_call_into_c_ends_first(watchdog: Watchdog) -> None:
    # The exception arrives at the next bytecode: one C call (here a sleep; json.dumps of
    # a huge value alike) finishes first. ``limits.check_expanded`` bounds those calls.
    reached = []
    start = time.monotonic()
    with pytest.raises(HardDeadlineExceeded), watchdog.deadline(0.02):
        time.sleep(0.3)
        reached.append(True)
    assert time.monotonic() - start >= 0.3
    assert not reached


def test_many_blocks_ending_near_their_deadline_never_leak_it(
    watchdog: Watchdog, fast_switching: None
) -> None:
    pick = random.Random(17)
    fired = 0
    for _ in range(10_000):
        try:
            with watchdog.deadline(1e-4):
                spin(pick.choice((0.0, 1e-4, 1.5e-4)))
        except HardDeadlineExceeded:
            fired += 1
        # an exception arriving after the block would be raised here, outside the try
        for _ in range(20):
            pass
    spin(0.05)
    assert 0 < fired < 10_000


def test_nested_deadlines_arm_only_the_outermost(watchdog: Watchdog) -> None:
    with watchdog.deadline(10) as outer, watchdog.deadline(0.01) as inner:
        spin(0.1)  # the inner deadline's time passes: only the outer one holds
    assert outer.armed
    assert not inner.armed

    start = time.monotonic()
    with pytest.raises(HardDeadlineExceeded), watchdog.deadline(0.1), watchdog.deadline(10):
        spin_forever()
    assert time.monotonic() - start < 1.1

    with watchdog.deadline(10) as after:  # the thread has no deadline left: this one arms
        pass
    assert after.armed


def test_each_thread_has_its_own_deadline(watchdog: Watchdog) -> None:
    results: dict[str, str] = {}

    def render(name: str, seconds: float, work: Callable[[], object]) -> None:
        try:
            with watchdog.deadline(seconds):
                work()
            results[name] = "done"
        except HardDeadlineExceeded:
            results[name] = "stopped"

    threads = [
        threading.Thread(target=render, args=("runaway", 0.1, spin_forever)),
        threading.Thread(target=render, args=("quick", 5, lambda: spin(0.3))),
    ]
    with watchdog.deadline(5):  # this thread's deadline does not cover the others
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
    assert results == {"runaway": "stopped", "quick": "done"}


def test_the_watchdog_thread_ends_when_idle_and_starts_again() -> None:
    watchdog = Watchdog(idle_seconds=0.05)
    with watchdog.deadline(1):
        pass
    deadline = time.monotonic() + 2
    while watchdog._thread is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert watchdog._thread is None
    assert ended_after(watchdog, 0.05, spin_forever) < 1.05


def test_blocks_that_ended_do_not_pile_up(watchdog: Watchdog) -> None:
    for _ in range(5000):
        with watchdog.deadline(60):
            pass
    assert len(watchdog._heap) <= 1024
