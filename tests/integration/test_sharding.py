"""Sharded replicas against the real control plane: three in-process Managers share the CRs
of sixty namespaces through their Leases, on Kubernetes 1.36 with server-side sharded list
and watch (the ShardedListAndWatch gate on; and two with the gate off, as clusters have it
by default, where the API server ignores ``shardSelector``: filtered on our side). On
1.36.3 the API server shards lists of built-in kinds (the owned ConfigMaps) but not of
custom resources: the Notes are filtered on our side there too.

Every reconcile that passes a replica's shard gate is recorded (who, which CR, start, end):
that audit shows that no CR is ever reconciled by two replicas at once. A "killed" replica
stops working and renewing without giving up its Lease, as SIGKILL leaves it; its CRs must
be reconciled by the others within the Lease duration plus one resync period, and its Lease
is deleted by a survivor once expired (plus a grace period). A replica stopped gracefully
deletes its Lease at once: its CRs move without waiting for the Lease to expire.
"""

from __future__ import annotations

import textwrap
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import is_ready, wait_for
from procs import OperatorLauncher

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.kube import KubeCluster
from oper8d.envtest import Environment
from oper8d.manifests.install import install_crds
from oper8d.runtime.hashing import assign
from oper8d.runtime.manager import Manager
from oper8d.runtime.options import ManagerOptions
from oper8d.runtime.sharding import GatedReconciler, lease_name

pytestmark = pytest.mark.integration

API = "shard.oper8d.io/v1alpha1"
KIND = "Note"
LEASE_DURATION = 3.0
RESYNC = 5.0
LEASE = ("coordination.k8s.io/v1", "Lease")
#: the Managers' default shard group and Lease namespace
GROUP, LEASE_NS = "notes-oper8d-shards", "default"

OPERATOR = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata:
  name: notes
  version: 0.1.0
controllers:
  - name: note
    resource:
      group: shard.oper8d.io
      version: v1alpha1
      kind: Note
      schema:
        type: object
        properties:
          message: {type: string, default: hello}
    components:
      - name: config
        resources:
          - name: configmap
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: "{{ scoped_name('config') }}"
              data:
                MESSAGE: "{{ spec.message }}"
