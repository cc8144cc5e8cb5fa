"""Dependency graphs and the event-driven runners that walk them.

``Graph`` is an immutable directed graph over node names (component names, in
practice): cycle detection that names the cycle, a stable topological order,
deletion order and levels. ``bundle.compile`` uses it to reject cycles and
``engine.rollout`` runs the deploy and verify graphs with ``run_serial`` or
``run_concurrent``; ``cli graph`` prints its levels.

The runners start a node the moment its last upstream node completes: no
polling and no sleeps, so a chain costs microseconds of scheduling per node
(oper8 polled every 50 ms, about 1 s for a chain of 10). When a node fails its
descendants stay unstarted while independent branches keep running.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported by run_concurrent: serial runs, offline ones, never need it)
    import queue
    from concurrent.futures import Executor, Future

__all__ = ["CycleError", "Graph", "RunResult", "run_concurrent", "run_serial"]


class CycleError(Exception):
    """The graph has a dependency cycle. ``cycle`` lists it closed, e.g. ``["a", "b", "a"]``."""

    def __init__(self, cycle: list[str]):
        self.cycle = list(cycle)
        super().__init__(f"dependency cycle: {' -> '.join(self.cycle)}")


class Graph:
    """An immutable directed graph; an edge ``(upstream, downstream)`` means
    *downstream* needs *upstream* first. Every order this class returns is
    deterministic and breaks ties by the order the nodes were given in."""

    __slots__ = ("_down", "_edges", "_index", "_nodes", "_topo", "_up")

    def __init__(self, nodes: Iterable[str], edges: Iterable[tuple[str, str]]):
        self._nodes: tuple[str, ...] = tuple(nodes)
        self._index: dict[str, int] = {}
        for position, node in enumerate(self._nodes):
            if node in self._index:
                raise ValueError(f"node {node!r} is listed twice; node names must be unique")
            self._index[node] = position

        unique_edges: dict[tuple[str, str], None] = {}  # dict keeps first-seen order
        for upstream, downstream in edges:
            for end in (upstream, downstream):
                if end not in self._index:
                    raise ValueError(
                        f"edge {upstream!r} -> {downstream!r} names unknown node {end!r}; "
                        "add it to the nodes or fix the edge"
                    )
            unique_edges[(upstream, downstream)] = None
        self._edges: tuple[tuple[str, str], ...] = tuple(unique_edges)

        ups: dict[str, list[str]] = {node: [] for node in self._nodes}
        downs: dict[str, list[str]] = {node: [] for node in self._nodes}
        for upstream, downstream in self._edges:
            ups[downstream].append(upstream)
            downs[upstream].append(downstream)
        # Neighbours sorted by node position: every traversal below is deterministic.
        self._up = {n: tuple(sorted(us, key=self._index.__getitem__)) for n, us in ups.items()}
        self._down = {n: tuple(sorted(ds, key=self._index.__getitem__)) for n, ds in downs.items()}
        self._topo: tuple[str, ...] | None = None

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes, in the order they were given."""
        return self._nodes

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """The distinct edges, in the order they were first given."""
        return self._edges

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node: object) -> bool:
        return node in self._index

    def __repr__(self) -> str:
        return f"Graph(nodes={list(self._nodes)!r}, edges={list(self._edges)!r})"

    def _check(self, node: str) -> None:
        if node not in self._index:
            raise ValueError(f"unknown node {node!r}; the graph has {list(self._nodes)!r}")

    def upstream(self, node: str) -> frozenset[str]:
        """The nodes ``node`` directly depends on."""
        self._check(node)
        return frozenset(self._up[node])

    def downstream(self, node: str) -> frozenset[str]:
        """The nodes that directly depend on ``node``."""
        self._check(node)
        return frozenset(self._down[node])

    def descendants(self, node: str) -> frozenset[str]:
        """Everything reachable downstream of ``node`` (``node`` itself only if on a cycle)."""
        self._check(node)
        return self._reach(node, self._down)

    def ancestors(self, node: str) -> frozenset[str]:
        """Everything ``node`` depends on, transitively (itself only if on a cycle)."""
        self._check(node)
        return self._reach(node, self._up)

    @staticmethod
    def _reach(start: str, neighbours: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
        seen: set[str] = set()
        todo = list(neighbours[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(neighbours[node])
        return frozenset(seen)

    def find_cycle(self) -> list[str] | None:
        """One cycle, closed (``["a", "b", "a"]``) and starting at its earliest-given
        node, or None. The same graph always gives the same cycle."""
        white, grey, black = 0, 1, 2
        colour = dict.fromkeys(self._nodes, white)
        for root in self._nodes:
            if colour[root] != white:
                continue
            # Iterative depth-first search: a chain of thousands must not hit the recursion limit.
            path: list[str] = [root]
            on_path: dict[str, int] = {root: 0}
            children = [iter(self._down[root])]
            colour[root] = grey
            while children:
                for child in children[-1]:
                    if colour[child] == grey:
                        return self._closed_cycle(path[on_path[child] :])
                    if colour[child] == white:
                        colour[child] = grey
                        on_path[child] = len(path)
                        path.append(child)
                        children.append(iter(self._down[child]))
                        break
                else:
                    done = path.pop()
                    del on_path[done]
                    colour[done] = black
                    children.pop()
        return None

    def _closed_cycle(self, cycle: list[str]) -> list[str]:
        start = min(range(len(cycle)), key=lambda i: self._index[cycle[i]])
        rotated = cycle[start:] + cycle[:start]
        return [*rotated, rotated[0]]

    def check_acyclic(self) -> None:
        """Raise ``CycleError`` naming a cycle if there is one."""
        cycle = self.find_cycle()
        if cycle is not None:
            raise CycleError(cycle)

    def topological_order(self) -> list[str]:
        """Upstream before downstream (Kahn's algorithm); among nodes that are ready
        together, the earlier-given comes first. Raises ``CycleError``."""
        if self._topo is None:
            self._topo = tuple(self._kahn(self._up, self._down))
        return list(self._topo)

    def reverse_order(self) -> list[str]:
        """Downstream before upstream, for deletion; ties broken by given order."""
        return self._kahn(self._down, self._up)

    def _kahn(
        self, before: Mapping[str, tuple[str, ...]], after: Mapping[str, tuple[str, ...]]
    ) -> list[str]:
        waiting = {node: len(before[node]) for node in self._nodes}
        ready = [self._index[node] for node in self._nodes if not waiting[node]]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            node = self._nodes[heapq.heappop(ready)]
            order.append(node)
            for nxt in after[node]:
                waiting[nxt] -= 1
                if not waiting[nxt]:
                    heapq.heappush(ready, self._index[nxt])
        if len(order) < len(self._nodes):
            self.check_acyclic()
            raise AssertionError("Kahn's algorithm stalled on a graph without a cycle")
        return order

    def levels(self) -> list[list[str]]:
        """Waves of nodes that can run together: a node sits one level below its
        deepest upstream node; each wave lists nodes in given order."""
        level: dict[str, int] = {}
        for node in self.topological_order():
            level[node] = 1 + max((level[u] for u in self._up[node]), default=-1)
        waves: list[list[str]] = [[] for _ in range(1 + max(level.values(), default=-1))]
        for node in self._nodes:
            waves[level[node]].append(node)
        return waves

    def subgraph(self, nodes: Iterable[str]) -> Graph:
        """The graph induced by ``nodes`` (kept in this graph's order, with the edges
        between them)."""
        keep = set(nodes)
        for node in keep:
            self._check(node)
        return Graph(
            (n for n in self._nodes if n in keep),
            ((u, d) for u, d in self._edges if u in keep and d in keep),
        )


@dataclass(frozen=True)
class RunResult:
    """What a run did. ``failed`` keeps failure order, so its first entry is the first error."""

    completed: tuple[str, ...]  # in completion order
    failed: Mapping[str, BaseException] = field(default_factory=dict)
    unstarted: frozenset[str] = frozenset()  # an upstream failed, or the run was stopped
    stopped: bool = False  # should_stop() returned True before every node had started

    def ok(self) -> bool:
        """Every node completed."""
        return not self.failed and not self.unstarted


def _result(
    graph: Graph, completed: list[str], failed: dict[str, BaseException], stopped: bool
) -> RunResult:
    unstarted = frozenset(graph.nodes).difference(completed, failed)
    return RunResult(tuple(completed), MappingProxyType(failed), unstarted, stopped)


def run_serial(
    graph: Graph,
    work: Callable[[str], None],
    *,
    should_stop: Callable[[], bool] | None = None,
) -> RunResult:
    """Run ``work(node)`` for every node in topological order, in the calling thread.

    A node whose ``work`` raises an ``Exception`` is failed and its descendants are
    skipped; ``should_stop()`` is asked before each start and, once true, leaves the
    rest unstarted. Other ``BaseException``s (KeyboardInterrupt) propagate at once.
    Raises ``CycleError`` before running anything if the graph has a cycle.
    """
    completed: list[str] = []
    done: set[str] = set()
    failed: dict[str, BaseException] = {}
    stopped = False
    for node in graph.topological_order():
        if not done.issuperset(graph.upstream(node)):
            continue
        if should_stop is not None and should_stop():
            stopped = True
            break
        try:
            work(node)
        except Exception as exc:
            failed[node] = exc
            continue
        completed.append(node)
        done.add(node)
    return _result(graph, completed, failed, stopped)


def run_concurrent(
    graph: Graph,
    work: Callable[[str], None],
    *,
    max_workers: int = 4,
    executor: Executor | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RunResult:
    """Run ``work(node)`` for every node on up to ``max_workers`` threads; a node is
    submitted the moment its last upstream node completes. A node that is the only one
    able to run (nothing in flight, nothing else ready: each link of a chain) runs in the
    calling thread instead, as ``run_serial`` runs it.

    Same failure and ``should_stop`` rules as ``run_serial``. Ready nodes are
    submitted in topological order. ``executor`` (default: a private thread pool) runs
    the other nodes; scheduling stays in the calling thread. A ``BaseException`` that is
    not an ``Exception`` (KeyboardInterrupt), from ``work`` or raised in the calling
    thread, is re-raised once the work already in flight has finished, and nothing new
    is started meanwhile.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be at least 1, got {max_workers}")
    order = graph.topological_order()  # raises CycleError before anything runs
    if not order:
        return RunResult(())
    scheduler = _Scheduler(graph, order, work, max_workers, should_stop)
    if executor is not None:
        return scheduler.run(executor)
    from concurrent.futures import ThreadPoolExecutor

    workers = min(max_workers, len(order))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="oper8d-dag") as pool:
        return scheduler.run(pool)


class _Scheduler:
    """One concurrent run's bookkeeping; touched only by the calling thread."""

    def __init__(
        self,
        graph: Graph,
        order: list[str],
        work: Callable[[str], None],
        max_workers: int,
        should_stop: Callable[[], bool] | None,
    ):
        self.graph = graph
        self.order = order
        self.work = work
        self.max_workers = max_workers
        self.should_stop = should_stop
        self.priority = {node: i for i, node in enumerate(order)}
        self.waiting = {node: len(graph.upstream(node)) for node in order}
        self.ready = [self.priority[n] for n in order if not self.waiting[n]]  # sorted: a heap
        # Workers' done-callbacks post finished futures here; the calling thread blocks on it.
        import queue

        self.finished: queue.SimpleQueue[Future[None]] = queue.SimpleQueue()
        self.in_flight: dict[Future[None], str] = {}
        self.completed: list[str] = []
        self.failed: dict[str, BaseException] = {}
        self.halted = False  # start nothing new: stopped, interrupted or cancelled
        self.stopped = False
        self.interrupt: BaseException | None = None

    def run(self, executor: Executor) -> RunResult:
        try:
            while True:
                self._start_ready(executor)
                if not self.in_flight:
                    break
                self._record(self.finished.get())
        except BaseException:
            # Raised here (Ctrl-C while waiting, should_stop failing, a shut-down executor):
            # leave no work running behind the caller's back.
            from concurrent.futures import wait

            for future in self.in_flight:
                future.cancel()
            wait(list(self.in_flight))
            raise
        if self.interrupt is not None:
            raise self.interrupt
        return _result(self.graph, self.completed, self.failed, self.stopped)

    def _start_ready(self, executor: Executor) -> None:
        while self.ready and not self.halted and len(self.in_flight) < self.max_workers:
            if self.should_stop is not None and self.should_stop():
                self.halted = self.stopped = True
                return
            node = self.order[heapq.heappop(self.ready)]
            if not self.in_flight and not self.ready:
                # the only node that can run now: run it here, as ``run_serial`` would.
                # Handing it to a worker and waiting would only add two thread switches
                # (most of a chain's scheduling cost, and no parallelism to gain)
                self._run_here(node)
                continue
            future = executor.submit(self.work, node)
            self.in_flight[future] = node
            future.add_done_callback(self.finished.put)

    def _run_here(self, node: str) -> None:
        try:
            self.work(node)
        except BaseException as exc:  # recorded as a worker's would be (nothing is in flight)
            self._done(node, exc)
        else:
            self._done(node, None)

    def _record(self, future: Future[None]) -> None:
        node = self.in_flight.pop(future)
        if future.cancelled():  # someone shut the given executor down: the node never ran
            self.halted = True
            return
        self._done(node, future.exception())

    def _done(self, node: str, error: BaseException | None) -> None:
        if error is None:
            self.completed.append(node)
            for nxt in self.graph.downstream(node):
                self.waiting[nxt] -= 1
                if not self.waiting[nxt]:
                    heapq.heappush(self.ready, self.priority[nxt])
        elif isinstance(error, Exception):
            self.failed[node] = error
        else:
            self.halted = True
            if self.interrupt is None:
                self.interrupt = error
