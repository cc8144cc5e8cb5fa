"""The webapp operator against a real control plane: ``python -m benchmarks.bench_cluster``.

Starts a fresh envtest (etcd, kube-apiserver, controller-manager, scheduler, kwok with
enough fake nodes), runs the Manager in this process, creates N WebApp CRs at once and
reports: time until all are Ready (one watch on the CRs), per-CR time to Ready, the
operator's API requests per CR (its client's count, GETs split by kind) and the
apiserver's count of requests to the operator's resources over the same first rollout,
this process's peak RSS, and a full resync of every CR (its time, and its writes: the
operator's own count and the apiserver's, both must be 0).

Each worker count runs in a child process of its own, so ``ru_maxrss`` is that run's peak
(the envtest binaries are separate processes: the RSS is the operator's, plus the small
watcher and CR-creating threads of the benchmark). ``--json`` runs one configuration in
this process and prints it as JSON (what the children do). ``run_benchmark`` measures on
an Environment the caller started (``tests/integration/test_bench_cluster_smoke.py`` uses
it); ``section`` is what ``benchmarks.run --cluster`` appends. Needs the built test
environment (testenv/build.sh); 200 CRs take about a minute per configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import ssl
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from benchmarks.memory import peak_rss_mib
from oper8d.bundle.compile import load_bundle
from oper8d.cluster.base import Obj
from oper8d.cluster.kube import KubeCluster
from oper8d.engine.readiness_kinds import RULES
from oper8d.envtest import Environment
from oper8d.errors import ClusterError
from oper8d.manifests.install import install_crds
from oper8d.runtime.manager import Manager, ManagerOptions
from oper8d.runtime.metrics import RECONCILE_RESULTS

REPO_ROOT = Path(__file__).resolve().parents[1]
WEBAPP = REPO_ROOT / "examples" / "operators" / "webapp"
API_VERSION, KIND = "demo.oper8d.io/v1alpha1", "WebApp"
#: what the webapp operator writes (objects it deploys, and its CR); the kube components'
#: own writes (pods/status, deployments/status, leases, events) are not the operator's
MANAGED = ("configmaps", "deployments", "services", "ingresses", "horizontalpodautoscalers")
WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")
PODS_PER_FAKE_NODE = 110


@dataclass
class ClusterRun:
    """What one configuration measured (seconds, KiB, counts)."""

    crs: int
    workers: int
    fake_nodes: int = 0
    envtest_start_seconds: float = 0.0
    create_seconds: float = 0.0
    first_reconciled_seconds: float = 0.0
    #: every CR's Deployment Available (the kube controllers and kwok did their part)
    all_available_seconds: float = 0.0
    all_ready_seconds: float = 0.0
    #: creationTimestamp to the Ready condition's lastTransitionTime (1 s resolution)
    ready_server: dict[str, float] = field(default_factory=dict)
    #: create request sent to Ready seen by the benchmark's watch (this process's clock)
    ready_client: dict[str, float] = field(default_factory=dict)
    #: a CR's Deployment seen Available to the CR seen Ready
    ready_after_available: dict[str, float] = field(default_factory=dict)
    #: a CR's Deployment seen ready by the engine's own rule (Available, and Progressing
    #: NewReplicaSetAvailable, which the deployment controller writes in a later update) to
    #: the CR seen Ready: the operator's own delay (its other objects are ready on creation)
    ready_after_last_object: dict[str, float] = field(default_factory=dict)
    cpu_seconds: float = 0.0
    reconciles: dict[str, int] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    #: the operator's GETs by kind (a miss of the owned-object cache goes to the server)
    gets_by_kind: dict[str, int] = field(default_factory=dict)
    #: the apiserver's count (``apiserver_request_total``) of requests to the WebApps and
    #: the resources they own, create to quiet, by "VERB resource[/sub]": the operator's,
    #: plus the benchmark's one APPLY per CR and its two list+watch
    apiserver_requests: dict[str, int] = field(default_factory=dict)
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    tracemalloc_peak_kib: int | None = None
    resync_seconds: float = 0.0
    resync_cpu_seconds: float = 0.0
    resync_reconciles: int = 0
    resync_requests: dict[str, int] = field(default_factory=dict)
    resync_writes: int = 0
    resync_apiserver_managed_writes: dict[str, int] = field(default_factory=dict)
    resync_apiserver_other_writes: dict[str, int] = field(default_factory=dict)
    load_before: tuple[float, ...] = ()
    load_after: tuple[float, ...] = ()


def fake_nodes_for(crs: int) -> int:
    """Nodes with room for twice the pods (one per CR): kwok nodes take 110 pods each."""
    return max(2, math.ceil(2 * crs / PODS_PER_FAKE_NODE))


def webapp_cr(name: str, namespace: str) -> Obj:
    """The sample with ingress and autoscaling, one replica (kwok pods stay cheap)."""
    spec = {"image": "nginx:1.27", "replicas": 1, "ingress": {"enabled": True}}
    spec["autoscaling"] = {"enabled": True, "maxReplicas": 3}
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


class FirstSeen:
    """One watch on a kind in a namespace (its own thread), recording when each object
    first met each named predicate (this process's monotonic clock), and the object then."""

    def __init__(
        self,
        cluster: KubeCluster,
        kind: tuple[str, str],
        namespace: str,
        predicates: dict[str, Callable[[Obj], bool]],
        expected: int,
    ):
        self._cluster, self._kind, self._namespace = cluster, kind, namespace
        self._predicates, self._expected = predicates, expected
        self.at: dict[str, dict[str, float]] = {name: {} for name in predicates}
        self.objects: dict[str, dict[str, Obj]] = {name: {} for name in predicates}
        self.all_met = {name: threading.Event() for name in predicates}
        self._stopping = threading.Event()
        self._stream: Any = None
        self._version = ""
        self._thread = threading.Thread(target=self._run, name="bench-watch", daemon=True)

    def start(self) -> None:
        self._relist()
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(5.0)

    def _relist(self) -> None:
        items, self._version = self._cluster.list_with_version(*self._kind, self._namespace)
        for item in items:
            self._see(item)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._stream = self._cluster.watch(
                    *self._kind,
                    namespace=self._namespace,
                    resource_version=self._version,
                    timeout_seconds=120,
                )
                for event in self._stream:
                    self._version = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._see(event["object"])
            except ClusterError as err:
                if self._stopping.is_set():
                    return
                if err.status == 410:
                    self._relist()
                else:
                    self._stopping.wait(0.5)

    def _see(self, obj: Obj) -> None:
        name, now = obj["metadata"]["name"], time.monotonic()
        for what, met in self._predicates.items():
            if name not in self.at[what] and met(obj):
                self.at[what][name], self.objects[what][name] = now, obj
                if len(self.at[what]) >= self._expected:
                    self.all_met[what].set()


def _condition(obj: Obj, type_: str) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == type_), {})


