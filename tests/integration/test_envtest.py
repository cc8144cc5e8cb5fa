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
    # The controllers, scheduler and kwok reconnect to the restarted apiserver.
    apps.create_namespaced_deployment(namespace, deployment("after", 1))
    wait_for(apps.list_namespaced_deployment, "after", available(1), namespace=namespace)
