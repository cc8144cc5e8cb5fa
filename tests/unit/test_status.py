"""oper8's status contract on the CR (engine.status), in the Kubernetes condition convention."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.engine.status import (
    CompletionSummary,
    KindStatus,
    ReadyReason,
    UpdatingReason,
    completion_status,
    error_status,
    get_condition,
    is_stable,
    kind_status_key,
    ready_condition,
    set_condition,
    start_status,
    status_changed,
    updating_condition,
)
from oper8d.errors import (
    ClusterError,
    ConfigError,
    PreconditionError,
    RolloutError,
    VerificationError,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
T2 = T0 + timedelta(minutes=10)

ALL = ("app", "config", "db")
DONE = CompletionSummary(all_components=ALL, deployed=ALL, verified=ALL)


def complete(
    status: dict[str, Any] | None,
    summary: CompletionSummary = DONE,
    *,
    version: str | None = "1.0",
    generation: int = 1,
    now: datetime = T0,
    operator_version: str | None = None,
    projected: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return completion_status(
        status,
        summary,
        version=version,
        generation=generation,
        now=now,
        kind="WebApp",
        operator_version=operator_version,
        projected=projected or {},
    )


def failed_with(error: BaseException, **kw: Any) -> CompletionSummary:
    return CompletionSummary(
        all_components=ALL, deployed=("config",), verified=("config",), unverified=("app", "db"),
        first_error=error, **kw,
    )  # fmt: skip


def ready(status: dict[str, Any]) -> dict[str, Any]:
    cond = get_condition(status, "Ready")
    assert cond is not None
    return cond


def updating(status: dict[str, Any]) -> dict[str, Any]:
    cond = get_condition(status, "Updating")
    assert cond is not None
    return cond


def brief(cond: dict[str, Any]) -> str:
    """``"False InProgress"``: a condition's status value and reason."""
    return f"{cond['status']} {cond['reason']}"


STABLE_1_0 = complete({})  # a CR rolled out successfully at version 1.0


# -- conditions -------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", list(ReadyReason))
def test_ready_is_true_exactly_when_its_reason_is_stable(reason):
    assert ready_condition(reason, "").status is (reason == ReadyReason.STABLE)


@pytest.mark.parametrize("reason", list(UpdatingReason))
def test_updating_is_false_exactly_for_stable_cluster_error_and_errored(reason):
    expected_false = reason in ("Stable", "ClusterError", "Errored")
    assert updating_condition(reason, "").status is (not expected_false)


def test_an_unknown_reason_is_refused():
    with pytest.raises(ValueError):
        ready_condition("Happy", "")
    with pytest.raises(ValueError):
        updating_condition("Verifying", "")


def test_a_new_condition_carries_every_key_of_the_kubernetes_convention():
    status = set_condition({}, "Ready", False, "Initializing", "hi", now=T0, observed_generation=7)
    assert status["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Initializing",
            "message": "hi",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 7,
        }
    ]


def test_last_transition_time_is_kept_while_the_status_value_does_not_change():
    first = set_condition({}, "Ready", False, "Initializing", "a", now=T0, observed_generation=1)
    later = set_condition(first, "Ready", False, "InProgress", "b", now=T1, observed_generation=2)
    cond = ready(later)
    assert (cond["reason"], cond["message"], cond["observedGeneration"]) == ("InProgress", "b", 2)
    assert cond["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_last_transition_time_moves_when_the_status_value_flips():
    first = set_condition({}, "Ready", False, "Initializing", "", now=T0, observed_generation=1)
    flipped = set_condition(first, "Ready", True, "Stable", "", now=T1, observed_generation=1)
    assert ready(flipped)["lastTransitionTime"] == "2026-01-01T00:05:00Z"


@given(st.lists(st.booleans(), min_size=1, max_size=12))
def test_last_transition_time_is_the_time_of_the_last_flip(values):
    status: dict[str, Any] = {}
    last_flip = 0
    for minute, value in enumerate(values):
        if minute == 0 or value != values[minute - 1]:
            last_flip = minute
        status = set_condition(
            status, "Updating", value, "x", "", now=T0 + timedelta(minutes=minute),
            observed_generation=1,
        )  # fmt: skip
    expected = (T0 + timedelta(minutes=last_flip)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert updating(status)["lastTransitionTime"] == expected


def test_setting_a_condition_keeps_other_conditions_and_their_order_and_the_input_intact():
    original = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Stable", "lastTransactionTime": "x"},
            {"type": "Custom", "status": "True", "reason": "Mine"},
        ],
        "other": 1,
    }
    before = copy.deepcopy(original)
    new = set_condition(original, "Ready", False, "InProgress", "m", now=T0, observed_generation=1)
    assert original == before
    assert [c["type"] for c in new["conditions"]] == ["Ready", "Custom"]
    assert new["conditions"][1] == {"type": "Custom", "status": "True", "reason": "Mine"}
    assert "lastTransactionTime" not in new["conditions"][0]  # oper8's key is not carried on
    assert new["other"] == 1


