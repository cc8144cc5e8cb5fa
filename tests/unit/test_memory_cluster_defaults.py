"""The defaults the in-memory cluster fills in, as the apiserver does (cluster.memory.defaults*).

tests/integration/test_defaults_differential.py holds the values to a real apiserver;
these tests pin the behaviour around them: when defaults apply (create, update, patch,
server-side apply, a field dropped by its manager), who owns them, and what the server
sets afterwards (a Job's selector, a DaemonSet's template generation, a Service's IP
families, a new object's status).
"""

from __future__ import annotations

from typing import Any

import pytest

from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError
from oper8d.kubeschema import KubeSchemas

Obj = dict[str, Any]


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(uid_factory=sequential_uids())


def deployment(image: str = "app:1", **spec: Any) -> Obj:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
            **spec,
        },
    }


def live(cluster: MemoryCluster, obj: Obj) -> Obj:
    meta = obj["metadata"]
    found = cluster.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    assert found is not None
    return found


# -- built-in kinds ----------------------------------------------------------------------------


def test_a_created_deployment_has_the_apiserver_defaults(cluster: MemoryCluster) -> None:
    spec = cluster.create(deployment())["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["dnsPolicy"] == "ClusterFirst"
    assert pod["schedulerName"] == "default-scheduler" and pod["securityContext"] == {}
    assert pod["terminationGracePeriodSeconds"] == 30
    container = pod["containers"][0]
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry:5000/team/nginx", "Always"),  # a registry port is not a tag
        ("registry:5000/team/nginx:2", "IfNotPresent"),
        ("nginx@sha256:" + "0" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy_follows_the_image_tag(
    cluster: MemoryCluster, image: str, policy: str
) -> None:
    created = cluster.create(deployment(image))
    assert created["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_a_value_the_client_sets_is_never_replaced_by_a_default(cluster: MemoryCluster) -> None:
    created = cluster.create(deployment(replicas=0, strategy={"type": "Recreate"}))
    assert created["spec"]["replicas"] == 0
    assert created["spec"]["strategy"] == {"type": "Recreate"}  # no rollingUpdate for it


def test_defaults_of_a_server_side_apply_are_owned_by_nobody(cluster: MemoryCluster) -> None:
    cluster.apply(deployment(), field_manager="op")
    assert (
        "spec.replicas" not in cluster.managed_fields("apps/v1", "Deployment", "web", "demo")["op"]
    )
    # so another manager (an autoscaler) sets it without a conflict
    scale = {**deployment(), "spec": {"replicas": 4}}
    cluster.apply(scale, field_manager="hpa", force=False)
    cluster.apply(deployment(), field_manager="op", force=False)  # op's resync changes nothing
    assert live(cluster, deployment())["spec"]["replicas"] == 4


def test_a_field_its_manager_stops_applying_returns_to_its_default(
    cluster: MemoryCluster,
) -> None:
    cluster.apply(deployment(replicas=3), field_manager="op")
    cluster.apply(deployment(), field_manager="op")
    assert live(cluster, deployment())["spec"]["replicas"] == 1


def test_a_read_modify_write_keeps_live_values_over_defaults(cluster: MemoryCluster) -> None:
    cluster.apply(deployment(replicas=3), field_manager="hpa")
    cluster.apply(deployment("app:2"), field_manager="op", method="update")
    spec = live(cluster, deployment())["spec"]
    assert spec["replicas"] == 3
    assert spec["template"]["spec"]["containers"][0]["image"] == "app:2"


def test_a_put_without_a_field_gets_its_default_again(cluster: MemoryCluster) -> None:
    cluster.apply(deployment(replicas=3), field_manager="op")
    cluster.apply(deployment(), field_manager="op", method="replace")
    assert live(cluster, deployment())["spec"]["replicas"] == 1


def test_reapplying_the_same_config_is_a_no_op(cluster: MemoryCluster) -> None:
    first = cluster.apply(deployment(), field_manager="op")
    again = cluster.apply(deployment(), field_manager="op")
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_a_new_object_starts_with_the_status_its_registry_gives(cluster: MemoryCluster) -> None:
    assert cluster.create(deployment())["status"] == {}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"ports": [{"port": 80}]},
    }
    created = cluster.create(service)
    assert created["status"] == {"loadBalancer": {}}
    assert created["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert created["spec"]["ipFamilies"] == ["IPv4"]
    assert created["spec"]["ipFamilyPolicy"] == "SingleStack"
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}}
    assert "status" not in cluster.create(config)


