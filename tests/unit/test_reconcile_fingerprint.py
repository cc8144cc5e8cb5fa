"""Skipping unchanged CRs (engine.fingerprint): a CR whose inputs did not change since its
last stable reconcile is not reconciled again and costs no request; yet drift of its
objects, a change of what its templates look up, a spec edit, a bundle upgrade and the
periodic recheck all still lead to a full reconcile that acts on them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from bundles import API_VERSION, KIND, NAMESPACE, Harness, build, is_ready

from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions

CONTROLLER = """
components:
  - name: config
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}"}
          data:
            level: "{{ spec.level }}"
            upstream: "{{ (lookup('v1', 'ConfigMap', 'settings') or {}).get('data') | to_json }}"
  - name: app
    dependsOn: [config]
    resources:
      - name: deployment
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "{{ scoped_name('app') }}"}
          spec:
            replicas: 2
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec:
                containers: [{name: app, image: "nginx:1"}]
"""

SCHEMA = {"type": "object", "properties": {"level": {"type": "string", "default": "info"}}}


class Fleet:
    """A harness whose reconciler skips unchanged CRs, fed by the cluster's watch as the
    runtime's informers feed it; CRs are handed over as a cache would, without a GET."""

    def __init__(self, h: Harness, tracker: ChangeTracker | None = None):
        self.h = h
        self.tracker = (
            tracker if tracker is not None else ChangeTracker(clock=h.clock, sees_everything=True)
        )
        self.unwatch = h.cluster.watch(self.tracker.observe)
        self.reconciler = self.new_reconciler()

    def new_reconciler(self) -> Reconciler:
        options = ReconcilerOptions(field_manager="demo", clock=self.h.clock, max_workers=1)
        options.changes = self.tracker
        return Reconciler(self.h.bundle, self.h.bundle.controllers[0], self.h.cluster, options)

    def reconcile(self) -> ReconcileResult:
        cr = self.h.cr()
        self.h.cluster.reset_requests()
        return self.reconciler.reconcile_object(cr)

    def settle(self) -> ReconcileResult:
        for _ in range(10):
            result = self.reconcile()
            if result.stable:
                return result
            self.h.cluster.tick()
        raise AssertionError(f"not stable: {result}")


def seed_upstream(h: Harness, value: str) -> None:
    h.cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": NAMESPACE},
            "data": {"where": value},
        },
        field_manager="admin",
    )


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    h = Harness(build(tmp_path / "b", CONTROLLER, schema=SCHEMA))
    seed_upstream(h, "one")
    h.create({})
    f = Fleet(h)
    f.settle()
    assert is_ready(h.cr())
    return f


def data(f: Fleet) -> dict[str, str]:
    cm = f.h.get("ConfigMap", "demo-config")
    assert cm is not None
    return dict(cm["data"])


def test_a_stable_unchanged_cr_is_skipped_and_sends_no_request(fleet: Fleet) -> None:
    result = fleet.reconcile()
    assert result.skipped and result.stable
    assert result.requeue_after is None
    assert sum(fleet.h.cluster.requests.values()) == 0, fleet.h.cluster.requests


def test_without_a_tracker_every_reconcile_runs_in_full(fleet: Fleet) -> None:
    result = fleet.h.reconcile()
    assert not result.skipped and result.rollout is not None


def test_drift_of_an_owned_object_is_corrected(fleet: Fleet) -> None:
    live = fleet.h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    live["spec"]["replicas"] = 7
    fleet.h.cluster.update(live, field_manager="kubectl")
    result = fleet.reconcile()
    assert not result.skipped
    fixed = fleet.h.get("Deployment", "demo-app", "apps/v1")
    assert fixed is not None and fixed["spec"]["replicas"] == 2


def test_a_deleted_owned_object_is_recreated(fleet: Fleet) -> None:
    fleet.h.cluster.delete("v1", "ConfigMap", "demo-config", NAMESPACE)
    assert not fleet.reconcile().skipped
    assert data(fleet)["level"] == "info"


def test_a_change_of_a_looked_up_object_is_rendered(fleet: Fleet) -> None:
    assert data(fleet)["upstream"] == '{"where": "one"}'
    seed_upstream(fleet.h, "two")
    assert not fleet.reconcile().skipped
    assert data(fleet)["upstream"] == '{"where": "two"}'


