"""The test environment runs a real control plane: version, controllers, kwok, restarts."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from oper8d.envtest import Environment

pytestmark = pytest.mark.integration


def wait_for(
    list_fn: Callable[..., Any],
    name: str,
    predicate: Callable[[Any], bool],
    timeout: float = 60.0,
    **kwargs: Any,
) -> Any:
    """Watch the object ``name`` (listed by ``list_fn``) until ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    last = None
    while (remaining := deadline - time.monotonic()) > 0:
        stream = watch.Watch().stream(
            list_fn,
            field_selector=f"metadata.name={name}",
            timeout_seconds=max(1, int(remaining)),
            **kwargs,
        )
        try:
            for event in stream:
                last = event["object"]
                if predicate(last):
                    return last
        finally:
            stream.close()
    raise AssertionError(f"timed out after {timeout}s waiting for {name}; last seen:\n{last}")


def is_true(conditions: list[Any] | None, kind: str) -> bool:
    """True if the condition of type ``kind`` has status True."""
    return any(c.type == kind and c.status == "True" for c in conditions or [])


def deployment(name: str, replicas: int) -> dict[str, Any]:
    """A Deployment manifest; kwok never pulls the image."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]},
            },
        },
    }


def statefulset(name: str, replicas: int, storage: str) -> dict[str, Any]:
    """A StatefulSet whose container mounts its own claim template."""
    labels = {"app": name}
    mount = {"name": "data", "mountPath": "/data"}
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": name,
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "db", "image": "registry.invalid/db:1", "volumeMounts": [mount]}
                    ]
                },
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim}],
        },
    }


def ready(replicas: int) -> Callable[[Any], bool]:
    """Predicate: the StatefulSet reports ``replicas`` ready replicas."""
    return lambda s: s.status is not None and (s.status.ready_replicas or 0) == replicas


def available(replicas: int) -> Callable[[Any], bool]:
    """Predicate: the Deployment reports ``replicas`` available replicas."""
    return lambda d: d.status is not None and (d.status.available_replicas or 0) == replicas


@pytest.fixture
def namespace(k8s: client.ApiClient) -> Iterator[str]:
    """A fresh namespace, deleted (asynchronously) after the test."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = client.CoreV1Api(k8s)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def test_version_is_1_36(k8s: client.ApiClient) -> None:
    info = client.VersionApi(k8s).get_code()
    assert info.git_version.startswith("v1.36."), info
    assert (info.major, info.minor) == ("1", "36")


def test_deployment_pods_run_on_fake_nodes(k8s: client.ApiClient, namespace: str) -> None:
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    apps.create_namespaced_deployment(namespace, deployment("web", 2))

    dep = wait_for(apps.list_namespaced_deployment, "web", available(2), namespace=namespace)
    assert dep.status.ready_replicas == 2

    (rs,) = apps.list_namespaced_replica_set(namespace).items
    assert rs.metadata.owner_references[0].name == "web"
    pods = core.list_namespaced_pod(namespace).items
    assert len(pods) == 2
    for pod in pods:
        assert pod.metadata.owner_references[0].name == rs.metadata.name
        assert pod.spec.node_name.startswith("kwok-node-")  # bound by kube-scheduler
        assert pod.status.phase == "Running"  # set by kwok
        assert is_true(pod.status.conditions, "Ready")


def test_job_completes(k8s: client.ApiClient, namespace: str) -> None:
    """kwok's pod-complete stage moves Running pods owned by a Job to Succeeded."""
    batch, core = client.BatchV1Api(k8s), client.CoreV1Api(k8s)
    batch.create_namespaced_job(
        namespace,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "once"},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "job", "image": "registry.invalid/job:1"}],
                    }
                },
            },
        },
    )
    job = wait_for(
        batch.list_namespaced_job,
        "once",
        lambda j: j.status is not None and is_true(j.status.conditions, "Complete"),
        namespace=namespace,
    )
    assert job.status.succeeded == 1
    (pod,) = core.list_namespaced_pod(namespace, label_selector="job-name=once").items
    assert pod.status.phase == "Succeeded"


