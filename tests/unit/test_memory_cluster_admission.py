"""The in-memory cluster refuses what the API server refuses, so dry runs fail like production."""

from __future__ import annotations

import pytest

from oper8d.cluster.memory import MemoryCluster
from oper8d.errors import ClusterError


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster()


def workload(kind: str = "Deployment", selector: object = None, pod_labels: object = None) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}} if selector is None else selector,
            "template": {
                "metadata": {"labels": {"app": "web"} if pod_labels is None else pod_labels},
                "spec": {"containers": [{"name": "web", "image": "web:1"}]},
            },
        },
    }


def refused(cluster: MemoryCluster, obj: dict, status: int = 422) -> str:
    with pytest.raises(ClusterError) as caught:
        cluster.apply(obj, field_manager="op")
    assert caught.value.status == status
    return str(caught.value)


def test_a_selector_that_does_not_match_the_pod_template_is_refused(cluster: MemoryCluster) -> None:
    message = refused(cluster, workload(pod_labels={"app": "api"}))
    assert "Deployment demo/web" in message and "does not match template" in message


def test_a_workload_without_a_selector_is_refused(cluster: MemoryCluster) -> None:
    assert "spec.selector" in refused(cluster, workload("StatefulSet", selector={}))


def test_the_selector_of_a_workload_cannot_change(cluster: MemoryCluster) -> None:
    cluster.apply(workload(), field_manager="op")
    moved = workload(
        selector={"matchLabels": {"app": "web", "v": "2"}}, pod_labels={"app": "web", "v": "2"}
    )
    assert "immutable" in refused(cluster, moved)


def test_statefulset_changes_outside_the_allowed_fields_are_forbidden(
    cluster: MemoryCluster,
) -> None:
    sts = workload("StatefulSet")
    sts["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}}]
    cluster.apply(sts, field_manager="op")
    sts["spec"]["replicas"] = 3  # allowed
    cluster.apply(sts, field_manager="op")
    sts["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "other"}}]
    assert "Forbidden" in refused(cluster, sts)


def test_a_job_template_cannot_change(cluster: MemoryCluster) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "demo"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "m", "image": "m:1"}], "restartPolicy": "Never"}
            }
        },
    }
    cluster.apply(job, field_manager="op")
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "m:2"
    assert "spec.template" in refused(cluster, job)


def test_an_immutable_configmap_keeps_its_data(cluster: MemoryCluster) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "demo"},
        "data": {"a": "1"},
        "immutable": True,
    }
    cluster.apply(cm, field_manager="op")
    assert "immutable" in refused(cluster, {**cm, "data": {"a": "2"}})


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("ConfigMap", "Upper"),
        ("ConfigMap", "under_score"),
        ("Service", "1st"),
        ("ConfigMap", "a" * 254),
    ],
)
def test_invalid_names_are_refused(cluster: MemoryCluster, kind: str, name: str) -> None:
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "demo"}}
    assert "metadata.name" in refused(cluster, obj)


def test_a_number_in_an_annotation_is_refused_as_undecodable(
    cluster: MemoryCluster,
) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d", "annotations": {"replicas": 3}},
    }
    assert "metadata.annotations[replicas]: Invalid value: 3: must be of type string" in refused(
        cluster, cm, status=400
    )


def test_an_invalid_label_value_is_refused(cluster: MemoryCluster) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d", "labels": {"v": "a b"}},
    }
    assert 'metadata.labels[v]: Invalid value: "a b": a valid label must be' in refused(cluster, cm)


def test_two_controller_owner_references_are_refused(cluster: MemoryCluster) -> None:
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": n, "controller": True}
        for n in ("a", "b")
    ]
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d", "ownerReferences": refs},
    }
    assert "Controller" in refused(cluster, cm)


def test_a_refused_write_leaves_the_object_and_its_version_alone(cluster: MemoryCluster) -> None:
    before = cluster.apply(workload(), field_manager="op")
    with pytest.raises(ClusterError):
        cluster.apply(workload(pod_labels={"app": "other"}), field_manager="op")
    after = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert after == before


