"""oper8d.testing: the helpers bundle authors write their tests with."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import oper8d.testing as testing
from oper8d.errors import BundleError, ConfigError
from oper8d.testing import memory_cluster, render, run_offline

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"
WEBAPP = EXAMPLES / "webapp"
STATEFUL = EXAMPLES / "stateful"
NOTES = STATEFUL / "samples" / "notes.yaml"

MIGRATION_FAILED = {
    ("Job", "notes-migrate-2-1-0"): {
        "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]
    }
}


def test_the_public_names_are_exactly_the_documented_ones() -> None:
    assert sorted(testing.__all__) == [
        "DefaultSimulator",
        "FakeClock",
        "MemoryCluster",
        "OfflineRun",
        "StatusOverrides",
        "load_cr",
        "memory_cluster",
        "render",
        "run_offline",
    ]
    for name in testing.__all__:
        assert hasattr(testing, name), name


# -- render -------------------------------------------------------------------------------
def test_render_returns_the_objects_oper8d_render_prints() -> None:
    objects = render(WEBAPP, WEBAPP / "samples" / "webapp.yaml")
    golden = list(yaml.safe_load_all((REPO / "tests" / "golden" / "webapp.yaml").read_text()))
    assert objects == golden


def test_render_takes_the_cr_as_a_dict_or_a_path() -> None:
    path = WEBAPP / "samples" / "webapp.yaml"
    as_dict = yaml.safe_load(path.read_text())
    assert render(str(WEBAPP), as_dict) == render(WEBAPP, str(path))


def test_render_of_a_cr_violating_the_schema_raises_config_error_naming_the_field() -> None:
    cr = {
        "apiVersion": "demo.oper8d.io/v1alpha1",
        "kind": "WebApp",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {"image": "nginx", "replicas": 0},
    }
    with pytest.raises(ConfigError) as caught:
        render(WEBAPP, cr)
    assert caught.value.field == "spec.replicas"
    assert "must be >= 1" in caught.value.message


def test_render_of_a_broken_bundle_raises_bundle_error(tmp_path: Path) -> None:
    (tmp_path / "operator.yaml").write_text("kind: Operator\n")
    with pytest.raises(BundleError):
        render(tmp_path, NOTES)


def test_render_leaves_the_callers_cr_untouched() -> None:
    cr = yaml.safe_load(NOTES.read_text())
    before = yaml.safe_dump(cr)
    render(STATEFUL, cr)
    assert yaml.safe_dump(cr) == before


# -- run_offline --------------------------------------------------------------------------
def test_run_offline_reconciles_a_cr_until_it_is_ready() -> None:
    run = run_offline(STATEFUL, NOTES)
    assert run.ready and run.stable
    assert run.condition("Ready") is not None
    assert run.cr["status"]["versions"]["reconciled"] == "2.1.0"
    assert run.cluster.get("apps/v1", "Deployment", "notes-app", "default") is not None


def test_a_failed_migration_job_keeps_the_app_from_ever_being_created() -> None:
    run = run_offline(STATEFUL, NOTES, statuses=MIGRATION_FAILED)
    assert not run.ready
    ready = run.condition("Ready")
    assert ready is not None and ready["status"] == "False"
    assert run.cr["status"]["componentStatus"]["failedComponents"] == ["migrate"]
    job = run.cluster.get("batch/v1", "Job", "notes-migrate-2-1-0", "default")
    assert job is not None and job["status"]["conditions"][0]["reason"] == "BackoffLimitExceeded"
    assert run.cluster.get("apps/v1", "Deployment", "notes-app", "default") is None
    assert run.cluster.get("v1", "Service", "notes-web", "default") is None


def test_ready_after_makes_the_rollout_take_more_passes() -> None:
    quick = run_offline(STATEFUL, NOTES)
    slow = run_offline(STATEFUL, NOTES, ready_after=2)
    assert quick.ready and slow.ready
    assert len(slow.results) > len(quick.results)


def test_run_offline_gives_up_after_max_reconciles() -> None:
    run = run_offline(STATEFUL, NOTES, ready_after=3, max_reconciles=2)
    assert len(run.results) == 2
    assert not run.ready and not run.stable


def test_run_offline_does_not_raise_for_a_fatal_error_it_records_it() -> None:
    cr = {**yaml.safe_load(NOTES.read_text()), "spec": {"replicas": 2}}  # version is required
    run = run_offline(STATEFUL, cr)
    assert isinstance(run.fatal_error, ConfigError)
    ready = run.condition("Ready")
    assert ready is not None and ready["reason"] == "ConfigError"


# -- memory_cluster -----------------------------------------------------------------------
def _deployment(name: str) -> dict[str, object]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def test_memory_clusters_are_deterministic() -> None:
    first = memory_cluster().create(_deployment("web"))
    second = memory_cluster().create(_deployment("web"))
    assert first["metadata"]["uid"] == second["metadata"]["uid"]
    assert first["metadata"]["creationTimestamp"] == second["metadata"]["creationTimestamp"]


def test_a_memory_cluster_simulates_workloads_becoming_ready() -> None:
    cluster = memory_cluster()
    cluster.create(_deployment("web"))
    live = cluster.get("apps/v1", "Deployment", "web", "default")
    assert live is not None and live["status"]["availableReplicas"] == 1


def test_memory_cluster_statuses_override_what_the_simulation_reports() -> None:
    stuck = {"replicas": 1, "availableReplicas": 0}
    cluster = memory_cluster(statuses={("Deployment", "web"): stuck})
    cluster.create(_deployment("web"))
    live = cluster.get("apps/v1", "Deployment", "web", "default")
    assert live is not None and live["status"] == stuck


def test_memory_cluster_takes_a_simulator_or_statuses_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        memory_cluster(simulator=testing.DefaultSimulator(), statuses={})


def test_memory_cluster_reads_time_from_the_given_clock() -> None:
    clock = testing.FakeClock()
    clock.advance(3600)
    created = memory_cluster(clock=clock.now).create(_deployment("web"))
    assert created["metadata"]["creationTimestamp"] == "2026-01-01T01:00:00Z"
