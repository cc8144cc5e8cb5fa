"""``oper8d test BUNDLE``: run the test cases kept in the bundle's ``tests/*.yaml``.

The click command object ``test`` is registered on the ``oper8d`` group by
``cli/main.py``. Output reads like pytest's: one ``PASS`` / ``FAIL`` line per case (a
failure is followed by its reasons, each at ``file:line:col``, and a diff for a golden
file), then ``N passed, M failed``. Exit codes: 0 all passed, 1 a case failed, 2 the
test files themselves are invalid (each problem printed as ``file:line:col: message``),
there is no test case, or ``-k`` selects none. Imports nothing from the kubernetes client.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from oper8d.cli.inputs import (
    EXIT_INVALID,
    EXIT_USAGE,
    bundle_argument,
    bundle_dir,
    current_limits,
    fail,
    format_problem,
)

if TYPE_CHECKING:
    from oper8d.bundletest import CaseResult

__all__ = ["test"]

_INDENT = "      "


@click.command(short_help="Run the tests kept in a bundle's tests/ folder.")
@bundle_argument
@click.option(
    "--update",
    is_flag=True,
    help="Write the golden file of each render case that differs (or is missing) instead of "
    "failing; review the change before committing it.",
)
@click.option(
    "-k",
    "pattern",
    metavar="PATTERN",
    help="Run only the cases whose id (tests/<file>.yaml::<case name>) contains PATTERN, "
    "ignoring case.",
)
def test(bundle: str, update: bool, pattern: str | None) -> None:
    """Run the test cases in BUNDLE/tests/*.yaml (see docs/testing-bundles.md).

    Each case renders a CR, expects an error, or simulates a rollout on the in-memory
    cluster, exactly as `oper8d render` and `oper8d run --dry-run` would. Prints one
    PASS/FAIL line per case and a summary; exits 1 when a case fails, 2 when the test
    files are invalid.
    """
    from oper8d.bundletest import BundleCache, load_suite, run_case, select_cases
    from oper8d.errors import BundleError

    root = bundle_dir(bundle)
    try:
        suite = load_suite(root, current_limits())
    except BundleError as err:
        n = len(err.problems)
        fail(
            err.problems,
            root,
            hint=f"{n} problem{'s' if n != 1 else ''} in the test files of {bundle} "
            "(the format: docs/testing-bundles.md)",
            code=EXIT_USAGE,
        )
    if not suite.cases:
        fail(
            [
                f"no test cases in {root / 'tests'}: write test files tests/<name>.yaml "
                "(docs/testing-bundles.md; `oper8d init` scaffolds a bundle with one)"
            ],
            code=EXIT_USAGE,
        )
    selected = select_cases(suite, pattern)
    deselected = len(suite.cases) - len(selected)
    if not selected:
        fail(
            [f"no test case matches -k {pattern!r} ({len(suite.cases)} cases in {bundle})"],
            code=EXIT_USAGE,
        )
    bundles = BundleCache(current_limits())
    passed = failed = updated = 0
    for case in selected:
        result = run_case(case, root=root, bundles=bundles, update=update)
        _print_result(result, root)
        passed += result.passed
        failed += not result.passed
        updated += result.golden_updated
    _print_summary(passed, failed, deselected, updated)
    sys.exit(EXIT_INVALID if failed else 0)


def _print_result(result: CaseResult, root: Path) -> None:
    case = result.case
    if result.passed:
        extra = ""
        if result.golden_updated:
            golden = getattr(case.check, "golden", None)
            extra = f"  (golden file {golden} updated)"
        click.echo(click.style("PASS", fg="green") + f"  {case.id}{extra}")
        _print_warnings(result, root)
        return
    click.echo(click.style("FAIL", fg="red", bold=True) + f"  {case.id}")
    for problem in result.failures:
        click.echo(_INDENT + format_problem(problem, root))
    for note in result.notes:
        click.echo(_INDENT + note)
    for line in result.diff.splitlines():
        color = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        click.echo(_INDENT + click.style(line, fg=color))
    _print_warnings(result, root)


def _print_warnings(result: CaseResult, root: Path) -> None:
    """Warnings on stderr under their case; they do not fail it."""
    for warning in result.warnings:
        text = f"{_INDENT}warning: {format_problem(warning, root)}"
        click.secho(text, fg="yellow", err=True)


def _print_summary(passed: int, failed: int, deselected: int, updated: int) -> None:
    summary = f"{passed} passed, {failed} failed"
    if deselected:
        summary += f", {deselected} deselected"
    if updated:
        summary += f"; {updated} golden file{'s' if updated != 1 else ''} updated"
    click.secho(summary, fg="red" if failed else "green", bold=True)
