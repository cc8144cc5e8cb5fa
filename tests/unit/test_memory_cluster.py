"""The in-memory cluster keeps object metadata, versions and scopes as the API server does."""

from __future__ import annotations

import copy
from collections import OrderedDict
from datetime import UTC, datetime, timedelta

import pytest

from oper8d.cluster.base import Cluster
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cluster(clock: Clock) -> MemoryCluster:
    return MemoryCluster(clock=clock, uid_factory=sequential_uids())


def deployment(replicas: int = 1, image: str = "web:1", **meta: object) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", **meta},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
        },
    }


def configmap(name: str = "settings", **data: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "demo"},
        "data": data,
    }


def test_memory_cluster_implements_the_cluster_protocol(cluster: MemoryCluster) -> None:
    def takes(c: Cluster) -> Cluster:
        return c

    assert takes(cluster) is cluster


def test_create_sets_uid_creation_timestamp_resource_version_and_generation(
    cluster: MemoryCluster,
) -> None:
    live = cluster.apply(deployment(), field_manager="op")
    meta = live["metadata"]
    assert len(meta["uid"]) == 36 and meta["uid"].count("-") == 4
    assert meta["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert meta["resourceVersion"] == "1"
    assert meta["generation"] == 1


def test_uid_and_creation_timestamp_stay_the_same_across_writes(
    cluster: MemoryCluster, clock: Clock
) -> None:
    first = cluster.apply(deployment(), field_manager="op")
    clock.now += timedelta(hours=1)
    cluster.apply(deployment(replicas=3), field_manager="op")
    cluster.update(deployment(replicas=4))
    cluster.update_status({**deployment(), "status": {"replicas": 4}})
    live = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert live is not None
    assert live["metadata"]["uid"] == first["metadata"]["uid"]
    assert live["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"


def test_system_metadata_sent_by_a_client_is_ignored(cluster: MemoryCluster) -> None:
    first = cluster.apply(deployment(), field_manager="op")
    forged = deployment(
        replicas=2,
        creationTimestamp="1999-01-01T00:00:00Z",
        generation=42,
        deletionTimestamp="1999-01-01T00:00:00Z",
    )
    live = cluster.apply(forged, field_manager="op")
    assert live["metadata"]["uid"] == first["metadata"]["uid"]
    assert live["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert live["metadata"]["generation"] == 2
    assert "deletionTimestamp" not in live["metadata"]


def test_a_write_naming_another_uid_conflicts_because_the_object_was_recreated(
    cluster: MemoryCluster,
) -> None:
    first = cluster.apply(deployment(), field_manager="op")
    cluster.delete("apps/v1", "Deployment", "web", "demo")
    cluster.apply(deployment(), field_manager="op")
    with pytest.raises(ClusterError) as caught:
        cluster.apply(deployment(uid=first["metadata"]["uid"]), field_manager="op")
    assert caught.value.status == 409


def test_resource_version_moves_on_every_real_change(cluster: MemoryCluster) -> None:
    versions = [
        cluster.apply(deployment(), field_manager="op")["metadata"]["resourceVersion"],
        cluster.apply(deployment(replicas=2), field_manager="op")["metadata"]["resourceVersion"],
        cluster.apply(configmap(a="1"), field_manager="op")["metadata"]["resourceVersion"],
        cluster.update_status({**deployment(), "status": {"replicas": 2}})["metadata"][
            "resourceVersion"
        ],
    ]
    assert versions == ["1", "2", "3", "4"]


def test_writes_that_change_nothing_keep_the_resource_version(cluster: MemoryCluster) -> None:
    rv = cluster.apply(deployment(), field_manager="op")["metadata"]["resourceVersion"]
    cluster.apply(deployment(), field_manager="op")
    cluster.apply(deployment(), field_manager="op", method="update")
    cluster.apply(deployment(), field_manager="op", method="replace")
    cluster.update(deployment())
    cluster.patch("apps/v1", "Deployment", "web", "demo", patch={"spec": {"replicas": 1}})
    live = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert live is not None and live["metadata"]["resourceVersion"] == rv
    assert cluster.writes == 6  # each was still a request


def test_generation_moves_on_spec_changes_only(cluster: MemoryCluster) -> None:
    cluster.apply(deployment(), field_manager="op")
    labelled = deployment(labels={"team": "a"})
    assert cluster.apply(labelled, field_manager="op")["metadata"]["generation"] == 1
    cluster.update_status({**deployment(), "status": {"replicas": 1}})
    changed = deployment(image="web:2", labels={"team": "a"})
    live = cluster.apply(changed, field_manager="op")
    assert live["metadata"]["generation"] == 2
    assert live["metadata"]["resourceVersion"] == "4"


def test_deployment_generation_also_moves_when_annotations_change(cluster: MemoryCluster) -> None:
    cluster.apply(deployment(), field_manager="op")
    live = cluster.apply(deployment(annotations={"note": "x"}), field_manager="op")
    assert live["metadata"]["generation"] == 2


def test_custom_resources_get_a_generation_that_moves_with_their_spec(
    cluster: MemoryCluster,
) -> None:
    cr = {"apiVersion": "demo.io/v1", "kind": "WebApp", "metadata": {"name": "a", "namespace": "d"}}
    assert (
        cluster.apply({**cr, "spec": {"x": 1}}, field_manager="op")["metadata"]["generation"] == 1
    )
    assert (
        cluster.apply({**cr, "spec": {"x": 2}}, field_manager="op")["metadata"]["generation"] == 2
    )


def test_configmaps_and_secrets_have_no_generation_like_on_the_api_server(
    cluster: MemoryCluster,
) -> None:
    cluster.apply(configmap(a="1"), field_manager="op")
    live = cluster.apply(configmap(a="2"), field_manager="op")
    assert "generation" not in live["metadata"]
    assert live["data"] == {"a": "2"}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "demo"}}
    assert "generation" not in cluster.apply(secret, field_manager="op")["metadata"]


def test_status_is_not_writable_through_apply_update_or_patch(cluster: MemoryCluster) -> None:
    created = cluster.apply({**deployment(), "status": {"readyReplicas": 9}}, field_manager="op")
    assert created["status"] == {}  # a new Deployment's, as the apiserver answers
    cluster.update_status({**deployment(), "status": {"readyReplicas": 1}})
    cluster.apply({**deployment(), "status": {"readyReplicas": 5}}, field_manager="op")
    cluster.apply({**deployment(), "status": {}}, field_manager="op", method="replace")
    cluster.update({**deployment(), "status": {"readyReplicas": 7}})
    cluster.patch("apps/v1", "Deployment", "web", "demo", patch={"status": None})
    live = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert live is not None and live["status"] == {"readyReplicas": 1}


def test_update_status_changes_status_only(cluster: MemoryCluster) -> None:
    cluster.apply(deployment(), field_manager="op")
    live = cluster.update_status({**deployment(replicas=9), "status": {"replicas": 1}})
    assert live["spec"]["replicas"] == 1
    assert live["status"] == {"replicas": 1}
    assert live["metadata"]["generation"] == 1


def test_update_with_a_stale_resource_version_conflicts(cluster: MemoryCluster) -> None:
    stale = cluster.apply(deployment(), field_manager="op")
    cluster.apply(deployment(replicas=2), field_manager="op")
    stale["spec"]["replicas"] = 5
    with pytest.raises(ClusterError) as caught:
        cluster.update(stale)
    assert caught.value.status == 409
    with pytest.raises(ClusterError) as caught:
        cluster.update_status({**stale, "status": {}})
    assert caught.value.status == 409
    live = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert live is not None and live["spec"]["replicas"] == 2


def test_update_with_the_current_resource_version_succeeds(cluster: MemoryCluster) -> None:
    live = cluster.apply(deployment(), field_manager="op")
    live["spec"]["replicas"] = 3
    assert cluster.update(live)["spec"]["replicas"] == 3


def test_update_of_a_missing_object_is_not_found(cluster: MemoryCluster) -> None:
    with pytest.raises(ClusterError) as caught:
        cluster.update(deployment())
    assert caught.value.status == 404


def test_creating_an_object_that_exists_conflicts(cluster: MemoryCluster) -> None:
    cluster.create(configmap())
    with pytest.raises(ClusterError) as caught:
        cluster.create(configmap())
    assert caught.value.status == 409


def test_generate_name_gives_distinct_names_with_the_prefix(cluster: MemoryCluster) -> None:
    job = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": "run-", "namespace": "demo"},
    }
    first = cluster.create(job)
    second = cluster.apply(job, field_manager="op", method="replace")
    names = {first["metadata"]["name"], second["metadata"]["name"]}
    assert len(names) == 2
    assert all(n.startswith("run-") and len(n) == len("run-") + 5 for n in names)