def test_a_naive_datetime_is_refused_rather_than_guessed():
    with pytest.raises(ValueError):
        set_condition(
            {}, "Ready", True, "Stable", "", now=datetime(2026, 1, 1), observed_generation=1
        )


# -- start of a reconcile -----------------------------------------------------------------------


def test_a_first_reconcile_starts_as_initializing():
    status = start_status({}, version="1.0", generation=1, now=T0, kind="WebApp")
    assert brief(ready(status)) == "False Initializing"
    assert ready(status)["message"] == "Initial Rollout Started"
    assert get_condition(status, "Updating") is None
    assert status["webAppStatus"] == "InProgress"


def test_a_version_change_is_announced_on_both_conditions():
    status = start_status(STABLE_1_0, version="1.1", generation=2, now=T1)
    assert brief(ready(status)) == "False InProgress"
    assert brief(updating(status)) == "True VersionChange"
    assert updating(status)["message"] == "Version Change Started: [1.0] -> [1.1]"
    assert ready(status)["lastTransitionTime"] == "2026-01-01T00:05:00Z"


def test_a_version_change_still_rolling_out_at_the_same_generation_is_not_announced_again():
    started = start_status(STABLE_1_0, version="1.1", generation=2, now=T1)
    waiting = complete(
        started,
        CompletionSummary(all_components=ALL, deployed=ALL, unverified=ALL),
        version="1.1",
        generation=2,
        now=T1,
    )
    assert start_status(waiting, version="1.1", generation=2, now=T2) == waiting
    # a new generation is a new rollout: announced
    again = start_status(waiting, version="1.2", generation=3, now=T2)
    assert updating(again)["message"] == "Version Change Started: [1.0] -> [1.2]"


def test_a_failed_first_rollout_retried_at_the_same_generation_stays_as_it_was():
    started = start_status({}, version="1.0", generation=1, now=T0)
    failed = complete(started, failed_with(ConfigError("bad")), generation=1, now=T0)
    assert start_status(failed, version="1.0", generation=1, now=T1) == failed
    fixed = start_status(failed, version="1.0", generation=2, now=T1)
    assert brief(ready(fixed)) == "False Initializing"


def test_a_reconcile_at_the_reconciled_version_starts_with_the_status_unchanged():
    assert start_status(STABLE_1_0, version="1.0", generation=2, now=T1) == STABLE_1_0


# -- completion: success and incomplete verification --------------------------------------------


def test_a_complete_rollout_is_stable_and_records_the_version():
    status = complete({}, version="1.0", generation=3, operator_version="0.4.0")
    assert brief(ready(status)) == "True Stable"
    assert ready(status)["message"] == "Verify Complete"
    assert brief(updating(status)) == "False Stable"
    assert updating(status)["message"] == "Rollout Complete"
    assert status["versions"] == {"reconciled": "1.0"}
    assert status["observedGeneration"] == 3
    assert {c["observedGeneration"] for c in status["conditions"]} == {3}
    assert status["operatorVersion"] == "0.4.0"
    assert status["webAppStatus"] == "Completed"
    assert is_stable(status, "1.0")


def test_without_an_operator_version_none_is_written():
    assert "operatorVersion" not in complete({})


