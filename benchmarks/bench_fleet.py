"""Fleet benchmark: N WebApp CRs in one in-memory cluster, reconciled as the runtime does.

``python -m benchmarks.bench_fleet 100 1000 10000`` (or the ``fleet`` section of
``benchmarks.run``). For each size it creates N CRs of the webapp example (in 50
namespaces), then:

* first rollout: every CR is reconciled until its reconcile reports it stable (at most
  5 passes), CPU time and client requests per CR counted;
* steady no-op pass: one more reconcile of every CR, nothing changed. CPU per CR and
  requests per CR, with the fingerprint shortcut (``engine.fingerprint``, as
  ``oper8d run`` uses it) and without it (every reconcile in full).

Like the runtime, CRs are read from a local copy kept by the cluster's watch (the
runtime's informer cache), not with a GET, and the same watch feeds the ChangeTracker.
Peak RSS of the process is reported last (it includes the cluster itself, which a real
operator does not hold).
"""

from __future__ import annotations

import argparse
import copy
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from oper8d.bundle import load_bundle
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.simulate import DefaultSimulator
from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.engine.session import SeededRandoms
from oper8d.objects import Obj

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "operators" / "webapp"
NAMESPACES = 50
MAX_PASSES = 5


@dataclass(frozen=True)
class FleetResult:
    crs: int
    rollout_cpu_per_cr: float
    rollout_requests_per_cr: dict[str, float]
    objects_per_cr: float
    noop_cpu_per_cr: float
    noop_requests_per_cr: dict[str, float]
    noop_full_cpu_per_cr: float
    noop_full_requests_per_cr: dict[str, float]
    skipped: int


class _Fleet:
    """The cluster, a watch-fed copy of the CRs, and a reconciler with a ChangeTracker."""

    def __init__(self, crs: int):
        bundle = load_bundle(EXAMPLE)
        (self.controller,) = bundle.controllers
        self.clock = FakeClock(datetime(2025, 1, 1, tzinfo=UTC))
        self.cluster = MemoryCluster(
            clock=self.clock.now,
            uid_factory=sequential_uids("b"),
            simulator=DefaultSimulator(delay_writes=0),
        )
        kind = self.controller.resource
        self.cluster.register_kind(kind.api_version, kind.kind, namespaced=True)
        self.tracker = ChangeTracker(clock=self.clock, sees_everything=True)
        self.crs: dict[tuple[str, str], Obj] = {}
        self.cluster.watch(self._on_event)
        options = ReconcilerOptions(
            field_manager="oper8d",
            max_workers=1,
            clock=self.clock,
            randoms=lambda c, cr: SeededRandoms("fleet"),
        )
        self.full = Reconciler(bundle, self.controller, self.cluster, options)
        self.skipping = Reconciler(
            bundle,
            self.controller,
            self.cluster,
            ReconcilerOptions(**{**options.__dict__, "changes": self.tracker}),
        )
        base = yaml.safe_load((EXAMPLE / "samples" / "webapp.yaml").read_text())
        self.keys = []
        for i in range(crs):
            cr = copy.deepcopy(base)
            cr["metadata"]["name"] = f"w{i}"
            cr["metadata"]["namespace"] = f"ns{i % NAMESPACES}"
            self.cluster.apply(cr, field_manager="bench")
            self.keys.append((f"ns{i % NAMESPACES}", f"w{i}"))

    def _on_event(self, event: str, obj: Obj) -> None:
        kind = self.controller.resource
        if obj.get("kind") == kind.kind:
            key = (obj["metadata"].get("namespace"), obj["metadata"]["name"])
            if event == "DELETED":
                self.crs.pop(key, None)
            else:
                self.crs[key] = obj
        self.tracker.observe(event, obj)

    def pass_over(self, reconciler: Reconciler) -> tuple[float, Counter[str]]:
        self.cluster.reset_requests()
        start = time.process_time()
        for key in self.keys:
            reconciler.reconcile_object(self.crs[key])
        return time.process_time() - start, Counter(self.cluster.requests)


def run_fleet(crs: int) -> FleetResult:
    fleet = _Fleet(crs)
    fleet.cluster.reset_requests()
    start = time.process_time()
    for key in fleet.keys:
        for _ in range(MAX_PASSES):
            if fleet.skipping.reconcile_object(fleet.crs[key]).stable:
                break
    rollout_cpu = time.process_time() - start
    rollout = Counter(fleet.cluster.requests)
    owned = sum(
        len(fleet.cluster.list(a, k, label_selector="oper8d.io/owner-uid"))
        for a, k in fleet.controller.deployed_kinds()
    )
    before = fleet.tracker.skipped
    noop_cpu, noop = fleet.pass_over(fleet.skipping)
    skipped = fleet.tracker.skipped - before
    full_cpu, full = fleet.pass_over(fleet.full)

    def per_cr(counts: Counter[str]) -> dict[str, float]:
        return {verb: n / crs for verb, n in sorted(counts.items())}

    return FleetResult(
        crs=crs,
        rollout_cpu_per_cr=rollout_cpu / crs,
        rollout_requests_per_cr=per_cr(rollout),
        objects_per_cr=owned / crs,
        noop_cpu_per_cr=noop_cpu / crs,
        noop_requests_per_cr=per_cr(noop),
        noop_full_cpu_per_cr=full_cpu / crs,
        noop_full_requests_per_cr=per_cr(full),
        skipped=skipped,
    )


def _requests(per: dict[str, float]) -> str:
    total = sum(per.values())
    parts = ", ".join(f"{verb} {n:g}" for verb, n in per.items())
    return f"{total:g}" + (f" ({parts})" if parts else "")


def table(results: Sequence[FleetResult]) -> list[str]:
    """The markdown rows of ``benchmarks.run``'s fleet section."""
    lines = [
        "| CRs | rollout CPU/CR | rollout requests/CR | objects/CR | no-op CPU/CR "
        "| no-op requests/CR | skipped | full no-op CPU/CR | full no-op requests/CR |",
        "|---:|---:|---|---:|---:|---|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.crs:,} | {1e3 * r.rollout_cpu_per_cr:.2f} ms "
            f"| {_requests(r.rollout_requests_per_cr)} | {r.objects_per_cr:g} "
            f"| {1e3 * r.noop_cpu_per_cr:.3f} ms | {_requests(r.noop_requests_per_cr)} "
            f"| {r.skipped:,} | {1e3 * r.noop_full_cpu_per_cr:.2f} ms "
            f"| {_requests(r.noop_full_requests_per_cr)} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_fleet", description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 1000])
    args = parser.parse_args(argv)
    results = [run_fleet(n) for n in args.sizes]
    print("\n".join(table(results)))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS {rss_mb:,.0f} MB (cluster, cache copy and engine in one process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