def job(**meta: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "demo", **meta},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "migrate"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "m:1"}]},
            }
        },
    }


def test_a_job_is_selected_by_its_uid_and_takes_its_pods_labels(cluster: MemoryCluster) -> None:
    created = cluster.create(job())
    uid = created["metadata"]["uid"]
    spec = created["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["manualSelector"] is False
    pod_labels = spec["template"]["metadata"]["labels"]
    assert pod_labels["job-name"] == "migrate" and pod_labels["controller-uid"] == uid
    assert created["metadata"]["labels"] == pod_labels
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)


def test_a_job_with_labels_keeps_them(cluster: MemoryCluster) -> None:
    created = cluster.create(job(labels={"team": "a"}))
    assert created["metadata"]["labels"] == {"team": "a"}


def test_a_daemonset_template_generation_moves_with_its_template(cluster: MemoryCluster) -> None:
    def daemonset(image: str) -> Obj:
        obj = deployment(image)
        obj["kind"] = "DaemonSet"
        return obj

    key = "deprecated.daemonset.template.generation"
    assert cluster.apply(daemonset("a:1"), field_manager="op")["metadata"]["annotations"] == {
        key: "1"
    }
    labelled = daemonset("a:1")
    labelled["metadata"]["labels"] = {"x": "y"}
    assert cluster.apply(labelled, field_manager="op")["metadata"]["annotations"][key] == "1"
    assert (
        cluster.apply(daemonset("a:2"), field_manager="op")["metadata"]["annotations"][key] == "2"
    )


def test_a_headless_service_without_selector_takes_both_ip_families(
    cluster: MemoryCluster,
) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "db", "namespace": "demo"},
        "spec": {"clusterIP": "None", "ports": [{"port": 5432}]},
    }
    spec = cluster.create(service)["spec"]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4", "IPv6"], "RequireDualStack")


@pytest.mark.parametrize(
    "spec",
    [
        {"template": 5},
        {"template": {"spec": {"containers": "app"}}},
        {"template": {"spec": {"containers": [{"name": "a", "image": 7}]}}},
        {"strategy": "fast"},
        {"replicas": "three"},
    ],
)
def test_values_of_the_wrong_type_are_refused_not_defaulted(
    cluster: MemoryCluster, spec: Obj
) -> None:
    obj = deployment()
    obj["spec"].update(spec)
    with pytest.raises(ClusterError) as caught:
        cluster.create(obj)
    assert caught.value.status in (400, 422)


# -- custom resources --------------------------------------------------------------------------


def crd() -> Obj:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "weight": {"type": "integer", "default": 1}},
    }
    spec = {
        "type": "object",
        "default": {},
        "properties": {
            "size": {"type": "integer", "default": 2},
            "items": {"type": "array", "items": item},
            "tuning": {
                "type": "object",
                "default": {"level": 1},
                "properties": {
                    "level": {"type": "integer"},
                    "burst": {"type": "boolean", "default": False},
                    "deep": {
                        "type": "object",
                        "properties": {"x": {"type": "string", "default": "y"}},
                    },
                },
            },
            "note": {"type": "string", "nullable": True, "default": "n"},
            "plain": {"type": "string"},
        },
    }
    status = {"type": "object", "properties": {"phase": {"type": "string", "default": "New"}}}
    schema = {"type": "object", "properties": {"spec": spec, "status": status}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Gizmo", "plural": "gizmos"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def gizmo(spec: Any = None) -> Obj:
    obj: Obj = {
        "apiVersion": "example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g", "namespace": "demo"},
    }
    if spec is not None:
        obj["spec"] = spec
    return obj


