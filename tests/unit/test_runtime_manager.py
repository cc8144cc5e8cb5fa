"""The manager running a bundle (``runtime.manager.Manager``) against the in-memory API
server (``memory_api.MemoryApi``): a CR is reconciled until Ready, an owned object changed
by someone else is put back, a TemporaryPatch reaches its target, a graceful stop lets the
reconcile in flight finish before the lease is released, and a replica that loses its
lease stops its workers.

Real informers, work queues, workers and leader election on their own threads, with a
FakeClock; a test waits (up to a bound it never reaches when correct) for the cluster
change it expects, and never sleeps.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from bundles import API_VERSION, KIND, NAMESPACE, build, configmap, is_ready
from memory_api import STUCK, MemoryApi

from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.engine.config import TEMPORARY_PATCHES_ANNOTATION
from oper8d.runtime.leaderelection import LEASE_API_VERSION
from oper8d.runtime.manager import RECURSION_LIMIT, Manager, ManagerOptions
from oper8d.runtime.temporarypatch import API_VERSION as TP_API_VERSION
from oper8d.runtime.temporarypatch import FINALIZER
from oper8d.runtime.temporarypatch import KIND as TP_KIND

BUNDLE = (
    "components:\n"
    + configmap("web", data="{mode: normal}")
    + """\
temporaryPatches:
  enabled: true
  allowedKinds: [ConfigMap]
  allowedPaths: [data]