def test_generate_name_is_deterministic_with_sequential_uids() -> None:
    def run() -> str:
        c = MemoryCluster(uid_factory=sequential_uids("seed"))
        obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"generateName": "p-", "namespace": "d"},
        }
        return c.create(obj)["metadata"]["name"]

    assert run() == run()


def test_server_side_apply_needs_a_name(cluster: MemoryCluster) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": "x-", "namespace": "d"},
    }
    with pytest.raises(ClusterError, match="name is required"):
        cluster.apply(obj, field_manager="op")


def test_namespaced_kinds_need_a_namespace(cluster: MemoryCluster) -> None:
    obj = configmap()
    del obj["metadata"]["namespace"]
    with pytest.raises(ClusterError) as caught:
        cluster.apply(obj, field_manager="op")
    assert caught.value.status == 400 and "namespace" in str(caught.value)


def test_cluster_scoped_kinds_drop_a_namespace_and_are_found_without_one(
    cluster: MemoryCluster,
) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:reader", "namespace": "ignored"},
        "rules": [],
    }
    live = cluster.apply(role, field_manager="op")
    assert "namespace" not in live["metadata"]
    assert cluster.get("rbac.authorization.k8s.io/v1", "ClusterRole", "system:reader") is not None
    assert len(cluster.list("rbac.authorization.k8s.io/v1", "ClusterRole", "other")) == 1


