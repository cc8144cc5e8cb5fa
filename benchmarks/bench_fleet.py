"""Fleet benchmark: N WebApp CRs in one in-memory cluster, reconciled as the runtime does.

``python -m benchmarks.bench_fleet 100 1000 10000`` (or the ``fleet`` section of
``benchmarks.run``). For each size it creates N CRs of the webapp example (in 50
namespaces), then:

* first rollout: every CR is reconciled until its reconcile reports it stable (at most
  5 passes), CPU time and client requests per CR counted;
* steady no-op pass: one more reconcile of every CR, nothing changed. CPU per CR and
  requests per CR, with the fingerprint shortcut (``engine.fingerprint``, as
  ``oper8d run`` uses it) and without it (every reconcile in full).

* memory: bytes per cached object (``tracemalloc``, objects in ``runtime.store``
  ObjectStores with their indexes, one per kind as the informers keep them), parsed from
  JSON pages of 500 objects as a list response is, with server-side managedFields as the
  API server returns them (built from the cluster's field ownership): whole, after the
  informers' ``drop_unread`` transform, and after ``share_strings`` too (what the
  informers keep); and the bytes the ChangeTracker keeps per CR.

Like the runtime, CRs are read from a local copy kept by the cluster's watch (the
runtime's informer cache), not with a GET, and the same watch feeds the ChangeTracker.
Requests are split into writes (what reaches the API server) and reads (gets and lists,
which the informer cache serves when running for real). Peak RSS of the process is
reported last (it includes the in-memory cluster itself, which an operator does not hold).

``--replica-rss`` also measures what one replica holding the largest fleet would: the
fleet's objects (with managedFields) are written to a file, one object a line, grouped by
kind, and a fresh process (``--hold FILE``) loads the oper8d runtime and lists them through
real ``runtime.informer.Informer``s, one per kind, over a ListWatch reading that file in
pages of ``--page-size`` objects, each page parsed as one JSON document as a list response
is (``--page-size 0``: each kind's whole list in one document, as before paging); it
reports its RSS once they synced, and its peak. The ChangeTracker's records come on top
(measured above).
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from benchmarks.memory import peak_rss_mib
from oper8d.bundle import load_bundle
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MUTATING_VERBS, MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator
from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.engine.session import SeededRandoms
from oper8d.objects import Obj
from oper8d.runtime.informer import PAGE_SIZE, Informer
from oper8d.runtime.store import ObjectStore, copy_obj, drop_unread, key_of, share_strings

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
    #: bytes per cached object: as the API server returns it, without what the cache
    #: drops, and as the cache keeps it (its repeated strings shared too)
    bytes_whole: float
    bytes_cached: float
    bytes_shared: float
    #: bytes the ChangeTracker keeps per stable CR
    bytes_tracker: float


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

    whole, cached, shared = cached_bytes(fleet.cluster)

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
        bytes_whole=whole,
        bytes_cached=cached,
        bytes_shared=shared,
        bytes_tracker=_measure(lambda: _tracker_copy(fleet.tracker)) / max(1, len(fleet.tracker)),
    )


def _with_managed_fields(cluster: MemoryCluster, obj: Obj) -> Obj:
    """``obj`` with ``metadata.managedFields`` as the API server would return it: one
    entry per field manager, its fields in the FieldsV1 form."""
    meta = obj["metadata"]
    owners = cluster.managed_fields(
        obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")
    )
    entries = []
    for manager, paths in owners.items():
        fields: dict[str, dict] = {}
        for path in paths:
            node = fields
            for part in path.split("."):
                node = node.setdefault(f"f:{part}", {})
        entries.append(
            {
                "manager": manager,
                "operation": "Apply",
                "apiVersion": obj["apiVersion"],
                "time": "2025-01-01T00:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": fields,
            }
        )
    out = copy_obj(obj)
    out["metadata"]["managedFields"] = entries
    return out


def _measure(build: object) -> int:
    """Bytes still allocated after ``build()`` (its result kept alive meanwhile)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()  # type: ignore[operator]
        after = tracemalloc.get_traced_memory()[0]
        del kept
    finally:
        tracemalloc.stop()
    return after - before