"""
)
LEASE = ("default", "demo-oper8d")


class SignallingClock(FakeClock):
    """Sets ``read`` when the thread ``watched`` reads the monotonic clock."""

    def __init__(self) -> None:
        super().__init__()
        self.read = threading.Event()
        self.watched: threading.Thread | None = None

    def monotonic(self) -> float:
        if threading.current_thread() is self.watched:
            self.read.set()
        return super().monotonic()


@pytest.fixture
def clock() -> SignallingClock:
    return SignallingClock()


@pytest.fixture
def api(clock: FakeClock) -> MemoryApi:
    return MemoryApi(clock)


Start = Callable[..., Manager]


@pytest.fixture
def start(tmp_path: Path, api: MemoryApi, clock: FakeClock) -> Iterator[Start]:
    managers: list[Manager] = []

    def run(body: str = BUNDLE, **options: object) -> Manager:
        opts = ManagerOptions(
            metrics_bind_address=None,
            health_probe_bind_address=None,
            resync_period=None,
            clock=clock,
            max_concurrent_reconciles=2,
            **options,  # type: ignore[arg-type]
        )
        folder = tmp_path if body == BUNDLE else tmp_path / "other"
        manager = Manager(build(folder, body), api, opts)
        managers.append(manager)
        manager.start()
        return manager

    yield run
    for manager in managers:
        manager.stop()


def create_cr(api: MemoryApi, name: str = "demo") -> Obj:
    return api.create(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {},
        }
    )


def cr(api: MemoryApi, name: str = "demo") -> Obj | None:
    return api.get(API_VERSION, KIND, name, NAMESPACE)


def web(api: MemoryApi) -> Obj | None:
    return api.get("v1", "ConfigMap", "demo-web", NAMESPACE)


def lease_holder(api: MemoryApi) -> str | None:
    lease = api.get(LEASE_API_VERSION, "Lease", LEASE[1], LEASE[0])
    return None if lease is None else lease["spec"].get("holderIdentity")


def test_a_new_cr_is_reconciled_until_ready_with_its_objects_deployed(
    start: Start, api: MemoryApi
) -> None:
    manager = start()
    create_cr(api)

    assert api.wait_until(lambda: is_ready(cr(api)))
    deployed = web(api)
    assert deployed is not None and deployed["data"] == {"mode": "normal"}
    assert manager.ready() == (True, "ok")


def events(api: MemoryApi) -> set[tuple[str, str]]:
    return {(e["type"], e["reason"]) for e in api.list("events.k8s.io/v1", "Event", NAMESPACE)}


def test_a_first_rollout_reads_no_object_it_creates_from_the_server(
    start: Start, api: MemoryApi
) -> None:
    # the names of the unlabelled ConfigMaps are watched: "demo-web" is known absent
    gets: list[tuple[str, str]] = []
    served = api.get

    def counted(api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        gets.append((kind, name))
        return served(api_version, kind, name, namespace)

    api.get = counted  # type: ignore[method-assign]
    manager = start()
    assert api.wait_until(lambda: manager.ready()[0])
    create_cr(api)

    assert api.wait_until(lambda: is_ready(cr(api)))
    assert [g for g in gets if g[0] == "ConfigMap"] == []


def test_an_object_of_that_name_it_did_not_create_is_left_alone(
    start: Start, api: MemoryApi
) -> None:
    # read from the server (its name is among the unlabelled ones), found foreign: the CR
    # gets a ConfigError and the admin's ConfigMap is untouched
    foreign = api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "demo-web", "namespace": NAMESPACE},
            "data": {"owner": "admin"},
        }
    )
    manager = start()
    assert api.wait_until(lambda: manager.ready()[0])
    create_cr(api)

    def reason() -> str | None:
        ready = [c for c in ((cr(api) or {}).get("status") or {}).get("conditions", [])]
        return next((c.get("reason") for c in ready if c.get("type") == "Ready"), None)

    assert api.wait_until(lambda: reason() == "ConfigError")
    assert web(api) == foreign
    # recorded right after the status write that said so
    assert api.wait_until(lambda: ("Warning", "ConfigError") in events(api))


def test_an_object_deleted_and_at_once_replaced_by_someone_elses_is_left_alone(
    start: Start, api: MemoryApi
) -> None:
    # its name was ours: absence from the informers proves nothing, so it is read from
    # the server (an outside tester saw it overwritten 16 times in 20 on a real cluster)
    start()
    create_cr(api)
    assert api.wait_until(lambda: is_ready(cr(api)))

    api.delete("v1", "ConfigMap", "demo-web", NAMESPACE)
    foreign = api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "demo-web", "namespace": NAMESPACE},
            "data": {"owner": "admin"},
        }
    )

    assert api.wait_until(lambda: ("Warning", "ConfigError") in events(api))
    assert web(api) == foreign


def test_an_owned_object_changed_by_someone_else_wakes_its_cr_and_is_put_back(
    start: Start, api: MemoryApi
) -> None:
    start()
    create_cr(api)
    assert api.wait_until(lambda: is_ready(cr(api)))

    edited = web(api)
    assert edited is not None
    edited["data"] = {"mode": "hacked"}
    api.update(edited)

    assert api.wait_until(lambda: (web(api) or {}).get("data") == {"mode": "normal"})


def test_a_temporary_patch_is_announced_on_its_target_and_applied(
    start: Start, api: MemoryApi
) -> None:
    api.serve(TP_API_VERSION, TP_KIND)
    start()
    create_cr(api)
    assert api.wait_until(lambda: is_ready(cr(api)))

    api.create(
        {
            "apiVersion": TP_API_VERSION,
            "kind": TP_KIND,
            "metadata": {"name": "debug", "namespace": NAMESPACE},
            "spec": {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": "demo",
                "patch": {"web": {"cm": {"data": {"mode": "debug"}}}},
            },
        }
    )

    assert api.wait_until(lambda: (web(api) or {}).get("data") == {"mode": "debug"})
    announced = (cr(api) or {})["metadata"]["annotations"][TEMPORARY_PATCHES_ANNOTATION]
    assert set(json.loads(announced)) == {"debug"}
    patch = api.get(TP_API_VERSION, TP_KIND, "debug", NAMESPACE)
    assert patch is not None and patch["metadata"]["finalizers"] == [FINALIZER]


def test_without_temporary_patches_turned_on_they_are_not_watched(
    start: Start, api: MemoryApi
) -> None:
    api.serve(TP_API_VERSION, TP_KIND)  # the CRD is installed, for another operator
    manager = start(body=BUNDLE.split("temporaryPatches:")[0])
    assert manager.tp_queue is None
    assert not [key for key in manager.informers if key[0] == f"{TP_API_VERSION}/{TP_KIND}"]


def test_a_graceful_stop_lets_the_reconcile_in_flight_finish_before_releasing_the_lease(
    start: Start, api: MemoryApi, clock: SignallingClock
) -> None:
    entered, release = api.hold("ConfigMap")
    manager = start(leader_elect=True, identity="replica-a")
    create_cr(api)
    assert entered.wait(STUCK)  # a worker is writing the ConfigMap
    assert lease_holder(api) == "replica-a"

    stopper = threading.Thread(target=manager.stop, daemon=True)
    clock.watched = stopper
    stopper.start()
    assert clock.read.wait(STUCK)  # stop() is timing its wait for the reconcile
    release.set()
    stopper.join(STUCK)
    assert not stopper.is_alive()

    changes = [(event, obj["kind"], obj.get("spec", {})) for _, event, obj in api.log]
    written = next(i for i, c in enumerate(changes) if c[1] == "ConfigMap")
    released = next(
        i for i, c in enumerate(changes) if c[1] == "Lease" and c[2].get("holderIdentity") == ""
    )
    assert written < released
    assert lease_holder(api) == ""


def test_a_replica_that_loses_its_lease_stops_its_workers(
    start: Start, api: MemoryApi, clock: FakeClock
) -> None:
    manager = start(
        leader_elect=True,
        identity="replica-a",
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=0.05,
    )
    create_cr(api)
    assert api.wait_until(lambda: is_ready(cr(api)))
    assert manager.is_leader

    lease = api.get(LEASE_API_VERSION, "Lease", LEASE[1], LEASE[0])
    assert lease is not None
    lease["spec"]["holderIdentity"] = "replica-b"  # taken over (as after a long pause)
    api.update(lease)

    assert manager.wait(STUCK)
    assert not manager.is_leader
    for controller in manager.controllers:
        assert controller.queue.shutting_down
        assert controller.join_workers(STUCK)


def test_cached_objects_keep_managed_fields_only_when_a_resource_leaves_fields() -> None:
    from pathlib import Path

    from oper8d.bundle import load_bundle
    from oper8d.runtime.manager_wiring import _leaves_fields

    examples = Path(__file__).resolve().parents[2] / "examples" / "operators"
    # webapp leaves spec.replicas to its HPA: who owns it is read from managedFields
    assert _leaves_fields(load_bundle(examples / "webapp"))
    assert not _leaves_fields(load_bundle(examples / "stateful"))


@pytest.fixture
def operator_recursion_limit() -> Iterator[None]:
    """The recursion limit ``oper8d run`` gives its process, for one test."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, RECURSION_LIMIT))
    yield
    sys.setrecursionlimit(before)


@pytest.mark.usefixtures("operator_recursion_limit")
def test_a_cr_nested_deeper_than_python_recurses_gets_a_config_error_and_others_go_on(
    start: Start, api: MemoryApi
) -> None:
    # the API server takes 10,000 levels of configOverrides: one tenant's CR stopped the
    # informer for every CR of the kind (found by the third outside tester)
    deep: dict[str, object] = {}
    node = deep
    for _ in range(3000):
        node["x"] = node = {}
    start()
    api.create(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": "deep", "namespace": NAMESPACE},
            "spec": {},
            "configOverrides": deep,
        }
    )
    create_cr(api)

    assert api.wait_until(lambda: is_ready(cr(api)))

    def message() -> str:
        conditions = ((cr(api, "deep") or {}).get("status") or {}).get("conditions", [])
        return next((c.get("message", "") for c in conditions if c["type"] == "Ready"), "")

    assert api.wait_until(lambda: "configOverrides: nests more than 100 levels" in message())
