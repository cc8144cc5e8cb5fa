"""Work-queue fairness (``runtime.queue.WorkQueue``): a CR whose events never stop (a hot
key, added again while it is being reconciled) is reconciled at most once per round of the
others: it goes to the back of the queue, so every other queued CR is reached. A CR woken by
its own object goes ahead of new CRs, but no key waits longer than its turn among the older
ones."""

from __future__ import annotations

import itertools

from hypothesis import example, given
from hypothesis import strategies as st

from oper8d.clock import FakeClock
from oper8d.runtime.queue import FAIR_EVERY, WorkQueue


def test_a_hot_key_cannot_starve_the_others() -> None:
    queue = WorkQueue(clock=FakeClock())
    others = [f"cr{i}" for i in range(50)]
    queue.add("hot")
    for key in others:
        queue.add(key)
    order = []
    while (key := queue.get(timeout=0)) is not None and len(order) < 200:
        order.append(key)
        queue.add("hot")  # an event for the hot CR during every reconcile
        queue.done(key)
    assert set(others) <= set(order[:100])
    # between two reconciles of the hot CR, every other queued CR had its turn
    hot = [i for i, k in enumerate(order) if k == "hot"]
    assert hot[1] - hot[0] == len(others) + 1


def test_a_key_added_many_times_while_queued_is_reconciled_once() -> None:
    queue = WorkQueue(clock=FakeClock())
    for _ in range(1000):
        queue.add("hot")
    queue.add("other")
    assert [queue.get(timeout=0), queue.get(timeout=0), queue.get(timeout=0)] == [
        "hot",
        "other",
        None,
    ]


# -- priorities ---------------------------------------------------------------------------


def take_all(queue: WorkQueue) -> list[object]:
    order = []
    while (key := queue.get(timeout=0)) is not None:
        order.append(key)
        queue.done(key)
    return order


def test_a_cr_woken_by_its_object_is_taken_before_a_burst_of_new_crs() -> None:
    queue = WorkQueue(clock=FakeClock())
    for i in range(10):
        queue.add(f"new{i}")
    queue.add("woken", high_priority=True)

    order = take_all(queue)

    assert order[0] == "woken"
    assert order[1:] == [f"new{i}" for i in range(10)]


def test_every_few_takes_the_oldest_key_goes_first_whatever_its_priority() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add("old")
    for i in range(10):
        queue.add(f"woken{i}", high_priority=True)

    order = take_all(queue)

    assert order.index("old") == FAIR_EVERY - 1


def test_a_queued_key_woken_moves_ahead_and_is_still_taken_once() -> None:
    queue = WorkQueue(clock=FakeClock())
    for key in ("a", "b", "c"):
        queue.add(key)
    queue.add("c", high_priority=True)

    assert len(queue) == 3
    assert take_all(queue) == ["c", "a", "b"]


def test_a_key_woken_while_it_is_processed_goes_to_the_back_of_the_normal_keys() -> None:
    queue = WorkQueue(clock=FakeClock())
    queue.add("hot")
    queue.add("other")
    assert queue.get(timeout=0) == "hot"
    queue.add("hot", high_priority=True)  # its object changed during its reconcile
    queue.done("hot")

    assert take_all(queue) == ["other", "hot"]


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from("abcdefgh"), st.booleans()),
        st.tuples(st.just("take"), st.just(""), st.just(False)),
    ),
    max_size=120,
)


#: a normal key, then more woken keys than its turn allows ahead of it
STARVING = [("add", "a", False)] + [("add", k, True) for k in "bcdefgh"] + [("take", "", False)] * 8


@example(STARVING)
@given(OPS)
def test_no_key_waits_longer_than_its_turn_among_the_older_keys(
    ops: list[tuple[str, str, bool]],
) -> None:
    # a key with p older keys queued is taken within FAIR_EVERY * (p + 1) takes: each
    # FAIR_EVERY-th take is of the oldest key, so each takes it or an older one
    queue = WorkQueue(clock=FakeClock())
    queued: dict[str, tuple[int, int, int]] = {}  # key: (age, takes then, older keys then)
    lane: dict[str, bool] = {}
    ages = itertools.count()
    takes = 0

    def enqueue(key: str, high: bool) -> None:
        age = next(ages)
        older = sum(1 for other, (a, _t, _o) in queued.items() if other != key and a < age)
        queued[key], lane[key] = (age, takes, older), high

    for op, key, high in ops:
        if op == "add":
            if key not in queued:
                enqueue(key, high)
            elif high and not lane[key]:
                enqueue(key, True)  # moved ahead: it counts as queued anew
            queue.add(key, high_priority=high)
            continue
        taken = queue.get(timeout=0)
        if taken is None:
            assert not queued
            continue
        takes += 1
        _age, since, older = queued.pop(str(taken))
        assert takes - since <= FAIR_EVERY * (older + 1)
        queue.done(taken)
    assert len(queue) == len(queued)
