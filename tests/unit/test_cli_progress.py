"""The dry-run progress view says only what is new, aligned, under lazy pass headings."""

from __future__ import annotations

import click
import pytest

from oper8d.cli.progress import LineProgress, format_seconds


def view(**kw: object) -> tuple[LineProgress, list[str]]:
    lines: list[str] = []
    # colours are click styles; a terminal shows them, the assertions read the text
    progress = LineProgress(lambda s: lines.append(click.unstyle(s)), width=8, **kw)  # type: ignore[arg-type]
    return progress, lines


def test_a_state_change_prints_one_aligned_line_under_the_pass_heading() -> None:
    progress, lines = view()
    progress.start_pass(1, 0.0)
    progress.update("db", "deployed", "2 of 2 applied")
    progress.update("migrate", "waiting", "waiting for db: ready")
    assert lines == [
        "reconcile #1  at 0s",
        "  ↑ db        deployed  2 of 2 applied",
        "  … migrate   waiting   for db: ready",
    ]


def test_transient_and_unchanged_states_print_nothing() -> None:
    progress, lines = view()
    progress.start_pass(1, 0.0)
    progress.update("db", "deploying")
    progress.update("db", "deployed", "2 unchanged")
    progress.update("db", "verifying")
    assert lines == []


def test_a_pass_where_nothing_changed_has_no_heading() -> None:
    progress, lines = view()
    progress.start_pass(1, 0.0)
    progress.update("db", "verified")
    progress.start_pass(2, 5.0)
    progress.update("db", "deployed", "1 unchanged")
    progress.update("db", "verified")
    progress.start_pass(3, 10.0)
    progress.update("db", "waiting", "StatefulSet default/db: 0 of 1 replicas ready")
    assert lines == [
        "reconcile #1  at 0s",
        "  ✓ db        verified",
        "reconcile #3  at 10s",
        "  … db        waiting   StatefulSet default/db: 0 of 1 replicas ready",
    ]


def test_the_same_wait_is_not_repeated_but_a_new_reason_is() -> None:
    progress, lines = view()
    progress.start_pass(1, 0.0)
    progress.update("app", "waiting", "0 of 2 replicas available")
    progress.start_pass(2, 5.0)
    progress.update("app", "waiting", "0 of 2 replicas available")
    progress.update("app", "waiting", "1 of 2 replicas available")
    assert [line.split(maxsplit=3)[-1] for line in lines if line.startswith("  ")] == [
        "0 of 2 replicas available",
        "1 of 2 replicas available",
    ]


def test_ascii_only_swaps_the_symbols() -> None:
    progress, lines = view(ascii_only=True)
    progress.start_pass(1, 0.0)
    for state in ("deployed", "waiting", "verified", "failed", "disabled"):
        progress.update(state, state, "")
    assert [line[2] for line in lines[1:]] == ["+", "~", "v", "x", "-"]
    assert all(line.isascii() for line in lines)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (5, "5s"), (60, "1m"), (90.4, "1m30s"), (3725, "1h2m5s")]
)
def test_simulated_time_is_written_compactly(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text