def cached_bytes(cluster: MemoryCluster) -> tuple[float, float, float]:
    """Bytes per cached object in per-kind stores, parsed from list pages of ``PAGE_SIZE``
    objects: whole, after ``drop_unread``, and after ``drop_unread`` and ``share_strings``
    (what the informers keep)."""
    objects = [_with_managed_fields(cluster, o) for o in cluster.objects()]
    pages = [json.dumps(objects[i : i + PAGE_SIZE]) for i in range(0, len(objects), PAGE_SIZE)]
    del objects

    def fill(keep: Callable[[Obj], Obj]) -> dict[str, ObjectStore]:
        stores: dict[str, ObjectStore] = {}
        for page in pages:
            for obj in json.loads(page):
                kept = keep(obj)
                stores.setdefault(kept["kind"], ObjectStore()).put(key_of(kept), kept)
        return stores

    count = max(1, sum(len(json.loads(page)) for page in pages))
    measured = [
        _measure(functools.partial(fill, keep)) / count
        for keep in (lambda o: o, drop_unread, lambda o: share_strings(drop_unread(o)))
    ]
    return measured[0], measured[1], measured[2]


def _tracker_copy(tracker: ChangeTracker) -> object:
    return copy.deepcopy(tracker._records)


def _requests(per: dict[str, float], writes: bool) -> str:
    chosen = {v: n for v, n in per.items() if (v in MUTATING_VERBS) == writes}
    total = sum(chosen.values())
    parts = ", ".join(f"{verb} {n:g}" for verb, n in chosen.items())
    return f"{total:g}" + (f" ({parts})" if parts else "")