def _reconciled(cr: Obj) -> bool:
    return bool((cr.get("status") or {}).get("conditions"))


def _ready(obj: Obj) -> bool:
    return _condition(obj, "Ready").get("status") == "True"


def _available(deployment: Obj) -> bool:
    return _condition(deployment, "Available").get("status") == "True"


def _engine_ready(deployment: Obj) -> bool:
    return RULES[("apps", "Deployment")](deployment).ready


#: a CR's first status (its first reconcile finished), its Ready; a Deployment's Available,
#: and its readiness as the engine judges it
CR_MILESTONES = {"reconciled": _reconciled, "ready": _ready}
DEPLOYMENT_MILESTONES = {"available": _available, "ready": _engine_ready}


def _server_seconds_to_ready(cr: Obj) -> float:
    created = _parse_time(cr["metadata"]["creationTimestamp"])
    return _parse_time(_condition(cr, "Ready")["lastTransitionTime"]) - created


def _parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def percentiles(values: list[float]) -> dict[str, float]:
    """Nearest-rank p50, p90 and the maximum."""
    ordered = sorted(values)
    if not ordered:
        return {}

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return {"p50": rank(0.5), "p90": rank(0.9), "max": ordered[-1]}


def apiserver_writes(env: Environment) -> Counter[str]:
    """Writes the apiserver counted (``apiserver_request_total``), by "VERB resource[/sub]"."""
    return apiserver_requests(env, WRITE_VERBS)


