"""A controller whose reconciler skips unchanged CRs (``ControllerRuntime.changes``): a
resync of a stable CR sends nothing to the cluster, while an edit of an object the CR owns,
seen by the owned-object informer, is corrected by the reconcile that event queues.

A real Reconciler over the in-memory cluster; the informers are fakes fed by the
cluster's watch; one worker is driven step by step (``process_next(timeout=0)``).
"""

from __future__ import annotations

import copy
from pathlib import Path

from bundles import API_VERSION, KIND, NAMESPACE, build, configmap, is_ready

from oper8d.bundle.model import Bundle
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MUTATING_VERBS, MemoryCluster, sequential_uids
from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.objects import OWNER_LABEL, Obj
from oper8d.runtime.controller import ControllerRuntime
from oper8d.runtime.informer import Handler
from oper8d.runtime.metrics import Metrics
from oper8d.runtime.queue import WorkQueue


class WatchedSource:
    """An informer of one kind (all namespaces, optionally by label selector) as the
    controller and the tracker see it; ``feed`` is its watch."""

    def __init__(self, api_version: str, kind: str, label_selector: str | None = None):
        self.api_version, self.kind = api_version, kind
        self.namespace: str | None = None
        self.label_selector = label_selector
        self.handlers: list[Handler] = []
        self.objects: dict[str, Obj] = {}

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def feed(self, event: str, obj: Obj) -> None:
        if obj["kind"] != self.kind:
            return
        labels = obj["metadata"].get("labels") or {}
        if self.label_selector and self.label_selector not in labels:
            return
        old = self.objects.get(obj["metadata"]["uid"])
        self.objects[obj["metadata"]["uid"]] = obj
        for handler in self.handlers:
            handler(event, obj, old)

    def list(self, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        return list(self.objects.values())

    def by_uid(self, uid: str) -> Obj | None:
        return self.objects.get(uid)


def _running(bundle: Bundle) -> tuple[MemoryCluster, ControllerRuntime]:
    """The in-memory cluster and a controller over it whose informers are fed by its watch
    (CRs, and ConfigMaps by the owner label), with a ChangeTracker; one worker, stepped."""
    spec = bundle.controllers[0]
    clock = FakeClock()
    api = MemoryCluster(clock=clock.now, uid_factory=sequential_uids("rig"))
    api.register_kind(API_VERSION, KIND, namespaced=True)
    crs = WatchedSource(API_VERSION, KIND)
    owned = WatchedSource("v1", "ConfigMap", OWNER_LABEL)
    api.watch(crs.feed)
    api.watch(owned.feed)
    changes = ChangeTracker(clock=clock)
    options = ReconcilerOptions(field_manager="demo", max_workers=1, clock=clock, changes=changes)
    controller = ControllerRuntime(
        bundle=bundle,
        spec=spec,
        cluster=api,
        reconciler=Reconciler(bundle, spec, api, options),
        queue=WorkQueue(clock=clock, base_delay=1.0, rate_per_second=float("inf")),
        cr_informers=[crs],
        owned_informers=[owned],
        metrics=Metrics(controllers=[spec.name], runtime_collectors=False),
        clock=clock,
        changes=changes,
    )
    return api, controller


def test_resync_of_a_stable_cr_is_free_and_owned_drift_is_still_corrected(tmp_path: Path) -> None:
    bundle = build(tmp_path, "components:\n" + configmap("web", data="{level: info}"))
    api, controller = _running(bundle)

    def run_ready() -> int:
        steps = 0
        while controller.process_next(timeout=0):
            steps += 1
        return steps

    meta = {"name": "demo", "namespace": NAMESPACE}
    api.create({"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": {}})
    api.reset_requests()
    run_ready()
    assert is_ready(api.get(API_VERSION, KIND, "demo", NAMESPACE))
    # the first rollout: one CR write (finalizer and inventory), one apply per object, and
    # the status once (its object was ready at once: no Initializing written before)
    writes = {verb: n for verb, n in api.requests.items() if verb in MUTATING_VERBS and n}
    assert writes == {"update": 1, "apply": 1, "update_status": 1}

    api.reset_requests()
    controller.enqueue_all()  # what an informer resync does
    assert run_ready() == 1
    # the one read is the controller's CR read, which the real cache serves locally
    assert dict(api.requests) == {"get": 1}

    live = api.get("v1", "ConfigMap", "demo-web", NAMESPACE)
    assert live is not None
    edited = copy.deepcopy(live)
    edited["data"]["level"] = "trace"
    api.update(edited, field_manager="kubectl")  # the owned informer queues the CR
    api.reset_requests()
    assert run_ready() >= 1
    assert sum(api.requests[v] for v in MUTATING_VERBS) >= 1
    fixed = api.get("v1", "ConfigMap", "demo-web", NAMESPACE)
    assert fixed is not None and fixed["data"]["level"] == "info"


def test_a_rollout_is_not_woken_again_by_the_echoes_of_its_own_writes(tmp_path: Path) -> None:
    # the in-memory watch delivers each event inside the write, before the write returns:
    # the echo is recognised once the reconcile that wrote it ends
    bundle = build(
        tmp_path,
        "components:\n" + configmap("a", data="{x: '1'}") + configmap("b", data="{y: '2'}"),
    )
    api, controller = _running(bundle)
    meta = {"name": "demo", "namespace": NAMESPACE}
    api.create({"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": {}})
    assert controller.process_next(timeout=0)
    assert is_ready(api.get(API_VERSION, KIND, "demo", NAMESPACE))
    assert not controller.process_next(timeout=0)  # two ADDED echoes, no second reconcile

    # someone else's edit of an owned object is news: it wakes the CR, which repairs it
    live = api.get("v1", "ConfigMap", "demo-a", NAMESPACE)
    assert live is not None
    edited = copy.deepcopy(live)
    edited["data"]["x"] = "edited"
    api.update(edited, field_manager="kubectl")
    assert controller.process_next(timeout=0)
    repaired = api.get("v1", "ConfigMap", "demo-a", NAMESPACE)
    assert repaired is not None and repaired["data"]["x"] == "1"
    assert not controller.process_next(timeout=0)  # the repair's echo wakes nothing


def test_a_reconcile_says_whether_the_feed_watches_all_it_read(tmp_path: Path) -> None:
    bundle = build(tmp_path, "components:\n" + configmap("web", data="{level: info}"))
    spec = bundle.controllers[0]

    def first_reconcile(watch_configmaps: bool) -> bool:
        clock = FakeClock()
        api = MemoryCluster(clock=clock.now, uid_factory=sequential_uids("w"))
        api.register_kind(API_VERSION, KIND, namespaced=True)
        changes = ChangeTracker(clock=clock)
        changes.watch(API_VERSION, KIND)
        if watch_configmaps:
            changes.watch("v1", "ConfigMap", None, OWNER_LABEL)
        options = ReconcilerOptions(field_manager="demo", clock=clock, changes=changes)
        meta = {"name": "demo", "namespace": NAMESPACE}
        cr = api.create({"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": {}})
        return Reconciler(bundle, spec, api, options).reconcile_object(cr).watched

    assert first_reconcile(watch_configmaps=True)
    assert not first_reconcile(watch_configmaps=False)  # a wait then keeps its short timer