def test_registered_kinds_take_the_scope_they_were_given(cluster: MemoryCluster) -> None:
    cluster.register_kind("demo.io/v1", "Tenant", namespaced=False)
    cluster.apply(
        {"apiVersion": "demo.io/v1", "kind": "Tenant", "metadata": {"name": "t"}},
        field_manager="op",
    )
    assert cluster.get("demo.io/v1", "Tenant", "t") is not None


def test_creating_a_crd_registers_its_kind_with_its_scope(cluster: MemoryCluster) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "tenants.demo.io"},
        "spec": {
            "group": "demo.io",
            "scope": "Cluster",
            "names": {"kind": "Tenant", "plural": "tenants"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    cluster.apply(crd, field_manager="op")
    cluster.apply(
        {"apiVersion": "demo.io/v1", "kind": "Tenant", "metadata": {"name": "t"}},
        field_manager="op",
    )
    assert [t["metadata"]["name"] for t in cluster.list("demo.io/v1", "Tenant")] == ["t"]


def test_versions_of_one_group_name_the_same_object(cluster: MemoryCluster) -> None:
    cluster.apply(deployment(), field_manager="op")
    old_version = cluster.get("apps/v1beta1", "Deployment", "web", "demo")
    assert old_version is not None and old_version["apiVersion"] == "apps/v1beta1"
    live = cluster.apply({**deployment(), "apiVersion": "apps/v1beta2"}, field_manager="op")
    assert live["metadata"]["resourceVersion"] == "1"  # same object, nothing changed


def test_list_filters_by_kind_namespace_and_label_selector(cluster: MemoryCluster) -> None:
    for name, ns, labels in [
        ("a", "one", {"app": "web", "tier": "front"}),
        ("b", "one", {"app": "web", "tier": "back"}),
        ("c", "two", {"app": "db"}),
        ("d", "two", {}),
    ]:
        obj = configmap(name)
        obj["metadata"].update(namespace=ns, labels=labels)
        cluster.apply(obj, field_manager="op")
    cluster.apply(deployment(), field_manager="op")

    def names(**kw: object) -> list[str]:
        return [o["metadata"]["name"] for o in cluster.list("v1", "ConfigMap", **kw)]  # type: ignore[arg-type]

    assert names() == ["a", "b", "c", "d"]
    assert names(namespace="two") == ["c", "d"]
    assert names(label_selector="app=web") == ["a", "b"]
    assert names(label_selector="app=web,tier!=front") == ["b"]
    assert names(label_selector="app in (web,db),tier notin (back)") == ["a", "c"]
    assert names(label_selector="!app") == ["d"]
    assert names(label_selector={"matchExpressions": [{"key": "tier", "operator": "Exists"}]}) == [
        "a",
        "b",
    ]
    assert names(label_selector="app=") == []  # the empty value: valid, matches nothing here
    with pytest.raises(ClusterError) as caught:
        names(label_selector="app in web")
    assert caught.value.status == 400


def test_returned_objects_are_copies_the_caller_may_change(cluster: MemoryCluster) -> None:
    sent = deployment()
    live = cluster.apply(sent, field_manager="op")
    sent["spec"]["replicas"] = 50
    live["spec"]["replicas"] = 60
    cluster.get("apps/v1", "Deployment", "web", "demo")["spec"]["replicas"] = 70  # type: ignore[index]
    cluster.list("apps/v1", "Deployment")[0]["spec"]["replicas"] = 80
    cluster.objects()[0]["spec"]["replicas"] = 90
    live = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert live is not None and live["spec"]["replicas"] == 1


def _rich_deployment() -> dict:
    """A Deployment with maps and lists at every depth, a tuple and a dict subclass."""
    sent = deployment(labels={"app": "web"}, annotations=OrderedDict(note="x"))
    pod = sent["spec"]["template"]["spec"]
    pod["containers"][0].update(
        args=("serve", "--port=80"),
        ports=[{"containerPort": 80, "name": "http"}],
        env=[{"name": "A", "value": "1"}],
        resources={"limits": {"cpu": "1"}},
    )
    pod["volumes"] = [{"name": "data", "emptyDir": {}}]
    return sent


def _containers(value: object) -> list:
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@pytest.mark.parametrize("method", ["apply", "update", "replace"])
@pytest.mark.parametrize("existing", [False, True])
def test_a_write_neither_changes_nor_keeps_what_it_was_sent(
    cluster: MemoryCluster, method: str, existing: bool
) -> None:
    """A server-side apply that creates copies the object as it walks it (not first):
    the client's object stays as it was, and changing it afterwards changes nothing
    stored; so for every other write."""
    if existing:
        cluster.apply(deployment(replicas=2), field_manager="other")
    sent = _rich_deployment()
    before = copy.deepcopy(sent)
    returned = cluster.apply(sent, field_manager="op", method=method)  # type: ignore[arg-type]
    assert sent == before
    assert type(sent["metadata"]["annotations"]) is OrderedDict  # (still the client's own)
    stored = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert stored is not None
    assert stored["spec"]["template"]["spec"]["containers"][0]["args"] == ["serve", "--port=80"]
    for container in (*_containers(sent), *_containers(returned)):
        if isinstance(container, dict):
            container["zz"] = "changed"
        else:
            container.append("changed")
    assert cluster.get("apps/v1", "Deployment", "web", "demo") == stored


def test_objects_lists_everything_sorted_by_group_kind_namespace_and_name(
    cluster: MemoryCluster,
) -> None:
    cluster.apply(configmap("b"), field_manager="op")
    cluster.apply(deployment(), field_manager="op")
    cluster.apply(configmap("a"), field_manager="op")
    cluster.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}, field_manager="op"
    )
    assert [(o["kind"], o["metadata"]["name"]) for o in cluster.objects()] == [
        ("ConfigMap", "a"),
        ("ConfigMap", "b"),
        ("Namespace", "demo"),
        ("Deployment", "web"),
    ]
    assert len(cluster.objects(namespace="demo")) == 3