"""


@dataclass(frozen=True)
class Reconcile:
    who: str
    uid: str
    start: float
    end: float


class Audit:
    """Wraps the engine's reconciler behind a replica's shard gate: records each reconcile."""

    def __init__(self, inner: Any, who: str, log: list[Reconcile], lock: threading.Lock):
        self.inner, self.who, self.log, self.lock = inner, who, log, lock

    def reconcile_object(self, cr: dict[str, Any]) -> Any:
        start = time.monotonic()
        try:
            return self.inner.reconcile_object(cr)
        finally:
            with self.lock:
                self.log.append(Reconcile(self.who, cr["metadata"]["uid"], start, time.monotonic()))


class Fleet:
    """Sharded Managers of one bundle, their audit and the CR events each received."""

    def __init__(self, env: Environment, bundle_dir: Path, stack: ExitStack):
        self.env, self.stack = env, stack
        self.bundle = load_bundle(bundle_dir)
        self.admin = KubeCluster(stack.enter_context(env.api_client()), field_manager="test")
        install_crds(self.admin, self.bundle)
        self.audit: list[Reconcile] = []
        #: replica -> uids of the Notes and ConfigMaps its informers told it about
        self.events: dict[str, set[str]] = {}
        self.lock = threading.Lock()
        self.managers: dict[str, Manager] = {}

    def start(self, who: str) -> Manager:
        api = KubeCluster(self.stack.enter_context(self.env.api_client()), field_manager="notes")
        options = ManagerOptions(
            sharding=True,
            identity=who,
            lease_duration=LEASE_DURATION,
            renew_deadline=2.0,
            retry_period=0.5,
            resync_period=RESYNC,
            metrics_bind_address=None,
            health_probe_bind_address=None,
            graceful_shutdown_timeout=10.0,
            events=False,
        )
        manager = Manager(self.bundle, api, options)
        for c in manager.controllers:
            assert isinstance(c.reconciler, GatedReconciler)
            c.reconciler.inner = Audit(c.reconciler.inner, who, self.audit, self.lock)
        seen = self.events.setdefault(who, set())
        for key, informer in manager.informers.items():
            # the Notes and the ConfigMaps they own (not the names-only informer's others)
            if key[0] in (f"{API}/{KIND}", "v1/ConfigMap") and not informer.metadata_only:
                informer.add_handler(
                    lambda _e, obj, _old, seen=seen: seen.add(obj["metadata"]["uid"])
                )
        manager.start()
        self.managers[who] = manager
        return manager

    def kill(self, who: str) -> None:
        """Stop working and renewing, but keep the Lease (what SIGKILL leaves behind)."""
        manager = self.managers.pop(who)
        manager._stop.set()
        manager._stop_election.set()  # the sharding loop ends without releasing
        for c in manager.controllers:
            c.queue.shutdown()
            c.wait_idle(10)
        for informer in manager.informers.values():
            informer.stop()

    def stop_all(self) -> None:
        for manager in self.managers.values():
            manager.stop()

    def owners(self) -> dict[str, str]:
        """CR uid -> the live replica whose shard holds it now."""
        out = {}
        for cr in self.admin.list(API, KIND):
            for who, manager in self.managers.items():
                assert manager.sharding is not None
                if manager.sharding.accepts(cr):
                    out[cr["metadata"]["uid"]] = who
        return out

    def settled(self, count: int) -> dict[str, str] | None:
        """The owners once every CR has exactly one and the replicas agree on members."""
        names = tuple(sorted(self.managers))
        want = assign(names)
        for who, m in self.managers.items():
            assert m.sharding is not None
            if m.sharding.members != names or m.sharding.held != want[who]:
                return None
        owners = self.owners()
        return owners if len(owners) == count else None

    def assert_never_twice_at_once(self) -> None:
        with self.lock:
            log = list(self.audit)
        by_cr: dict[str, list[Reconcile]] = {}
        for r in log:
            by_cr.setdefault(r.uid, []).append(r)
        for uid, runs in by_cr.items():
            for a in runs:
                for b in runs:
                    if a.who < b.who:
                        assert a.end <= b.start or b.end <= a.start, (uid, a, b)


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    (tmp_path / "operator.yaml").write_text(textwrap.dedent(OPERATOR))
    return tmp_path


def create_notes(fleet: Fleet, count: int) -> list[str]:
    """One Note in each of ``count`` fresh namespaces; their names.

    The names differ in their first characters: FNV-1a barely mixes the last bytes into
    the high bits that shard ranges cut, so names differing only at the end (``team-1``,
    ``team-2``, ...) fall into one range (see docs: shard such fleets by uid)."""
    namespaces = [f"{uuid.uuid4().hex[:8]}-shard" for _ in range(count)]
    for ns in namespaces:
        fleet.admin.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            field_manager="test",
        )
        fleet.admin.apply(
            {"apiVersion": API, "kind": KIND, "metadata": {"name": "note", "namespace": ns}},
            field_manager="test",
        )
    return namespaces


def set_message(fleet: Fleet, namespaces: list[str], message: str) -> None:
    for ns in namespaces:
        fleet.admin.apply(
            {
                "apiVersion": API,
                "kind": KIND,
                "metadata": {"name": "note", "namespace": ns},
                "spec": {"message": message},
            },
            field_manager="test",
        )


def all_ready(fleet: Fleet, namespaces: list[str], message: str = "hello") -> bool:
    crs = fleet.admin.list(API, KIND)
    mine = [cr for cr in crs if cr["metadata"]["namespace"] in namespaces]
    if len(mine) != len(namespaces) or not all(is_ready(cr) for cr in mine):
        return False
    maps = [fleet.admin.get("v1", "ConfigMap", "note-config", ns) or {} for ns in namespaces]
    return all((cm.get("data") or {}).get("MESSAGE") == message for cm in maps)


def cleanup(fleet: Fleet, namespaces: list[str]) -> None:
    for ns in namespaces:
        fleet.admin.delete(API, KIND, "note", ns)
    wait_for(
        "Notes to be finalized",
        lambda: (
            not [c for c in fleet.admin.list(API, KIND) if c["metadata"]["namespace"] in namespaces]
        ),
        timeout=60,
    )


@pytest.fixture
def fleet(envtest_sharded: Environment, bundle_dir: Path) -> Iterator[Fleet]:
    with ExitStack() as stack:
        f = Fleet(envtest_sharded, bundle_dir, stack)
        try:
            yield f
        finally:
            f.stop_all()


def test_three_replicas_share_the_crs_take_over_a_killed_one_and_make_room_for_another(
    fleet: Fleet,
) -> None:
    for who in ("r0", "r1", "r2"):
        fleet.start(who)
    n = 60
    namespaces = create_notes(fleet, n)
    wait_for("60 Notes Ready", lambda: all_ready(fleet, namespaces), timeout=120)
    owners = wait_for("one owner per Note", lambda: fleet.settled(n), timeout=30)

    # each replica owns about a third, and hears only of its own Notes and ConfigMaps:
    # change every Note and count the objects each replica's informers told it about
    for manager in fleet.managers.values():
        honoured = manager.api.shard_selector_honoured  # type: ignore[attr-defined]
        assert honoured["v1/ConfigMap"] is True
    for seen in fleet.events.values():
        seen.clear()
    set_message(fleet, namespaces, "again")
    wait_for("every Note applied again", lambda: all_ready(fleet, namespaces, "again"), 120)
    total = sum(len(seen) for seen in fleet.events.values())
    assert total == 2 * n, {w: len(s) for w, s in fleet.events.items()}  # a Note + its map
    for who in ("r0", "r1", "r2"):
        mine = {uid for uid, owner in owners.items() if owner == who}
        # binomial(60, 1/3): 6..36 is beyond 3.8 standard deviations either side
        assert 6 <= len(mine) <= 36, {w: len(s) for w, s in fleet.events.items()}
        assert len(fleet.events[who]) == 2 * len(mine)
    fleet.assert_never_twice_at_once()
    print(
        "owned per replica:",
        Counter(owners.values()),
        "objects heard of:",
        {w: len(s) for w, s in fleet.events.items()},
    )

    # kill r1: its Notes are reconciled by r0 and r2 within the Lease duration + a resync
    victims = {uid for uid, owner in owners.items() if owner == "r1"}
    killed_at = time.monotonic()
    fleet.kill("r1")

    def taken_over() -> bool | None:
        with fleet.lock:
            done = {r.uid for r in fleet.audit if r.start > killed_at and r.who != "r1"}
        return victims <= done or None

    wait_for("r1's Notes reconciled by the others", taken_over, timeout=30)
    took = time.monotonic() - killed_at
    print(f"{len(victims)} Notes of the killed replica taken over in {took:.1f}s")
    assert took <= LEASE_DURATION + RESYNC + 2.0, took
    wait_for("two replicas own every Note", lambda: fleet.settled(n), timeout=30)
    fleet.assert_never_twice_at_once()
    # a survivor deletes the dead replica's Lease once expired (3 s) plus the grace (3 s)
    dead = lease_name(GROUP, "r1")
    wait_for(
        "r1's Lease deleted",
        lambda: fleet.admin.get(*LEASE, dead, LEASE_NS) is None,
        timeout=2 * LEASE_DURATION + 5,
    )

    # a third replica joins the two: about a third of the Notes move, never to two at once
    before = fleet.settled(n)
    assert before is not None
    fleet.start("r3")
    after = wait_for("three replicas own every Note again", lambda: fleet.settled(n), timeout=30)
    moved = [uid for uid in after if after[uid] != before[uid]]
    print(f"a replica joining two: {len(moved)} of {n} Notes moved, now", Counter(after.values()))
    assert 0.1 * n <= len(moved) <= 0.6 * n, len(moved)
    for who in ("r0", "r2", "r3"):
        assert any(owner == who for owner in after.values())
    # and they still converge: change every Note, all ConfigMaps follow
    set_message(fleet, namespaces, "moved")
    wait_for("every Note applied again", lambda: all_ready(fleet, namespaces, "moved"), 120)
    fleet.assert_never_twice_at_once()

    # r3 stops gracefully: its Lease is gone at once, its Notes move before it could expire
    leaving = {uid for uid, owner in after.items() if owner == "r3"}
    fleet.managers.pop("r3").stop()
    stopped_at = time.monotonic()
    assert fleet.admin.get(*LEASE, lease_name(GROUP, "r3"), LEASE_NS) is None

    def handed_over() -> bool | None:
        with fleet.lock:
            done = {r.uid for r in fleet.audit if r.start > stopped_at and r.who != "r3"}
        return leaving <= done or None

    wait_for("r3's Notes reconciled by the others", handed_over, timeout=30)
    took = time.monotonic() - stopped_at
    print(f"{len(leaving)} Notes of the stopped replica taken over in {took:.1f}s")
    assert took < LEASE_DURATION, took
    fleet.assert_never_twice_at_once()
    cleanup(fleet, namespaces)


def test_without_server_side_sharding_two_replicas_filter_on_their_side(
    envtest: Environment, bundle_dir: Path
) -> None:
    """``envtest`` runs 1.36 with the ShardedListAndWatch gate off: the server ignores the
    selector (no ``shardInfo``), and each replica filters every kind on its side."""
    with ExitStack() as stack:
        fleet = Fleet(envtest, bundle_dir, stack)
        try:
            fleet.start("a")
            fleet.start("b")
            n = 20
            namespaces = create_notes(fleet, n)
            wait_for("20 Notes Ready", lambda: all_ready(fleet, namespaces), timeout=120)
            owners = wait_for("one owner per Note", lambda: fleet.settled(n), timeout=30)
            for manager in fleet.managers.values():
                honoured = manager.api.shard_selector_honoured  # type: ignore[attr-defined]
                assert honoured == {f"{API}/{KIND}": False, "v1/ConfigMap": False}
            assert set(owners.values()) == {"a", "b"}
            fleet.assert_never_twice_at_once()
            cleanup(fleet, namespaces)
        finally:
            fleet.stop_all()


def test_oper8d_run_sharding_processes_share_crs_by_uid_and_survive_a_sigkill(
    envtest_sharded: Environment, bundle_dir: Path, tmp_path: Path
) -> None:
    """Three ``oper8d run --sharding --shard-key uid`` processes in one namespace."""
    assert envtest_sharded.kubeconfig_path is not None
    launcher = OperatorLauncher(tmp_path / "logs", envtest_sharded.kubeconfig_path)
    launcher.log_dir.mkdir()
    with ExitStack() as stack:
        fleet = Fleet(envtest_sharded, bundle_dir, stack)
        ns = f"{uuid.uuid4().hex[:8]}-procs"
        fleet.admin.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            field_manager="test",
        )
        timing = ["--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.5"]
        args = ["--sharding", "--shard-key", "uid", "--leader-election-namespace", ns, *timing]
        try:
            procs = [
                launcher.start(bundle_dir, ns, name=f"replica-{i}", extra=args) for i in range(3)
            ]
            for p in procs:
                p.wait_ready()
            n = 30
            for i in range(n):
                fleet.admin.apply(
                    {
                        "apiVersion": API,
                        "kind": KIND,
                        "metadata": {"name": f"n{i}", "namespace": ns},
                    },
                    field_manager="test",
                )

            def converged(message: str) -> bool:
                crs = fleet.admin.list(API, KIND, ns)
                maps = {
                    cm["metadata"]["name"]: (cm.get("data") or {}).get("MESSAGE")
                    for cm in fleet.admin.list("v1", "ConfigMap", ns)
                }
                return len(crs) == n and all(
                    is_ready(cr) and maps.get(f"{cr['metadata']['name']}-config") == message
                    for cr in crs
                )

            wait_for("30 Notes Ready", lambda: converged("hello"), timeout=120)
            wait_for(
                "three members, buckets dealt",
                lambda: (
                    all(p.metric("oper8d_shard_members") == 3 for p in procs)
                    and sum(p.metric("oper8d_shard_buckets") for p in procs) == 64
                ),
                timeout=30,
            )
            assert all(20 <= p.metric("oper8d_shard_buckets") <= 22 for p in procs)
            reconciled = [p.metric("oper8d_reconcile_total") for p in procs]
            assert all(r > 0 for r in reconciled), reconciled

            procs[1].kill()
            killed_at = time.monotonic()
            for i in range(n):
                fleet.admin.apply(
                    {
                        "apiVersion": API,
                        "kind": KIND,
                        "metadata": {"name": f"n{i}", "namespace": ns},
                        "spec": {"message": "after"},
                    },
                    field_manager="test",
                )
            wait_for("every Note applied by the survivors", lambda: converged("after"), 60)
            took = time.monotonic() - killed_at
            print(f"after SIGKILL, all {n} Notes converged in {took:.1f}s")
            assert took <= LEASE_DURATION + RESYNC + 2.0, took
            survivors = (procs[0], procs[2])
            # a bucket without Notes may still be in handover: wait for the last one
            wait_for(
                "the survivors to hold every bucket",
                lambda: (
                    all(p.metric("oper8d_shard_members") == 2 for p in survivors)
                    and sum(p.metric("oper8d_shard_buckets") for p in survivors) == 64
                ),
                timeout=10,
            )
            # the killed replica's Lease is deleted by a survivor (expiry 3 s + grace 3 s)
            group = "notes-oper8d-shards"
            killed = lease_name(group, procs[1].identity)
            wait_for(
                "the killed replica's Lease deleted",
                lambda: fleet.admin.get(*LEASE, killed, ns) is None,
                timeout=2 * LEASE_DURATION + 5,
            )
            # SIGTERM: the replica deletes its own Lease as it stops, the last one takes
            # every bucket without waiting for that Lease to expire
            signalled = time.monotonic()
            procs[2].terminate(timeout=30)
            exited = time.monotonic() - signalled
            # gone at once: a survivor would delete it only 6 s after its last renewal
            assert fleet.admin.get(*LEASE, lease_name(group, procs[2].identity), ns) is None
            wait_for(
                "the last replica to hold every bucket",
                lambda: procs[0].metric("oper8d_shard_buckets") == 64,
                timeout=10,
            )
            took = time.monotonic() - signalled
            print(
                f"SIGTERM: exited in {exited:.1f}s, the last replica held every bucket "
                f"{took:.1f}s after the signal"
            )
            assert took < LEASE_DURATION + exited, took
            wait_for(
                "the last replica to count every Note as its own",
                lambda: procs[0].metric("oper8d_shard_crs") == n,
                timeout=10,
            )
            for i in range(n):
                fleet.admin.delete(API, KIND, f"n{i}", ns)
            wait_for("Notes finalized", lambda: not fleet.admin.list(API, KIND, ns), 60)
        finally:
            launcher.stop_all()
            print(launcher.logs())


def test_a_lease_renewed_after_it_was_read_is_not_deleted(envtest: Environment) -> None:
    """The precondition a survivor's delete of an expired Lease carries, on the real API
    server: the version it read, refused (409) once the holder renewed."""
    from oper8d.errors import ClusterError

    with envtest.api_client() as api_client:
        api = KubeCluster(api_client, field_manager="test")
        name = f"renewed-{uuid.uuid4().hex[:6]}"
        lease = {
            "apiVersion": LEASE[0],
            "kind": LEASE[1],
            "metadata": {"name": name, "namespace": LEASE_NS},
            "spec": {"holderIdentity": "peer", "leaseDurationSeconds": 3},
        }
        read = api.create(lease)
        renewed = api.update({**read, "spec": {**read["spec"], "leaseDurationSeconds": 4}})
        stale = read["metadata"]["resourceVersion"]
        with pytest.raises(ClusterError) as refused:
            api.delete(*LEASE, name, LEASE_NS, resource_version=stale)
        assert refused.value.status == 409
        assert api.get(*LEASE, name, LEASE_NS) is not None
        current = renewed["metadata"]["resourceVersion"]
        assert api.delete(*LEASE, name, LEASE_NS, resource_version=current) is True
        assert api.get(*LEASE, name, LEASE_NS) is None