def test_a_looked_up_object_appearing_is_rendered(tmp_path: Path) -> None:
    h = Harness(build(tmp_path / "b", CONTROLLER, schema=SCHEMA))
    h.create({})
    f = Fleet(h)
    f.settle()
    assert data(f)["upstream"] == "null"
    seed_upstream(h, "late")
    assert not f.reconcile().skipped
    assert data(f)["upstream"] == '{"where": "late"}'


def test_a_spec_edit_is_acted_on(fleet: Fleet) -> None:
    fleet.h.set_spec(level="debug")
    assert not fleet.reconcile().skipped
    assert data(fleet)["level"] == "debug"


def test_a_bundle_upgrade_is_rolled_out(fleet: Fleet, tmp_path: Path) -> None:
    upgraded = CONTROLLER.replace('image: "nginx:1"', 'image: "nginx:2"')
    fleet.h.bundle = build(tmp_path / "b2", upgraded, schema=SCHEMA)
    fleet.reconciler = fleet.new_reconciler()  # the operator restarted on the new bundle
    assert not fleet.reconcile().skipped
    live = fleet.h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"


def test_the_record_expires_so_the_periodic_resync_rechecks(fleet: Fleet) -> None:
    fleet.unwatch()  # events lost: only the recheck can find the drift
    live = fleet.h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    live["spec"]["replicas"] = 7
    fleet.h.cluster.update(live, field_manager="kubectl")
    assert fleet.reconcile().skipped
    fleet.h.clock.advance(fleet.tracker.recheck_after or 0)
    assert not fleet.reconcile().skipped
    fixed = fleet.h.get("Deployment", "demo-app", "apps/v1")
    assert fixed is not None and fixed["spec"]["replicas"] == 2


def test_reads_the_feed_does_not_see_keep_the_cr_in_full_reconciles(tmp_path: Path) -> None:
    h = Harness(build(tmp_path / "b", CONTROLLER, schema=SCHEMA))
    h.create({})
    # the feed sees the CRs and the owned objects, but not the looked-up ConfigMap
    tracker = ChangeTracker(clock=h.clock)
    tracker.watch(API_VERSION, KIND)
    tracker.watch("v1", "ConfigMap", label_selector="oper8d.io/owner-uid")
    tracker.watch("apps/v1", "Deployment", label_selector="oper8d.io/owner-uid")
    f = Fleet(h, tracker)
    f.settle()
    assert not f.reconcile().skipped
    assert len(tracker) == 0


def test_a_change_made_while_the_cr_was_reconciled_is_not_lost(fleet: Fleet) -> None:
    fleet.h.set_spec(level="debug")  # forces a full reconcile
    cluster = fleet.h.cluster
    original = cluster.list

    def list_then_someone_edits(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = original(*args, **kwargs)
        if args[1] == "Deployment":
            live = copy.deepcopy(cluster.get("apps/v1", "Deployment", "demo-app", NAMESPACE))
            live["spec"]["replicas"] = 9
            cluster.update(live, field_manager="kubectl")
        return out

    cluster.list = list_then_someone_edits  # type: ignore[method-assign]
    try:
        assert not fleet.reconcile().skipped
    finally:
        cluster.list = original  # type: ignore[method-assign]
    # the edit came after the reconcile read the Deployment: the next one must look again
    assert not fleet.reconcile().skipped
    fixed = fleet.h.get("Deployment", "demo-app", "apps/v1")
    assert fixed is not None and fixed["spec"]["replicas"] == 2


def test_a_status_someone_else_overwrote_is_written_again(fleet: Fleet) -> None:
    cr = copy.deepcopy(fleet.h.cr())
    cr["status"] = {}
    fleet.h.cluster.update_status(cr)
    assert not fleet.reconcile().skipped
    assert is_ready(fleet.h.cr())


def test_a_deleted_cr_is_forgotten(fleet: Fleet) -> None:
    fleet.h.cluster.delete(API_VERSION, KIND, "demo", NAMESPACE)
    cr = fleet.h.cluster.get(API_VERSION, KIND, "demo", NAMESPACE)
    if cr is not None:  # held by the finalizer
        fleet.reconciler.reconcile_object(cr)
    assert len(fleet.tracker) == 0