def test_restart_apiserver_keeps_data(
    envtest: Environment, k8s: client.ApiClient, namespace: str
) -> None:
    core, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "before"}, "data": {"key": "value"}}
    )
    server_url = envtest.server_url

    envtest.restart_apiserver()

    assert envtest.server_url == server_url
    assert core.read_namespaced_config_map("before", namespace).data == {"key": "value"}
    # The controllers, scheduler, kwok and the volume provisioner reconnect to the
    # restarted apiserver.
    apps.create_namespaced_deployment(namespace, deployment("after", 1))
    wait_for(apps.list_namespaced_deployment, "after", available(1), namespace=namespace)
    apps.create_namespaced_stateful_set(namespace, statefulset("db-after", 1, "1Gi"))
    wait_for(apps.list_namespaced_stateful_set, "db-after", ready(1), namespace=namespace)


# -- volumes --------------------------------------------------------------------------------
def test_a_statefulset_claim_gets_a_volume_on_its_pods_node_and_loses_it_with_the_claim(
    k8s: client.ApiClient, namespace: str
) -> None:
    """The default StorageClass's provisioner (oper8d.envtest.provisioner) makes a volume
    of the requested size for each claim, on the node the scheduler chose for its pod; the
    PV controller binds them; a deleted claim's volume is deleted."""
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    apps.create_namespaced_stateful_set(namespace, statefulset("db", 2, "3Gi"))
    wait_for(apps.list_namespaced_stateful_set, "db", ready(2), namespace=namespace)

    pods = {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}
    claims = core.list_namespaced_persistent_volume_claim(namespace).items
    assert sorted(c.metadata.name for c in claims) == ["data-db-0", "data-db-1"]
    for claim in claims:
        assert claim.status.phase == "Bound"
        assert claim.spec.storage_class_name == "standard"  # the default class
        volume = core.read_persistent_volume(claim.spec.volume_name)
        assert volume.spec.capacity == {"storage": "3Gi"}
        assert volume.spec.claim_ref.uid == claim.metadata.uid
        assert volume.spec.persistent_volume_reclaim_policy == "Delete"
        (term,) = volume.spec.node_affinity.required.node_selector_terms
        pod = pods[claim.metadata.name.removeprefix("data-")]
        assert term.match_expressions[0].values == [pod.spec.node_name]
        assert pod.status.phase == "Running"

    names = [c.spec.volume_name for c in claims]
    apps.delete_namespaced_stateful_set("db", namespace)
    for claim in claims:  # a StatefulSet's claims outlive it, as on any cluster
        core.delete_namespaced_persistent_volume_claim(claim.metadata.name, namespace)
    deadline = time.monotonic() + 60
    while {v.metadata.name for v in core.list_persistent_volume().items} & set(names):
        assert time.monotonic() < deadline, f"volumes {names} not deleted"
        time.sleep(0.2)


def test_a_claim_no_pod_uses_waits_for_its_first_consumer(
    k8s: client.ApiClient, namespace: str
) -> None:
    """The class binds WaitForFirstConsumer: a claim alone stays Pending, as on kind."""
    core = client.CoreV1Api(k8s)
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    core.create_namespaced_persistent_volume_claim(
        namespace, {"metadata": {"name": "alone"}, "spec": spec}
    )
    # the PV controller's event says why it waits (a watch reports existing events too)
    stream = watch.Watch().stream(
        core.list_namespaced_event,
        namespace,
        field_selector="involvedObject.name=alone,reason=WaitForFirstConsumer",
        timeout_seconds=60,
    )
    event = next(iter(stream), None)
    stream.close()
    assert event is not None, "no WaitForFirstConsumer event on the claim in 60s"
    assert "waiting for first consumer" in event["object"].message
    claim = core.read_namespaced_persistent_volume_claim("alone", namespace)
    assert claim.status.phase == "Pending" and not claim.spec.volume_name
    assert not [
        v
        for v in core.list_persistent_volume().items
        if v.spec.claim_ref and v.spec.claim_ref.uid == claim.metadata.uid
    ]
