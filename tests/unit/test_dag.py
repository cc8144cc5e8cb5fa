"""Graph algorithms and the event-driven runners of oper8d.dag.

Concurrency tests hold nodes with Events and Barriers (with generous safety
timeouts so a broken runner fails instead of hanging); nothing sleeps.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.dag import CycleError, Graph, RunResult, run_concurrent, run_serial

SAFETY_TIMEOUT = 10.0  # seconds; only reached when the runner under test is broken

Runner = Callable[..., RunResult]
RUNNERS = {
    "serial": run_serial,
    "concurrent": partial(run_concurrent, max_workers=4),
}


@pytest.fixture(params=sorted(RUNNERS))
def runner(request: pytest.FixtureRequest) -> Runner:
    return RUNNERS[request.param]


def chain(names: list[str]) -> Graph:
    return Graph(names, itertools.pairwise(names))


def diamond() -> Graph:
    return Graph(["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])


class Recorder:
    """Thread-safe record of which nodes ran, in which order, and how often."""

    def __init__(self, fail: Iterable[str] = ()):
        self.lock = threading.Lock()
        self.events: list[tuple[str, str]] = []  # ("start" | "finish", node)
        self.fail = frozenset(fail)

    def __call__(self, node: str) -> None:
        with self.lock:
            self.events.append(("start", node))
        if node in self.fail:
            raise RuntimeError(f"{node} broke")
        with self.lock:
            self.events.append(("finish", node))

    def started(self) -> list[str]:
        return [node for kind, node in self.events if kind == "start"]


# --- graph construction -------------------------------------------------------------------


def test_an_edge_naming_an_unknown_node_is_rejected_with_its_name() -> None:
    with pytest.raises(ValueError, match="'ghost'"):
        Graph(["a", "b"], [("a", "ghost")])


def test_a_node_listed_twice_is_rejected() -> None:
    with pytest.raises(ValueError, match="'a' is listed twice"):
        Graph(["a", "b", "a"], [])


def test_duplicate_edges_collapse_into_one() -> None:
    graph = Graph(["a", "b"], [("a", "b"), ("a", "b")])
    assert graph.edges == (("a", "b"),)
    assert graph.upstream("b") == {"a"}
    assert graph.downstream("a") == {"b"}


def test_asking_about_an_unknown_node_names_it() -> None:
    with pytest.raises(ValueError, match="'zz'"):
        diamond().descendants("zz")


# --- cycles ---------------------------------------------------------------------------------


def test_a_self_loop_is_a_cycle_of_one_node() -> None:
    graph = Graph(["a", "b"], [("a", "b"), ("b", "b")])
    assert graph.find_cycle() == ["b", "b"]
    with pytest.raises(CycleError, match=r"^dependency cycle: b -> b$"):
        graph.check_acyclic()


def test_a_two_node_cycle_is_named() -> None:
    graph = Graph(["x", "y"], [("x", "y"), ("y", "x")])
    with pytest.raises(CycleError) as caught:
        graph.topological_order()
    assert caught.value.cycle == ["x", "y", "x"]
    assert str(caught.value) == "dependency cycle: x -> y -> x"


def test_a_long_cycle_is_named_in_full_from_its_earliest_given_node() -> None:
    names = [f"n{i}" for i in range(8)]
    graph = Graph(names, [*itertools.pairwise(names), ("n7", "n0")])
    assert graph.find_cycle() == [*names, "n0"]


def test_a_cycle_reachable_only_from_some_nodes_is_found() -> None:
    # a -> b is clean; the cycle p -> q -> r -> p hangs off a different root, given last.
    graph = Graph(
        ["a", "b", "p", "q", "r", "s"], [("a", "b"), ("s", "p"), ("p", "q"), ("q", "r"), ("r", "p")]
    )
    assert graph.find_cycle() == ["p", "q", "r", "p"]
    with pytest.raises(CycleError) as caught:
        graph.levels()
    assert caught.value.cycle == ["p", "q", "r", "p"]


def test_the_same_graph_always_reports_the_same_cycle() -> None:
    def build() -> Graph:
        return Graph(["a", "b", "c", "d"], [("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")])

    assert build().find_cycle() == build().find_cycle() == ["a", "b", "a"]


def test_an_acyclic_graph_has_no_cycle() -> None:
    assert diamond().find_cycle() is None
    diamond().check_acyclic()


def test_cycle_detection_copes_with_a_very_long_chain() -> None:
    names = [f"n{i}" for i in range(5000)]
    graph = Graph(names, [*itertools.pairwise(names), (names[-1], names[0])])
    cycle = graph.find_cycle()
    assert cycle is not None
    assert len(cycle) == 5001


@st.composite
def any_graph(draw: st.DrawFn) -> Graph:
    names = [f"n{i}" for i in range(draw(st.integers(0, 9)))]
    if not names:
        return Graph([], [])
    pairs = st.tuples(st.sampled_from(names), st.sampled_from(names))
    return Graph(names, draw(st.lists(pairs, max_size=20)))


@given(any_graph())
def test_a_graph_either_has_a_real_cycle_or_a_topological_order(graph: Graph) -> None:
    cycle = graph.find_cycle()
    if cycle is None:
        order = graph.topological_order()
        assert sorted(order) == sorted(graph.nodes)
        position = {node: i for i, node in enumerate(order)}
        assert all(position[u] < position[d] for u, d in graph.edges)
    else:
        assert cycle[0] == cycle[-1]
        assert all(step in graph.edges for step in itertools.pairwise(cycle))
        assert len(set(cycle[:-1])) == len(cycle) - 1  # a simple cycle
        with pytest.raises(CycleError):
            graph.topological_order()


# --- orders ----------------------------------------------------------------------------------


@st.composite
def dag(draw: st.DrawFn, max_nodes: int = 12) -> Graph:
    """A random DAG whose nodes are given in a shuffled (not necessarily topological) order."""
    size = draw(st.integers(1, max_nodes))
    rank = [f"n{i}" for i in range(size)]  # edges only go from lower to higher rank
    pairs = st.tuples(st.integers(0, size - 1), st.integers(0, size - 1))
    edges = [(rank[i], rank[j]) for i, j in draw(st.lists(pairs, max_size=3 * size)) if i < j]
    return Graph(draw(st.permutations(rank)), edges)


def test_independent_nodes_keep_the_order_they_were_given_in() -> None:
    graph = Graph(["c", "a", "d", "b"], [("d", "a")])
    assert graph.topological_order() == ["c", "d", "a", "b"]


def test_topological_order_prefers_the_earliest_given_ready_node() -> None:
    graph = Graph(["z", "y", "x", "w"], [("y", "z"), ("w", "x")])
    assert graph.topological_order() == ["y", "z", "w", "x"]


def test_reverse_order_deletes_downstream_first_and_keeps_given_order_between_peers() -> None:
    assert diamond().reverse_order() == ["d", "b", "c", "a"]
    assert Graph(["p", "q"], []).reverse_order() == ["p", "q"]


def test_levels_group_nodes_into_waves_after_their_deepest_upstream() -> None:
    graph = Graph(
        ["db", "cache", "api", "worker", "ui"],
        [("db", "api"), ("cache", "api"), ("db", "worker"), ("api", "ui"), ("worker", "ui")],
    )
    assert graph.levels() == [["db", "cache"], ["api", "worker"], ["ui"]]
    assert Graph([], []).levels() == []


@given(dag())
def test_every_order_respects_every_edge(graph: Graph) -> None:
    forward = {node: i for i, node in enumerate(graph.topological_order())}
    backward = {node: i for i, node in enumerate(graph.reverse_order())}
    level = {node: i for i, wave in enumerate(graph.levels()) for node in wave}
    for up, down in graph.edges:
        assert forward[up] < forward[down]
        assert backward[down] < backward[up]
        assert level[up] < level[down]
    assert sorted(forward) == sorted(backward) == sorted(level) == sorted(graph.nodes)


def test_descendants_and_ancestors_are_transitive() -> None:
    graph = Graph(["a", "b", "c", "d", "e"], [("a", "b"), ("b", "c"), ("d", "c")])
    assert graph.descendants("a") == {"b", "c"}
    assert graph.ancestors("c") == {"a", "b", "d"}
    assert graph.descendants("e") == frozenset()
    assert graph.upstream("c") == {"b", "d"}


def test_a_subgraph_keeps_only_edges_between_kept_nodes() -> None:
    sub = diamond().subgraph(["d", "b", "a"])
    assert sub.nodes == ("a", "b", "d")
    assert set(sub.edges) == {("a", "b"), ("b", "d")}
    with pytest.raises(ValueError, match="'q'"):
        diamond().subgraph(["a", "q"])


# --- runners ---------------------------------------------------------------------------------


def test_a_failure_stops_only_its_downstream_while_an_independent_branch_completes(
    runner: Runner,
) -> None:
    graph = Graph(
        ["a", "b", "c", "x", "y", "z"],
        [("a", "b"), ("b", "c"), ("x", "y"), ("y", "z")],
    )
    result = runner(graph, Recorder(fail={"b"}))
    assert set(result.completed) == {"a", "x", "y", "z"}
    assert list(result.failed) == ["b"]
    assert str(result.failed["b"]) == "b broke"
    assert result.unstarted == {"c"}
    assert not result.ok()


def test_a_node_below_a_failure_and_a_success_stays_unstarted(runner: Runner) -> None:
    work = Recorder(fail={"c"})
    result = runner(diamond(), work)
    assert "d" in result.unstarted
    assert "d" not in work.started()


def test_every_node_runs_exactly_once(runner: Runner) -> None:
    names = [f"n{i}" for i in range(30)]
    edges = [(names[i], names[j]) for i in range(30) for j in (2 * i + 1, 2 * i + 2) if j < 30]
    work = Recorder()
    result = runner(Graph(names, edges), work)
    assert sorted(work.started()) == sorted(names)
    assert result.ok()
    assert sorted(result.completed) == sorted(names)


def test_serial_runner_runs_in_topological_order() -> None:
    graph = Graph(["c", "a", "b"], [("b", "a")])
    work = Recorder()
    result = run_serial(graph, work)
    assert work.started() == ["c", "b", "a"] == list(result.completed)


def test_concurrent_nodes_start_only_after_all_their_upstreams_finished() -> None:
    names = [f"n{i}" for i in range(60)]
    edges = [(names[i], names[j]) for i in range(60) for j in (i + 1, i + 7, 3 * i) if i < j < 60]
    graph = Graph(names, edges)
    work = Recorder()
    result = run_concurrent(graph, work, max_workers=8)
    assert result.ok()
    position = {event: i for i, event in enumerate(work.events)}
    for up, down in graph.edges:
        assert position[("finish", up)] < position[("start", down)]


def test_concurrent_runner_never_exceeds_max_workers_and_uses_them_all() -> None:
    lock = threading.Lock()
    running = 0
    peak = 0
    # Three nodes at a time must meet at the barrier: the run only completes if the
    # runner really keeps three in flight, and the counter shows it never keeps more.
    barrier = threading.Barrier(3, timeout=SAFETY_TIMEOUT)

    def work(node: str) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        barrier.wait()
        with lock:
            running -= 1

    graph = Graph([f"n{i}" for i in range(12)], [])
    result = run_concurrent(graph, work, max_workers=3)
    assert result.ok()
    assert peak == 3


def test_should_stop_leaves_the_remaining_nodes_unstarted(runner: Runner) -> None:
    work = Recorder()
    result = runner(
        chain(["a", "b", "c", "d", "e"]), work, should_stop=lambda: "b" in work.started()
    )
    assert result.completed == ("a", "b")
    assert result.unstarted == {"c", "d", "e"}
    assert result.stopped
    assert work.started() == ["a", "b"]


def test_a_run_that_was_never_stopped_says_so(runner: Runner) -> None:
    result = runner(diamond(), Recorder(), should_stop=lambda: False)
    assert result.ok()
    assert not result.stopped


def test_a_long_chain_completes_in_order(runner: Runner) -> None:
    names = [f"c{i}" for i in range(50)]
    result = runner(chain(names), Recorder())
    assert result.completed == tuple(names)


def test_a_wide_graph_completes(runner: Runner) -> None:
    names = ["root", *(f"w{i}" for i in range(200))]
    result = runner(Graph(names, [("root", n) for n in names[1:]]), Recorder())
    assert result.ok()
    assert sorted(result.completed) == sorted(names)


def test_a_dependent_starts_without_waiting_for_an_unrelated_slow_node() -> None:
    # C is independent and blocks until B runs; B needs A. A runner that waited for
    # C (or for a whole level) before starting B would never finish C.
    b_ran = threading.Event()

    def work(node: str) -> None:
        if node == "b":
            b_ran.set()
        if node == "c" and not b_ran.wait(SAFETY_TIMEOUT):
            raise AssertionError("b never started while c was running")

    graph = Graph(["c", "a", "b"], [("a", "b")])
    result = run_concurrent(graph, work, max_workers=2)
    assert result.ok(), result.failed


def test_a_cycle_is_reported_before_any_work_runs(runner: Runner) -> None:
    work = Recorder()
    with pytest.raises(CycleError):
        runner(Graph(["a", "b", "c"], [("b", "c"), ("c", "b")]), work)
    assert work.events == []


def test_an_empty_graph_is_a_successful_run(runner: Runner) -> None:
    assert runner(Graph([], []), Recorder()) == RunResult(())


def test_keyboard_interrupt_in_serial_work_propagates_at_once() -> None:
    work = Recorder()

    def interrupting(node: str) -> None:
        work(node)
        if node == "b":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_serial(chain(["a", "b", "c"]), interrupting)
    assert work.started() == ["a", "b"]


def test_keyboard_interrupt_is_reraised_once_in_flight_work_finishes_and_nothing_new_starts() -> (
    None
):
    y_started = threading.Event()
    release_y = threading.Event()
    ran: list[str] = []
    lock = threading.Lock()

    def work(node: str) -> None:
        with lock:
            ran.append(node)
        if node == "x":
            y_started.wait(SAFETY_TIMEOUT)
            release_y.set()
            raise KeyboardInterrupt
        if node == "y":
            y_started.set()
            release_y.wait(SAFETY_TIMEOUT)
            with lock:
                ran.append("y finished")

    # A given executor, because a private pool's shutdown would wait for y anyway.
    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(KeyboardInterrupt):
            run_concurrent(Graph(["x", "y", "z"], []), work, max_workers=2, executor=pool)
        with lock:
            assert sorted(ran) == ["x", "y", "y finished"]


def test_a_given_executor_is_used_and_left_open() -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        result = run_concurrent(diamond(), Recorder(), max_workers=2, executor=pool)
        assert result.ok()
        assert pool.submit(lambda: 42).result() == 42


def test_max_workers_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_workers"):
        run_concurrent(diamond(), Recorder(), max_workers=0)


@settings(max_examples=60, deadline=None)
@given(graph=dag(), data=st.data())
def test_runners_agree_on_who_completes_fails_and_never_starts(
    graph: Graph, data: st.DataObject
) -> None:
    failing = set(data.draw(st.lists(st.sampled_from(graph.nodes), max_size=3)))
    # A node never starts exactly when something it depends on is set to fail.
    unstarted = {n for n in graph.nodes if graph.ancestors(n) & failing}
    serial = run_serial(graph, Recorder(fail=failing))
    one_worker = run_concurrent(graph, Recorder(fail=failing), max_workers=1)
    many = run_concurrent(graph, Recorder(fail=failing), max_workers=3)
    for result in (serial, one_worker, many):
        assert result.unstarted == unstarted
        assert set(result.failed) == failing - unstarted
        assert set(result.completed) == set(graph.nodes) - failing - unstarted
        done_at = {node: i for i, node in enumerate(result.completed)}
        assert all(done_at[u] < done_at[d] for u, d in graph.edges if d in done_at)
    # With one worker the concurrent runner submits in the serial runner's order.
    assert one_worker.completed == serial.completed


def test_a_node_that_alone_can_run_runs_in_the_calling_thread_and_peers_on_workers() -> None:
    # a chain's links have nothing to run beside them: a hand-off to a worker would only
    # cost thread switches. Peers still run on the workers.
    here = threading.get_ident()
    where: dict[str, bool] = {}
    lock = threading.Lock()

    def work(node: str) -> None:
        with lock:
            where[node] = threading.get_ident() == here

    graph = Graph(["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    assert run_concurrent(graph, work, max_workers=2).ok()
    assert where == {"a": True, "b": False, "c": False, "d": True}


def test_a_failure_or_an_interrupt_in_the_calling_thread_counts_as_a_workers_would() -> None:
    def fail_b(node: str) -> None:
        if node == "b":
            raise RuntimeError("b broke")

    chain = Graph(["a", "b", "c"], [("a", "b"), ("b", "c")])
    result = run_concurrent(chain, fail_b, max_workers=4)
    assert result.completed == ("a",)
    assert set(result.failed) == {"b"} and result.unstarted == {"c"}

    def interrupt(node: str) -> None:
        if node == "a":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_concurrent(chain, interrupt, max_workers=4)
