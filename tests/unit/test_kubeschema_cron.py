"""A CronJob schedule judged as the apiserver's cron parser judges it (kubeschema.cron);
the real apiserver's verdicts on the same schedules are held to these by
tests/integration/test_corpus_differential.py."""

from __future__ import annotations

import pytest

from oper8d.kubeschema import KubeSchemas
from oper8d.kubeschema.cron import schedule_problem
from tests.realworld.workloadedits import SCHEDULES

MORE = [
    ("5/15 * * * *", True),
    ("1-5,10-20/5 * * * *", True),
    ("0 0 ? * MON-FRI", True),
    ("0 0 1 JAN,jul *", True),
    ("@every 1h30m", True),
    ("@every 1.5h", True),
    ("0 0 * * 7", False),  # days of the week are 0-6 to this parser
    ("5-1 * * * *", False),
    ("1-2-3 * * * *", False),
    ("*/5/2 * * * *", False),
    ("x * * * *", False),
    ("0 0 1 foo *", False),
    ("@every 5x", False),
    ("@every", False),
]


@pytest.mark.parametrize(("schedule", "valid"), SCHEDULES + MORE)
def test_schedule(schedule: str, valid: bool) -> None:
    assert (schedule_problem(schedule) is None) is valid, schedule_problem(schedule)


def test_a_bad_schedule_is_an_error_at_the_field() -> None:
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "schedule": "61 * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    }
                }
            },
        },
    }
    errors = KubeSchemas.builtin().validate(cronjob).errors
    assert any("spec.schedule" in str(e) and "above maximum (59)" in str(e) for e in errors), errors


def test_a_huge_hostile_schedule_is_refused_at_once_and_quoted_short() -> None:
    import time

    for schedule in ("@every " + "1" * 200_000 + "x", "1" * 200_000 + " * * * *"):
        started = time.process_time()
        problem = schedule_problem(schedule)
        assert problem is not None and len(problem) < 300
        assert time.process_time() - started < 1.0  # (a backtracking pattern took 5 s at 20k)


def test_leading_zeros_are_a_number_not_an_overflow() -> None:
    assert schedule_problem("0 0 0000000000000000001 * *") is None
