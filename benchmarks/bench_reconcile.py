"""Reconcile benchmarks: one CR of a generated bundle against the in-memory cluster.

Used by ``benchmarks.run`` and the smoke test. For each bundle shape (a chain of N
components, each depending on the previous; or N independent components; 3 objects per
component, as in oper8's measured anchor) and each runner (concurrent with 4 workers,
serial) it times:

* the first reconcile: a fresh cluster holding only the CR, every object created, and a
  simulator that makes workloads ready at once, so the one pass deploys and verifies;
* a steady reconcile: the CR is already stable, nothing changed; the pass must send no
  write. The client requests of one such pass (gets, lists, writes) are reported.

Setup (cluster, CR, reconciler) is not timed; only ``Reconciler.reconcile``.
"""

from __future__ import annotations

import itertools
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.gen import Shape, write_bundle
from benchmarks.timing import Row, Samples, sample
from oper8d.bundle import Bundle, load_bundle
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MUTATING_VERBS, MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator
from oper8d.dag import Graph, run_concurrent, run_serial
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions
from oper8d.engine.session import SeededRandoms
from oper8d.offline import EPOCH, controller_for

#: (shape, components, oper8's measured ms per reconcile or None) measured by default
Scenario = tuple[Shape, int, float | None]
SCENARIOS: tuple[Scenario, ...] = (
    ("chain", 10, 1024.0),
    ("chain", 50, 5180.0),
    ("independent", 10, 117.0),
)
RUNNERS = (("concurrent, 4 workers", 4), ("serial", 1))


@dataclass
class Requests:
    """Client requests of one reconcile."""

    gets: int
    lists: int
    writes: int

    @classmethod
    def of(cls, counts: Counter[str]) -> Requests:
        return cls(
            gets=counts["get"],
            lists=counts["list"],
            writes=sum(counts[v] for v in MUTATING_VERBS),
        )

    def columns(self) -> dict[str, str]:
        return {"gets": str(self.gets), "lists": str(self.lists), "writes": str(self.writes)}


class Fixture:
    """A fresh in-memory cluster holding the CR, and a reconciler for it."""

    def __init__(self, bundle: Bundle, cr: dict[str, Any], max_workers: int) -> None:
        controller = controller_for(bundle, cr)
        clock = FakeClock(EPOCH)
        self.cluster = MemoryCluster(
            clock=clock.now,
            uid_factory=sequential_uids("bench"),
            simulator=DefaultSimulator(delay_writes=0),  # ready as soon as written
        )
        kind = controller.resource
        self.cluster.register_kind(kind.api_version, kind.kind, namespaced=kind.namespaced)
        self.cluster.apply(cr, field_manager="bench")
        self.namespace = cr["metadata"].get("namespace")
        self.name = cr["metadata"]["name"]
        seed = f"{self.namespace}/{self.name}"
        self.reconciler = Reconciler(
            bundle,
            controller,
            self.cluster,
            ReconcilerOptions(
                field_manager="oper8d",
                max_workers=max_workers,
                clock=clock,
                randoms=lambda _cluster, _cr: SeededRandoms(seed),
            ),
        )

    def reconcile(self) -> ReconcileResult:
        return self.reconciler.reconcile(self.namespace, self.name)

    def counted(self) -> tuple[ReconcileResult, Requests]:
        """One reconcile and the client requests it sent."""
        self.cluster.reset_requests()
        result = self.reconcile()
        return result, Requests.of(self.cluster.requests)