def test_incomplete_verification_keeps_the_rollout_in_progress_and_says_what_waits():
    waiting = CompletionSummary(
        all_components=ALL,
        deployed=ALL,
        verified=("config",),
        unverified=("db", "app"),
        waiting={
            "db": "StatefulSet apps/db: 0 of 1 replicas ready",
            "app": "waiting for database",
        },
    )
    status = complete(STABLE_1_0, waiting, version="1.1", now=T1)
    assert brief(ready(status)) == "False InProgress"
    assert ready(status)["message"] == "Verify InProgress"
    assert brief(updating(status)) == "True VerifyWait"
    assert updating(status)["message"] == (
        "Component verification incomplete: app: waiting for database; "
        "db: StatefulSet apps/db: 0 of 1 replicas ready"
    )
    assert status["versions"] == {"reconciled": "1.0"}  # not reconciled until verified
    assert status["webAppStatus"] == "InProgress"
    assert not is_stable(status, "1.1")


def test_the_updating_message_lists_a_few_waiting_components_and_counts_the_rest():
    names = tuple(f"c{i}" for i in range(6))
    summary = CompletionSummary(
        all_components=names, deployed=names, unverified=names, waiting={n: "slow" for n in names}
    )
    message = updating(complete(STABLE_1_0, summary))["message"]
    assert message.endswith("c0: slow; c1: slow; c2: slow (and 3 more)")


def test_a_first_rollout_still_verifying_stays_initializing():
    summary = CompletionSummary(all_components=ALL, deployed=ALL, unverified=ALL)
    status = complete(start_status({}, version="1.0", generation=1, now=T0), summary, now=T1)
    assert brief(ready(status)) == "False Initializing"
    assert ready(status)["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert "versions" not in status


# -- completion: the error table ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "ready_row", "updating_row", "kind_status"),
    [
        (PreconditionError("db"), "False InProgress", "True PreconditionWait", "InProgress"),
        (VerificationError("db not ready"), "False InProgress", "True VerifyWait", "InProgress"),
        (ConfigError("bad", field="spec.x"), "False ConfigError", "False Errored", "Failed"),
        (ClusterError("forbidden", status=403), "False InProgress", "False ClusterError", "Failed"),
        (RolloutError("hook crashed"), "False Errored", "False Errored", "Failed"),
        (KeyError("image"), "False Errored", "False Errored", "Failed"),
    ],
)  # fmt: skip
def test_each_error_maps_to_its_row_of_the_status_table(
    error, ready_row, updating_row, kind_status
):
    status = complete(STABLE_1_0, failed_with(error), version="1.1", now=T1)
    assert brief(ready(status)) == ready_row
    assert brief(updating(status)) == updating_row
    assert status["webAppStatus"] == kind_status
    assert status["versions"] == {"reconciled": "1.0"}


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (PreconditionError("waiting for database"), "waiting for database"),
        (ClusterError("forbidden", status=403), "forbidden"),
        (ConfigError("must be >= 1", field="spec.replicas"), "spec.replicas: must be >= 1"),
        (KeyError("image"), "KeyError: 'image'"),
    ],
)
def test_the_updating_message_is_the_errors_message(error, message):
    assert updating(complete(STABLE_1_0, failed_with(error)))["message"] == message


@pytest.mark.parametrize(
    "error", [PreconditionError("db"), VerificationError("db"), ClusterError("boom")]
)
def test_a_first_rollout_that_only_waits_or_retries_stays_initializing(error):
    status = complete({}, failed_with(error))
    assert brief(ready(status)) == "False Initializing"
    assert ready(status)["message"] == "Initial Rollout Started"


def test_a_config_error_puts_the_field_on_ready():
    status = complete({}, failed_with(ConfigError("must be >= 1", field="spec.replicas")))
    assert ready(status)["message"] == "spec.replicas: must be >= 1"


def test_failed_components_without_a_recorded_error_are_not_reported_as_progress():
    summary = CompletionSummary(all_components=ALL, deployed=ALL, verified=("app",), failed=("db",))
    status = complete(STABLE_1_0, summary)
    assert brief(ready(status)) == "False Errored"
    assert "db" in ready(status)["message"]


# -- componentStatus, kind status, projection -------------------------------------------------


