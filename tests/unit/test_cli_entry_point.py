"""The real entry point, ``python -m oper8d``, once per command, and what it imports."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import oper8d as oper8d_package
from oper8d.cli.main import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"
WEBAPP_ARGS = ["examples/operators/webapp", "--cr", "examples/operators/webapp/samples/webapp.yaml"]


def oper8d(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPER8D_UPDATE_GOLDEN"}
    return subprocess.run(
        [sys.executable, "-m", "oper8d", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_validate_runs_as_a_module() -> None:
    proc = oper8d("validate", "examples/operators/fanout")
    assert (proc.returncode, proc.stdout) == (
        0,
        "ok: bundle 'workers': 1 controller, 2 components\n",
    )


def test_render_runs_as_a_module() -> None:
    proc = oper8d("render", *WEBAPP_ARGS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("apiVersion: v1\nkind: ConfigMap\n")


def test_graph_runs_as_a_module() -> None:
    proc = oper8d("graph", "examples/operators/stateful", "--format", "mermaid")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("flowchart TD\n")


def test_run_dry_run_runs_as_a_module() -> None:
    proc = oper8d(
        "run",
        "examples/operators/stateful",
        "--dry-run",
        "--cr",
        "examples/operators/stateful/samples/notes.yaml",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "NotesApp default/notes: Ready"


def test_errors_of_the_real_entry_point_point_at_files_relative_to_the_working_folder(
    tmp_path: Path,
) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text("apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: {name: x}\n")
    proc = oper8d("validate", "examples/operators/webapp", "--cr", str(cr))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{cr}:1:1: spec.image: ")
    assert "Traceback" not in proc.stderr


def test_help_lists_every_command() -> None:
    proc = oper8d("--help")
    assert proc.returncode == 0
    for command in ("validate", "render", "graph", "run"):
        assert f"  {command} " in proc.stdout


def test_version_works_from_a_checkout_that_is_not_installed() -> None:
    proc = oper8d("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"oper8d, version {oper8d_package.__version__}\n"


_PROBE = textwrap.dedent(
    """
    import sys
    from oper8d.cli.main import main
    try:
        main(sys.argv[1:], standalone_mode=False)
    except SystemExit:
        pass
    print("kubernetes loaded:", "kubernetes" in sys.modules, file=sys.stderr)
    """
)


@pytest.mark.skipif(
    importlib.util.find_spec("kubernetes") is None,
    reason="the kubernetes client is not installed, so nothing could import it",
)
@pytest.mark.parametrize(
    "args",
    [
        ["render", *WEBAPP_ARGS],
        ["validate", "examples/operators/stateful"],
        ["validate", *WEBAPP_ARGS],
        ["graph", "examples/operators/stateful", "--format", "dot"],
    ],
    ids=["render", "validate", "validate-cr", "graph"],
)
def test_offline_commands_do_not_import_the_kubernetes_client(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.stdout, proc.stderr  # the command did its work
    assert proc.stderr.splitlines()[-1] == "kubernetes loaded: False"


_TEARDOWN_PROBE = textwrap.dedent(
    """
    import atexit, sys
    atexit.register(lambda: print("teardown ran", file=sys.stderr))
    from oper8d.cli.process import run
    run()
    """
)


@pytest.mark.parametrize(
    ("args", "code", "teardown"),
    [
        (["render", *WEBAPP_ARGS], 0, False),
        (["validate", "examples/operators/fanout"], 0, False),
        (["validate", "examples/operators/webapp", "--cr", "README.md"], 1, False),
        (["graph", "examples/operators/stateful"], 0, False),
        (["render", "no-such-bundle", "--cr", "README.md"], 2, False),
        (["init", "--help"], 0, True),
        (["--help"], 0, True),
    ],
    ids=["render", "validate", "validate-fails", "graph", "usage-error", "init", "help"],
)
def test_only_bounded_commands_end_without_the_interpreter_teardown(
    args: list[str], code: int, teardown: bool
) -> None:
    """validate, render and graph end with os._exit once their output is flushed: same
    output, same exit status; every other command ends the usual way (atexit runs)."""
    proc = subprocess.run(
        [sys.executable, "-c", _TEARDOWN_PROBE, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    assert ("teardown ran" in proc.stderr) is teardown
    if args[0] == "render" and code == 0:  # all of it, as the command wrote it in-process
        in_process = CliRunner().invoke(main, args, catch_exceptions=False)
        assert proc.stdout == in_process.stdout != ""
    if code == 1:
        assert proc.stderr.startswith("README.md:"), proc.stderr


@pytest.mark.parametrize(
    ("args", "enabled", "after"),
    [
        (["render", *WEBAPP_ARGS], True, True),
        (["render", *WEBAPP_ARGS], False, False),
        (["validate", "examples/operators/fanout"], False, False),
        (["init", "--help"], False, True),
    ],
    ids=["render-in-process", "render-process-entry", "validate-process-entry", "init"],
)
def test_bounded_commands_leave_the_collector_off_only_where_the_process_entry_turned_it_off(
    args: list[str], enabled: bool, after: bool
) -> None:
    """``python -m oper8d`` imports with the collector off. A bounded command keeps it so
    (its process ends without a pass over every imported object); any other command
    turns it on; an in-process run (a test, an embedding program) finds it as it was."""
    import gc

    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert gc.isenabled() is after
    finally:
        gc.enable() if was else gc.disable()
