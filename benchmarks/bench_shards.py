"""Sharded replicas on a real control plane: ``python -m benchmarks.bench_shards``.

For each replica count R (``--replicas 1,3``): a fresh envtest of Kubernetes 1.36 with the
ShardedListAndWatch gate (no scheduler, no kwok: nothing here runs Pods), R
``oper8d run --sharding`` processes (``benchmarks.replicas``), and a ConfigMap-only bundle
generated in a temp dir (two ConfigMaps per CR, a readiness rule over one of them that
holds at once), so the operator, not the kube controllers, is what is measured. N CRs are
created at once (8 threads), spread over namespaces (the default shard key). Measured:

- time from the first create to every CR Ready (one watch on the CRs), per-CR p50/p90;
- requests per CR over the rollout: the replicas' own count (``oper8d_api_requests_total``
  summed) and the apiserver's (``apiserver_request_total``, incl. the benchmark's 1 APPLY
  per CR); operator CPU per CR (user + system of every replica, /proc); RSS and peak RSS
  (VmHWM) per replica; watch events each replica received (``oper8d_watch_events_total``)
  and the CRs it held (``oper8d_shard_crs``);
- a no-op resync: each replica's next periodic resync (``--resync-period``) is spotted in
  its reconcile counter; its CPU is measured from just before it to a quiet second after,
  less the CPU of an idle window of the same length right after;
- with R >= 2, takeover after SIGKILL: one replica is killed, every CR's spec is edited at
  once, and the time from the kill until the killed replica's CRs have their ConfigMap
  updated by the survivors is taken (the Lease timings are the replicas' flags).

``--json`` runs one configuration and prints it as JSON; ``run_benchmark`` measures on an
Environment the caller started and ``run_fresh`` starts one
(tests/integration/test_bench_shards_smoke.py uses it). The report is
``benchmarks.shards_report``; the processes, ``benchmarks.replicas``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks.bench_cluster import (
    FirstSeen,
    _ready,
    _reconciled,
    _server_seconds_to_ready,
    _wait_until,
    apiserver_requests,
    percentiles,
)
from benchmarks.replicas import Replica, Sample, by_label, operator_argv, total
from benchmarks.shards_report import ReplicaStats, ShardRun, markdown
from oper8d.bundle.compile import load_bundle
from oper8d.cluster.kube import KubeCluster
from oper8d.envtest import BuildError, Environment, StartError, build
from oper8d.manifests.install import install_crds
from oper8d.objects import Obj
from oper8d.runtime.hashing import assign, bucket_of

API_VERSION, KIND, PLURAL = "bench.oper8d.io/v1alpha1", "Setting", "settings"
#: the apiserver resources whose requests are counted (the CRs, what they own, Leases)
COUNTED = (PLURAL, f"{PLURAL}/status", "configmaps", "leases")
K8S = "1.36"
FM = "bench"
POLL = 0.25
BUNDLE = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata:
  name: shardbench
  version: 0.1.0
controllers:
  - name: setting
    resource:
      group: bench.oper8d.io
      version: v1alpha1
      kind: Setting
      schema:
        type: object
        properties:
          message: {type: string, default: hello}
    components:
      - name: config
        resources:
          - name: message
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: "{{ scoped_name('config') }}"
              data:
                MESSAGE: "{{ spec.message }}"
          - name: extra
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: "{{ scoped_name('extra') }}"
              data:
                SIZE: small
        readyWhen:
          - expr: "live('config.message').data.MESSAGE == spec.message"
            message: waiting for the message to be stored
"""


def write_bundle(where: Path) -> Path:
    """The ConfigMap-only bundle (see the module docstring) in ``where``."""
    (where / "operator.yaml").write_text(BUNDLE)
    return where


def cr(name: str, namespace: str, message: str) -> Obj:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": {"message": message}}


