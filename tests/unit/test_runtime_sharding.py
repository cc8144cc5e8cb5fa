"""Sharding over an in-memory Lease API and a FakeClock: membership, takeover after a
Lease expires, and handover that never lets two replicas work on one bucket at once."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.clock import FakeClock
from oper8d.errors import ClusterError
from oper8d.runtime.hashing import BUCKETS, assign, bucket_of
from oper8d.runtime.sharding import Sharding

Obj = dict[str, Any]


class FakeLeases:
    """Leases by name, with resourceVersion conflicts like the API server's."""

    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}
        self.version = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise ClusterError("connection refused", status=None)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        self._check()
        obj = self.objects.get(name)
        return copy.deepcopy(obj) if obj else None  # type: ignore[return-value]

    def _store(self, obj: Obj) -> Obj:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.objects[obj["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    def create(self, obj: Obj) -> Obj:
        self._check()
        if obj["metadata"]["name"] in self.objects:
            raise ClusterError("exists", status=409)
        return self._store(obj)

    def update(self, obj: Obj) -> Obj:
        self._check()
        live = self.objects.get(obj["metadata"]["name"])
        if live is None or live["metadata"]["resourceVersion"] != obj["metadata"].get(
            "resourceVersion"
        ):
            raise ClusterError("conflict", status=409)
        return self._store(obj)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        self._check()
        key, _, value = (label_selector or "").partition("=")
        return [
            copy.deepcopy(o)
            for o in self.objects.values()
            if (o["metadata"].get("labels") or {}).get(key) == value
        ]

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
    ) -> bool:
        self._check()
        live = self.objects.get(name)
        if live is None:
            return False
        if resource_version is not None and live["metadata"]["resourceVersion"] != resource_version:
            raise ClusterError("precondition failed", status=409)
        del self.objects[name]
        return True


class Unreachable(FakeLeases):
    """One replica's view of the API when its network is cut."""

    def __init__(self, shared: FakeLeases) -> None:
        self.shared = shared
        self.down = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shared, name)

    def get(self, *a: Any, **k: Any) -> Any:
        self._check()
        return self.shared.get(*a, **k)

    def create(self, obj: Obj) -> Obj:
        self._check()
        return self.shared.create(obj)

    def update(self, obj: Obj) -> Obj:
        self._check()
        return self.shared.update(obj)

    def list(self, *a: Any, **k: Any) -> list[Obj]:
        self._check()
        return self.shared.list(*a, **k)

    def delete(self, *a: Any, **k: Any) -> bool:
        self._check()
        return self.shared.delete(*a, **k)


def replica(api: Any, clock: FakeClock, identity: str) -> Sharding:
    return Sharding(
        api,
        group="webapp",
        namespace="default",
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        clock=clock,
    )


def cr_in(bucket: int) -> Obj:
    """A CR whose namespace hashes into ``bucket``."""
    for i in range(100_000):
        obj = {"metadata": {"namespace": f"ns-{i}", "name": "app"}}
        if bucket_of(obj, "namespace") == bucket:
            return obj
    raise AssertionError(f"no namespace found for bucket {bucket}")


CRS = {b: cr_in(b) for b in range(BUCKETS)}


def working(r: Sharding) -> set[int]:
    return {b for b, cr in CRS.items() if r.accepts(cr)}


def test_a_lone_replica_takes_every_bucket_after_its_claim_was_written() -> None:
    clock, api = FakeClock(), FakeLeases()
    a = replica(api, clock, "a")
    a.tick()
    assert working(a) == set()  # claimed, not yet confirmed
    clock.advance(2)
    a.tick()
    assert working(a) == set(range(BUCKETS))
    lease = api.objects["webapp-a"]
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["metadata"]["annotations"]["oper8d.io/shard-claims"] == f"0-{BUCKETS - 1}"


def test_a_joining_replica_waits_for_in_flight_work_to_end_before_taking_over() -> None:
    clock, api = FakeClock(), FakeLeases()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    for _ in range(2):
        a.tick()
        clock.advance(2)
    moving = sorted(assign(["a", "b"])["b"])
    busy = a.enter(CRS[moving[0]])  # a reconcile of a's that is still running
    assert busy == moving[0]
    for _ in range(6):
        b.tick()
        a.tick()
        clock.advance(2)
        assert not working(a) & working(b)
    assert working(b) == set(moving[1:])
    assert not a.accepts(CRS[moving[0]])  # a takes no new work there...
    a.leave(busy)  # ...and hands it over once the reconcile ended
    for _ in range(3):
        a.tick()
        b.tick()
        clock.advance(2)
        assert not working(a) & working(b)
    assert working(b) == set(moving)
    assert working(a) == set(range(BUCKETS)) - set(moving)
    assert a.members == b.members == ("a", "b")


