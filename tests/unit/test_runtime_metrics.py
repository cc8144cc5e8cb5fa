"""The operator's Prometheus metrics, read back from the text exposition as a scraper would."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from oper8d.clock import FakeClock
from oper8d.runtime.metrics import RECONCILE_RESULTS, Metrics
from oper8d.runtime.queue import WorkQueue


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition: (sample name, labels) -> value."""
    text = metrics.exposition().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(metrics: Metrics, sample: str, /, **labels: str) -> float | None:
    return samples(metrics).get((sample, frozenset(labels.items())))


def family_types(metrics: Metrics) -> dict[str, str]:
    text = metrics.exposition().decode()
    return {family.name: family.type for family in text_string_to_metric_families(text)}


def test_reconciles_are_counted_by_controller_and_result() -> None:
    metrics = Metrics(runtime_collectors=False)
    metrics.reconcile_total("webapp", "success")
    metrics.reconcile_total("webapp", "success")
    metrics.reconcile_total("webapp", "error")
    metrics.reconcile_total("database", "paused")
    assert value(metrics, "oper8d_reconcile_total", controller="webapp", result="success") == 2
    assert value(metrics, "oper8d_reconcile_total", controller="webapp", result="error") == 1
    assert value(metrics, "oper8d_reconcile_total", controller="database", result="paused") == 1


def test_every_result_of_a_known_controller_is_exposed_from_zero() -> None:
    metrics = Metrics(controllers=["webapp"], runtime_collectors=False)
    for result in RECONCILE_RESULTS:
        assert value(metrics, "oper8d_reconcile_total", controller="webapp", result=result) == 0
    metrics.reconcile_total("database", "success")
    assert value(metrics, "oper8d_reconcile_total", controller="database", result="requeue") == 0


def test_an_unknown_reconcile_result_is_refused_with_the_valid_ones_named() -> None:
    with pytest.raises(ValueError, match="success, error, requeue, paused"):
        Metrics(runtime_collectors=False).reconcile_total("webapp", "failed")


def test_reconcile_durations_land_in_the_histogram() -> None:
    metrics = Metrics(runtime_collectors=False)
    metrics.reconcile_duration("webapp", 0.02)
    metrics.reconcile_duration("webapp", 3.0)
    name = "oper8d_reconcile_duration_seconds"
    assert value(metrics, name + "_count", controller="webapp") == 2
    assert value(metrics, name + "_sum", controller="webapp") == pytest.approx(3.02)
    assert value(metrics, name + "_bucket", controller="webapp", le="0.025") == 1
    assert value(metrics, name + "_bucket", controller="webapp", le="+Inf") == 2


def test_a_work_queue_reports_adds_depth_and_waits_under_its_name() -> None:
    metrics = Metrics(runtime_collectors=False)
    clock = FakeClock()
    queue = WorkQueue(clock=clock, observer=metrics.queue_observer("webapp"))
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert value(metrics, "oper8d_workqueue_depth", name="webapp") == 2
    clock.advance(2)
    assert queue.get(timeout=0) == "a"
    assert value(metrics, "oper8d_workqueue_adds_total", name="webapp") == 2
    assert value(metrics, "oper8d_workqueue_depth", name="webapp") == 1
    waits = "oper8d_workqueue_queue_duration_seconds"
    assert value(metrics, waits + "_count", name="webapp") == 1
    assert value(metrics, waits + "_sum", name="webapp") == 2.0


def test_two_queues_are_reported_apart() -> None:
    metrics = Metrics(runtime_collectors=False)
    first = WorkQueue(clock=FakeClock(), observer=metrics.queue_observer("webapp"))
    second = WorkQueue(clock=FakeClock(), observer=metrics.queue_observer("temporarypatch"))
    first.add("a")
    second.add("x")
    second.add("y")
    assert value(metrics, "oper8d_workqueue_depth", name="webapp") == 1
    assert value(metrics, "oper8d_workqueue_depth", name="temporarypatch") == 2


def test_api_requests_are_counted_by_verb_and_code() -> None:
    metrics = Metrics(runtime_collectors=False)
    metrics.api_request("patch", 200)
    metrics.api_request("patch", "200")
    metrics.api_request("get", 404)
    assert value(metrics, "oper8d_api_requests_total", verb="patch", code="200") == 2
    assert value(metrics, "oper8d_api_requests_total", verb="get", code="404") == 1


def test_the_leader_gauge_follows_the_lease() -> None:
    metrics = Metrics(runtime_collectors=False)
    assert value(metrics, "oper8d_leader") == 0
    metrics.set_leader(True)
    assert value(metrics, "oper8d_leader") == 1
    metrics.set_leader(False)
    assert value(metrics, "oper8d_leader") == 0


def test_every_family_is_exposed_with_its_prometheus_type() -> None:
    types = family_types(Metrics(runtime_collectors=False))
    # The parser names counter families without their _total suffix.
    assert types["oper8d_reconcile"] == "counter"
    assert types["oper8d_reconcile_duration_seconds"] == "histogram"
    assert types["oper8d_workqueue_depth"] == "gauge"
    assert types["oper8d_workqueue_queue_duration_seconds"] == "histogram"
    assert types["oper8d_workqueue_adds"] == "counter"
    assert types["oper8d_api_requests"] == "counter"
    assert types["oper8d_leader"] == "gauge"


def test_process_metrics_are_exposed_unless_turned_off() -> None:
    assert "process_cpu_seconds" in family_types(Metrics())
    assert "process_cpu_seconds" not in family_types(Metrics(runtime_collectors=False))


def test_two_instances_keep_separate_counts() -> None:
    first, second = Metrics(), Metrics()
    first.reconcile_total("webapp", "success")
    assert value(first, "oper8d_reconcile_total", controller="webapp", result="success") == 1
    assert value(second, "oper8d_reconcile_total", controller="webapp", result="success") is None