def test_objects_are_stored_with_map_keys_in_the_api_servers_order() -> None:
    # the API server writes Go maps sorted: a template hashing live data must see that order
    cluster = MemoryCluster()
    cluster.register_kind("demo.oper8d.io/v1", "Thing", namespaced=True)
    meta = {"name": "x", "namespace": "ns", "labels": {"z": "1", "a": "2"}}
    cluster.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"b": "", "a": ""}},
        field_manager="t",
    )
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"type": "ClusterIP", "ports": [{"port": 80}]},
        },
        field_manager="t",
    )
    cluster.apply(
        {
            "apiVersion": "demo.oper8d.io/v1",
            "kind": "Thing",
            "metadata": meta,
            "spec": {"z": {"y": 1, "x": 2}},
        },
        field_manager="t",
    )
    cm = cluster.get("v1", "ConfigMap", "x", "ns")
    assert list(cm["data"]) == ["a", "b"] and list(cm["metadata"]["labels"]) == ["a", "z"]
    [listed] = cluster.list("v1", "ConfigMap", "ns")
    assert list(listed["data"]) == ["a", "b"]
    # fields of built-in kinds keep their order; custom resources are JSON maps: sorted
    assert list(cluster.get("v1", "Service", "x", "ns")["spec"])[:2] == ["type", "ports"]
    thing = cluster.get("demo.oper8d.io/v1", "Thing", "x", "ns")
    assert list(thing) == sorted(thing) and list(thing["spec"]["z"]) == ["x", "y"]


def test_a_value_of_the_wrong_type_is_refused_as_the_api_server_refuses_it(
    cluster: MemoryCluster,
) -> None:
    deployment = workload()
    deployment["spec"]["replicas"] = "two"
    message = refused(cluster, deployment, status=400)
    assert 'spec.replicas: Invalid value: "two": must be of type integer' in message
    assert cluster.get("apps/v1", "Deployment", "web", "demo") is None


def test_a_missing_required_field_and_a_bad_enum_are_refused(cluster: MemoryCluster) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"type": "Balanced", "ports": [{"name": "http"}]},
    }
    message = refused(cluster, service)
    assert 'spec.type: Unsupported value: "Balanced"' in message
    assert "spec.ports[0].port: Required value" in message


def test_a_merge_patch_that_breaks_the_schema_is_refused_and_changes_nothing(
    cluster: MemoryCluster,
) -> None:
    live = cluster.apply(workload(), field_manager="op")
    with pytest.raises(ClusterError) as caught:
        cluster.patch("apps/v1", "Deployment", "web", "demo", patch={"spec": {"replicas": "many"}})
    assert caught.value.status == 400
    assert "spec.replicas" in str(caught.value)
    assert cluster.get("apps/v1", "Deployment", "web", "demo") == live


def test_a_server_set_field_the_client_sent_must_still_decode(cluster: MemoryCluster) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d", "creationTimestamp": "yesterday"},
    }
    assert "metadata.creationTimestamp" in refused(cluster, cm, status=400)


def test_a_null_label_value_is_stored_as_an_empty_string(cluster: MemoryCluster) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d", "labels": {"x": None}},
    }
    stored = cluster.create(cm)
    assert stored["metadata"]["labels"] == {"x": ""}


def test_a_kind_the_served_group_does_not_have_is_not_found(cluster: MemoryCluster) -> None:
    ingress = {
        "apiVersion": "extensions/v1beta1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "demo"},
    }
    message = refused(cluster, ingress)
    assert 'no matches for kind "Ingress" in version "extensions/v1beta1"' in message


def test_a_status_that_breaks_the_schema_is_refused(cluster: MemoryCluster) -> None:
    live = cluster.apply(workload(), field_manager="op")
    with pytest.raises(ClusterError) as caught:
        cluster.update_status({**live, "status": {"readyReplicas": "all"}})
    assert "status.readyReplicas" in str(caught.value)
    assert (cluster.get("apps/v1", "Deployment", "web", "demo") or {})["status"] == {}