@pytest.fixture
def with_crd(cluster: MemoryCluster) -> MemoryCluster:
    cluster.create(crd())
    return cluster


def test_a_custom_resource_gets_its_schema_defaults_at_every_depth(
    with_crd: MemoryCluster,
) -> None:
    created = with_crd.create(gizmo({"items": [{"name": "a"}, {"name": "b", "weight": 5}]}))
    assert created["spec"] == {
        "items": [{"name": "a", "weight": 1}, {"name": "b", "weight": 5}],
        "note": "n",
        "size": 2,
        "tuning": {"burst": False, "level": 1},  # a default's own defaults apply too
    }


def test_a_custom_resource_without_spec_gets_the_spec_default(with_crd: MemoryCluster) -> None:
    assert with_crd.create(gizmo())["spec"]["size"] == 2


def test_nulls_are_kept_where_nullable_and_dropped_or_defaulted_elsewhere(
    with_crd: MemoryCluster,
) -> None:
    created = with_crd.create(gizmo({"note": None, "plain": None, "size": None}))
    assert created["spec"]["note"] is None
    assert "plain" not in created["spec"]
    assert created["spec"]["size"] == 2


def test_a_default_needs_its_parent_object(with_crd: MemoryCluster) -> None:
    created = with_crd.create(gizmo({"tuning": {"deep": {}}}))
    assert created["spec"]["tuning"] == {"burst": False, "deep": {"x": "y"}}
    with_crd.delete("example.com/v1", "Gizmo", "g", "demo")
    assert "deep" not in with_crd.create(gizmo({}))["spec"]["tuning"]


def test_a_custom_resource_applied_and_updated_keeps_its_defaults(
    with_crd: MemoryCluster,
) -> None:
    with_crd.apply(gizmo({"size": 5}), field_manager="op")
    assert (
        "spec.tuning" not in with_crd.managed_fields("example.com/v1", "Gizmo", "g", "demo")["op"]
    )
    updated = with_crd.apply(gizmo({}), field_manager="op")
    assert updated["spec"]["size"] == 2  # op dropped it: the default again
    status = with_crd.update_status({**updated, "status": {}})
    assert status["status"] == {"phase": "New"}


@pytest.mark.parametrize(
    "strategy", [{"type": "Recreate"}, {"type": "Recreate", "rollingUpdate": None}]
)
def test_applying_recreate_over_the_defaulted_rolling_update_is_refused(
    cluster: MemoryCluster, strategy: Obj
) -> None:
    cluster.apply(deployment(), field_manager="op")
    with pytest.raises(ClusterError) as caught:  # nobody owns the default: it stays
        cluster.apply(deployment(strategy=strategy), field_manager="op")
    assert caught.value.status == 422
    assert "spec.strategy.rollingUpdate: Forbidden" in str(caught.value)
    # a merge patch removes it, as on the apiserver
    patch = {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}
    patched = cluster.patch("apps/v1", "Deployment", "web", "demo", patch=patch)
    assert patched["spec"]["strategy"] == {"type": "Recreate"}


@pytest.mark.parametrize("value", [False, 7, ["Opaque"]])
def test_a_secret_type_of_the_wrong_type_is_refused_not_defaulted(
    cluster: MemoryCluster, value: Any
) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d"}}
    with pytest.raises(ClusterError):
        cluster.create({**secret, "type": value})
    assert cluster.create({**secret, "type": ""})["type"] == "Opaque"


def test_a_crd_given_with_the_schemas_defaults_its_resources_too() -> None:
    """A dry run's cluster knows the bundle's CRD through ``schemas=``, without creating it:
    the CR it applies gets the schema's defaults all the same."""
    schemas = KubeSchemas.builtin().with_crds([crd()])
    cluster = MemoryCluster(schemas=schemas)
    cluster.register_kind("example.com/v1", "Gizmo", namespaced=True)
    applied = cluster.apply(gizmo({"size": 3}), field_manager="oper8d-cli")
    assert applied["spec"] == {"note": "n", "size": 3, "tuning": {"burst": False, "level": 1}}
