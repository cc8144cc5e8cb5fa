"""Kubernetes Events about a CR (``runtime.events.EventRecorder``): what ``kubectl describe``
shows after a reconcile. Recorded into the in-memory cluster with a FakeClock."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError
from oper8d.logs import mark_sensitive, reconcile_context
from oper8d.runtime.events import MAX_MESSAGE, EventRecorder

CR: Obj = {
    "apiVersion": "demo.oper8d.io/v1alpha1",
    "kind": "Demo",
    "metadata": {"name": "demo", "namespace": "apps", "uid": "cr-uid"},
}


@pytest.fixture
def api() -> MemoryCluster:
    return MemoryCluster(clock=FakeClock().now, uid_factory=sequential_uids("events"))


def recorder(api: Any) -> EventRecorder:
    return EventRecorder(api, controller="demo", clock=FakeClock())


def events(api: MemoryCluster) -> list[Obj]:
    found = api.list("events.k8s.io/v1", "Event", "apps")
    return sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"]))


def status(reconciled: str | None = "1.0", **conditions: tuple[str, str]) -> dict[str, Any]:
    """``status(Ready=("False", "InProgress"))``: conditions by type, (status, reason), of a
    CR whose first rollout is done (``reconciled=None``: not yet)."""
    found: dict[str, Any] = {
        "conditions": [
            {"type": t, "status": s, "reason": r, "message": f"{t} is {r}"}
            for t, (s, r) in conditions.items()
        ]
    }
    if reconciled is not None:
        found["versions"] = {"reconciled": reconciled}
    return found


def test_an_event_names_the_cr_the_controller_and_what_happened(api: MemoryCluster) -> None:
    recorder(api).record(CR, type_="Normal", reason="Stable", note="all ready", action="Reconcile")

    [event] = events(api)
    assert event["regarding"] == {
        "apiVersion": "demo.oper8d.io/v1alpha1",
        "kind": "Demo",
        "name": "demo",
        "namespace": "apps",
        "uid": "cr-uid",
    }
    assert event["reportingController"] == "oper8d.io/demo"
    assert (event["type"], event["reason"], event["note"]) == ("Normal", "Stable", "all ready")
    assert event["eventTime"] == "2026-01-01T00:00:00.000000Z"


def test_a_condition_change_is_one_event_with_its_reason_and_message(api: MemoryCluster) -> None:
    recorder(api).record_transition(
        CR, status(Ready=("True", "Stable")), status(Ready=("False", "InProgress"))
    )

    assert [(e["type"], e["reason"], e["note"]) for e in events(api)] == [
        ("Normal", "InProgress", "Ready False: Ready is InProgress")
    ]


def test_an_unchanged_condition_records_nothing(api: MemoryCluster) -> None:
    same = status(Ready=("True", "Stable"), Updating=("False", "Stable"))
    recorder(api).record_transition(CR, same, same)
    recorder(api).record_transition(CR, same, {})  # a status without conditions: nothing new

    assert events(api) == []


def test_ready_and_updating_changing_together_are_two_events(api: MemoryCluster) -> None:
    recorder(api).record_transition(
        CR,
        status(Ready=("True", "Stable"), Updating=("False", "Stable")),
        status(Ready=("False", "InProgress"), Updating=("True", "VersionChange")),
    )

    assert [(e["type"], e["reason"]) for e in events(api)] == [
        ("Normal", "InProgress"),
        ("Normal", "VersionChange"),
    ]


def test_a_first_rollout_is_recorded_from_its_first_failure_on(
    api: MemoryCluster,
) -> None:
    steps = [
        {},
        status(None, Ready=("False", "Initializing"), Updating=("True", "Initializing")),
        status(None, Ready=("False", "InProgress"), Updating=("True", "InProgress")),
        status(None, Ready=("False", "Errored"), Updating=("True", "InProgress")),
        status(None, Ready=("False", "InProgress"), Updating=("True", "InProgress")),
        status(Ready=("True", "Stable"), Updating=("False", "Stable")),
    ]
    one = recorder(api)
    for old, new in itertools.pairwise(steps):
        one.record_transition(CR, old, new)

    # after a Warning, every change: its recovery shows in kubectl describe
    assert [(e["type"], e["reason"]) for e in events(api)] == [
        ("Warning", "Errored"),
        ("Normal", "InProgress"),
        ("Normal", "Stable"),  # Ready
        ("Normal", "Stable"),  # Updating
    ]


def test_a_first_rollout_without_a_failure_records_nothing(api: MemoryCluster) -> None:
    one = recorder(api)
    one.record_transition(CR, {}, status(None, Ready=("False", "InProgress")))
    one.record_transition(
        CR, status(None, Ready=("False", "InProgress")), status(Ready=("True", "Stable"))
    )

    assert events(api) == []


@pytest.mark.parametrize("reason", ["ConfigError", "Errored", "ClusterError"])
def test_failures_are_warnings(api: MemoryCluster, reason: str) -> None:
    recorder(api).record_transition(
        CR, status(Ready=("True", "Stable")), status(Ready=("False", reason))
    )

    assert [(e["type"], e["reason"]) for e in events(api)] == [("Warning", reason)]


def test_a_long_note_is_cut_and_secret_values_never_reach_it(api: MemoryCluster) -> None:
    # the secret straddles the cut: cutting first would leave "hunter2-ve"
    note = "x" * (MAX_MESSAGE - 20) + "password: hunter2-very-secret " + "y" * 2000
    with reconcile_context("r1", "apps/demo"):
        mark_sensitive("hunter2-very-secret")
        recorder(api).record(CR, type_="Warning", reason="Errored", note=note, action="Reconcile")

    [event] = events(api)
    assert len(event["note"]) == MAX_MESSAGE
    assert "hunter2" not in event["note"] and "password: ***" in event["note"]


class Refusing:
    def create(self, obj: Obj, *, field_manager: str) -> Obj:
        raise ClusterError("forbidden: cannot create events", status=403)


def test_an_event_the_api_refuses_does_not_fail_the_reconcile() -> None:
    recorder(Refusing()).record(CR, type_="Normal", reason="Stable", note="ok", action="Reconcile")
