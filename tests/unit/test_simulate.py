"""The readiness simulator makes workloads ready the way their controllers report it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def make_cluster(clock: Clock | None = None, **simulator: object) -> MemoryCluster:
    return MemoryCluster(
        clock=clock or Clock(),
        uid_factory=sequential_uids(),
        simulator=DefaultSimulator(**simulator),  # type: ignore[arg-type]
    )


def pod_template() -> dict:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "web:1"}]},
    }


def workload(kind: str, replicas: int | None = 3, **spec: object) -> dict:
    body: dict = {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template(), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": body,
    }


def job(name: str = "migrate", **spec: object) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "m", "image": "m:1"}], "restartPolicy": "Never"}
            },
            **spec,
        },
    }


def claim() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "demo"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def load_balancer() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "lb", "namespace": "demo"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
    }


def live(cluster: MemoryCluster, obj: dict) -> dict:
    meta = obj["metadata"]
    found = cluster.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    assert found is not None
    return found


def conditions(obj: dict) -> dict[str, dict]:
    return {c["type"]: c for c in obj["status"].get("conditions", [])}


def test_a_simulated_deployment_is_current_by_kstatus_rules() -> None:
    cluster = make_cluster()
    cluster.apply(workload("Deployment"), field_manager="op")
    obj = live(cluster, workload("Deployment"))
    status = obj["status"]
    assert status["observedGeneration"] == obj["metadata"]["generation"]
    for field in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
        assert status[field] == 3
    assert "unavailableReplicas" not in status
    conds = conditions(obj)
    assert conds["Available"]["status"] == "True"
    assert conds["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conds["Progressing"]["status"] == "True"
    assert conds["Progressing"]["reason"] == "NewReplicaSetAvailable"


def test_a_deployment_without_replicas_counts_one() -> None:
    cluster = make_cluster()
    cluster.apply(workload("Deployment", replicas=None), field_manager="op")
    assert live(cluster, workload("Deployment"))["status"]["availableReplicas"] == 1


def test_a_new_generation_is_observed_and_transition_times_stay() -> None:
    clock = Clock()
    cluster = make_cluster(clock)
    cluster.apply(workload("Deployment"), field_manager="op")
    first = conditions(live(cluster, workload("Deployment")))["Available"]["lastTransitionTime"]
    clock.now += timedelta(minutes=5)
    changed = workload("Deployment", replicas=5)
    cluster.apply(changed, field_manager="op")
    obj = live(cluster, changed)
    assert obj["metadata"]["generation"] == 2
    assert obj["status"]["observedGeneration"] == 2
    assert obj["status"]["readyReplicas"] == 5
    assert conditions(obj)["Available"]["lastTransitionTime"] == first


def test_a_simulated_statefulset_is_current_by_kstatus_rules() -> None:
    cluster = make_cluster()
    cluster.apply(workload("StatefulSet", serviceName="web"), field_manager="op")
    obj = live(cluster, workload("StatefulSet"))
    status = obj["status"]
    assert status["observedGeneration"] == obj["metadata"]["generation"]
    for field in (
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
    ):
        assert status[field] == 3
    assert status["currentRevision"] == status["updateRevision"]
    assert status["updateRevision"].startswith("web-")


def test_a_simulated_daemonset_schedules_one_pod_per_node() -> None:
    cluster = make_cluster()
    for name in ("n1", "n2"):
        cluster.apply(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}, field_manager="t"
        )
    cluster.apply(workload("DaemonSet", replicas=None), field_manager="op")
    status = live(cluster, workload("DaemonSet"))["status"]
    assert status["observedGeneration"] == 1
    for field in (
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "updatedNumberScheduled",
        "numberReady",
        "numberAvailable",
    ):
        assert status[field] == 2


def test_a_simulated_replicaset_is_ready() -> None:
    cluster = make_cluster()
    cluster.apply(workload("ReplicaSet", replicas=2), field_manager="op")
    status = live(cluster, workload("ReplicaSet"))["status"]
    assert status["observedGeneration"] == 1
    assert status["replicas"] == status["readyReplicas"] == status["availableReplicas"] == 2


def test_a_simulated_job_completes() -> None:
    cluster = make_cluster()
    cluster.apply(job(completions=3), field_manager="op")
    status = live(cluster, job())["status"]
    assert status["succeeded"] == 3
    assert status["startTime"] == status["completionTime"] == "2026-01-02T03:04:05Z"
    conds = conditions(live(cluster, job()))
    assert conds["Complete"]["status"] == "True"
    assert conds["SuccessCriteriaMet"]["status"] == "True"
    assert "Failed" not in conds


def test_a_simulated_pod_is_running_and_ready() -> None:
    cluster = make_cluster()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "demo"},
        "spec": pod_template()["spec"],
    }
    cluster.apply(pod, field_manager="op")
    obj = live(cluster, pod)
    assert obj["status"]["phase"] == "Running"
    conds = conditions(obj)
    for kind in ("Ready", "ContainersReady", "PodScheduled", "Initialized"):
        assert conds[kind]["status"] == "True"
    [container] = obj["status"]["containerStatuses"]
    assert container["name"] == "web" and container["ready"] is True
    assert "running" in container["state"]
    assert obj["status"]["podIP"] == "10.244.0.1"


def test_claims_bind_and_load_balancers_get_an_address() -> None:
    cluster = make_cluster()
    pvc, lb = claim(), load_balancer()
    plain = {
        **lb,
        "metadata": {"name": "plain", "namespace": "demo"},
        "spec": {"ports": [{"port": 80}]},
    }
    for obj in (pvc, lb, plain):
        cluster.apply(obj, field_manager="op")
    assert live(cluster, pvc)["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "1Gi"},
    }
    assert live(cluster, lb)["status"]["loadBalancer"]["ingress"][0]["ip"] == "127.0.0.1"
    assert live(cluster, plain)["status"] == {"loadBalancer": {}}  # the apiserver's, no address


def test_an_override_makes_a_job_fail() -> None:
    failed = {
        "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]
    }
    cluster = make_cluster(overrides={("Job", "migrate"): failed})
    cluster.apply(job(), field_manager="op")
    cluster.apply(job("other"), field_manager="op")
    assert live(cluster, job())["status"] == failed
    assert conditions(live(cluster, job("other")))["Complete"]["status"] == "True"


def test_an_override_gives_a_custom_resource_a_status() -> None:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    cluster = make_cluster(overrides={("Database", "db"): ready})
    cr = {
        "apiVersion": "db.io/v1",
        "kind": "Database",
        "metadata": {"name": "db", "namespace": "demo"},
    }
    cluster.apply(cr, field_manager="op")
    assert live(cluster, cr)["status"] == ready


def test_ticks_delay_readiness() -> None:
    cluster = make_cluster(delay_writes=2)
    cluster.apply(workload("Deployment"), field_manager="op")
    rolling = live(cluster, workload("Deployment"))
    assert conditions(rolling)["Available"]["status"] == "False"
    assert rolling["status"]["unavailableReplicas"] == 3
    assert "readyReplicas" not in rolling["status"]
    assert cluster.tick() == 0
    assert conditions(live(cluster, workload("Deployment")))["Available"]["status"] == "False"
    assert cluster.tick() == 1
    ready = live(cluster, workload("Deployment"))
    assert conditions(ready)["Available"]["status"] == "True"
    assert ready["status"]["readyReplicas"] == 3
    assert cluster.tick() == 0  # nothing left to simulate


def test_a_new_generation_waits_again_but_a_label_change_does_not() -> None:
    cluster = make_cluster(delay_writes=1)
    cluster.apply(workload("Deployment"), field_manager="op")
    cluster.tick()
    labelled = workload("Deployment")
    labelled["metadata"]["labels"] = {"team": "a"}
    cluster.apply(labelled, field_manager="op")
    assert conditions(live(cluster, labelled))["Available"]["status"] == "True"
    scaled = workload("Deployment", replicas=4)
    cluster.apply(scaled, field_manager="op")
    assert live(cluster, scaled)["status"]["observedGeneration"] == 2
    assert conditions(live(cluster, scaled))["Available"]["status"] == "False"
    cluster.tick()
    assert live(cluster, scaled)["status"]["availableReplicas"] == 4


def test_a_delayed_job_is_active_before_it_fails_by_override() -> None:
    failed = {"conditions": [{"type": "Failed", "status": "True"}]}
    cluster = make_cluster(delay_writes=1, overrides={("Job", "migrate"): failed})
    cluster.apply(job(), field_manager="op")
    assert live(cluster, job())["status"]["active"] == 1
    cluster.tick()
    assert live(cluster, job())["status"] == failed


def test_simulated_statuses_are_written_like_status_updates() -> None:
    cluster = make_cluster()
    events: list[tuple[str, dict]] = []
    cluster.watch(lambda kind, obj: events.append((kind, obj)))
    created = cluster.apply(workload("Deployment"), field_manager="op")
    obj = live(cluster, workload("Deployment"))
    statuses = [(kind, obj.get("status")) for kind, obj in events]
    assert statuses[0] == ("ADDED", {})  # a new Deployment's status, as the apiserver's
    assert statuses[1][0] == "MODIFIED" and statuses[1][1]  # then the simulated one
    assert (
        int(obj["metadata"]["resourceVersion"]) == int(created["metadata"]["resourceVersion"]) + 1
    )
    assert obj["spec"] == created["spec"]
    assert cluster.requests == {"apply": 1, "get": 1}  # the simulator's write is not a request


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="delay_writes"):
        DefaultSimulator(delay_writes=-1)


def test_without_a_simulator_nothing_gets_a_status() -> None:
    cluster = MemoryCluster()
    cluster.apply(workload("Deployment"), field_manager="op")
    assert live(cluster, workload("Deployment"))["status"] == {}  # a new one's, never moved
    assert cluster.tick() == 0


def _simulated_kinds() -> list[dict]:
    """One object of every kind ``DefaultSimulator`` builds a status for (and a custom
    resource it has an override for)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"containers": [{"name": "web", "image": "web:1"}]},
    }
    pvc, lb = claim(), load_balancer()
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "dbs.db.io"},
        "spec": {
            "group": "db.io",
            "names": {"kind": "Database", "plural": "dbs", "singular": "db"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    custom = {"apiVersion": "other.io/v1", "kind": "Database", "metadata": {"name": "db"}}
    custom["metadata"]["namespace"] = "demo"
    kinds = ("Deployment", "StatefulSet", "ReplicaSet")
    daemons = workload("DaemonSet", replicas=None)
    return [*(workload(k) for k in kinds), daemons, job(), pod, pvc, lb, ingress, crd, custom]


class _View:
    """What a simulator reads, over a cluster (as the store's own view)."""

    def __init__(self, cluster: MemoryCluster, clock: Clock) -> None:
        self.cluster, self.clock = cluster, clock

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):
        return self.cluster.get(api_version, kind, name, namespace)

    def list(self, api_version: str, kind: str, namespace=None, label_selector=None):
        return self.cluster.list(api_version, kind, namespace, label_selector)

    def now(self) -> datetime:
        return self.clock()


@pytest.mark.parametrize("obj", _simulated_kinds(), ids=lambda o: o["kind"])
def test_the_default_simulator_never_changes_the_object_it_is_shown(obj: dict) -> None:
    """The store shows ``DefaultSimulator`` its stored objects themselves, not copies
    (``Store._shown``): every builder, rolling out or settled, with a status from before
    or none, must leave the object as it was."""
    import copy

    clock = Clock()
    overrides = {("Database", "db"): {"conditions": [{"type": "Ready", "status": "True"}]}}
    cluster = make_cluster(clock, delay_writes=1, overrides=overrides)
    cluster.apply(obj, field_manager="op")
    cluster.tick()
    clock.now += timedelta(seconds=5)
    view = _View(cluster, clock)
    stored = live(cluster, obj)
    written_by_others = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    bare = {k: v for k, v in stored.items() if k != "status"}
    for shown in (stored, bare, {**bare, "status": written_by_others}):
        before = copy.deepcopy(shown)
        for delay in (0, 1):
            simulator = DefaultSimulator(delay_writes=delay, overrides=overrides)
            simulator.on_write(view, shown)  # (a status it returns may share: the store copies it)
            assert shown == before
            simulator.on_tick(view, shown)
            assert shown == before


class _Meddler(DefaultSimulator):
    """A simulator that changes what it is shown (not ours to trust: a subclass)."""

    def on_write(self, cluster, obj):  # type: ignore[no-untyped-def]
        obj["metadata"].setdefault("labels", {})["meddled"] = "yes"
        obj["spec"]["replicas"] = 99
        return super().on_write(cluster, obj)


def test_any_other_simulator_is_shown_a_copy() -> None:
    cluster = MemoryCluster(clock=Clock(), uid_factory=sequential_uids(), simulator=_Meddler())
    cluster.apply(workload("Deployment"), field_manager="op")
    stored = live(cluster, workload("Deployment"))
    assert stored["spec"]["replicas"] == 3
    assert "meddled" not in stored["metadata"].get("labels", {})
    assert stored["status"]["replicas"] == 99  # (its status is written as it reports it)