def test_component_status_lists_every_set_sorted_with_counts():
    summary = CompletionSummary(
        all_components=("web", "db", "cache", "config"),
        deployed=("db", "config", "web"),
        verified=("config", "db"),
        unverified=("web",),
        failed=(),
        unstarted=("cache",),
        waiting={
            "web": "Deployment apps/web: 1 of 3 replicas available",
            "cache": "waiting for db",
        },
    )
    assert complete({}, summary)["componentStatus"] == {
        "allComponents": ["cache", "config", "db", "web"],
        "deployedComponents": ["config", "db", "web"],
        "verifiedComponents": ["config", "db"],
        "unverifiedComponents": ["web"],
        "failedComponents": [],
        "unstartedComponents": ["cache"],
        "waiting": [
            {"component": "cache", "reason": "waiting for db"},
            {"component": "web", "reason": "Deployment apps/web: 1 of 3 replicas available"},
        ],
        "deployed": "3/4",
        "verified": "2/4",
    }


def test_the_same_outcome_given_in_any_order_writes_the_same_status():
    a = CompletionSummary(
        all_components=("b", "a"), deployed=("b", "a"), unverified=("b", "a"),
        waiting={"b": "x", "a": "y"},
    )  # fmt: skip
    b = CompletionSummary(
        all_components=("a", "b"), deployed=("a", "b"), unverified=("a", "b"),
        waiting={"a": "y", "b": "x"},
    )  # fmt: skip
    assert a == b
    assert complete({}, a) == complete({}, b)


def test_the_kind_status_key_lowers_only_the_first_letter():
    assert kind_status_key("WebApp") == "webAppStatus"
    assert kind_status_key("DNSRecord") == "dNSRecordStatus"


def test_a_kind_status_set_by_someone_else_is_left_alone():
    status = complete({"webAppStatus": "Degraded"})
    assert status["webAppStatus"] == "Degraded"
    assert complete({"webAppStatus": "InProgress"})["webAppStatus"] == KindStatus.COMPLETED


def test_projected_fields_are_merged_but_never_replace_what_oper8d_writes():
    projected = {
        "endpoint": "http://web:8080",
        "conditions": [],
        "componentStatus": "mine",
        "versions": {"reconciled": "9"},
        "observedGeneration": 99,
        "webAppStatus": "Great",
    }
    status = complete({}, projected=projected, generation=2)
    assert status["endpoint"] == "http://web:8080"
    assert status["versions"] == {"reconciled": "1.0"}
    assert status["observedGeneration"] == 2
    assert status["webAppStatus"] == "Completed"
    assert status["componentStatus"]["verified"] == "3/3"
    assert [c["type"] for c in status["conditions"]] == [
        "Ready",
        "Updating",
        "Reconciling",
        "Stalled",
    ]


# -- kstatus: Reconciling and Stalled -------------------------------------------------------------


def reconciling(status: dict[str, Any]) -> dict[str, Any]:
    cond = get_condition(status, "Reconciling")
    assert cond is not None
    return cond


def stalled(status: dict[str, Any]) -> dict[str, Any]:
    cond = get_condition(status, "Stalled")
    assert cond is not None
    return cond


def test_a_stable_cr_is_neither_reconciling_nor_stalled():
    assert brief(reconciling(STABLE_1_0)) == "False Stable"
    assert brief(stalled(STABLE_1_0)) == "False Stable"


def test_a_first_reconcile_is_reconciling_from_the_start():
    status = start_status({}, version="1.0", generation=1, now=T0)
    assert brief(reconciling(status)) == "True Initializing"
    assert reconciling(status)["message"] == "Initial Rollout Started"
    assert brief(stalled(status)) == "False Initializing"


def test_a_version_change_is_reconciling_with_the_version_change_message():
    status = start_status(STABLE_1_0, version="1.1", generation=2, now=T1)
    assert brief(reconciling(status)) == "True VersionChange"
    assert reconciling(status)["message"] == "Version Change Started: [1.0] -> [1.1]"
    assert reconciling(status)["lastTransitionTime"] == "2026-01-01T00:05:00Z"
    assert reconciling(status)["observedGeneration"] == 2


