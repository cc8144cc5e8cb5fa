"""Fuzzing the CLI: mutated example bundles and CRs never make oper8d show a traceback.

Hypothesis draws the mutations of ``scripts/fuzz_campaign.py`` (wrong types anywhere, template
edge cases, YAML snippets inserted into text templates and CRs, deep nesting) and runs
validate, render or run --dry-run in-process with click's runner. Every input must end with
exit 0, or exit 1/2 and a message: never an exception escaping the command, never a printed
traceback. The budget is about a minute; ``scripts/fuzz_campaign.py`` runs the long campaign.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scripts.fuzz_campaign import COMMANDS, example_cases, mutate, run_case

T = TypeVar("T")
BASES = example_cases()


class DataChooser:
    """The campaign's choices, drawn from hypothesis (so a failure shrinks)."""

    def __init__(self, data: Any) -> None:
        self._data = data

    def choice(self, options: Sequence[T]) -> T:
        return self._data.draw(st.sampled_from(list(options)))

    def integer(self, low: int, high: int) -> int:
        return self._data.draw(st.integers(low, high))  # type: ignore[no-any-return]


def test_the_unmutated_examples_run_cleanly() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for case in BASES:
            for command in COMMANDS:
                outcome = run_case(case, command, Path(tmp))
                assert outcome.kind in ("ok", "error"), (case.example, command, outcome)
                if command[0] != "run":  # a dry run may stop before Ready within 3 passes
                    assert outcome.kind == "ok", (case.example, command, outcome)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_mutated_bundles_and_crs_end_in_ok_or_a_clean_error(data: Any) -> None:
    chooser = DataChooser(data)
    case = mutate(chooser.choice(BASES), chooser)
    command = chooser.choice(COMMANDS)
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_case(case, command, Path(tmp))
    assert outcome.kind != "traceback", f"{command[0]}: {outcome.cause}\n{outcome.detail}"
