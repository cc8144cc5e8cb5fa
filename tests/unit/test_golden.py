"""Golden files: ``oper8d render`` of each example bundle, byte for byte.

The files live in ``tests/golden/<case>.yaml``. A change to the engine or to an example
that changes what gets applied shows up here as a diff; when the change is intended,
regenerate them with ``OPER8D_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_golden.py``
and review the diff like code.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from oper8d.cli.main import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
EXAMPLES = REPO / "examples" / "operators"

#: case name -> (example bundle, sample CR)
CASES = {
    "webapp": ("webapp", "webapp.yaml"),
    "webapp-minimal": ("webapp", "webapp-minimal.yaml"),
    "stateful": ("stateful", "notes.yaml"),
    "fanout": ("fanout", "pool.yaml"),
}


def render_args(case: str) -> list[str]:
    bundle, sample = CASES[case]
    return ["render", str(EXAMPLES / bundle), "--cr", str(EXAMPLES / bundle / "samples" / sample)]


def golden_text(case: str) -> bytes:
    return (GOLDEN / f"{case}.yaml").read_bytes()


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_output_matches_the_golden_file(case: str) -> None:
    result = CliRunner().invoke(main, render_args(case))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    path = GOLDEN / f"{case}.yaml"
    if os.environ.get("OPER8D_UPDATE_GOLDEN") == "1":
        path.write_bytes(result.stdout_bytes)
    expected = path.read_bytes()
    if result.stdout_bytes != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.decode().splitlines(keepends=True),
                result.stdout.splitlines(keepends=True),
                fromfile=f"tests/golden/{case}.yaml",
                tofile="oper8d render",
            )
        )
        pytest.fail(
            f"render of {case} changed; if intended, rerun with OPER8D_UPDATE_GOLDEN=1\n{diff}"
        )


def test_golden_files_hold_every_object_of_the_full_webapp_in_dependency_order() -> None:
    docs = list(yaml.safe_load_all(golden_text("webapp")))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ConfigMap", "hello-config"),
        ("Deployment", "hello-app"),
        ("Service", "hello-web"),
        ("Ingress", "hello-web"),
        ("HorizontalPodAutoscaler", "hello-app"),
    ]
    assert b"# would delete" not in golden_text("webapp")


def test_minimal_webapp_golden_lists_the_disabled_components_as_deletions() -> None:
    text = golden_text("webapp-minimal").decode()
    kinds = [d["kind"] for d in yaml.safe_load_all(text)]
    assert kinds == ["ConfigMap", "Deployment", "Service"]
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert comments == [
        "# would delete (component 'ingress' is disabled): "
        "networking.k8s.io/v1 Ingress default/hello-web",
        "# would delete (component 'autoscaler' is disabled): "
        "autoscaling/v2 HorizontalPodAutoscaler default/hello-app",
    ]


def test_fanout_golden_has_one_deployment_per_worker_with_its_replicas() -> None:
    docs = list(yaml.safe_load_all(golden_text("fanout")))
    workers = {
        d["metadata"]["name"]: d["spec"]["replicas"] for d in docs if d["kind"] == "Deployment"
    }
    assert workers == {"pool-worker-ingest": 2, "pool-worker-resize": 1, "pool-worker-notify": 0}


def test_stateful_golden_orders_the_migration_before_the_app_it_gates() -> None:
    kinds = [d["kind"] for d in yaml.safe_load_all(golden_text("stateful"))]
    assert kinds.index("StatefulSet") < kinds.index("Job") < kinds.index("Deployment")


def test_stateful_golden_shows_which_keys_its_secret_holds_but_not_their_values() -> None:
    text = golden_text("stateful").decode()
    secret = next(d for d in yaml.safe_load_all(text) if d["kind"] == "Secret")
    assert secret["stringData"] == {"username": "***", "password": "***"}
    assert secret["metadata"]["annotations"]["oper8d.io/applied-hash"] == "***"
    assert text.splitlines()[-1] == (
        "# masked: the values of v1 Secret default/notes-db-credentials "
        "(oper8d render --show-secrets prints them)"
    )


def _render_in_subprocess(case: str, hash_seed: str) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    env.pop("OPER8D_UPDATE_GOLDEN", None)
    proc = subprocess.run(
        [sys.executable, "-m", "oper8d", *render_args(case)],
        cwd=REPO,
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


@pytest.mark.parametrize("case", ["webapp-minimal", "stateful"])
def test_render_is_byte_identical_across_processes_and_hash_seeds(case: str) -> None:
    first = _render_in_subprocess(case, "0")
    second = _render_in_subprocess(case, "4242")
    assert first == second
    assert first == golden_text(case)