def test_a_dead_replicas_buckets_move_only_after_its_lease_expired() -> None:
    clock, api = FakeClock(), FakeLeases()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    for _ in range(4):
        a.tick()
        b.tick()
        clock.advance(2)
    theirs = working(a)
    assert theirs and working(b) == set(range(BUCKETS)) - theirs
    # a is killed: it never ticks again
    for _ in range(7):  # 14 s < lease duration of 15 s
        b.tick()
        clock.advance(2)
        assert not working(b) & theirs
    for _ in range(3):
        b.tick()
        clock.advance(2)
    assert working(b) == set(range(BUCKETS))
    assert b.members == ("b",)


def test_a_stopped_replica_deletes_its_lease_and_hands_over_at_once() -> None:
    clock, api = FakeClock(), FakeLeases()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    for _ in range(4):
        a.tick()
        b.tick()
        clock.advance(2)
    a.release()
    assert working(a) == set()
    assert sorted(api.objects) == ["webapp-b"]
    a.tick()  # a late round of a stopped replica does not bring its Lease back
    assert sorted(api.objects) == ["webapp-b"]
    for _ in range(2):
        b.tick()
        clock.advance(2)
    assert working(b) == set(range(BUCKETS))
    assert b.members == ("b",)


def test_a_replica_stopping_with_reconciles_still_running_keeps_their_buckets_claimed() -> None:
    clock, api = FakeClock(), FakeLeases()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    for _ in range(4):
        a.tick()
        b.tick()
        clock.advance(2)
    busy = min(working(a))
    assert a.enter(CRS[busy]) == busy  # outlives the graceful stop's grace period
    a.release()
    assert "webapp-a" in api.objects
    for _ in range(7):  # 14 s: a's Lease has not expired, its busy bucket stays a's
        b.tick()
        clock.advance(2)
        assert busy not in working(b)
    for _ in range(3):  # expired at 16 s: claimed, then confirmed
        b.tick()
        clock.advance(2)
    assert working(b) == set(range(BUCKETS))


def test_a_dead_replicas_lease_is_deleted_by_a_survivor_after_expiry_and_grace() -> None:
    clock, api = FakeClock(), FakeLeases()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    for _ in range(4):
        a.tick()
        b.tick()
        clock.advance(2)
    # a is killed; b sees its Lease unchanged from here on
    for _ in range(15):  # 30 s = lease duration + grace (one more lease duration)
        b.tick()
        clock.advance(2)
        assert "webapp-a" in api.objects
    b.tick()
    assert sorted(api.objects) == ["webapp-b"]
    assert working(b) == set(range(BUCKETS))


class Stale(FakeLeases):
    """Lists the Leases as they were when ``freeze()`` was called (a slow reader)."""

    def __init__(self, shared: FakeLeases) -> None:
        self.shared, self.frozen, self.down = shared, None, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shared, name)

    def freeze(self) -> None:
        self.frozen = copy.deepcopy(self.shared.objects)

    def list(self, *a: Any, **k: Any) -> list[Obj]:
        return [copy.deepcopy(o) for o in (self.frozen or self.shared.objects).values()]

    def get(self, *a: Any, **k: Any) -> Any:
        return self.shared.get(*a, **k)

    def create(self, obj: Obj) -> Obj:
        return self.shared.create(obj)

    def update(self, obj: Obj) -> Obj:
        return self.shared.update(obj)

    def delete(self, *a: Any, **k: Any) -> bool:
        return self.shared.delete(*a, **k)


def test_a_lease_renewed_after_it_was_read_as_expired_is_not_deleted() -> None:
    clock, shared = FakeClock(), FakeLeases()
    slow = Stale(shared)
    a, b = replica(shared, clock, "a"), replica(slow, clock, "b")
    for _ in range(4):
        a.tick()
        b.tick()
        clock.advance(2)
    slow.freeze()  # b reads a's Lease as it is now, for ever
    a.tick()  # ...but a renewed it once more
    renewed = shared.objects["webapp-a"]["metadata"]["resourceVersion"]
    for _ in range(20):
        b.tick()
        clock.advance(2)
    # b judged the version it read expired; the delete named it and was refused
    assert shared.objects["webapp-a"]["metadata"]["resourceVersion"] == renewed


def test_a_replica_that_cannot_renew_stops_before_the_others_take_over() -> None:
    clock, shared = FakeClock(), FakeLeases()
    cut = Unreachable(shared)
    a, b = replica(cut, clock, "a"), replica(shared, clock, "b")
    for _ in range(4):
        a.tick()
        b.tick()
        clock.advance(2)
    assert working(a)
    cut.down = True
    for _ in range(20):  # a stops after 10 s; b waits the lease's 15 s, then takes over
        a.tick()
        b.tick()
        clock.advance(1)
        assert not working(a) & working(b)
    assert working(a) == set()
    assert working(b) == set(range(BUCKETS))