def run_benchmark(
    env: Environment,
    *,
    crs: int,
    replicas: int,
    crs_per_namespace: int = 5,
    workers: int = 4,
    lease: tuple[float, float, float] = (5.0, 3.0, 1.0),
    resync_period: float = 60.0,
    timeout: float = 600.0,
    log_level: str = "INFO",
) -> ShardRun:
    """Measure ``crs`` CRs over ``replicas`` sharded processes on a started 1.36 ``env``
    (one holding no other Settings: the replicas would count them as theirs too)."""
    run = ShardRun(crs=crs, replicas=replicas, workers=workers, lease=lease)
    run.resync_period, run.load_before = resync_period, os.getloadavg()
    prefix = f"s{uuid.uuid4().hex[:6]}"  # CR names are unique across runs and namespaces
    names = [f"{prefix}-{i:04d}" for i in range(crs)]
    spaces = [f"{uuid.uuid4().hex[:8]}-bench" for _ in range(math.ceil(crs / crs_per_namespace))]
    where = {name: spaces[i % len(spaces)] for i, name in enumerate(names)}
    run.namespaces = len(spaces)
    assert env.kubeconfig_path is not None
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp, env.api_client() as client:
        bundle_dir = write_bundle(Path(tmp))
        bench = KubeCluster(client, field_manager="bench")
        install_crds(bench, load_bundle(bundle_dir))
        for ns in spaces:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            bench.apply(namespace, field_manager="bench")
        flags = [
            *("--lease-duration", str(lease[0]), "--renew-deadline", str(lease[1])),
            *("--retry-period", str(lease[2]), "--resync-period", str(resync_period)),
            *("--max-concurrent-reconciles", str(workers)),
        ]
        argv = operator_argv(bundle_dir, env.kubeconfig_path, flags)
        procs = [Replica(f"replica-{i}", argv, Path(tmp) / f"r{i}.log") for i in range(replicas)]
        milestones = {"reconciled": _ours(prefix, _reconciled), "ready": _ours(prefix, _ready)}
        watch = FirstSeen(bench, (API_VERSION, KIND), "", milestones, crs)
        watch.start()
        try:
            started = time.monotonic()
            for p in procs:
                p.start(log_level)
            for p in procs:
                p.wait_ready(timeout)
            _wait_until("the replicas to share the buckets", lambda: _dealt(procs), timeout, POLL)
            run.replicas_ready_seconds = time.monotonic() - started
            _rollout(run, env, bench, watch, procs, names, where, timeout)
            _measure_resyncs(run, procs, timeout)
            if replicas >= 2:
                _takeover(run, bench, procs, names, where, prefix, timeout)
        except (TimeoutError, RuntimeError) as err:
            logs = "\n".join(f"--- {p.name}:\n{p.tail()}" for p in procs)
            raise RuntimeError(f"{err}\n{logs}") from err
        finally:
            watch.stop()
            for p in procs:
                p.stop()
    run.load_after = os.getloadavg()
    return run


def _ours(prefix: str, met: Callable[[Obj], bool]) -> Callable[[Obj], bool]:
    """``met``, for this run's CRs only (an environment may hold others)."""
    return lambda o: o["metadata"]["name"].startswith(prefix) and met(o)


def _dealt(procs: list[Replica]) -> bool:
    """Every replica sees them all, and every bucket is held by one of them."""
    samples = [p.metrics() for p in procs]
    members = all(total(s, "oper8d_shard_members") == len(procs) for s in samples)
    return members and sum(total(s, "oper8d_shard_buckets") for s in samples) == 64


def _reconcile_total(samples: list[Sample]) -> float:
    return total(samples, "oper8d_reconcile_total")


def _wait_quiet(procs: list[Replica], quiet: float, timeout: float) -> None:
    """Until no replica reconciled for ``quiet`` seconds and every queue is empty."""
    last: list[Any] = [None, time.monotonic()]

    def settled() -> bool:
        samples = [p.metrics() for p in procs]
        count = sum(_reconcile_total(s) for s in samples)
        depth = sum(total(s, "oper8d_workqueue_depth") for s in samples)
        now = time.monotonic()
        if count != last[0] or depth:
            last[:] = [count, now]
        return now - last[1] >= quiet

    _wait_until("quiet replicas", settled, timeout, POLL)


