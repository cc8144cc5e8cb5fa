"""Strategic merge patch: maps, merge keys of built-in kinds, directives, custom resources."""

from __future__ import annotations

from typing import Any

import pytest

from oper8d.engine.patch import strategic_merge
from oper8d.errors import ConfigError


def deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"template": {"spec": spec}},
    }


def pod_spec(result: dict[str, Any]) -> dict[str, Any]:
    return result["spec"]["template"]["spec"]


def smp_deployment(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    return strategic_merge(original, patch, kind="Deployment", api_version="apps/v1")


def pod_patch(**spec: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


# -- maps --------------------------------------------------------------------------------


def test_maps_merge_recursively_and_patch_values_win() -> None:
    original = {"spec": {"replicas": 1, "selector": {"app": "web"}}, "data": {"a": "1"}}
    patch = {"spec": {"replicas": 3, "paused": True}, "data": {"b": "2"}}

    assert strategic_merge(original, patch) == {
        "spec": {"replicas": 3, "selector": {"app": "web"}, "paused": True},
        "data": {"a": "1", "b": "2"},
    }


def test_null_in_the_patch_deletes_the_key() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}}

    result = strategic_merge(original, {"metadata": {"labels": {"a": None}}})

    assert result == {"metadata": {"labels": {"b": "2"}}}


def test_null_for_a_key_the_original_lacks_adds_nothing() -> None:
    result = strategic_merge({"a": 1}, {"b": None, "c": {"d": None, "e": 1}})

    assert result == {"a": 1, "c": {"e": 1}}


def test_a_map_replaces_a_scalar_and_a_scalar_replaces_a_map() -> None:
    result = strategic_merge({"a": "text", "b": {"c": 1}}, {"a": {"x": 1}, "b": 2})

    assert result == {"a": {"x": 1}, "b": 2}


# -- lists without a merge key ----------------------------------------------------------


def test_custom_resource_lists_are_replaced() -> None:
    original = {
        "apiVersion": "demo.oper8d.io/v1",
        "kind": "WebApp",
        "spec": {"containers": [{"name": "a", "image": "1"}], "tags": ["x", "y"]},
    }
    patch = {"spec": {"containers": [{"name": "b", "image": "2"}], "tags": ["z"]}}

    result = strategic_merge(original, patch, kind="WebApp", api_version="demo.oper8d.io/v1")

    assert result["spec"] == {"containers": [{"name": "b", "image": "2"}], "tags": ["z"]}


def test_custom_resource_maps_still_merge() -> None:
    original = {"kind": "WebApp", "spec": {"db": {"host": "h", "port": 5432}}}

    result = strategic_merge(original, {"spec": {"db": {"port": 6432}}}, kind="WebApp")

    assert result["spec"]["db"] == {"host": "h", "port": 6432}


def test_a_custom_resource_named_like_a_builtin_kind_has_its_lists_replaced() -> None:
    original = deployment(containers=[{"name": "a", "image": "1"}])
    original["apiVersion"] = "serving.example.com/v1"

    result = strategic_merge(
        original,
        pod_patch(containers=[{"name": "b"}]),
        kind="Deployment",
        api_version="serving.example.com/v1",
    )

    assert pod_spec(result)["containers"] == [{"name": "b"}]


def test_without_a_kind_every_list_is_replaced() -> None:
    original = {"metadata": {"finalizers": ["a"]}}

    assert strategic_merge(original, {"metadata": {"finalizers": ["b"]}}) == {
        "metadata": {"finalizers": ["b"]}
    }