def test_requests_are_counted_per_verb_and_writes_sum_the_mutating_ones(
    cluster: MemoryCluster,
) -> None:
    cluster.apply(configmap(), field_manager="op")
    cluster.apply(configmap(), field_manager="op", method="update")
    cluster.apply(configmap("new"), field_manager="op", method="replace")
    cluster.get("v1", "ConfigMap", "settings", "demo")
    cluster.list("v1", "ConfigMap")
    cluster.update_status({**configmap(), "status": {}})
    cluster.patch("v1", "ConfigMap", "settings", "demo", patch={"data": {"a": "1"}})
    cluster.delete("v1", "ConfigMap", "settings", "demo")
    cluster.delete("v1", "ConfigMap", "settings", "demo")
    assert cluster.requests == {
        "apply": 1,
        "update": 1,
        "create": 1,
        "get": 1,
        "list": 1,
        "update_status": 1,
        "patch": 1,
        "delete": 2,
    }
    assert cluster.writes == 7
    cluster.reset_requests()
    assert cluster.writes == 0 and not cluster.requests


def test_services_get_cluster_ips_in_creation_order_and_keep_them(cluster: MemoryCluster) -> None:
    def service(name: str, **spec: object) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "demo"},
            "spec": {"ports": [{"port": 80}], **spec},
        }

    first = cluster.apply(service("a"), field_manager="op")
    second = cluster.apply(service("b", type="ClusterIP"), field_manager="op")
    headless = cluster.apply(service("c", clusterIP="None"), field_manager="op")
    assert first["spec"]["clusterIP"] == "10.96.0.1"
    assert second["spec"]["clusterIP"] == "10.96.0.2"
    assert headless["spec"]["clusterIP"] == "None"
    replaced = cluster.apply(service("a"), field_manager="other", method="replace")
    assert replaced["spec"]["clusterIP"] == "10.96.0.1"
    with pytest.raises(ClusterError) as caught:
        cluster.apply(service("a", clusterIP="10.96.0.77"), field_manager="op")
    assert caught.value.status == 422 and "may not change once set" in str(caught.value)


def test_namespaces_report_phase_active(cluster: MemoryCluster) -> None:
    ns = cluster.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}, field_manager="op"
    )
    assert ns["status"] == {"phase": "Active"}


def test_secret_string_data_is_stored_base64_encoded_in_data(cluster: MemoryCluster) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "demo"},
        "stringData": {"password": "hunter2"},
    }
    live = cluster.apply(secret, field_manager="op")
    assert live["data"] == {"password": "aHVudGVyMg=="}
    assert "stringData" not in live


def test_time_may_come_from_a_clock_giving_seconds() -> None:
    cluster = MemoryCluster(clock=lambda: 0.0)  # type: ignore[arg-type,return-value]
    live = cluster.apply(configmap(), field_manager="op")
    assert live["metadata"]["creationTimestamp"] == "1970-01-01T00:00:00Z"


def test_sequential_uids_repeat_for_a_seed_and_differ_between_seeds() -> None:
    a, b, c = sequential_uids("x"), sequential_uids("x"), sequential_uids("y")
    first = [a(), a(), a()]
    assert first == [b(), b(), b()]
    assert len(set(first)) == 3
    assert c() != first[0]