def _rollout(
    run: ShardRun,
    env: Environment,
    bench: KubeCluster,
    watch: FirstSeen,
    procs: list[Replica],
    names: list[str],
    where: dict[str, str],
    timeout: float,
) -> None:
    """Create every CR at once (8 threads), wait for all Ready and quiet replicas."""
    before = [(p.metrics(), p.cpu_seconds()) for p in procs]
    server_before = apiserver_requests(env)
    sent: dict[str, float] = {}

    def create(name: str) -> None:
        sent[name] = time.monotonic()
        bench.apply(cr(name, where[name], "hello"), field_manager="bench")

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="bench-create") as pool:
        list(pool.map(create, names))
    run.create_seconds = time.monotonic() - start
    ready = watch.at["ready"]
    if not watch.all_met["ready"].wait(timeout):
        raise TimeoutError(f"only {len(ready)} of {run.crs} CRs Ready after {timeout:.0f}s")
    run.all_ready_seconds = max(ready.values()) - start
    run.first_reconciled_seconds = max(watch.at["reconciled"].values()) - start
    run.ready_server = percentiles(
        [_server_seconds_to_ready(o) for o in watch.objects["ready"].values()]
    )
    run.ready_client = percentiles([ready[n] - sent[n] for n in names])
    _wait_quiet(procs, quiet=3.0, timeout=timeout)
    delta = apiserver_requests(env) - server_before
    run.apiserver_requests = {k: v for k, v in delta.items() if k.split(" ", 1)[1] in COUNTED}
    for p, (samples, cpu) in zip(procs, before, strict=True):
        now = p.metrics()
        rss, peak = p.memory_kib()
        run.per_replica.append(
            ReplicaStats(
                identity=p.identity,
                crs=int(total(now, "oper8d_shard_crs")),
                buckets=int(total(now, "oper8d_shard_buckets")),
                server_side=total(now, "oper8d_shard_server_side") == 1,
                cpu_seconds=p.cpu_seconds() - cpu,
                requests=_delta(now, samples, "oper8d_api_requests_total", "verb"),
                watch_events=_delta(now, samples, "oper8d_watch_events_total", "kind", "type"),
                reconciles=int(_reconcile_total(now) - _reconcile_total(samples)),
                rss_kib=rss,
                peak_rss_kib=peak,
            )
        )


def _delta(now: list[Sample], before: list[Sample], metric: str, *labels: str) -> dict[str, int]:
    return dict(+(by_label(now, metric, *labels) - by_label(before, metric, *labels)))


def _measure_resyncs(run: ShardRun, procs: list[Replica], timeout: float) -> None:
    """Each replica's next periodic resync, and an idle window as long (one thread each);
    a replica that holds no CR has nothing to resync (all zeros)."""
    wait = run.resync_period + timeout
    holding = [(p, s.crs > 0) for p, s in zip(procs, run.per_replica, strict=True)]
    with ThreadPoolExecutor(max_workers=len(procs), thread_name_prefix="bench-resync") as pool:
        done = list(
            pool.map(lambda ph: _resync_of(ph[0], wait) if ph[1] else (0, 0, 0, 0, 0), holding)
        )
    for stats, p, measured in zip(run.per_replica, procs, done, strict=True):
        window, stats.resync_reconciles, cpu, idle_cpu, stats.idle_reconciles = measured
        stats.resync_window_seconds, stats.resync_cpu_seconds = window, cpu
        stats.idle_cpu_seconds = idle_cpu
        stats.peak_rss_kib = max(stats.peak_rss_kib, p.memory_kib()[1])


class _Point(NamedTuple):
    """One sample of a replica: when, its CPU so far, its reconciles, and its activity
    (reconciles + work-queue adds: an add shows a resync starting before a reconcile ends)."""

    t: float
    cpu: float
    reconciles: float
    activity: float


def _point(p: Replica) -> _Point:
    cpu = p.cpu_seconds()  # before the counters: nothing of the window is missed
    samples = p.metrics()
    reconciles = _reconcile_total(samples)
    activity = reconciles + total(samples, "oper8d_workqueue_adds_total")
    return _Point(time.monotonic(), cpu, reconciles, activity)


def _resync_of(p: Replica, timeout: float) -> tuple[float, int, float, float, int]:
    """(window seconds, reconciles, CPU seconds, idle CPU seconds, idle reconciles)."""
    deadline = time.monotonic() + timeout
    base = _point(p)
    while (now := _point(p)).activity == base.activity:  # until the resync starts
        base = now
        if now.t > deadline:
            raise TimeoutError(f"no resync of {p.name} within {timeout:.0f}s")
        time.sleep(POLL)
    last_change = now
    while now.t - last_change.t < 1.0:  # until a quiet second
        time.sleep(POLL)
        now = _point(p)
        if now.activity != last_change.activity:
            last_change = now
    window = now.t - base.t
    idle_start = end = _point(p)
    while end.t - idle_start.t < window:
        time.sleep(POLL)
        end = _point(p)
    return (
        window,
        int(now.reconciles - base.reconciles),
        now.cpu - base.cpu,
        end.cpu - idle_start.cpu,
        int(end.activity - idle_start.activity),
    )