def table(results: Sequence[FleetResult]) -> list[str]:
    """The markdown of ``benchmarks.run``'s fleet section: CPU and requests, then memory."""
    lines = [
        "| CRs | objects/CR | first rollout: CPU/CR | writes/CR | reads/CR (cache) "
        "| no-op pass: CPU/CR | requests/CR | skipped "
        "| no-op without the shortcut: CPU/CR | reads/CR (cache) |",
        "|---:|---:|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        noop = sum(r.noop_requests_per_cr.values())
        lines.append(
            f"| {r.crs:,} | {r.objects_per_cr:g} | {1e3 * r.rollout_cpu_per_cr:.2f} ms "
            f"| {_requests(r.rollout_requests_per_cr, True)} "
            f"| {_requests(r.rollout_requests_per_cr, False)} "
            f"| {1e3 * r.noop_cpu_per_cr:.3f} ms | {noop:g} | {r.skipped:,} "
            f"| {1e3 * r.noop_full_cpu_per_cr:.2f} ms "
            f"| {_requests(r.noop_full_requests_per_cr, False)} |"
        )
    lines += [
        "",
        "| CRs | bytes/cached object, whole (managedFields) | drop_unread "
        "| as cached (drop_unread + share_strings) "
        "| tracker bytes/CR | cache + tracker for 10,000 CRs |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        per_cr = (r.objects_per_cr + 1) * r.bytes_shared + r.bytes_tracker
        lines.append(
            f"| {r.crs:,} | {r.bytes_whole:,.0f} | {r.bytes_cached:,.0f} "
            f"| {r.bytes_shared:,.0f} | {r.bytes_tracker:,.0f} "
            f"| {10_000 * per_cr / 2**20:,.0f} MiB |"
        )
    return lines


class _FileListWatch:
    """A ListWatch serving one file of objects (``apiVersion<TAB>kind<TAB>JSON`` a line,
    grouped by kind) in pages, each parsed as one JSON document as a list response is (the
    continue token is the byte offset of the page's first line), and watches that stay
    open and quiet until closed."""

    def __init__(self, path: str):
        self.path = path

    def list_page(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        limit: int,
        continue_token: str = "",
    ) -> tuple[list[Obj], str, str]:
        wanted = f"{api_version}\t{kind}\t".encode()
        bodies: list[bytes] = []
        with open(self.path, "rb") as lines:
            lines.seek(int(continue_token or 0))
            while limit <= 0 or len(bodies) < limit:
                at = lines.tell()
                line = lines.readline()
                if not line or (bodies and not line.startswith(wanted)):
                    return _page(bodies), "1", ""
                if line.startswith(wanted):
                    bodies.append(line[len(wanted) :])
            at = lines.tell()
            following = lines.readline().startswith(wanted)
        return _page(bodies), "1", str(at) if following else ""

    def list_with_version(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> tuple[list[Obj], str]:
        items, version, _ = self.list_page(api_version, kind, namespace, label_selector, limit=0)
        return items, version

    def watch(self, *args: object, **kwargs: object) -> _QuietStream:
        return _QuietStream()


def _page(bodies: list[bytes]) -> list[Obj]:
    """One list response's items, parsed in one go as the API client parses a response."""
    document = b"[" + b",".join(bodies) + b"]"
    del bodies[:]
    items: list[Obj] = json.loads(document)
    return items


class _QuietStream:
    def __init__(self) -> None:
        self._closed = threading.Event()

    def __iter__(self):  # type: ignore[no-untyped-def]
        self._closed.wait()
        return iter(())

    def close(self) -> None:
        self._closed.set()


def _rss_mb() -> tuple[float, float]:
    """(current, peak) RSS of this process in MiB."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    current = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    return current, peak_rss_mib()


def hold(path: str, page_size: int = PAGE_SIZE) -> str:
    """What ``--hold`` prints: the RSS of a process caching the file's objects."""
    import oper8d.runtime.manager  # noqa: F401  (what `oper8d run` loads)

    with open(path, encoding="utf-8") as lines:
        kinds = list(dict.fromkeys(tuple(line.split("\t", 2)[:2]) for line in lines))
    source = _FileListWatch(path)
    informers = [Informer(source, a, k, page_size=page_size) for a, k in kinds]
    for inf in informers:
        inf.start()
    for inf in informers:
        inf.wait_for_sync(600)
    current, peak = _rss_mb()  # before list() below makes copies
    cached = sum(len(inf.list()) for inf in informers)
    for inf in informers:
        inf.stop()
    return f"{cached:,} objects cached: RSS {current:,.0f} MiB, peak {peak:,.0f} MiB"


def replica_rss(crs: int, page_size: int = PAGE_SIZE) -> str:
    """Write a fleet of ``crs`` CRs to a file and measure a fresh process caching it."""
    fleet = _Fleet(crs)
    for key in fleet.keys:
        fleet.full.reconcile_object(fleet.crs[key])
    by_kind: dict[tuple[str, str], list[Obj]] = {}
    for obj in fleet.cluster.objects():
        shaped = _with_managed_fields(fleet.cluster, obj)
        by_kind.setdefault((obj["apiVersion"], obj["kind"]), []).append(shaped)
    with tempfile.NamedTemporaryFile("w", suffix=".lists", delete=False) as out:
        for (api_version, kind), items in sorted(by_kind.items()):
            for item in items:
                out.write(f"{api_version}\t{kind}\t{json.dumps(item)}\n")
    del fleet, by_kind
    hold_args = ["--hold", out.name, "--page-size", str(page_size)]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_fleet", *hold_args],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        os.unlink(out.name)
    return proc.stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_fleet", description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 1000])
    parser.add_argument(
        "--replica-rss", action="store_true", help="also the RSS of a replica caching the largest"
    )
    parser.add_argument(
        "--page-size",
        type=int,
        default=PAGE_SIZE,
        help="objects per list page of the --replica-rss replica's informers "
        f"(default {PAGE_SIZE}; 0: each kind's list in one response)",
    )
    parser.add_argument("--hold", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hold:
        print(hold(args.hold, args.page_size))
        return 0
    results = [run_fleet(n) for n in args.sizes]
    print("\n".join(table(results)))
    rss_mb = peak_rss_mib()
    print(f"\npeak RSS {rss_mb:,.0f} MB (cluster, cache copy and engine in one process)")
    if args.replica_rss:
        largest = max(args.sizes)
        held = replica_rss(largest, args.page_size)
        print(f"\nA replica caching {largest:,} CRs and their objects: {held}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