def test_tolerations_have_no_merge_key_and_are_replaced() -> None:
    original = deployment(tolerations=[{"key": "a", "operator": "Exists"}])

    result = smp_deployment(original, pod_patch(tolerations=[{"key": "b", "operator": "Exists"}]))

    assert pod_spec(result)["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_endpoint_subset_addresses_are_replaced_as_kubernetes_does() -> None:
    original = {"kind": "Endpoints", "subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}

    result = strategic_merge(
        original, {"subsets": [{"addresses": [{"ip": "10.0.0.2"}]}]}, kind="Endpoints"
    )

    assert result["subsets"] == [{"addresses": [{"ip": "10.0.0.2"}]}]


# -- lists with a merge key -------------------------------------------------------------


def test_containers_merge_by_name_in_the_order_kubectl_gives() -> None:
    original = deployment(
        containers=[{"name": "app", "image": "app:1"}, {"name": "proxy", "image": "p:1"}]
    )
    patch = pod_patch(
        containers=[
            {"name": "z-new", "image": "z:1"},
            {"name": "app", "image": "app:2"},
            {"name": "a-new", "image": "a:1"},
        ]
    )

    # the patch's items in patch order; proxy, which the patch does not name, after
    # app, which the original has before it
    assert pod_spec(smp_deployment(original, patch))["containers"] == [
        {"name": "z-new", "image": "z:1"},
        {"name": "app", "image": "app:2"},
        {"name": "a-new", "image": "a:1"},
        {"name": "proxy", "image": "p:1"},
    ]


@pytest.mark.parametrize(
    ("kind", "api_version", "prefix"),
    [
        ("Pod", "v1", ("spec",)),
        ("Deployment", "apps/v1", ("spec", "template", "spec")),
        ("StatefulSet", "apps/v1", ("spec", "template", "spec")),
        ("DaemonSet", "apps/v1", ("spec", "template", "spec")),
        ("ReplicaSet", "apps/v1", ("spec", "template", "spec")),
        ("Job", "batch/v1", ("spec", "template", "spec")),
        ("CronJob", "batch/v1", ("spec", "jobTemplate", "spec", "template", "spec")),
        ("PodTemplate", "v1", ("template", "spec")),
    ],
)
def test_containers_merge_wherever_the_kind_keeps_its_pod_spec(
    kind: str, api_version: str, prefix: tuple[str, ...]
) -> None:
    def nest(value: dict[str, Any]) -> dict[str, Any]:
        for key in reversed(prefix):
            value = {key: value}
        return value

    original = nest({"containers": [{"name": "app", "image": "app:1", "args": ["-v"]}]})
    patch = nest({"containers": [{"name": "app", "image": "app:2"}, {"name": "log"}]})

    result = strategic_merge(original, patch, kind=kind, api_version=api_version)

    assert result == nest(
        {"containers": [{"name": "app", "image": "app:2", "args": ["-v"]}, {"name": "log"}]}
    )


@pytest.mark.parametrize(
    ("field", "key", "old_item", "patched_item", "new_item"),
    [
        (
            "initContainers",
            "name",
            {"name": "a", "image": "1"},
            {"name": "a", "image": "2"},
            {"name": "b"},
        ),
        (
            "volumes",
            "name",
            {"name": "data", "emptyDir": {}},
            {"name": "data", "emptyDir": {"medium": "Memory"}},
            {"name": "tmp", "emptyDir": {}},
        ),
        ("imagePullSecrets", "name", {"name": "reg"}, {"name": "reg"}, {"name": "other"}),
        (
            "hostAliases",
            "ip",
            {"ip": "10.0.0.1", "hostnames": ["a"]},
            {"ip": "10.0.0.1", "hostnames": ["b"]},
            {"ip": "10.0.0.2", "hostnames": ["c"]},
        ),
        (
            "topologySpreadConstraints",
            "topologyKey",
            {"topologyKey": "zone", "maxSkew": 1},
            {"topologyKey": "zone", "maxSkew": 2},
            {"topologyKey": "host", "maxSkew": 1},
        ),
        ("schedulingGates", "name", {"name": "g1"}, {"name": "g1"}, {"name": "g2"}),
    ],
)
def test_pod_spec_lists_merge_by_their_kubernetes_merge_key(
    field: str, key: str, old_item: dict, patched_item: dict, new_item: dict
) -> None:
    original = deployment(**{field: [old_item]})

    result = smp_deployment(original, pod_patch(**{field: [new_item, patched_item]}))

    merged = {**old_item, **patched_item}
    assert pod_spec(result)[field] == [new_item, merged]
    assert len({item[key] for item in pod_spec(result)[field]}) == 2


@pytest.mark.parametrize(
    ("field", "old_item", "patched_item", "new_item"),
    [
        (
            "ports",
            {"containerPort": 80, "name": "http"},
            {"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 443},
        ),
        (
            "env",
            {"name": "A", "value": "1"},
            {"name": "A", "value": "2"},
            {"name": "B", "value": "3"},
        ),
        (
            "volumeMounts",
            {"mountPath": "/data", "name": "data"},
            {"mountPath": "/data", "readOnly": True},
            {"mountPath": "/tmp", "name": "tmp"},
        ),
        (
            "volumeDevices",
            {"devicePath": "/dev/a", "name": "a"},
            {"devicePath": "/dev/a", "name": "b"},
            {"devicePath": "/dev/c", "name": "c"},
        ),
    ],
)
@pytest.mark.parametrize("containers", ["containers", "initContainers", "ephemeralContainers"])
def test_container_lists_merge_by_their_kubernetes_merge_key(
    containers: str, field: str, old_item: dict, patched_item: dict, new_item: dict
) -> None:
    original = {"kind": "Pod", "spec": {containers: [{"name": "app", field: [old_item]}]}}
    patch = {"spec": {containers: [{"name": "app", field: [patched_item, new_item]}]}}

    result = strategic_merge(original, patch, kind="Pod", api_version="v1")

    assert result["spec"][containers][0][field] == [{**old_item, **patched_item}, new_item]


def test_service_ports_merge_by_port() -> None:
    original = {
        "kind": "Service",
        "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]},
    }

    result = strategic_merge(
        original, {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}, kind="Service"
    )

    assert result["spec"]["ports"] == [
        {"port": 80, "targetPort": 9090},
        {"port": 443, "targetPort": 8443},
    ]


def test_owner_references_merge_by_uid() -> None:
    original = {"kind": "ConfigMap", "metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}
    patch = {"metadata": {"ownerReferences": [{"uid": "1", "controller": True}, {"uid": "2"}]}}

    result = strategic_merge(original, patch, kind="ConfigMap", api_version="v1")

    assert result["metadata"]["ownerReferences"] == [
        {"uid": "1", "name": "a", "controller": True},
        {"uid": "2"},
    ]


@pytest.mark.parametrize(
    ("kind", "where"),
    [("ConfigMap", ("metadata",)), ("Deployment", ("spec", "template", "metadata"))],
)
def test_finalizers_are_a_set_union_in_the_order_kubectl_gives(
    kind: str, where: tuple[str, ...]
) -> None:
    def nest(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"finalizers": value}
        for key in reversed(where):
            out = {key: out}
        return out

    result = strategic_merge(nest(["b", "a"]), nest(["c", "a", "d", "c"]), kind=kind)

    inner = result
    for key in where:
        inner = inner[key]
    # c, new, first; then b before a, as in the original
    assert inner["finalizers"] == ["c", "b", "a", "d"]


@pytest.mark.parametrize(
    "kind", ["Pod", "Node", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"]
)
def test_status_conditions_merge_by_type(kind: str) -> None:
    original = {
        "kind": kind,
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X"}]},
    }
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}

    result = strategic_merge(original, patch, kind=kind)

    assert result["status"]["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "X"}]


def test_a_pod_disruption_budget_selector_is_replaced_whole() -> None:
    original = {
        "kind": "PodDisruptionBudget",
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}},
    }
    patch = {"spec": {"selector": {"matchLabels": {"tier": "web"}}}}

    result = strategic_merge(original, patch, kind="PodDisruptionBudget", api_version="policy/v1")

    assert result["spec"] == {"minAvailable": 1, "selector": {"matchLabels": {"tier": "web"}}}


def test_two_patch_items_with_the_same_key_both_merge_into_one_item() -> None:
    original = deployment(containers=[{"name": "app"}])
    patch = pod_patch(containers=[{"name": "new", "image": "n:1"}, {"name": "new", "args": ["-v"]}])

    assert pod_spec(smp_deployment(original, patch))["containers"] == [
        {"name": "new", "image": "n:1", "args": ["-v"]},
        {"name": "app"},
    ]


def test_a_merge_list_item_without_its_merge_key_is_a_config_error() -> None:
    original = deployment(containers=[{"name": "app"}])

    with pytest.raises(ConfigError, match=r"spec\.template\.spec\.containers.*'name'"):
        smp_deployment(original, pod_patch(containers=[{"image": "x"}]))


def test_a_null_inside_a_merged_item_deletes_that_field_of_the_item() -> None:
    original = deployment(containers=[{"name": "app", "image": "a", "command": ["sh"]}])

    result = smp_deployment(original, pod_patch(containers=[{"name": "app", "command": None}]))

    assert pod_spec(result)["containers"] == [{"name": "app", "image": "a"}]