def apiserver_requests(env: Environment, verbs: tuple[str, ...] | None = None) -> Counter[str]:
    """Requests the apiserver counted (``apiserver_request_total``) with one of ``verbs``
    (None: every verb), by "VERB resource[/sub]"."""
    context = ssl.create_default_context(cafile=str(env.ca_file))
    request = urllib.request.Request(f"{env.server_url}/metrics")
    request.add_header("Authorization", f"Bearer {env.admin_token}")
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        text = response.read().decode()
    totals: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name != "apiserver_request_total":
                continue
            if verbs is not None and s.labels.get("verb") not in verbs:
                continue
            where = "/".join(filter(None, (s.labels.get("resource"), s.labels.get("subresource"))))
            totals[f"{s.labels['verb']} {where}"] += int(s.value)
    return totals


def _is_managed(key: str) -> bool:
    where = key.split(" ", 1)[1]
    return where in MANAGED or where in ("webapps", "webapps/status")


def _reconcile_counts(manager: Manager) -> Counter[str]:
    counts: Counter[str] = Counter()
    for spec in manager.bundle.controllers:
        for result in RECONCILE_RESULTS:
            labels = {"controller": spec.name, "result": result}
            counts[result] += int(
                manager.metrics.registry.get_sample_value("oper8d_reconcile_total", labels) or 0
            )
    return counts


def _idle(manager: Manager) -> bool:
    return all(len(c.queue) == 0 and c.wait_idle(0.0) for c in manager.controllers)