steps = st.lists(
    st.one_of(
        st.tuples(st.just("round"), st.permutations(range(4))),
        st.tuples(st.just("enter"), st.integers(0, 3), st.integers(0, BUCKETS - 1)),
        st.tuples(st.just("leave"), st.integers(0, 3)),
        st.tuples(st.just("kill"), st.integers(0, 3)),
        st.tuples(st.just("stop"), st.integers(0, 3)),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(1, 4))
def test_no_bucket_is_ever_worked_on_by_two_live_replicas(actions: list, start: int) -> None:
    clock, api = FakeClock(), FakeLeases()
    live = {i: replica(api, clock, f"r{i}") for i in range(start)}
    in_flight: dict[int, list[int]] = {i: [] for i in range(4)}
    for action in actions:
        if action[0] == "round":  # every live replica renews within each retry period
            clock.advance(2)
            for i in action[1]:
                if i in live:
                    live[i].tick()
                elif len(live) < 4 and i not in in_flight.get(-1, []):
                    live[i] = replica(api, clock, f"r{i}")
        elif action[0] == "enter" and action[1] in live:
            bucket = live[action[1]].enter(CRS[action[2]])
            if bucket is not None:
                in_flight[action[1]].append(bucket)
        elif action[0] == "leave" and in_flight[action[1]] and action[1] in live:
            live[action[1]].leave(in_flight[action[1]].pop())
        elif action[0] == "kill" and action[1] in live and len(live) > 1:
            del live[action[1]]
            in_flight[action[1]] = []
            in_flight.setdefault(-1, []).append(action[1])  # a killed identity stays dead
        elif action[0] == "stop" and action[1] in live and not in_flight[action[1]]:
            live.pop(action[1]).release()
            in_flight.setdefault(-1, []).append(action[1])
        for bucket in range(BUCKETS):
            users = {i for i, r in live.items() if r.accepts(CRS[bucket]) or bucket in in_flight[i]}
            assert len(users) <= 1, (bucket, users)


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def reconcile_object(self, cr: Obj) -> Any:
        from oper8d.engine.reconcile import ReconcileResult

        self.seen.append(cr["metadata"]["namespace"])
        return ReconcileResult(requeue_after=5.0)


def test_the_gate_reconciles_only_held_buckets_and_holds_a_bucket_while_it_works() -> None:
    from oper8d.runtime.sharding import GatedReconciler

    clock, api = FakeClock(), FakeLeases()
    a, b = replica(api, clock, "a"), replica(api, clock, "b")
    inner = Recorder()
    gate = GatedReconciler(inner, a)
    a.tick()
    clock.advance(2)
    # not held yet: untouched, and looked at again after a round (a requeue, not a success)
    assert gate.reconcile_object(CRS[0]).requeue_after == a.retry_period
    assert inner.seen == []
    a.tick()
    assert gate.reconcile_object(CRS[0]).requeue_after == 5.0
    assert inner.seen == [CRS[0]["metadata"]["namespace"]]

    # b joins; while a reconciles a CR of a bucket that moves, a keeps the bucket
    moving = min(assign(["a", "b"])["b"])
    during: list[set[int]] = []

    class Slow:
        def reconcile_object(self, cr: Obj) -> Any:
            for _ in range(4):
                b.tick()
                a.tick()
                clock.advance(2)
                during.append(working(b))
            return inner.reconcile_object(cr)

    GatedReconciler(Slow(), a).reconcile_object(CRS[moving])
    assert all(moving not in w for w in during)
    for _ in range(3):
        a.tick()
        b.tick()
        clock.advance(2)
    assert moving in working(b)


def test_a_cr_gated_out_during_a_handover_is_requeued_and_counted_as_such(tmp_path: Any) -> None:
    from bundles import NAMESPACE, build, configmap
    from test_runtime_controller import Rig

    from oper8d.runtime.sharding import GatedReconciler

    rig = Rig(build(tmp_path, "components:\n" + configmap("web")).controllers[0])
    a = replica(FakeLeases(), rig.clock, "a")
    rig.controller.reconciler = GatedReconciler(rig.reconciler, a)
    a.tick()  # claimed, not yet held
    rig.crs.emit("ADDED", rig.create_cr())
    assert rig.run_ready() == 1
    assert rig.reconciler.names == []  # not touched...
    assert (rig.reconciles("requeue"), rig.reconciles("success")) == (1, 0)  # ...nor a success
    rig.clock.advance(a.retry_period - 0.1)
    assert rig.run_ready() == 0
    rig.clock.advance(0.1)
    a.tick()  # the claim is confirmed: held
    assert a.accepts({"metadata": {"namespace": NAMESPACE}})
    assert rig.run_ready() == 1  # looked at again after retry_period, and reconciled
    assert rig.reconciler.names == ["demo"]
    assert rig.reconciles("success") == 1
