"""What ``benchmarks.bench_shards`` measured for one configuration, and its markdown report.

``ShardRun`` is one replica count's run (``ReplicaStats`` per replica); ``markdown`` prints a
table row per configuration, then the detail of each (per replica: CRs held, watch events,
requests, CPU, RSS, resync CPU against an idle window; the takeover after SIGKILL).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from benchmarks.bench_cluster import _counts, _secs, _spread


@dataclass
class ReplicaStats:
    """One replica over the rollout (deltas from just before the first create to quiet)."""

    identity: str
    crs: int = 0
    buckets: int = 0
    server_side: bool = False
    cpu_seconds: float = 0.0
    requests: dict[str, int] = field(default_factory=dict)
    #: "kind type" -> watch events received
    watch_events: dict[str, int] = field(default_factory=dict)
    reconciles: int = 0
    rss_kib: int = 0
    peak_rss_kib: int = 0
    resync_window_seconds: float = 0.0
    resync_reconciles: int = 0
    resync_cpu_seconds: float = 0.0
    idle_cpu_seconds: float = 0.0
    #: reconciles and work-queue adds during the idle window (0 unless something woke it)
    idle_reconciles: int = 0


@dataclass
class ShardRun:
    """What one configuration measured (seconds, KiB, counts)."""

    crs: int
    replicas: int
    namespaces: int = 0
    workers: int = 4
    lease: tuple[float, float, float] = (5.0, 3.0, 1.0)
    resync_period: float = 60.0
    envtest_start_seconds: float = 0.0
    replicas_ready_seconds: float = 0.0
    create_seconds: float = 0.0
    first_reconciled_seconds: float = 0.0
    all_ready_seconds: float = 0.0
    ready_server: dict[str, float] = field(default_factory=dict)
    ready_client: dict[str, float] = field(default_factory=dict)
    per_replica: list[ReplicaStats] = field(default_factory=list)
    apiserver_requests: dict[str, int] = field(default_factory=dict)
    #: takeover after SIGKILL (R >= 2): the killed replica's CRs, and seconds from the kill
    killed_crs: int = 0
    edits_seconds: float = 0.0
    takeover: dict[str, float] = field(default_factory=dict)
    survivors_converged: dict[str, float] = field(default_factory=dict)
    load_before: tuple[float, ...] = ()
    load_after: tuple[float, ...] = ()

    @property
    def operator_requests(self) -> int:
        return sum(sum(r.requests.values()) for r in self.per_replica)

    @property
    def resync_cpu_per_cr(self) -> float:
        spent = sum(r.resync_cpu_seconds - r.idle_cpu_seconds for r in self.per_replica)
        return spent / self.crs


def _ms(seconds: float, crs: int) -> str:
    return f"{1000 * seconds / crs:.2f} ms"


def _mib(kib: int) -> str:
    return f"{kib / 1024:.0f}"


def markdown(runs: list[ShardRun]) -> list[str]:
    """A table row per configuration, then the detail of each."""
    out = [
        "| replicas | CRs | all Ready | to Ready p50 / p90 (watch) | requests per CR "
        "(operator / apiserver) | operator CPU per CR, rollout | no-op resync CPU per CR "
        "| CRs per replica | watch events per replica "
        "| RSS per replica, peak (MiB) | takeover after SIGKILL (max) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        server = sum(n for k, n in r.apiserver_requests.items() if not k.endswith("leases"))
        cpu = sum(s.cpu_seconds for s in r.per_replica)
        peaks = " / ".join(_mib(s.peak_rss_kib) for s in r.per_replica)
        held = " / ".join(str(s.crs) for s in r.per_replica)
        events = " / ".join(str(sum(s.watch_events.values())) for s in r.per_replica)
        taken = _secs(r.takeover["max"]) if r.takeover else "n/a"
        out.append(
            f"| {r.replicas} | {r.crs} | {_secs(r.all_ready_seconds)} "
            f"| {r.ready_client.get('p50', math.nan):.1f} / "
            f"{r.ready_client.get('p90', math.nan):.1f} s "
            f"| {r.operator_requests / r.crs:.1f} / {server / r.crs:.1f} "
            f"| {_ms(cpu, r.crs)} | {_ms(r.resync_cpu_per_cr * r.crs, r.crs)} "
            f"| {held} | {events} | {peaks} | {taken} |"
        )
    out.append("")
    for r in runs:
        out += _detail(r)
    return out


def _detail(r: ShardRun) -> list[str]:
    lease = " / ".join(f"{x:g}" for x in r.lease)
    out = [
        f"**{r.replicas} replica{'s' if r.replicas > 1 else ''}**, {r.crs} CRs in "
        f"{r.namespaces} namespaces ({r.workers} workers each; Lease duration / renew "
        f"deadline / retry {lease} s; resync period {r.resync_period:g} s; envtest started "
        f"in {_secs(r.envtest_start_seconds)}, replicas sharing in "
        f"{_secs(r.replicas_ready_seconds)}; load average {r.load_before[0]:.2f} before, "
        f"{r.load_after[0]:.2f} after):\n",
        f"- {r.crs} creates took {_secs(r.create_seconds)}; every CR reconciled after "
        f"{_secs(r.first_reconciled_seconds)}, Ready after {_secs(r.all_ready_seconds)}; "
        f"to Ready p50 / p90 / max: {_spread(r.ready_client, 1)} (watch), "
        f"{_spread(r.ready_server, 0)} (server, 1 s steps)",
        f"- apiserver requests per CR (incl. the benchmark's 1 APPLY per CR): "
        f"{_counts(r.apiserver_requests, r.crs)}",
    ]
    for i, s in enumerate(r.per_replica):
        woken = s.idle_reconciles
        idle = f"; {woken} reconciles or queue adds in the idle window" if woken else ""
        out.append(
            f"- replica {i}: {s.crs} CRs, {s.buckets} buckets, server shards CR lists: "
            f"{'yes' if s.server_side else 'no'}; watch events {_counts(s.watch_events)}; "
            f"requests {_counts(s.requests)}; {s.reconciles} reconciles; CPU "
            f"{_secs(s.cpu_seconds)}; RSS {_mib(s.rss_kib)} MiB (peak {_mib(s.peak_rss_kib)}); "
            f"resync: {s.resync_reconciles} reconciles, CPU {s.resync_cpu_seconds:.2f} s in "
            f"{s.resync_window_seconds:.1f} s against {s.idle_cpu_seconds:.2f} s idle{idle}"
        )
    if r.takeover:
        out.append(
            f"- SIGKILL of replica {r.replicas - 1} ({r.killed_crs} CRs), every CR edited "
            f"({_secs(r.edits_seconds)}): its CRs applied by the others after p50 / p90 / max "
            f"{_spread(r.takeover, 1)}; the survivors' own CRs after "
            f"{_spread(r.survivors_converged, 1)}"
        )
    elif r.replicas >= 2:
        out.append(f"- SIGKILL of replica {r.replicas - 1}: it held no CRs")
    return [*out, ""]
