"""The sharded-replicas benchmark (``benchmarks.bench_shards``) runs end to end with tiny
counts and reports sane counts: every CR Ready and held by exactly one replica, each
replica told only of the ConfigMaps of its own CRs, requests counted on both sides, a resync
spotted in every replica that holds CRs, and every CR applied again after a SIGKILL. Never
a timing: the machine is shared."""

from __future__ import annotations

import pytest

from benchmarks.bench_shards import K8S, run_fresh
from benchmarks.shards_report import ShardRun, markdown
from oper8d.envtest import BuildError, build

pytestmark = pytest.mark.integration

CRS = 6


@pytest.fixture(scope="module")
def built() -> None:
    """The test environment's binaries, built if needed (as the envtest fixture does)."""
    error = None
    try:
        build(k8s_version=K8S)
    except BuildError as e:
        error = f"building the test environment failed:\n{e}"
    if error:
        pytest.fail(error, pytrace=False)


def check(run: ShardRun) -> None:
    replicas = run.per_replica
    assert len(replicas) == run.replicas
    assert sum(r.crs for r in replicas) == CRS  # one owner per CR
    assert sum(r.buckets for r in replicas) == 64
    for r in replicas:
        # the server sends a replica only its slice of the owned ConfigMaps (two per CR)
        assert r.watch_events.get("ConfigMap ADDED", 0) == 2 * r.crs, r
        if r.crs:
            assert r.watch_events.get("Setting ADDED", 0) >= r.crs, r
            assert r.reconciles >= r.crs, r
            assert r.requests.get("apply", 0) >= 2 * r.crs, r  # its ConfigMaps
            assert r.resync_reconciles >= r.crs, r
        assert r.peak_rss_kib >= r.rss_kib > 0
    assert run.apiserver_requests.get("APPLY settings") == CRS  # the benchmark's creates
    assert run.apiserver_requests.get("APPLY configmaps", 0) >= 2 * CRS
    assert run.operator_requests >= 2 * CRS
    assert {"p50", "p90", "max"} <= set(run.ready_client)
    report = "\n".join(markdown([run]))
    assert f"| {run.replicas} | {CRS} |" in report


def test_one_replica(built: None) -> None:
    run = run_fresh(CRS, 1, crs_per_namespace=1, resync_period=5.0, timeout=120.0)
    check(run)
    assert run.per_replica[0].crs == CRS
    assert run.takeover == {} and run.killed_crs == 0


def test_two_replicas_and_a_sigkill(built: None) -> None:
    run = run_fresh(
        CRS, 2, crs_per_namespace=1, lease=(3.0, 2.0, 0.5), resync_period=5.0, timeout=120.0
    )
    check(run)
    # the benchmark's own reckoning of the killed replica's CRs agrees with its metric
    assert run.killed_crs == run.per_replica[-1].crs
    assert bool(run.takeover) == (run.killed_crs > 0)