def _takeover(
    run: ShardRun,
    bench: KubeCluster,
    procs: list[Replica],
    names: list[str],
    where: dict[str, str],
    prefix: str,
    timeout: float,
) -> None:
    """SIGKILL the last replica, edit every CR, time until the survivors applied the edit."""
    buckets = assign(p.identity for p in procs)
    victim = procs[-1]

    def owner(name: str) -> str:
        b = bucket_of({"metadata": {"namespace": where[name]}}, "namespace")
        return next(who for who, held in buckets.items() if b in held)

    victims = {n for n in names if owner(n) == victim.identity}
    run.killed_crs = len(victims)

    def moved(o: Obj) -> bool:
        name = o["metadata"]["name"]
        return name.startswith(prefix) and (o.get("data") or {}).get("MESSAGE") == "moved"

    maps = FirstSeen(bench, ("v1", "ConfigMap"), "", {"moved": moved}, len(names))
    maps.start()
    try:
        victim.kill()
        killed = time.monotonic()
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="bench-edit") as pool:
            list(
                pool.map(
                    lambda n: bench.apply(cr(n, where[n], "moved"), field_manager="bench"), names
                )
            )
        run.edits_seconds = time.monotonic() - killed
        if not maps.all_met["moved"].wait(timeout):
            raise TimeoutError(
                f"only {len(maps.at['moved'])} of {len(names)} CRs applied after the kill"
            )
    finally:
        maps.stop()
    at = {key.removesuffix("-config"): t - killed for key, t in maps.at["moved"].items()}
    run.takeover = percentiles([at[n] for n in victims])
    run.survivors_converged = percentiles([at[n] for n in names if n not in victims])


def run_fresh(crs: int, replicas: int, **options: Any) -> ShardRun:
    """One configuration against a Kubernetes 1.36 Environment started for it."""
    bin_dir = build(k8s_version=K8S, cached_only=True)
    start = time.monotonic()
    with Environment(bin_dir=bin_dir, scheduler=False, kwok=False) as env:
        started = time.monotonic() - start
        run = run_benchmark(env, crs=crs, replicas=replicas, **options)
    run.envtest_start_seconds = started
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_shards", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--crs", type=int, default=1000, help="CRs to create (1000)")
    parser.add_argument("--replicas", default="1,3", help="replica counts (1,3)")
    parser.add_argument("--crs-per-namespace", type=int, default=5, help="(5)")
    parser.add_argument("--workers", type=int, default=4, help="reconciles at once per replica")
    parser.add_argument("--lease-duration", type=float, default=5.0, help="seconds (5)")
    parser.add_argument("--renew-deadline", type=float, default=3.0, help="seconds (3)")
    parser.add_argument("--retry-period", type=float, default=1.0, help="seconds (1)")
    parser.add_argument("--resync-period", type=float, default=60.0, help="seconds (60)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per wait")
    parser.add_argument("--log-level", default="INFO", help="the replicas' OPER8D_LOG_LEVEL")
    parser.add_argument("--json", action="store_true", help="one configuration, as JSON")
    args = parser.parse_args(argv)
    counts = [int(r) for r in args.replicas.split(",") if r.strip()]
    options = {
        "crs_per_namespace": args.crs_per_namespace,
        "workers": args.workers,
        "lease": (args.lease_duration, args.renew_deadline, args.retry_period),
        "resync_period": args.resync_period,
        "timeout": args.timeout,
        "log_level": args.log_level,
    }
    from benchmarks.run import machine

    start, lines = time.monotonic(), [f"- {k}: {v}" for k, v in machine()]
    try:
        runs = [run_fresh(args.crs, r, **options) for r in counts[: 1 if args.json else None]]
    except (BuildError, StartError, RuntimeError) as err:
        print(f"bench_shards: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(asdict(runs[0])))
        return 0
    after = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines.append(f"- load average at the end (1, 5, 15 min): {after}")
    print("\n".join([*lines, "", *markdown(runs)]))
    print(
        f"_whole run: {time.monotonic() - start:.0f} s; command: python -m "
        f"benchmarks.bench_shards {' '.join(argv if argv is not None else sys.argv[1:])}_"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