def is_ready(result: ReconcileResult) -> bool:
    for cond in (result.status or {}).get("conditions", []):
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def bench_scenario(
    bundle: Bundle,
    cr: dict[str, Any],
    label: str,
    *,
    max_workers: int,
    repeat_first: int,
    repeat_steady: int,
) -> list[Row]:
    """First and steady reconcile of ``cr`` with one runner."""
    fixture: list[Fixture] = []

    def fresh() -> None:
        fixture[:] = [Fixture(bundle, cr, max_workers)]

    first = sample(lambda: fixture[0].reconcile(), setup=fresh, repeat=repeat_first, warmup=1)
    # a last, counted first reconcile on a fresh cluster, which then serves the steady runs
    fresh()
    result, first_requests = fixture[0].counted()
    if not is_ready(result):
        raise RuntimeError(f"{label}: the first reconcile did not verify: {result.error}")
    steady_fixture = fixture[0]
    steady_fixture.reconcile()  # settles anything the first pass left (none expected)
    steady = sample(steady_fixture.reconcile, repeat=repeat_steady)
    result, steady_requests = steady_fixture.counted()
    if not is_ready(result):
        raise RuntimeError(f"{label}: the CR is not Ready in a steady reconcile: {result.error}")
    return [
        Row(f"{label}: first reconcile", first, "ms", first_requests.columns()),
        Row(f"{label}: steady no-op reconcile", steady, "ms", steady_requests.columns()),
    ]


def bench_reconcile(
    *,
    scenarios: tuple[Scenario, ...] = SCENARIOS,
    runners: tuple[tuple[str, int], ...] = RUNNERS,
    repeat_first: int = 7,
    repeat_steady: int = 15,
) -> list[Row]:
    """Every scenario with every runner; rows carry oper8's anchor for comparison."""
    rows: list[Row] = []
    for shape, components, anchor_ms in scenarios:
        with tempfile.TemporaryDirectory(prefix="oper8d-bench-") as tmp:
            generated = write_bundle(Path(tmp), components=components, shape=shape)
            bundle = load_bundle(generated.path)
        for runner, workers in runners:
            label = f"{shape} of {components}, {runner}"
            for row in bench_scenario(
                bundle,
                generated.cr,
                label,
                max_workers=workers,
                repeat_first=repeat_first,
                repeat_steady=repeat_steady,
            ):
                if anchor_ms is not None:
                    row.extra["oper8 (ms)"] = f"{anchor_ms:,.0f}"
                    ratio = anchor_ms / (row.samples.median * 1e3)
                    row.extra["oper8 ÷ oper8d"] = f"{ratio:,.0f}x"
                rows.append(row)
    return rows


def bench_example(
    bundle_path: Path, cr_path: Path, *, repeat_first: int = 7, repeat_steady: int = 15
) -> list[Row]:
    """First and steady reconcile of an example bundle's CR (concurrent runner)."""
    bundle = load_bundle(bundle_path)
    cr = yaml.safe_load(Path(cr_path).read_text(encoding="utf-8"))
    cr.setdefault("metadata", {}).setdefault("namespace", "default")
    return bench_scenario(
        bundle,
        cr,
        f"example `{bundle.name}`, concurrent, 4 workers",
        max_workers=4,
        repeat_first=repeat_first,
        repeat_steady=repeat_steady,
    )


def bench_dag(*, nodes: int = 50, repeat: int = 20) -> list[Row]:
    """The runners' own cost: a chain of ``nodes`` whose work does nothing. What is left is
    scheduling (thread hand-offs for the concurrent runner), per node."""
    names = [f"n{i}" for i in range(nodes)]
    chain = Graph(names, list(itertools.pairwise(names)))

    def nothing(_node: str) -> None:
        return None

    def per_node(samples: Samples) -> Samples:
        return Samples(tuple(s / nodes for s in samples.seconds))

    concurrent = sample(lambda: run_concurrent(chain, nothing, max_workers=4), repeat=repeat)
    serial = sample(lambda: run_serial(chain, nothing), repeat=repeat)
    label = f"DAG runner, chain of {nodes} no-op nodes, per node"
    return [
        Row(f"{label}: concurrent, 4 workers", per_node(concurrent), "µs"),
        Row(f"{label}: serial", per_node(serial), "µs"),
    ]
