"""Work-queue fairness (``runtime.queue.WorkQueue``): a CR whose events never stop (a hot
key, added again while it is being reconciled) is reconciled at most once per round of the
others: it goes to the back of the queue, so every other queued CR is reached."""

from __future__ import annotations

from oper8d.clock import FakeClock
from oper8d.runtime.queue import WorkQueue


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
