"""Which CR watch events trigger a reconcile, and when a CR counts as paused."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.runtime.predicates import cr_update_matters, is_paused

PAUSE = "oper8.org/pause-execution"
TEMPORARY_PATCHES = "oper8.org/temporary-patches"
CONFIG_DEFAULTS = "oper8.org/config-defaults"


def web_app(**metadata: Any) -> dict[str, Any]:
    """A CR; a metadata field given as None is left out."""
    obj = {
        "apiVersion": "example.org/v1",
        "kind": "WebApp",
        "metadata": {
            "name": "shop",
            "namespace": "default",
            "uid": "u-1",
            "resourceVersion": "100",
            "generation": 1,
            **metadata,
        },
        "spec": {"replicas": 1, "version": "1.0"},
        "configOverrides": {"web": {"port": 8080}},
        "status": {"conditions": []},
    }
    obj["metadata"] = {k: v for k, v in obj["metadata"].items() if v is not None}
    return obj


def changed(obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
    change(new)
    return new


def set_generation(n: int) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["metadata"].__setitem__("generation", n)


def both(*changes: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(o: dict[str, Any]) -> None:
        for change in changes:
            change(o)

    return apply


def annotate(key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    def apply(o: dict[str, Any]) -> None:
        annotations = o["metadata"].setdefault("annotations", {})
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value

    return apply


def set_path(*path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(o: dict[str, Any]) -> None:
        cur = o
        for part in path[:-1]:
            cur = cur.setdefault(part, {})
        cur[path[-1]] = value

    return apply


DELETING = {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["finalizers.webapp.x"]}

MATTERS = [
    (
        "spec changed with a new generation",
        web_app(),
        both(set_path("spec", "replicas", value=3), set_generation(2)),
    ),
    (
        "configOverrides changed with a new generation",
        web_app(),
        both(set_path("configOverrides", "web", "port", value=9090), set_generation(2)),
    ),
    (
        "deletion started",
        web_app(finalizers=["finalizers.webapp.x"]),
        set_path("metadata", "deletionTimestamp", value="2026-01-01T00:00:00Z"),
    ),
    (
        "a finalizer removed while deleting",
        web_app(**DELETING),
        set_path("metadata", "finalizers", value=[]),
    ),
    (
        "temporary patches changed",
        web_app(),
        annotate(TEMPORARY_PATCHES, '{"p": {"timestamp": "2026-01-01T00:00:00Z"}}'),
    ),
    (
        "temporary patches removed",
        web_app(annotations={TEMPORARY_PATCHES: "{}"}),
        annotate(TEMPORARY_PATCHES, None),
    ),
    ("config defaults ConfigMap named", web_app(), annotate(CONFIG_DEFAULTS, "shop-defaults")),
    (
        "config defaults ConfigMap renamed",
        web_app(annotations={CONFIG_DEFAULTS: "a"}),
        annotate(CONFIG_DEFAULTS, "b"),
    ),
    ("pause removed", web_app(annotations={PAUSE: "true"}), annotate(PAUSE, None)),
    ("pause set to false", web_app(annotations={PAUSE: "TRUE"}), annotate(PAUSE, "false")),
    (
        "spec changed on an object without generation",
        web_app(generation=None),
        set_path("spec", "replicas", value=3),
    ),
]

DOES_NOT_MATTER = [
    ("only resourceVersion changed", web_app(), lambda o: None),
    ("status written", web_app(), set_path("status", "conditions", value=[{"type": "Ready"}])),
    (
        "status written on a CRD without the status subresource (generation bumped)",
        web_app(),
        both(set_path("status", "observedGeneration", value=1), set_generation(2)),
    ),
    ("managedFields changed", web_app(), set_path("metadata", "managedFields", value=[{}])),
    ("a label added", web_app(), set_path("metadata", "labels", value={"team": "a"})),
    ("an unrelated annotation added", web_app(), annotate("example.org/note", "hi")),
    ("a log annotation added", web_app(), annotate("oper8.org/log-default-level", "debug")),
    ("paused", web_app(), annotate(PAUSE, "true")),
    (
        "finalizer added while not deleting",
        web_app(),
        set_path("metadata", "finalizers", value=["finalizers.webapp.x"]),
    ),
    ("status written while deleting", web_app(**DELETING), set_path("status", "x", value=1)),
    (
        "status written on an object without generation",
        web_app(generation=None),
        set_path("status", "x", value=1),
    ),
]


@pytest.mark.parametrize(("case", "old", "change"), MATTERS, ids=[c[0] for c in MATTERS])
def test_updates_that_change_a_reconcile_trigger_one(
    case: str, old: dict[str, Any], change: Callable[[dict[str, Any]], None]
) -> None:
    assert cr_update_matters(old, changed(old, change)), case


@pytest.mark.parametrize(
    ("case", "old", "change"), DOES_NOT_MATTER, ids=[c[0] for c in DOES_NOT_MATTER]
)
def test_updates_that_change_no_input_of_a_reconcile_do_not_trigger_one(
    case: str, old: dict[str, Any], change: Callable[[dict[str, Any]], None]
) -> None:
    assert not cr_update_matters(old, changed(old, change)), case


def test_a_cr_seen_for_the_first_time_always_matters() -> None:
    assert cr_update_matters(None, web_app())


@given(
    status=st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    resource_version=st.integers(min_value=1),
)
def test_no_status_or_resource_version_change_ever_triggers_a_reconcile(
    status: dict[str, int], resource_version: int
) -> None:
    old = web_app()
    new = copy.deepcopy(old)
    new["status"] = status
    new["metadata"]["resourceVersion"] = str(resource_version)
    assert not cr_update_matters(old, new)


@pytest.mark.parametrize(
    ("annotations", "paused"),
    [
        ({PAUSE: "true"}, True),
        ({PAUSE: "True"}, True),
        ({PAUSE: "TRUE"}, True),
        ({PAUSE: " true "}, True),
        ({PAUSE: "false"}, False),
        ({PAUSE: "yes"}, False),
        ({PAUSE: ""}, False),
        ({"example.org/pause-execution": "true"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_a_cr_is_paused_only_by_the_pause_annotation_set_to_true(
    annotations: dict[str, str] | None, paused: bool
) -> None:
    assert is_paused(web_app(annotations=annotations)) is paused


def test_no_object_is_not_paused() -> None:
    assert not is_paused(None)
    assert not is_paused({"kind": "WebApp"})
