"""The live operator tells of references that cannot resolve among a CR's objects
(``engine.references``): a log line and a Warning Event ``UnresolvedReference`` per
warning, once per CR and warning, so a steady CR costs no request; a warning that goes and
comes back is told again.

Over the fakes of ``test_runtime_controller`` (scripted reconcile results, FakeClock)."""

from __future__ import annotations

import logging

import pytest
from test_runtime_controller import Rig, spec  # noqa: F401  (the fixture)

from oper8d.bundle.model import ControllerSpec
from oper8d.engine.reconcile import ReconcileResult
from oper8d.errors import Problem, SourcePos

WARNING = Problem(
    "resource 'web.hpa' renders HorizontalPodAutoscaler default/web, whose "
    "spec.scaleTargetRef names apps/v1 Deployment 'wbe', which is not among the objects "
    "rendered for this CR",
    SourcePos("operator.yaml", 12, 9),
)


def test_a_warning_is_logged_and_recorded_once_per_cr(
    spec: ControllerSpec,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    script: list[tuple[Problem, ...] | None] = [(WARNING,), (WARNING,), None, (), (WARNING,)]
    rig = Rig(spec, lambda cr: ReconcileResult(requeue_after=None, warnings=script.pop(0)))
    cr = rig.create_cr()
    told = []
    with caplog.at_level(logging.WARNING, logger="oper8d.controller"):
        for _ in range(5):
            rig.queue.add(("default", "demo"))
            rig.run_ready()
            told.append(len([e for e in rig.events() if e[1] == "UnresolvedReference"]))
    # told at first, not again while it stays (or is not judged: None), again after it went
    assert told == [1, 1, 1, 1, 2]
    assert [r.getMessage() for r in caplog.records].count(str(WARNING)) == 2
    (event, *_) = rig.api.list("events.k8s.io/v1", "Event", "default")
    assert event["note"] == str(WARNING)
    assert event["regarding"]["uid"] == cr["metadata"]["uid"]
