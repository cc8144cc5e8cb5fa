"""The real-control-plane benchmark (``benchmarks.bench_cluster``) runs, with 3 WebApps on
the session's envtest, so it never rots. It checks that the benchmark produces results and
the behaviour it reports on (a full resync of Ready CRs writes nothing); never a timing.
"""

from __future__ import annotations

import pytest

from benchmarks import bench_cluster
from oper8d.envtest import Environment

pytestmark = pytest.mark.integration

CRS = 3


@pytest.fixture(scope="module")
def run(envtest: Environment) -> bench_cluster.ClusterRun:
    return bench_cluster.run_benchmark(envtest, crs=CRS, workers=4, timeout=120, cleanup=True)


def test_every_cr_becomes_ready_and_each_one_is_timed(run: bench_cluster.ClusterRun) -> None:
    assert set(run.ready_client) == {"p50", "p90", "max"}
    assert set(run.ready_server) == {"p50", "p90", "max"}
    assert 0 < run.ready_client["max"] <= run.all_ready_seconds


def test_the_operator_requests_are_counted_from_its_informers_to_its_writes(
    run: bench_cluster.ClusterRun,
) -> None:
    # one list and one watch per informer, then every CR's five objects applied
    assert run.requests["list"] >= 1 and run.requests["watch"] >= 1
    assert run.requests["apply"] >= 5 * CRS
    assert run.reconciles.get("success", 0) >= CRS
    assert run.rss_peak_kib >= run.rss_before_kib > 0


def test_the_rollout_reads_none_of_the_objects_it_creates_from_the_server(
    run: bench_cluster.ClusterRun,
) -> None:
    # absent from both the owned informer and the names of the unlabelled objects: no GET
    assert run.gets_by_kind == {}


def test_a_full_resync_reconciles_every_cr_and_writes_nothing(
    run: bench_cluster.ClusterRun,
) -> None:
    assert run.resync_reconciles >= CRS
    assert run.resync_writes == 0
    # earlier tests' namespaces being emptied (namespace controller, garbage collector) may
    # delete objects of these kinds during the window: the operator's own verbs must be 0
    updates = {
        where: n
        for where, n in run.resync_apiserver_managed_writes.items()
        if not where.startswith("DELETE")
    }
    assert updates == {}


def test_the_report_has_a_row_per_configuration(run: bench_cluster.ClusterRun) -> None:
    text = "\n".join(bench_cluster.markdown([run]))

    assert f"| 4 | {CRS} |" in text
    assert "operator requests per CR" in text
