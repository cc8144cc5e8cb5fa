"""``oper8d run``: the dry run on the in-memory cluster, and bad credentials for the real mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oper8d.cli import run_cluster
from oper8d.cli.main import main
from oper8d.runtime.options import ManagerOptions

REPO = Path(__file__).resolve().parents[2]
STATEFUL = REPO / "examples" / "operators" / "stateful"
NOTES = STATEFUL / "samples" / "notes.yaml"
WEBAPP = REPO / "examples" / "operators" / "webapp"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["run", *map(str, args)])


def progress_lines(result: Result) -> list[str]:
    """The component lines of the progress view: ``<symbol> <component> <state> [detail]``."""
    return [line for line in result.stdout.splitlines() if line.startswith("  ")]


@pytest.fixture(scope="module")
def notes_dry_run() -> Result:
    return run(STATEFUL, "--dry-run", "--cr", NOTES)


def test_a_dry_run_that_ends_ready_exits_0_with_the_verdict_last(notes_dry_run: Result) -> None:
    assert notes_dry_run.exit_code == 0, notes_dry_run.output
    lines = notes_dry_run.stdout.splitlines()
    assert (
        lines[0]
        == "dry run: NotesApp default/notes with operator 'notes' 0.1.0 on the in-memory cluster"
    )
    assert lines[-1] == "NotesApp default/notes: Ready"
    conditions = [line.split() for line in lines]
    assert ["Ready", "True", "Stable:", "Verify", "Complete"] in conditions
    assert ["Updating", "False", "Stable:", "Rollout", "Complete"] in conditions
    assert "versions.reconciled: 2.1.0" in lines


def test_every_component_is_shown_deployed_and_then_verified(notes_dry_run: Result) -> None:
    states = [line.split()[1:3] for line in progress_lines(notes_dry_run)]
    for component in ("secrets", "database", "migrate", "app", "frontend"):
        assert [component, "deployed"] in states
        assert [component, "verified"] in states
        assert states.index([component, "deployed"]) < states.index([component, "verified"])


def test_a_dry_run_reports_the_components_of_a_wave_in_the_bundles_order() -> None:
    # with four workers they reported in the order they finished: the report changed from
    # run to run (found by an outside tester), where offline runs are deterministic
    result = run(WEBAPP, "--dry-run", "--cr", WEBAPP / "samples" / "webapp.yaml")
    deployed = [line.split()[1] for line in progress_lines(result) if "deployed" in line]
    assert deployed == ["config", "app", "service", "ingress", "autoscaler"]


def test_a_waiting_component_says_what_it_waits_for(notes_dry_run: Result) -> None:
    assert any(
        line.split()[1:3] == ["migrate", "waiting"]
        and "for database to be ready: StatefulSet default/notes-db: 0 of 1" in line
        for line in progress_lines(notes_dry_run)
    )


def test_each_pass_is_headed_with_its_number_and_simulated_time(notes_dry_run: Result) -> None:
    headings = [
        line for line in notes_dry_run.stdout.splitlines() if line.startswith("reconcile #")
    ]
    assert headings[0] == "reconcile #1  at 0s"
    # the bundle requeues every 5s while waiting
    assert headings[1] == "reconcile #2  at 5s"


def test_a_component_that_stays_verified_is_not_repeated(notes_dry_run: Result) -> None:
    secrets = [line for line in progress_lines(notes_dry_run) if line.split()[1] == "secrets"]
    assert [line.split()[2] for line in secrets] == ["deployed", "verified"]


def test_a_cr_the_api_server_would_refuse_stops_the_dry_run_before_it_is_created(
    tmp_path: Path,
) -> None:
    cr = tmp_path / "bad.yaml"
    cr.write_text(
        "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: {name: hello}\n"
        "spec:\n  image: nginx\n  replicas: 0\nconfigOverrides: [1]\n"
    )
    result = run(WEBAPP, "--dry-run", "--cr", cr)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"{cr}:6:13: spec.replicas: must be >= 1 (got 0)",
        f"{cr}:7:18: configOverrides: configOverrides must be a mapping",
        f"the dry run stopped before creating the CR: fix {cr}",
    ]
    assert result.stdout == "", "nothing was reconciled"


def test_a_cr_with_config_the_reconciler_refuses_ends_not_ready_with_config_error(
    tmp_path: Path,
) -> None:
    cr = tmp_path / "bad.yaml"
    cr.write_text(
        "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
        "metadata: {name: hello, annotations: {oper8.org/temporary-patches: '{'}}\n"
        "spec:\n  image: nginx\n"
    )
    result = run(WEBAPP, "--dry-run", "--cr", cr)
    assert result.exit_code == 1
    conditions = [line.split()[:3] for line in result.stdout.splitlines()]
    assert ["Ready", "False", "ConfigError:"] in conditions
    assert result.stdout.splitlines()[-1].startswith("WebApp default/hello: not Ready (ConfigError")
    assert "Traceback" not in result.output


def test_a_dry_run_that_runs_out_of_passes_says_so_and_exits_1() -> None:
    result = run(
        STATEFUL, "--dry-run", "--cr", NOTES, "--max-reconciles", "2", "--ready-after", "3"
    )
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1].startswith(
        "NotesApp default/notes: not Ready after 2 reconciles (the --max-reconciles limit)"
    )


def test_workloads_ready_at_once_need_fewer_passes() -> None:
    slow = run(STATEFUL, "--dry-run", "--cr", NOTES, "--ready-after", "2")
    fast = run(STATEFUL, "--dry-run", "--cr", NOTES, "--ready-after", "0")
    assert slow.exit_code == fast.exit_code == 0
    assert reconciles(fast) < reconciles(slow)


def reconciles(result: Result) -> int:
    [line] = [line for line in result.stdout.splitlines() if "of simulated time" in line]
    return int(line.split()[0])


def test_run_on_a_cluster_with_unusable_credentials_says_so_and_exits_1(tmp_path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    result = run(WEBAPP, "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1
    assert "cannot load cluster credentials" in result.stderr
    assert "Traceback" not in result.output


def test_a_dry_run_needs_a_cr() -> None:
    result = run(WEBAPP, "--dry-run")
    assert result.exit_code == 2
    assert "--dry-run needs --cr FILE" in result.stderr


@pytest.mark.parametrize("namespace", ["", "bad/ns", "Team-A"])
def test_a_namespace_flag_that_is_no_namespace_name_is_refused_at_once(namespace: str) -> None:
    # an empty one (an unset $WATCH_NS) watched every namespace; a malformed one was
    # retried forever (found by the third outside tester)
    result = run(WEBAPP, "--namespace", "team-a", "--namespace", namespace)
    assert result.exit_code == 2
    assert f"{namespace!r} is not a namespace name" in result.stderr


def test_run_on_an_unreachable_cluster_fails_at_once_and_says_what_to_check(tmp_path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    result = run(WEBAPP, "--kubeconfig", str(kubeconfig), "--metrics-bind-address", "0")
    assert result.exit_code == 1
    assert "cannot reach the API server at https://127.0.0.1:1" in result.stderr
    assert "check --kubeconfig" in result.stderr
    assert "Traceback" not in result.output


def test_preflight_warns_once_with_the_fix_when_a_crd_is_missing(caplog) -> None:
    from oper8d.bundle import load_bundle
    from oper8d.cli.run_cluster import preflight
    from oper8d.errors import ClusterError

    class NoCrds:
        def resource(self, api_version: str, kind: str) -> None:
            raise ClusterError(f"kind {kind} not served", status=404)

    with caplog.at_level("WARNING", logger="oper8d"):
        preflight(NoCrds(), load_bundle(WEBAPP))  # type: ignore[arg-type]
    [record] = caplog.records
    assert "no CRD for demo.oper8d.io/v1alpha1 WebApp" in record.getMessage()
    assert "--install-crds" in record.getMessage()


@pytest.fixture
def manager_options(monkeypatch: pytest.MonkeyPatch) -> list[ManagerOptions]:
    """The options ``oper8d run`` hands to the manager (which is not started)."""
    seen: list[ManagerOptions] = []

    def fake_run_on_cluster(bundle: object, options: ManagerOptions, **_: object) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(run_cluster, "run_on_cluster", fake_run_on_cluster)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    return seen


def _settings(options: ManagerOptions) -> dict[str, object]:
    return {k: v for k, v in vars(options).items() if k not in ("clock", "schemas")}


def test_the_live_operator_checks_against_the_bundles_own_crds(
    manager_options: list[ManagerOptions],
) -> None:
    assert run(WEBAPP).exit_code == 0
    schemas = manager_options[0].schemas
    assert schemas is not None
    assert schemas.kind_info("demo.oper8d.io/v1alpha1", "WebApp") is not None
    assert schemas.kind_info("apps/v1", "Deployment") is not None


def test_flags_left_out_give_the_managers_own_defaults(
    manager_options: list[ManagerOptions],
) -> None:
    result = run(WEBAPP)
    assert result.exit_code == 0, result.output
    assert _settings(manager_options[0]) == _settings(ManagerOptions())


def test_flags_given_override_the_managers_defaults(
    manager_options: list[ManagerOptions],
) -> None:
    result = run(
        WEBAPP,
        *("--lease-duration", "30", "--max-concurrent-reconciles", "8"),
        *("--metrics-bind-address", "0", "--namespace", "a", "--namespace", "b"),
    )
    assert result.exit_code == 0, result.output
    options = manager_options[0]
    assert (options.lease_duration, options.max_concurrent_reconciles) == (30.0, 8)
    assert options.metrics_bind_address is None  # "0" turns /metrics off
    assert options.namespaces == ("a", "b")


def test_the_resync_period_is_set_in_seconds_and_0_turns_it_off(
    manager_options: list[ManagerOptions],
) -> None:
    assert run(WEBAPP, "--resync-period", "45").exit_code == 0
    assert run(WEBAPP, "--resync-period", "0").exit_code == 0
    assert [o.resync_period for o in manager_options] == [45.0, None]
    refused = run(WEBAPP, "--resync-period", "-1")
    assert refused.exit_code == 2
    assert "--resync-period" in refused.stderr


def test_the_help_shows_the_managers_defaults() -> None:
    defaults = ManagerOptions()
    text = " ".join(CliRunner().invoke(main, ["run", "--help"]).output.split())
    assert f"[default: {defaults.lease_duration}; x>=1]" in text
    assert f"[default: {defaults.health_probe_bind_address}]" in text


def test_sharding_and_leader_election_exclude_each_other() -> None:
    result = run(WEBAPP, "--sharding", "--leader-elect")
    assert result.exit_code == 2
    assert "--sharding and --leader-elect exclude each other" in result.stderr
