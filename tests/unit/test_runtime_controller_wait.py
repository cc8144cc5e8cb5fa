"""A CR waiting for its objects to become ready (``ControllerRuntime``): its timed requeue
backs off (whileWaiting, doubled per consecutive wait, capped), an owned object's event
still reconciles it at once, and becoming stable ends the backoff.

Over the fakes of ``test_runtime_controller`` (scripted reconcile results, FakeClock)."""

from __future__ import annotations

from test_runtime_controller import Rig, spec  # noqa: F401  (the fixture)

from oper8d.bundle.model import ControllerSpec
from oper8d.engine.deploy import OWNER_LABEL
from oper8d.engine.reconcile import ReconcileResult
from oper8d.engine.rollout import RolloutResult
from oper8d.engine.status import CompletionSummary

WAIT = 10.0


class Waiting:
    """Reconcile results: waiting for readiness until ``ready`` is set; ``error``: the
    expected error the wait reports (a precondition not met yet), or none."""

    def __init__(self, error: Exception | None = None) -> None:
        self.ready = False
        self.error = error

    def __call__(self, cr: object) -> ReconcileResult:
        if self.ready:
            return ReconcileResult(requeue_after=None, stable=True)
        return ReconcileResult(requeue_after=WAIT, rollout=_rollout(), error=self.error)


def _rollout() -> RolloutResult:
    """A rollout that deployed the one component, which is not verified yet."""
    summary = CompletionSummary(all_components=("web",), deployed=("web",), unverified=("web",))
    return RolloutResult(summary=summary, components={}, deploy_complete=True)


def reconciles_within(rig: Rig, seconds: float) -> int:
    """Advance the clock one second at a time for ``seconds``; reconciles done."""
    done = 0
    for _ in range(int(seconds)):
        rig.clock.advance(1)
        done += rig.run_ready()
    return done


def test_waiting_requeues_back_off_and_an_owned_event_still_wakes_the_cr_at_once(
    spec: ControllerSpec,  # noqa: F811
) -> None:
    script = Waiting()
    rig = Rig(spec, script)
    cr = rig.create_cr()
    rig.crs.emit("ADDED", cr)
    assert rig.run_ready() == 1
    # the fixed poll would reconcile every 10 s: 6 times in a minute; backed off: 10, 20 s
    assert reconciles_within(rig, 60) == 2
    # the Deployment becomes available: its event reconciles the CR now, not at a requeue
    script.ready = True
    owned = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "x", "namespace": cr["metadata"]["namespace"], "resourceVersion": "9",
        "labels": {OWNER_LABEL: cr["metadata"]["uid"]}}}  # fmt: skip
    rig.owned.emit("MODIFIED", owned)
    assert rig.run_ready() == 1
    assert rig.controller._waits == {}


def test_the_backoff_is_capped(spec: ControllerSpec) -> None:  # noqa: F811
    rig = Rig(spec, Waiting())
    rig.controller.max_wait_requeue = 40.0
    rig.crs.emit("ADDED", rig.create_cr())
    rig.run_ready()
    # 10, 20, 40, 40, 40 ...: at t=10, 30, 70, 110, 150
    assert reconciles_within(rig, 150) == 5


def test_a_wait_on_a_precondition_backs_off_too(spec: ControllerSpec) -> None:  # noqa: F811
    # it reports a PreconditionError (expected, not fatal): the requeue stayed fixed
    from oper8d.errors import PreconditionError

    rig = Rig(spec, Waiting(PreconditionError("database is not ready")))
    rig.crs.emit("ADDED", rig.create_cr())
    assert rig.run_ready() == 1
    assert reconciles_within(rig, 60) == 2  # 10 s, then 20 s: not every 10 s


class WatchedWaiting(Waiting):
    """Waiting, on objects the informers all watch (``ReconcileResult.watched``)."""

    def __call__(self, cr: object) -> ReconcileResult:
        result = super().__call__(cr)
        result.watched = not self.ready
        return result


def test_a_wait_on_watched_objects_needs_no_short_timer(spec: ControllerSpec) -> None:  # noqa: F811
    script = WatchedWaiting()
    rig = Rig(spec, script)
    rig.controller.max_wait_requeue = 300.0
    cr = rig.create_cr()
    rig.crs.emit("ADDED", cr)
    assert rig.run_ready() == 1
    # a change that ends the wait is an event: no timer within the safety net's 300 s
    assert reconciles_within(rig, 299) == 0
    assert reconciles_within(rig, 1) == 1
    script.ready = True
    owned = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "x", "namespace": cr["metadata"]["namespace"], "resourceVersion": "9",
        "labels": {OWNER_LABEL: cr["metadata"]["uid"]}}}  # fmt: skip
    rig.owned.emit("MODIFIED", owned)
    assert rig.run_ready() == 1
