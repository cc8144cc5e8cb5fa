"""The skip of unchanged CRs (engine.fingerprint) never hides a change that raced a reconcile.

A reconcile reads from a cache that may be behind the watch feed the tracker learns from.
Two interleavings, replayed step by step (no threads, no sleeps):

* an owned object read at one version, edited by someone else (the feed reports it), then
  read again at the new version by a later step of the same reconcile (prune's list): the
  reconcile acted on the old copy, so it must not keep a record (the interleaving behind
  the runtime's flaky drifted-ConfigMap test);
* the CR edited between the cache read that handed it to the reconciler and the start of
  the reconcile: its status write returns the CR with the edit, which the rollout never
  rendered, so the record must not take that edit for done.

In both the next reconcile runs in full and puts things right; before the fix it was
skipped and the change stayed hidden (the runtime's drifted-ConfigMap test failed about one
run in three with the skip on).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundles import Harness, build, is_ready

from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions

CONTROLLER = """
components:
  - name: web
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('web') }}"}
          data:
            level: "{{ spec.level }}"
"""

SCHEMA = {"type": "object", "properties": {"level": {"type": "string", "default": "info"}}}


class AfterRead:
    """The cluster a reconcile reads through, doing ``then`` right after the first read of
    one object has returned (another writer, scheduled between two steps of a reconcile)."""

    def __init__(self, cluster: MemoryCluster, kind: str, name: str, then: Callable[[], None]):
        self.cluster, self.kind, self.name, self.then = cluster, kind, name, then
        self.fired = False

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        obj = self.cluster.get(api_version, kind, name, namespace)
        if not self.fired and (kind, name) == (self.kind, self.name):
            self.fired = True
            self.then()
        return obj

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(build(tmp_path / "b", CONTROLLER, schema=SCHEMA))


def reconciler(h: Harness, tracker: ChangeTracker, cluster: Any = None) -> Reconciler:
    options = ReconcilerOptions(field_manager="demo", clock=h.clock, max_workers=1)
    options.changes = tracker
    return Reconciler(h.bundle, h.bundle.controllers[0], cluster or h.cluster, options)


def settled(h: Harness) -> ChangeTracker:
    """A stable CR with a record of its last reconcile, the tracker fed by the watch."""
    tracker = ChangeTracker(clock=h.clock, sees_everything=True)
    h.cluster.watch(tracker.observe)
    h.create({})
    r = reconciler(h, tracker)
    for _ in range(5):
        result = r.reconcile_object(h.cr())
        if result.stable:
            break
        h.cluster.tick()
    assert r.reconcile_object(h.cr()).skipped  # a record is kept
    return tracker


def level(h: Harness) -> str:
    cm = h.get("ConfigMap", "demo-web")
    assert cm is not None
    return str(cm["data"]["level"])


def run(h: Harness, tracker: ChangeTracker) -> ReconcileResult:
    return reconciler(h, tracker).reconcile_object(h.cr())


def test_an_object_read_stale_then_fresh_in_one_reconcile_keeps_no_record(h: Harness) -> None:
    tracker = settled(h)
    tracker.forget(h.cr()["metadata"]["uid"])  # the periodic recheck: a full reconcile

    def hack() -> None:
        live = copy.deepcopy(h.get("ConfigMap", "demo-web"))
        assert live is not None
        live["data"]["level"] = "hacked"
        h.cluster.update(live, field_manager="kubectl")

    # the rollout reads the unchanged ConfigMap (nothing to apply); the edit lands; prune
    # then lists the ConfigMaps and reads the edited one
    racing = AfterRead(h.cluster, "ConfigMap", "demo-web", hack)
    result = reconciler(h, tracker, racing).reconcile_object(h.cr())
    assert racing.fired and result.stable
    assert level(h) == "hacked"  # the racing reconcile acted on the old copy

    again = run(h, tracker)
    assert not again.skipped
    assert level(h) == "info"


def test_a_cr_edited_after_the_cache_read_that_handed_it_over_is_rendered_next(
    h: Harness,
) -> None:
    tracker = settled(h)
    # someone empties the status: the next reconcile writes it again
    cleared = copy.deepcopy(h.cr())
    cleared["status"] = {}
    h.cluster.update_status(cleared)
    handed: Obj = h.cr()  # what the cache hands the reconciler ...
    h.set_spec(level="debug")  # ... just before the spec is edited (the feed reports it)

    result = reconciler(h, tracker).reconcile_object(handed)
    assert result.stable and level(h) == "info"  # rendered from the CR it was handed
    assert is_ready(h.cr())

    again = run(h, tracker)
    assert not again.skipped
    assert level(h) == "debug"