@pytest.mark.parametrize(
    ("error", "reconciling_row", "stalled_row"),
    [
        (PreconditionError("db"), "True PreconditionWait", "False InProgress"),
        (VerificationError("db"), "True VerifyWait", "False InProgress"),
        (ClusterError("forbidden", status=403), "True ClusterError", "False InProgress"),
        (ConfigError("bad", field="spec.x"), "False ConfigError", "True ConfigError"),
        (RolloutError("hook crashed"), "False Errored", "True Errored"),
        (KeyError("image"), "False Errored", "True Errored"),
    ],
)  # fmt: skip
def test_each_error_maps_to_reconciling_or_stalled(error, reconciling_row, stalled_row):
    status = complete(STABLE_1_0, failed_with(error), version="1.1", now=T1)
    assert brief(reconciling(status)) == reconciling_row
    assert brief(stalled(status)) == stalled_row


def test_a_stalled_condition_carries_the_errors_message():
    status = complete({}, failed_with(ConfigError("must be >= 1", field="spec.replicas")))
    assert stalled(status)["message"] == "spec.replicas: must be >= 1"


def test_an_invalid_cr_outside_a_rollout_is_stalled():
    status = error_status(
        complete({}), ConfigError("bad", field="spec.x"), generation=2, now=T1, kind="WebApp"
    )
    assert brief(stalled(status)) == "True ConfigError"
    assert brief(reconciling(status)) == "False ConfigError"
    assert stalled(status)["observedGeneration"] == 2


def test_reconciling_keeps_its_transition_time_while_it_stays_true():
    started = start_status({}, version="1.0", generation=1, now=T0)
    waiting = complete(started, failed_with(PreconditionError("db")), now=T1)
    assert brief(reconciling(waiting)) == "True PreconditionWait"
    assert reconciling(waiting)["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    done = complete(waiting, now=T2)
    assert brief(reconciling(done)) == "False Stable"
    assert reconciling(done)["lastTransitionTime"] == "2026-01-01T00:10:00Z"


OUTCOMES = st.sampled_from(
    [
        DONE,
        CompletionSummary(all_components=ALL, deployed=ALL, unverified=ALL),
        failed_with(PreconditionError("p")),
        failed_with(VerificationError("v")),
        failed_with(ClusterError("c")),
        failed_with(ConfigError("x")),
        failed_with(RolloutError("r")),
    ]
)


@given(st.lists(OUTCOMES, min_size=1, max_size=6))
def test_kstatus_conditions_always_agree_with_ready(outcomes):
    status: dict[str, Any] = start_status({}, version="1.0", generation=1, now=T0)
    for minute, outcome in enumerate(outcomes, 1):
        status = complete(status, outcome, now=T0 + timedelta(minutes=minute))
        is_ready = ready(status)["status"] == "True"
        is_stalled = stalled(status)["status"] == "True"
        is_reconciling = reconciling(status)["status"] == "True"
        assert is_ready + is_stalled + is_reconciling == 1  # exactly one of the three
        assert is_stalled == (ready(status)["reason"] in ("ConfigError", "Errored"))


def test_completion_leaves_its_input_untouched():
    before = copy.deepcopy(STABLE_1_0)
    complete(STABLE_1_0, failed_with(RolloutError("x")), now=T1)
    assert before == STABLE_1_0


# -- errors outside a rollout -------------------------------------------------------------------


def test_an_invalid_cr_reports_a_config_error_naming_the_field():
    old = complete({})
    status = error_status(
        old, ConfigError("must be >= 1", field="spec.replicas"), generation=4, now=T1, kind="WebApp"
    )
    assert brief(ready(status)) == "False ConfigError"
    assert ready(status)["message"] == "spec.replicas: must be >= 1"
    assert ready(status)["observedGeneration"] == 4
    assert brief(updating(status)) == "False Errored"
    assert status["observedGeneration"] == 4
    assert status["componentStatus"] == old["componentStatus"]
    assert status["webAppStatus"] == "Failed"


# -- writing only on change, and the requeue decision -----------------------------------------


def test_the_same_outcome_later_is_not_a_change_worth_writing():
    first = complete(STABLE_1_0, failed_with(PreconditionError("db")), now=T1)
    again = complete(first, failed_with(PreconditionError("db")), now=T2)
    assert not status_changed(first, again)
    assert again == first  # and the timestamps were kept, too


def test_status_changed_ignores_transition_times_only():
    base = complete({})
    retimed = copy.deepcopy(base)
    for cond in retimed["conditions"]:
        cond["lastTransitionTime"] = "2030-01-01T00:00:00Z"
    assert not status_changed(base, retimed)
    reworded = copy.deepcopy(base)
    reworded["conditions"][0]["message"] = "other"
    assert status_changed(base, reworded)
    regen = copy.deepcopy(base)
    regen["observedGeneration"] = 5
    assert status_changed(base, regen)
    assert status_changed(base, {**base, "endpoint": "x"})
    assert not status_changed(None, {})


def test_a_status_written_by_oper8_is_rewritten_once_in_the_new_convention():
    oper8_status = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Stable", "message": "Verify Complete",
             "lastTransactionTime": "2025-06-01T00:00:00"},
            {"type": "Updating", "status": "False", "reason": "Stable",
             "message": "Rollout Complete", "lastTransactionTime": "2025-06-01T00:00:00"},
        ],
        "versions": {"reconciled": "1.0"},
    }  # fmt: skip
    first = complete(oper8_status, generation=1)
    assert status_changed(oper8_status, first)
    assert not status_changed(first, complete(first, generation=1, now=T2))


