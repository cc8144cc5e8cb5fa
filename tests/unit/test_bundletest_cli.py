"""``oper8d test``: output, exit codes, golden files, ``--update``, ``-k`` and invalid files.

The command object is invoked directly (``oper8d.cli.test_cmd.test``); the lead registers
it on the ``oper8d`` group. ``CliRunner`` catches exceptions, so ``result.exception``
being a ``SystemExit`` (or None) shows that bad input never ended in a traceback.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from oper8d.bundletest import load_suite
from oper8d.cli import test_cmd
from oper8d.cli.main import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"


def run_tests(bundle: Path, *args: str) -> Result:
    return CliRunner().invoke(test_cmd.test, [str(bundle), *args])


def copy_example(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target)
    return target


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def exited_cleanly(result: Result) -> bool:
    return result.exception is None or isinstance(result.exception, SystemExit)


# -- the example bundles -----------------------------------------------------------------


@pytest.mark.parametrize("example", ["webapp", "stateful", "fanout"])
def test_every_example_bundle_passes_its_own_tests(example: str) -> None:
    result = run_tests(EXAMPLES / example)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    cases = len(load_suite(EXAMPLES / example).cases)
    assert lines[-1] == f"{cases} passed, 0 failed"
    assert len(lines) == cases + 1
    assert all(line.startswith("PASS  tests/") for line in lines[:-1])


def _golden_cases() -> list[tuple[str, str, str]]:
    """(example, CR file, golden file) of every render case with a golden file."""
    found = []
    for example in ("webapp", "stateful", "fanout"):
        for case in load_suite(EXAMPLES / example).cases:
            golden = getattr(case.check, "golden", None)
            if golden:
                cr_file = case.cr.doc.file if case.cr is not None else ""
                found.append((example, cr_file, golden))
    return found


@pytest.mark.parametrize(("example", "cr_file", "golden"), _golden_cases())
def test_example_golden_files_hold_exactly_what_oper8d_render_prints(
    example: str, cr_file: str, golden: str
) -> None:
    bundle = EXAMPLES / example
    rendered = CliRunner().invoke(main, ["render", str(bundle), "--cr", str(bundle / cr_file)])
    assert rendered.exit_code == 0, rendered.output
    assert (bundle / golden).read_bytes() == rendered.stdout_bytes


def test_the_example_cases_asked_for_are_there() -> None:
    ids = {
        example: [c.id for c in load_suite(EXAMPLES / example).cases]
        for example in ("webapp", "stateful", "fanout")
    }
    migration = (
        "tests/rollout.yaml::the migration Job failed -> Ready False, "
        "the app Deployment was never created"
    )
    assert migration in ids["stateful"]
    assert "tests/render.yaml::with the ingress disabled no Ingress is rendered" in ids["webapp"]
    assert "tests/errors.yaml::fewer than one replica violates the schema" in ids["webapp"]
    assert "tests/render.yaml::there is one Deployment per worker" in ids["fanout"]


# -- golden files ------------------------------------------------------------------------


def test_a_changed_render_fails_with_a_diff_from_the_golden_file(tmp_path: Path) -> None:
    bundle = copy_example("webapp", tmp_path)
    sample = bundle / "samples" / "webapp.yaml"
    sample.write_text(sample.read_text().replace("replicas: 3", "replicas: 4"))
    result = run_tests(bundle, "-k", "full sample renders")
    assert result.exit_code == 1
    out = result.stdout.splitlines()
    assert out[0] == "FAIL  tests/render.yaml::the full sample renders as committed"
    golden_line = next(
        n
        for n, line in enumerate((bundle / "tests/render.yaml").read_text().splitlines(), 1)
        if "golden:" in line
    )
    assert out[1] == (
        f"      {bundle}/tests/render.yaml:{golden_line}:15: the render differs from "
        "tests/golden/webapp.yaml (if the change is intended, rerun with --update and review "
        "the diff)"
    )
    assert (
        f"      {bundle}/tests/render.yaml:12:15: Deployment hello-app: spec.replicas: "
        "expected 3, got 4"
    ) in out
    assert "      --- tests/golden/webapp.yaml" in out
    assert "      +++ oper8d render" in out
    assert "      -  replicas: 3" in out
    assert "      +  replicas: 4" in out
    assert out[-1] == "0 passed, 1 failed, 8 deselected"


def test_update_rewrites_a_differing_golden_file_and_the_next_run_passes(tmp_path: Path) -> None:
    bundle = copy_example("webapp", tmp_path)
    sample = bundle / "samples" / "webapp-minimal.yaml"
    sample.write_text(sample.read_text().replace("replicas: 1", "replicas: 5"))
    minimal_before = (bundle / "tests/golden/webapp.yaml").read_bytes()
    updated = run_tests(bundle, "--update")
    assert updated.exit_code == 0, updated.output
    assert (
        "PASS  tests/render.yaml::the minimal sample renders as committed"
        "  (golden file tests/golden/webapp-minimal.yaml updated)" in updated.stdout
    )
    assert updated.stdout.splitlines()[-1] == "9 passed, 0 failed; 1 golden file updated"
    assert (bundle / "tests/golden/webapp.yaml").read_bytes() == minimal_before
    rendered = CliRunner().invoke(main, ["render", str(bundle), "--cr", str(sample)])
    assert (bundle / "tests/golden/webapp-minimal.yaml").read_bytes() == rendered.stdout_bytes
    again = run_tests(bundle)
    assert again.exit_code == 0
    assert again.stdout.splitlines()[-1] == "9 passed, 0 failed"


def test_a_missing_golden_file_fails_until_update_writes_it(tmp_path: Path) -> None:
    bundle = copy_example("fanout", tmp_path)
    shutil.rmtree(bundle / "tests" / "golden")
    result = run_tests(bundle)
    assert result.exit_code == 1
    assert (
        f"      {bundle}/tests/render.yaml:7:15: golden file tests/golden/pool.yaml does not "
        "exist: run `oper8d test` with --update to write it, then review and commit it"
    ) in result.stdout.splitlines()
    assert run_tests(bundle, "--update").exit_code == 0
    assert (bundle / "tests/golden/pool.yaml").read_bytes() == (
        EXAMPLES / "fanout/tests/golden/pool.yaml"
    ).read_bytes()


# -- selecting cases ---------------------------------------------------------------------


def test_k_runs_the_cases_whose_id_contains_the_pattern_ignoring_case() -> None:
    result = run_tests(EXAMPLES / "webapp", "-k", "ROLLOUT.yaml::")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "PASS  tests/rollout.yaml::the full sample becomes Ready with every component verified",
        "PASS  tests/rollout.yaml::the minimal sample never creates an Ingress or an autoscaler",
        "2 passed, 0 failed, 7 deselected",
    ]


def test_k_that_selects_nothing_is_a_usage_error() -> None:
    result = run_tests(EXAMPLES / "webapp", "-k", "no such case")
    assert result.exit_code == 2
    assert "no test case matches -k 'no such case'" in result.stderr


def test_a_bundle_without_test_files_is_a_usage_error_saying_where_to_write_them(
    tmp_path: Path,
) -> None:
    shutil.copy(EXAMPLES / "fanout" / "operator.yaml", tmp_path / "operator.yaml")
    result = run_tests(tmp_path)
    assert result.exit_code == 2
    assert f"error: no test cases in {tmp_path}/tests: write test files tests/<name>.yaml" in (
        result.stderr
    )


# -- invalid test files ------------------------------------------------------------------


def test_invalid_test_files_exit_2_with_every_problem_at_its_position(tmp_path: Path) -> None:
    bundle = copy_example("webapp", tmp_path)
    write(
        bundle / "tests" / "broken.yaml",
        """
        cases:
          - name: no check
            crFile: samples/webapp.yaml
          - name: bad path
            crFile: samples/webapp.yaml
            render:
              expect:
                - kind: Deployment
                  name: hello-app
                  fields:
                    - {path: spec..replicas, equals: 1}
          - name: typo
            crFile: samples/webapp.yaml
            rollout: {ready: true, maxReconcile: 3}
        """,
    )
    write(
        bundle / "tests" / "more.yaml",
        """
        cases:
          - name: twice
            crFile: samples/missing.yaml
            error: x
          - name: twice
            crFile: ../outside.yaml
            error: x
        """,
    )
    result = run_tests(bundle)
    assert result.exit_code == 2
    assert exited_cleanly(result)
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"{bundle}/tests/broken.yaml:2:5: test case 'no check': needs exactly one of "
        "'render', 'error' or 'rollout'",
        f"{bundle}/tests/broken.yaml:14:28: unknown key 'maxReconcile' in the rollout check "
        "(did you mean 'maxReconciles'?)",
        f"{bundle}/tests/more.yaml:3:13: file 'samples/missing.yaml' not found in the bundle "
        f"{bundle}",
        f"{bundle}/tests/more.yaml:5:11: test case 'twice' is already defined at line 2: give "
        "each case of a file its own name",
        f"{bundle}/tests/more.yaml:6:13: path '../outside.yaml' uses '..': bundle paths may not "
        "leave the bundle",
        f"5 problems in the test files of {bundle} (the format: docs/testing-bundles.md)",
    ]


def test_a_field_path_that_does_not_parse_is_reported_at_the_path(tmp_path: Path) -> None:
    bundle = copy_example("webapp", tmp_path)
    write(
        bundle / "tests" / "render.yaml",
        """
        cases:
          - name: bad path
            crFile: samples/webapp.yaml
            render:
              expect:
                - kind: Deployment
                  name: hello-app
                  fields:
                    - {path: spec..replicas, equals: 1}
        """,
    )
    result = run_tests(bundle)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"{bundle}/tests/render.yaml:9:22: field path 'spec..replicas': empty key at "
        "character 6 (two dots, or a leading dot)"
    )


def test_malformed_yaml_in_a_test_file_is_reported_at_its_position(tmp_path: Path) -> None:
    bundle = copy_example("fanout", tmp_path)
    write(bundle / "tests" / "render.yaml", "cases:\n  - name: a\n    render: {golden: [x}\n")
    result = run_tests(bundle)
    assert result.exit_code == 2
    assert exited_cleanly(result)
    assert result.stderr.startswith(f"{bundle}/tests/render.yaml:3:")
    assert "invalid YAML" in result.stderr


def test_a_kubernetes_object_among_the_test_files_is_reported_as_misplaced(tmp_path: Path) -> None:
    bundle = copy_example("fanout", tmp_path)
    shutil.copy(bundle / "samples" / "pool.yaml", bundle / "tests" / "pool.yaml")
    result = run_tests(bundle)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"{bundle}/tests/pool.yaml:1:1: this looks like a Kubernetes object, not a test file: "
        "every tests/*.yaml holds test cases; move CRs into a subfolder (e.g. tests/crs/) and "
        "name them with crFile:"
    )


def test_files_in_subfolders_of_tests_are_not_test_files(tmp_path: Path) -> None:
    bundle = copy_example("fanout", tmp_path)
    shutil.copy(bundle / "samples" / "pool.yaml", bundle / "tests" / "golden" / "cr.yaml")
    write(
        bundle / "tests" / "render.yaml",
        """
        cases:
          - name: a CR kept under tests/
            crFile: tests/golden/cr.yaml
            render: {count: {Deployment: 3}}
        """,
    )
    result = run_tests(bundle)
    assert result.exit_code == 0, result.output
    assert [c.name for c in load_suite(bundle).cases] == ["a CR kept under tests/"]
    assert yaml.safe_load((bundle / "tests/golden/cr.yaml").read_text())["kind"] == "WorkerPool"


def test_oper8d_test_does_not_import_the_kubernetes_client() -> None:
    script = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from oper8d.cli import test_cmd\n"
        f"result = CliRunner().invoke(test_cmd.test, [{str(EXAMPLES / 'stateful')!r}])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"


def test_a_failed_expectation_on_a_secret_shows_its_values_masked(tmp_path: Path) -> None:
    bundle = copy_example("stateful", tmp_path)
    write(
        bundle / "tests" / "secret.yaml",
        """
        cases:
          - name: the password
            crFile: samples/notes.yaml
            render:
              expect:
                - kind: Secret
                  name: notes-db-credentials
                  fields:
                    - {path: stringData.password, equals: "not-it"}
                    - {path: stringData, equals: {}}
        """,
    )
    result = run_tests(bundle, "-k", "the password")
    assert result.exit_code == 1
    assert 'stringData.password: expected "not-it", got "***"' in result.output
    assert 'stringData: expected {}, got {"username": "***", "password": "***"}' in result.output
    rendered = CliRunner().invoke(
        main, ["render", str(bundle), "--cr", str(bundle / "samples/notes.yaml"), "--show-secrets"]
    )
    objects = yaml.safe_load_all(rendered.output)
    secret = next(o for o in objects if o and o.get("kind") == "Secret")
    assert secret["stringData"]["password"] not in result.output
