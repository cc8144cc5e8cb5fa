"""One controller running for real (``runtime.controller.ControllerRuntime``): which watch
events queue a CR, what a worker does with a queued CR (reconcile it once, requeue it when
asked, back off and record a Warning when it crashes, record Events on condition changes),
and how a graceful stop sees reconciles in flight.

Over fakes: informers that call their handlers at once, a reconciler that returns scripted
results, the in-memory cluster for CR reads and Events, and a FakeClock. Workers are driven
one step at a time with ``process_next(timeout=0)``, so nothing waits in real time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundles import API_VERSION, KIND, NAMESPACE, build, configmap
from prometheus_client.parser import text_string_to_metric_families

from oper8d.bundle.model import ControllerSpec
from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.engine.config import PAUSE_ANNOTATION
from oper8d.engine.deploy import OWNER_LABEL
from oper8d.engine.reconcile import ReconcileResult
from oper8d.runtime.controller import ControllerRuntime
from oper8d.runtime.events import EventRecorder
from oper8d.runtime.informer import Handler
from oper8d.runtime.metrics import Metrics
from oper8d.runtime.queue import WorkQueue
from oper8d.runtime.store import copy_obj

#: how long a test waits for another thread before it fails (never reached when correct)
_STUCK = 10.0


# -- fakes --------------------------------------------------------------------------------


class FakeSource:
    """An informer as the controller uses it: handlers are called at once by ``emit``;
    ``list`` and ``by_uid`` answer from ``objects``."""

    def __init__(self, objects: list[Obj] | None = None):
        self.handlers: list[Handler] = []
        self.objects = objects if objects is not None else []

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def emit(self, event: str, obj: Obj, old: Obj | None = None) -> None:
        for handler in self.handlers:
            handler(event, copy_obj(obj), copy_obj(old) if old is not None else None)

    def list(self, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        return [copy_obj(o) for o in self.objects]

    def by_uid(self, uid: str) -> Obj | None:
        found = [o for o in self.objects if o["metadata"].get("uid") == uid]
        return copy_obj(found[0]) if found else None


Script = Callable[[Obj], ReconcileResult]


class FakeReconciler:
    """Records the CRs it is handed; answers with ``script`` (default: done, no requeue)."""

    def __init__(self, script: Script | None = None):
        self.seen: list[Obj] = []
        self.script = script or (lambda cr: ReconcileResult(requeue_after=None))

    def reconcile_object(self, cr: Obj) -> ReconcileResult:
        self.seen.append(cr)
        return self.script(cr)

    @property
    def names(self) -> list[str]:
        return [cr["metadata"]["name"] for cr in self.seen]


class Rig:
    """A ControllerRuntime over fakes, with the parts a test looks at."""

    def __init__(self, spec: ControllerSpec, script: Script | None = None):
        self.clock = FakeClock()
        self.api = MemoryCluster(clock=self.clock.now, uid_factory=sequential_uids("ctl"))
        self.crs = FakeSource()
        self.owned = FakeSource()
        self.reconciler = FakeReconciler(script)
        self.metrics = Metrics(controllers=[spec.name], runtime_collectors=False)
        self.controller = ControllerRuntime(
            bundle=None,  # type: ignore[arg-type]  # not read by the runtime
            spec=spec,
            cluster=self.api,
            reconciler=self.reconciler,
            queue=WorkQueue(clock=self.clock, base_delay=1.0, rate_per_second=float("inf")),
            cr_informers=[self.crs],
            owned_informers=[self.owned],
            metrics=self.metrics,
            events=EventRecorder(self.api, controller=spec.name, clock=self.clock),
            clock=self.clock,
        )
        self.queue = self.controller.queue

    def create_cr(self, name: str = "demo", **annotations: str) -> Obj:
        meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
        if annotations:
            meta["annotations"] = annotations
        cr = self.api.create(
            {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": {"size": 1}}
        )
        self.crs.objects.append(cr)
        return cr

    def drain(self) -> list[Any]:
        """Every key ready now, taken out of the queue."""
        keys = []
        while (key := self.queue.get(timeout=0)) is not None:
            keys.append(key)
            self.queue.done(key)
        return keys

    def run_ready(self) -> int:
        """Let one worker reconcile every key that is ready now; how many it took."""
        steps = 0
        while self.controller.process_next(timeout=0):
            steps += 1
        return steps

    def events(self) -> list[tuple[str, str]]:
        """(type, reason) of the Events recorded, oldest first."""
        found = self.api.list("events.k8s.io/v1", "Event", NAMESPACE)
        found.sort(key=lambda e: e["metadata"]["resourceVersion"].rjust(12))
        return [(e["type"], e["reason"]) for e in found]

    def sample(self, name: str, **labels: str) -> float:
        text = self.metrics.exposition().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and labels.items() <= sample.labels.items():
                    return sample.value
        raise AssertionError(f"no {name} sample with {labels}")

    def reconciles(self, result: str) -> float:
        return self.sample("oper8d_reconcile_total", result=result)


@pytest.fixture
def spec(tmp_path: Path) -> ControllerSpec:
    bundle = build(tmp_path, "components:\n" + configmap("web"))
    return bundle.controllers[0]


@pytest.fixture
def rig(spec: ControllerSpec) -> Rig:
    return Rig(spec)


def modified(cr: Obj, change: Callable[[Obj], Any]) -> Obj:
    new = copy_obj(cr)
    change(new)
    new["metadata"]["resourceVersion"] = str(int(cr["metadata"]["resourceVersion"]) + 1)
    return new


# -- which events queue a CR ---------------------------------------------------------------


def test_a_new_cr_and_each_change_of_its_spec_queue_it_once_for_one_reconcile(rig: Rig) -> None:
    cr = rig.create_cr()
    rig.crs.emit("ADDED", cr)
    resized = modified(cr, lambda o: o["spec"].update(size=3))
    rig.crs.emit("MODIFIED", resized, cr)
    rig.crs.emit("RESYNC", resized)

    assert rig.run_ready() == 1
    assert rig.reconciler.names == ["demo"]
    assert rig.run_ready() == 0


def test_status_only_changes_deletions_and_paused_crs_queue_nothing(rig: Rig) -> None:
    cr = rig.create_cr()
    rig.crs.emit("MODIFIED", modified(cr, lambda o: o.update(status={"x": 1})), cr)
    rig.crs.emit("DELETED", cr, cr)
    paused = rig.create_cr("paused", **{PAUSE_ANNOTATION: "true"})
    rig.crs.emit("ADDED", paused)
    rig.crs.emit("RESYNC", paused)

    assert rig.drain() == []


def test_lifting_a_pause_queues_the_cr(rig: Rig) -> None:
    paused = rig.create_cr(**{PAUSE_ANNOTATION: "true"})
    lifted = modified(paused, lambda o: o["metadata"].pop("annotations"))
    rig.crs.emit("MODIFIED", lifted, paused)

    assert rig.drain() == [(NAMESPACE, "demo")]


def owned_configmap(**meta: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "demo-web", "namespace": NAMESPACE, **meta},
    }


def test_an_owned_object_event_wakes_the_cr_named_in_its_owner_reference(rig: Rig) -> None:
    ref = {"apiVersion": API_VERSION, "kind": KIND, "name": "demo", "uid": "u1"}
    rig.owned.emit("MODIFIED", owned_configmap(ownerReferences=[ref]))
    rig.owned.emit("DELETED", owned_configmap(name="other", ownerReferences=[ref]))

    assert rig.drain() == [(NAMESPACE, "demo")]


def test_an_owned_object_event_wakes_the_cr_whose_uid_is_in_its_owner_label(rig: Rig) -> None:
    cr = rig.create_cr("labelled")
    rig.owned.emit("DELETED", owned_configmap(labels={OWNER_LABEL: cr["metadata"]["uid"]}))

    assert rig.drain() == [(NAMESPACE, "labelled")]


def test_a_resync_of_an_owned_object_wakes_nobody(rig: Rig) -> None:
    # the CR informer's own resync queues every CR once; each of its objects' resyncs
    # would queue it again (a 1,000-CR resync reconciled each CR twice)
    ref = {"apiVersion": API_VERSION, "kind": KIND, "name": "demo", "uid": "u1"}
    rig.owned.emit("RESYNC", owned_configmap(ownerReferences=[ref]))

    assert rig.drain() == []


def test_events_on_objects_owned_by_something_else_wake_nobody(rig: Rig) -> None:
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo", "uid": "u2"}
    rig.owned.emit("MODIFIED", owned_configmap(ownerReferences=[other]))
    rig.owned.emit("MODIFIED", owned_configmap(labels={OWNER_LABEL: "no-such-uid"}))
    rig.owned.emit("MODIFIED", owned_configmap())

    assert rig.drain() == []


def test_enqueue_all_queues_every_cached_cr_but_the_paused_ones(rig: Rig) -> None:
    rig.create_cr("a")
    rig.create_cr("b", **{PAUSE_ANNOTATION: "TRUE"})
    rig.create_cr("c")
    rig.controller.enqueue_all()

    assert rig.drain() == [(NAMESPACE, "a"), (NAMESPACE, "c")]


# -- what a worker does ----------------------------------------------------------------------


def test_a_worker_reconciles_the_cr_as_the_cluster_has_it_now(rig: Rig) -> None:
    cr = rig.create_cr()
    rig.crs.emit("ADDED", cr)
    live = rig.api.get(API_VERSION, KIND, "demo", NAMESPACE)
    assert live is not None
    live["spec"]["size"] = 7
    rig.api.update(live)

    assert rig.run_ready() == 1
    assert rig.reconciler.seen[0]["spec"] == {"size": 7}
    assert rig.reconciles("success") == 1


def test_reconcile_durations_are_measured_with_the_injected_clock(spec: ControllerSpec) -> None:
    rig = Rig(spec)

    def slow(cr: Obj) -> ReconcileResult:
        rig.clock.advance(2.5)
        return ReconcileResult(requeue_after=None)

    rig.reconciler.script = slow
    rig.crs.emit("ADDED", rig.create_cr())
    rig.run_ready()

    assert rig.sample("oper8d_reconcile_duration_seconds_sum", controller="demo") == 2.5


def test_a_cr_deleted_before_its_turn_is_not_reconciled(rig: Rig) -> None:
    cr = rig.create_cr()
    rig.crs.emit("ADDED", cr)
    rig.api.delete(API_VERSION, KIND, "demo", NAMESPACE)

    assert rig.run_ready() == 1
    assert rig.reconciler.seen == []
    assert rig.queue.num_requeues((NAMESPACE, "demo")) == 0


def test_a_requested_requeue_comes_back_after_that_many_seconds_of_the_clock(
    spec: ControllerSpec,
) -> None:
    rig = Rig(spec, lambda cr: ReconcileResult(requeue_after=30.0))
    rig.crs.emit("ADDED", rig.create_cr())

    assert rig.run_ready() == 1
    rig.clock.advance(29)
    assert rig.run_ready() == 0
    rig.clock.advance(1)
    assert rig.run_ready() == 1
    assert rig.reconciler.names == ["demo", "demo"]
    assert rig.reconciles("requeue") == 2


def test_a_crashing_reconcile_is_retried_with_backoff_and_recorded_as_a_warning(
    spec: ControllerSpec,
) -> None:
    def crash(cr: Obj) -> ReconcileResult:
        raise RuntimeError("bug in a hook")

    rig = Rig(spec, crash)
    rig.crs.emit("ADDED", rig.create_cr())

    assert rig.run_ready() == 1  # the worker survives the crash
    assert rig.events() == [("Warning", "ReconcileCrashed")]
    assert rig.reconciles("error") == 1
    rig.clock.advance(0.99)  # base_delay 1s, doubling per failure
    assert rig.run_ready() == 0
    rig.clock.advance(0.01)
    assert rig.run_ready() == 1
    rig.clock.advance(1.99)
    assert rig.run_ready() == 0
    rig.clock.advance(0.01)
    assert rig.run_ready() == 1
    assert rig.reconciler.names == ["demo"] * 3


def test_a_success_after_failures_resets_the_backoff(spec: ControllerSpec) -> None:
    outcomes = [RuntimeError("flaky"), RuntimeError("flaky"), None]

    def flaky(cr: Obj) -> ReconcileResult:
        err = outcomes.pop(0)
        if err is not None:
            raise err
        return ReconcileResult(requeue_after=None)

    rig = Rig(spec, flaky)
    rig.crs.emit("ADDED", rig.create_cr())
    rig.run_ready()
    rig.clock.advance(1)
    rig.run_ready()
    rig.clock.advance(2)
    rig.run_ready()

    assert rig.reconciler.names == ["demo"] * 3
    assert rig.queue.num_requeues((NAMESPACE, "demo")) == 0


def ready(reason: str, status: str, reconciled: bool = True) -> dict[str, Any]:
    """A status with this Ready condition, of a CR whose first rollout is done or not."""
    found: dict[str, Any] = {"conditions": [{"type": "Ready", "status": status, "reason": reason}]}
    if reconciled:
        found["versions"] = {"reconciled": "1.0"}
    return found


def test_events_are_recorded_when_a_condition_changes_and_not_on_a_steady_reconcile(
    spec: ControllerSpec,
) -> None:
    statuses = [
        ready("InProgress", "False", reconciled=False),  # the first rollout: status only
        ready("Stable", "True"),
        ready("Stable", "True"),
        ready("InProgress", "False"),  # a Ready CR that stops being Ready
        ready("Stable", "True"),
    ]

    rig = Rig(spec)

    def write_status(cr: Obj) -> ReconcileResult:
        status = statuses.pop(0)
        rig.api.update_status({**cr, "status": status})
        return ReconcileResult(requeue_after=None, status=status)

    rig.reconciler.script = write_status
    rig.crs.emit("ADDED", rig.create_cr())
    for _ in range(5):
        rig.controller.enqueue_all()
        assert rig.run_ready() == 1

    assert rig.events() == [("Normal", "InProgress"), ("Normal", "Stable")]


# -- graceful stop ----------------------------------------------------------------------------


def test_a_reconcile_in_flight_keeps_the_controller_busy_until_it_returns(
    spec: ControllerSpec,
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(cr: Obj) -> ReconcileResult:
        entered.set()
        assert release.wait(_STUCK)
        return ReconcileResult(requeue_after=None)

    rig = Rig(spec, slow)
    rig.crs.emit("ADDED", rig.create_cr())
    worker = threading.Thread(target=rig.controller.process_next, args=(0,), daemon=True)
    worker.start()
    assert entered.wait(_STUCK)

    assert not rig.controller.wait_idle(0)  # the grace period is over at once: still busy
    release.set()
    worker.join(_STUCK)
    assert rig.controller.wait_idle(0)


def test_workers_end_when_the_queue_shuts_down(rig: Rig) -> None:
    rig.controller.start_workers(2)
    rig.queue.shutdown()

    assert rig.controller.join_workers(_STUCK)