def _wait_until(what: str, done: Callable[[], bool], timeout: float, poll: float = 0.02) -> None:
    """Poll an in-process condition (the manager's counters have no waitable event)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout:.0f}s")
        time.sleep(poll)


def _wait_quiet(manager: Manager, quiet: float, timeout: float) -> None:
    """Until no reconcile ran for ``quiet`` seconds and the queues are empty: the
    deployments' and HPAs' last status changes have been seen and handled."""
    last: list[Any] = [None, time.monotonic()]

    def settled() -> bool:
        total, now = sum(_reconcile_counts(manager).values()), time.monotonic()
        if total != last[0] or not _idle(manager):
            last[:] = [total, now]
        return now - last[1] >= quiet

    _wait_until("a quiet operator", settled, timeout, poll=0.1)


def _rss_kib() -> int:
    return int(peak_rss_mib() * 1024)


def run_benchmark(
    env: Environment,
    *,
    crs: int,
    workers: int,
    timeout: float = 300.0,
    trace_memory: bool = False,
    cleanup: bool = False,
) -> ClusterRun:
    """Measure ``crs`` WebApps on a started ``env`` in a fresh namespace (see the module
    docstring). ``cleanup`` deletes the CRs (while the operator runs, for their finalizers)
    and the namespace afterwards: for a shared environment."""
    run = ClusterRun(crs=crs, workers=workers, load_before=os.getloadavg())
    bundle = load_bundle(WEBAPP)
    with env.api_client() as admin_client, env.api_client() as operator_client:
        bench = KubeCluster(admin_client, field_manager="bench")
        install_crds(bench, bundle)
        namespace = f"bench-{uuid.uuid4().hex[:8]}"
        bench.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            field_manager="bench",
        )
        watches = (
            FirstSeen(bench, (API_VERSION, KIND), namespace, CR_MILESTONES, crs),
            FirstSeen(bench, ("apps/v1", "Deployment"), namespace, DEPLOYMENT_MILESTONES, crs),
        )
        for watch in watches:
            watch.start()
        run.rss_before_kib = _rss_kib()
        if trace_memory:
            tracemalloc.start()
        options = ManagerOptions(
            namespaces=(namespace,),
            max_concurrent_reconciles=workers,
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
            resync_period=3600.0,
            graceful_shutdown_timeout=10.0,
        )
        manager: Manager | None = None
        try:
            manager = Manager(
                bundle, KubeCluster(operator_client, field_manager=bundle.name), options
            )
            manager.start()
            for informer in manager.informers.values():
                if not informer.wait_for_sync(60.0):
                    raise TimeoutError(f"{informer!r} did not sync within 60s")
            operator = manager.api
            gets: Counter[str] = Counter()
            plain_get = operator.get

            def counted_get(api_version: str, kind: str, *args: Any, **kwargs: Any) -> Any:
                gets[kind] += 1
                return plain_get(api_version, kind, *args, **kwargs)

            operator.get = counted_get  # type: ignore[method-assign]
            server_before = apiserver_requests(env)
            _create_and_wait(run, bench, *watches, manager, namespace, timeout)
            delta = apiserver_requests(env) - server_before
            run.apiserver_requests = {k: v for k, v in delta.items() if _is_managed(k)}
            run.gets_by_kind = dict(gets)
            _full_resync(run, env, manager, timeout)
            if trace_memory:
                run.tracemalloc_peak_kib = tracemalloc.get_traced_memory()[1] // 1024
        finally:
            tracemalloc.stop()  # a no-op when not tracing
            for watch in watches:
                watch.stop()
            if cleanup:
                _delete_crs(bench, namespace)
            if manager is not None:
                manager.stop()
            if cleanup:
                bench.delete("v1", "Namespace", namespace)
    run.load_after = os.getloadavg()
    return run


def _create_and_wait(
    run: ClusterRun,
    bench: KubeCluster,
    cr_watch: FirstSeen,
    deployment_watch: FirstSeen,
    manager: Manager,
    namespace: str,
    timeout: float,
) -> None:
    """Create every CR at once (8 threads), wait for all Ready, then for a quiet operator."""
    sent: dict[str, float] = {}

    def create(name: str) -> None:
        sent[name] = time.monotonic()
        bench.apply(webapp_cr(name, namespace), field_manager="bench")

    names = [f"app-{i:03d}" for i in range(run.crs)]
    cpu, start = time.process_time(), time.monotonic()
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="bench-create") as pool:
        list(pool.map(create, names))
    run.create_seconds = time.monotonic() - start
    ready, available = cr_watch.at["ready"], deployment_watch.at["available"]
    if not cr_watch.all_met["ready"].wait(timeout):
        raise TimeoutError(f"only {len(ready)} of {run.crs} WebApps Ready after {timeout:.0f}s")
    run.all_ready_seconds = max(ready.values()) - start
    run.first_reconciled_seconds = max(cr_watch.at["reconciled"].values()) - start
    run.all_available_seconds = max(available.values(), default=math.nan) - start
    run.ready_server = percentiles(
        [_server_seconds_to_ready(cr) for cr in cr_watch.objects["ready"].values()]
    )
    run.ready_client = percentiles([ready[n] - sent[n] for n in names])
    run.ready_after_available = percentiles(
        [ready[n] - available[f"{n}-app"] for n in names if f"{n}-app" in available]
    )
    last = deployment_watch.at["ready"]
    run.ready_after_last_object = percentiles(
        [ready[n] - last[f"{n}-app"] for n in names if f"{n}-app" in last]
    )
    _wait_quiet(manager, quiet=3.0, timeout=timeout)
    run.cpu_seconds = time.process_time() - cpu
    run.reconciles = dict(+_reconcile_counts(manager))
    run.requests = dict(manager.api.requests)
    run.rss_peak_kib = _rss_kib()


def _full_resync(run: ClusterRun, env: Environment, manager: Manager, timeout: float) -> None:
    """Every CR reconciled once more with nothing changed: no writes expected."""
    requests_before, writes_before = manager.api.requests, manager.api.writes
    server_before = apiserver_writes(env)
    reconciled_before = sum(_reconcile_counts(manager).values())
    cpu, start = time.process_time(), time.monotonic()
    for controller in manager.controllers:
        controller.enqueue_all()

    def finished() -> bool:
        done = sum(_reconcile_counts(manager).values()) - reconciled_before >= run.crs
        return done and _idle(manager)

    _wait_until("the full resync", finished, timeout)
    run.resync_seconds = time.monotonic() - start
    run.resync_cpu_seconds = time.process_time() - cpu
    run.resync_reconciles = sum(_reconcile_counts(manager).values()) - reconciled_before
    run.resync_requests = dict(manager.api.requests - requests_before)
    run.resync_writes = manager.api.writes - writes_before
    delta = apiserver_writes(env) - server_before
    run.resync_apiserver_managed_writes = {k: v for k, v in delta.items() if _is_managed(k)}
    run.resync_apiserver_other_writes = {k: v for k, v in delta.items() if not _is_managed(k)}
    run.rss_peak_kib = _rss_kib()


def _delete_crs(bench: KubeCluster, namespace: str, timeout: float = 60.0) -> None:
    for cr in bench.list(API_VERSION, KIND, namespace):
        bench.delete(API_VERSION, KIND, cr["metadata"]["name"], namespace)
    with contextlib.suppress(TimeoutError):  # a slow cleanup must not hide the results
        _wait_until(
            "the WebApps to be finalized",
            lambda: not bench.list(API_VERSION, KIND, namespace),
            timeout,
            poll=0.2,
        )


def run_fresh(crs: int, workers: int, timeout: float, trace_memory: bool) -> ClusterRun:
    """One configuration against an Environment started for it and stopped after."""
    nodes = fake_nodes_for(crs)
    start = time.monotonic()
    with Environment(fake_nodes=nodes) as env:
        started = time.monotonic() - start
        run = run_benchmark(
            env, crs=crs, workers=workers, timeout=timeout, trace_memory=trace_memory
        )
    run.fake_nodes, run.envtest_start_seconds = nodes, started
    return run


def run_in_child(crs: int, workers: int, timeout: float, trace_memory: bool) -> ClusterRun:
    """``run_fresh`` in a new Python process, so its peak RSS is this configuration's."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.bench_cluster",
        "--json",
        "--crs",
        str(crs),
        "--workers",
        str(workers),
        "--timeout",
        str(timeout),
    ]
    if trace_memory:
        command.append("--trace-memory")
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stderr[-4000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return ClusterRun(**data)


def _secs(value: float) -> str:
    return f"{value:.1f} s"


def _spread(values: dict[str, float], digits: int) -> str:
    return " / ".join(f"{v:.{digits}f}" for v in values.values()) + " s"


def _counts(counts: dict[str, int], per: int = 1) -> str:
    ordered = sorted(counts.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {n / per:.{2 if per > 1 else 0}f}" for k, n in ordered) or "none"


def _label(r: ClusterRun) -> str:
    return f"{r.workers}" + (" (tracemalloc on)" if r.tracemalloc_peak_kib is not None else "")


def markdown(runs: list[ClusterRun]) -> list[str]:
    """A table row per configuration, then the detail of each."""
    out = [
        "| workers | CRs | all Ready | to Ready p50 / p90 / max (server, 1 s steps) "
        "| to Ready p50 / p90 / max (watch) | operator requests per CR | peak RSS "
        "| full resync | resync writes (operator / apiserver) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        managed = sum(r.resync_apiserver_managed_writes.values())
        out.append(
            f"| {_label(r)} | {r.crs} | {_secs(r.all_ready_seconds)} "
            f"| {_spread(r.ready_server, 0)} | {_spread(r.ready_client, 1)} "
            f"| {sum(r.requests.values()) / r.crs:.1f} | {r.rss_peak_kib / 1024:.0f} MiB "
            f"| {_secs(r.resync_seconds)} | {r.resync_writes} / {managed} |"
        )
    out.append("")
    for r in runs:
        traced = r.tracemalloc_peak_kib
        out += [
            f"**{_label(r)} workers** ({r.fake_nodes} fake nodes; envtest started in "
            f"{_secs(r.envtest_start_seconds)}; load average {r.load_before[0]:.2f} before, "
            f"{r.load_after[0]:.2f} after):\n",
            f"- {r.crs} creates (8 threads) took {_secs(r.create_seconds)}; every CR had its "
            f"first reconcile after {_secs(r.first_reconciled_seconds)}, every Deployment was "
            f"Available after {_secs(r.all_available_seconds)}, every CR Ready after "
            f"{_secs(r.all_ready_seconds)}",
            f"- CR Ready after its Deployment Available (watch) p50 / p90 / max: "
            f"{_spread(r.ready_after_available, 1)}; after its Deployment ready by the "
            f"engine's rule (its last object): {_spread(r.ready_after_last_object, 2)}",
            f"- reconciles until quiet: {_counts(r.reconciles)} "
            f"({sum(r.reconciles.values()) / r.crs:.1f} per CR); "
            f"process CPU {_secs(r.cpu_seconds)}",
            f"- operator requests per CR: {_counts(r.requests, r.crs)}; GETs by kind: "
            f"{_counts(r.gets_by_kind, r.crs)}",
            f"- apiserver requests per CR to WebApps and what they own (incl. the benchmark's "
            f"1 APPLY per CR): {_counts(r.apiserver_requests, r.crs)}",
            f"- RSS {r.rss_before_kib / 1024:.0f} MiB before the Manager started, peak "
            f"{r.rss_peak_kib / 1024:.0f} MiB"
            + ("" if traced is None else f"; tracemalloc peak {traced / 1024:.1f} MiB"),
            f"- full resync: {r.resync_reconciles} reconciles in {_secs(r.resync_seconds)} "
            f"(process CPU {_secs(r.resync_cpu_seconds)}); operator requests: "
            f"{_counts(r.resync_requests)}; operator writes {r.resync_writes}; apiserver "
            f"writes to managed resources: {_counts(r.resync_apiserver_managed_writes)}, "
            f"to others: {_counts(r.resync_apiserver_other_writes)}",
            "",
        ]
    return out


def section(crs: int, workers: tuple[int, ...], timeout: float = 300.0) -> list[str]:
    """The markdown section ``benchmarks.run --cluster`` appends."""
    runs = [run_in_child(crs, w, timeout, trace_memory=False) for w in workers]
    return [f"## 4. Against a real control plane: {crs} CRs\n", *markdown(runs)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_cluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--crs", type=int, default=200, help="WebApp CRs to create (200)")
    parser.add_argument("--workers", default="4,8", help="max_concurrent_reconciles values")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per wait")
    parser.add_argument(
        "--no-tracemalloc",
        action="store_true",
        help="skip the extra run with tracemalloc on (it doubles the CPU: only its memory counts)",
    )
    parser.add_argument("--trace-memory", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="one configuration, here, as JSON")
    args = parser.parse_args(argv)
    workers = tuple(int(w) for w in args.workers.split(",") if w.strip())
    if args.json:
        run = run_fresh(args.crs, workers[0], args.timeout, args.trace_memory)
        print(json.dumps(asdict(run)))
        return 0
    from benchmarks.run import machine  # here: the children's RSS must not include it

    start, lines = time.monotonic(), [f"- {k}: {v}" for k, v in machine()]
    runs = [run_in_child(args.crs, w, args.timeout, trace_memory=False) for w in workers]
    if not args.no_tracemalloc:
        runs.append(run_in_child(args.crs, workers[0], args.timeout, trace_memory=True))
    after = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines.append(f"- load average at the end (1, 5, 15 min): {after}")
    print("\n".join([*lines, "", *markdown(runs)]))
    print(
        f"_whole run: {time.monotonic() - start:.0f} s; command: python -m "
        f"benchmarks.bench_cluster {' '.join(argv if argv is not None else sys.argv[1:])}_"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