@pytest.mark.parametrize(
    ("status", "version", "stable"),
    [
        (STABLE_1_0, "1.0", True),
        (STABLE_1_0, "1.1", False),
        (start_status(STABLE_1_0, version="1.1", generation=2, now=T1), "1.1", False),
        ({}, "1.0", False),
        ({**STABLE_1_0, "conditions": STABLE_1_0["conditions"][:1]}, "1.0", False),
    ],
)
def test_only_a_stable_cr_at_its_version_needs_no_requeue(status, version, stable):
    assert is_stable(status, version) is stable


def test_a_cr_without_a_version_becomes_stable_and_stops_initializing():
    status = complete({}, version=None)
    assert is_stable(status, None)
    restarted = start_status(status, version=None, generation=1, now=T1)
    assert restarted == status


_TEXT = st.text(alphabet="abcXYZ-", max_size=4)
_VALUE = st.recursive(
    st.none() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_CONDITION = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Ready", "Updating", "Reconciling", "Other"]),
        "status": st.sampled_from(["True", "False", "Unknown"]),
    },
    optional={"lastTransitionTime": st.just("2025-01-01T00:00:00Z"), "extra": _VALUE},
)
_STATUS = st.fixed_dictionaries(
    {},
    optional={
        "conditions": st.lists(_CONDITION, max_size=4),
        "versions": st.dictionaries(_TEXT, _TEXT, max_size=2),
        "componentStatus": _VALUE,
        "other": _VALUE,
    },
)


@given(
    _STATUS,
    st.lists(
        st.tuples(st.sampled_from(["Ready", "Updating", "Stalled"]), st.booleans()), max_size=3
    ),
    st.sampled_from([None, 1, 7]),
)
def test_conditions_are_set_without_a_deep_copy_as_they_were_with_one(
    status: dict[str, Any], changes: list[tuple[str, bool]], generation: int | None
) -> None:
    # set_condition shares the values it does not change with its input instead of deep
    # copying the status (once per condition, ~7 times a reconcile): same answer, input
    # untouched, and a change to the answer's top level does not reach the input
    before = copy.deepcopy(status)
    new: dict[str, Any] = status
    reference: dict[str, Any] = copy.deepcopy(status)
    for type_, value in changes:
        new = set_condition(new, type_, value, "R", "m", now=T1, observed_generation=generation)
        reference = set_condition(
            copy.deepcopy(reference), type_, value, "R", "m", now=T1, observed_generation=generation
        )
    started = start_status(new, version="1", generation=generation, now=T2, kind="WebApp")
    started_reference = start_status(
        copy.deepcopy(reference), version="1", generation=generation, now=T2, kind="WebApp"
    )
    assert new == reference
    assert started == started_reference
    assert status == before
    if changes:
        new["added"] = 1
        new["conditions"].append({"type": "X"})
        assert status == before
