"""Leader election against a real kube-apiserver: candidates on their own threads compete
for one coordination.k8s.io/v1 Lease in a fresh namespace, with short timings (lease 3 s,
renew deadline 2 s, retry 0.5 s). A watcher thread samples every candidate's
``is_leader`` the whole time; two leaders at once fails the test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes import client
from test_kube_cluster import new_namespace

from oper8d.cluster.base import Obj
from oper8d.cluster.kube import KubeCluster
from oper8d.runtime.leaderelection import LEASE_API_VERSION, LeaderElector

pytestmark = pytest.mark.integration

LEASE_NAME = "webapp"
LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
#: room for the few API round trips of one acquisition on top of the election timings
API_SLACK = 0.5


class Candidate:
    """A LeaderElector running on its own thread, as one replica of an operator would,
    with its own KubeCluster; its callbacks set events."""

    def __init__(self, k8s: client.ApiClient, namespace: str, identity: str, **options: Any):
        self.identity = identity
        self.elector = LeaderElector(
            KubeCluster(k8s),
            name=LEASE_NAME,
            namespace=namespace,
            identity=identity,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            **options,
        )
        self.stop = threading.Event()
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.thread = threading.Thread(
            target=self.elector.run,
            args=(self.stop, self.started.set, self.stopped.set),
            name=f"elector-{identity}",
            daemon=True,
        )

    def halt(self) -> None:
        """Stop the elector and wait for run() to return (it returns promptly)."""
        self.stop.set()
        self.thread.join(timeout=10.0)
        assert not self.thread.is_alive(), f"{self.identity}: run() did not return after stop"


class LeaderWatch:
    """Samples ``is_leader`` of every candidate on its own thread. A sample reads all
    candidates twice; one that said True both times led through the whole sample, so
    two of them mean two leaders at one moment."""

    def __init__(self) -> None:
        self.candidates: list[Candidate] = []
        self.samples = 0
        self.overlaps: list[list[str]] = []
        self.seen_leading: set[str] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="leader-watch", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.001):
            candidates = list(self.candidates)
            first = [c.elector.is_leader for c in candidates]
            second = [c.elector.is_leader for c in candidates]
            leaders = [
                c.identity for c, a, b in zip(candidates, first, second, strict=True) if a and b
            ]
            self.samples += 1
            self.seen_leading.update(leaders)
            if len(leaders) > 1:
                self.overlaps.append(leaders)

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=5.0)


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s)


@pytest.fixture
def namespace(cluster: KubeCluster) -> Iterator[str]:
    name = new_namespace(cluster)
    yield name
    cluster.delete("v1", "Namespace", name)


@pytest.fixture
def watch() -> Iterator[LeaderWatch]:
    watcher = LeaderWatch()
    yield watcher
    watcher.close()


@pytest.fixture
def candidates(
    k8s: client.ApiClient, namespace: str, watch: LeaderWatch
) -> Iterator[Callable[..., Candidate]]:
    """Starts candidates, watched by ``watch``; all are stopped at the end."""
    started: list[Candidate] = []

    def start(identity: str, **options: Any) -> Candidate:
        candidate = Candidate(k8s, namespace, identity, **options)
        started.append(candidate)
        watch.candidates.append(candidate)
        candidate.thread.start()
        return candidate

    yield start
    for candidate in started:
        candidate.halt()


def lease(cluster: KubeCluster, namespace: str) -> Obj:
    found = cluster.get(LEASE_API_VERSION, "Lease", LEASE_NAME, namespace)
    assert found is not None, f"no Lease {namespace}/{LEASE_NAME}"
    return found


def micro_time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` every 50 ms for at most ``timeout`` seconds."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting until {what}"
        pause.wait(0.05)


def test_the_first_candidate_acquires_the_lease_and_is_recorded_as_holder(
    cluster: KubeCluster, namespace: str, candidates: Callable[..., Candidate]
) -> None:
    first = candidates("replica-a")
    assert first.started.wait(timeout=10.0)
    assert first.elector.is_leader
    spec = lease(cluster, namespace)["spec"]
    assert spec["holderIdentity"] == "replica-a"
    assert spec["leaseTransitions"] == 0
    assert spec["leaseDurationSeconds"] == 3
    assert micro_time(spec["acquireTime"]) <= micro_time(spec["renewTime"])


def test_a_second_candidate_does_not_lead_while_the_first_renews(
    cluster: KubeCluster,
    namespace: str,
    candidates: Callable[..., Candidate],
    watch: LeaderWatch,
) -> None:
    first = candidates("replica-a")
    assert first.started.wait(timeout=10.0)
    second = candidates("replica-b")
    wait_until(lambda: second.elector.leader == "replica-a", 10.0, "replica-b sees replica-a")
    seen = micro_time(lease(cluster, namespace)["spec"]["renewTime"])
    # keep going until the first has renewed for longer than a lease the second could
    # otherwise have taken over
    past_expiry = seen + timedelta(seconds=LEASE + 2 * RETRY)
    wait_until(
        lambda: micro_time(lease(cluster, namespace)["spec"]["renewTime"]) > past_expiry,
        LEASE + 10.0,
        "replica-a has renewed past a lease's expiry",
    )
    assert not second.started.is_set()
    assert first.elector.is_leader and not second.elector.is_leader
    assert lease(cluster, namespace)["spec"]["leaseTransitions"] == 0
    assert watch.seen_leading == {"replica-a"}
    assert watch.overlaps == []


def test_stopping_the_leader_releases_the_lease_and_the_standby_takes_over_promptly(
    cluster: KubeCluster,
    namespace: str,
    candidates: Callable[..., Candidate],
    watch: LeaderWatch,
) -> None:
    first = candidates("replica-a")
    assert first.started.wait(timeout=10.0)
    second = candidates("replica-b")
    wait_until(lambda: second.elector.leader == "replica-a", 10.0, "replica-b sees replica-a")
    first.halt()
    assert first.stopped.is_set() and not first.elector.is_leader
    # released: the standby takes over at its next retry, long before the lease expires
    assert second.started.wait(timeout=LEASE / 2)
    spec = lease(cluster, namespace)["spec"]
    assert spec["holderIdentity"] == "replica-b"
    assert spec["leaseTransitions"] == 1
    assert watch.seen_leading == {"replica-a", "replica-b"}
    assert watch.overlaps == []


def test_a_leader_that_dies_without_releasing_is_replaced_once_its_lease_expires(
    cluster: KubeCluster,
    namespace: str,
    candidates: Callable[..., Candidate],
    watch: LeaderWatch,
) -> None:
    first = candidates("replica-a", release_on_stop=False)
    assert first.started.wait(timeout=10.0)
    second = candidates("replica-b")
    wait_until(lambda: second.elector.leader == "replica-a", 10.0, "replica-b sees replica-a")
    first.halt()  # renewals stop; the lease still names replica-a
    abandoned = lease(cluster, namespace)["spec"]
    assert abandoned["holderIdentity"] == "replica-a"
    assert second.started.wait(timeout=LEASE + RETRY + API_SLACK)
    spec = lease(cluster, namespace)["spec"]
    assert spec["holderIdentity"] == "replica-b"
    assert spec["leaseTransitions"] == abandoned["leaseTransitions"] + 1
    # not before the abandoned lease had gone a whole lease duration without renewal
    waited = micro_time(spec["acquireTime"]) - micro_time(abandoned["renewTime"])
    assert waited >= timedelta(seconds=LEASE)
    assert watch.overlaps == []


def test_candidates_racing_for_a_new_lease_elect_exactly_one_leader(
    cluster: KubeCluster,
    namespace: str,
    candidates: Callable[..., Candidate],
    watch: LeaderWatch,
) -> None:
    racers = [candidates(f"replica-{n}") for n in range(3)]
    wait_until(lambda: any(r.started.is_set() for r in racers), 10.0, "someone leads")
    leader = next(r for r in racers if r.started.is_set())
    acquired = micro_time(lease(cluster, namespace)["spec"]["acquireTime"])
    wait_until(
        lambda: (
            micro_time(lease(cluster, namespace)["spec"]["renewTime"])
            > acquired + timedelta(seconds=LEASE + 2 * RETRY)
        ),
        LEASE + 10.0,
        "the leader has renewed past a lease's expiry",
    )
    assert [r.identity for r in racers if r.started.is_set()] == [leader.identity]
    spec = lease(cluster, namespace)["spec"]
    assert spec["holderIdentity"] == leader.identity
    assert spec["leaseTransitions"] == 0
    assert watch.samples > 100
    assert watch.overlaps == []
