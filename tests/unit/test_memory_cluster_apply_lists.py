"""Server-side apply in the in-memory cluster merges lists as the apiserver does: by
``x-kubernetes-list-type`` and map keys (from the built-in schemas, or a CRD's), with
ownership per item, and refuses or drops fields the schema does not have.

The orders asserted here are the apiserver's (tests/integration/test_ssa_differential.py
compares the two on generated cases)."""

from __future__ import annotations

from typing import Any

import pytest

from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(uid_factory=sequential_uids())


def deployment(*containers: dict[str, Any], finalizers: list[str] | None = None) -> dict:
    meta: dict[str, Any] = {"name": "web", "namespace": "demo"}
    if finalizers is not None:
        meta["finalizers"] = finalizers
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": list(containers)}},
        },
    }


def partial(*containers: dict[str, Any]) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"template": {"spec": {"containers": list(containers)}}},
    }


def containers(cluster: MemoryCluster) -> list[dict]:
    live = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert live is not None
    return [written(c) for c in live["spec"]["template"]["spec"]["containers"]]


def written(container: dict) -> dict:
    """A container without the fields the server defaults (cluster.memory.defaults_builtin)."""
    defaulted = ("terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy")
    return {k: v for k, v in container.items() if k not in (*defaulted, "resources")}


def test_a_second_manager_adds_an_env_var_to_a_container_by_name(cluster: MemoryCluster) -> None:
    cluster.apply(deployment({"name": "app", "image": "app:1"}), field_manager="op")
    env = [{"name": "X", "value": "1"}]
    cluster.apply(partial({"name": "app", "env": env}), field_manager="mesh")
    assert containers(cluster) == [
        {"name": "app", "image": "app:1", "env": [{"name": "X", "value": "1"}]}
    ]
    cluster.apply(deployment({"name": "app", "image": "app:2"}), field_manager="op")
    assert containers(cluster)[0]["env"] == [{"name": "X", "value": "1"}]  # mesh's stays
    assert containers(cluster)[0]["image"] == "app:2"


def test_a_container_another_manager_added_survives_the_owners_apply(
    cluster: MemoryCluster,
) -> None:
    cluster.apply(deployment({"name": "app", "image": "app:1"}), field_manager="op")
    cluster.apply(partial({"name": "sidecar", "image": "proxy:1"}), field_manager="mesh")
    cluster.apply(deployment({"name": "app", "image": "app:1"}), field_manager="op")
    assert [c["name"] for c in containers(cluster)] == ["app", "sidecar"]


def test_a_container_the_owner_stops_applying_is_removed(cluster: MemoryCluster) -> None:
    cluster.apply(
        deployment({"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}), field_manager="op"
    )
    cluster.apply(deployment({"name": "b", "image": "b:1"}), field_manager="op")
    assert containers(cluster) == [{"name": "b", "image": "b:1"}]


def test_changing_another_managers_field_in_a_list_item_conflicts(cluster: MemoryCluster) -> None:
    cluster.apply(deployment({"name": "app", "image": "app:1"}), field_manager="op")
    with pytest.raises(ClusterError) as caught:
        cluster.apply(partial({"name": "app", "image": "app:2"}), field_manager="ci", force=False)
    assert caught.value.status == 409
    assert 'k:{"name":"app"}.image' in str(caught.value) and "'op'" in str(caught.value)
    fields = cluster.managed_fields("apps/v1", "Deployment", "web", "demo")
    assert 'spec.template.spec.containers.k:{"name":"app"}.image' in fields["op"]


def test_a_port_without_protocol_is_the_tcp_port(cluster: MemoryCluster) -> None:
    cluster.apply(
        deployment({"name": "app", "image": "a", "ports": [{"containerPort": 80}]}),
        field_manager="op",
    )
    port = {"containerPort": 80, "protocol": "TCP", "name": "http"}
    cluster.apply(partial({"name": "app", "ports": [port]}), field_manager="other")
    assert containers(cluster)[0]["ports"] == [port]


@pytest.mark.parametrize(
    ("live", "applied", "merged"),
    [
        ("abc", "ba", "bca"),
        ("acb", "ba", "cba"),
        ("ab", "cb", "acb"),
        ("acb", "dba", "cdba"),
    ],
)
def test_a_set_merges_in_the_apiservers_order(
    cluster: MemoryCluster, live: str, applied: str, merged: str
) -> None:
    def names(letters: str) -> list[str]:
        return [f"example.com/{x}" for x in letters]

    owners = deployment({"name": "app", "image": "a"}, finalizers=names(live))
    cluster.apply(owners, field_manager="op")
    other = partial()
    other["metadata"]["finalizers"] = names(applied)
    del other["spec"]
    cluster.apply(other, field_manager="other")
    live_obj = cluster.get("apps/v1", "Deployment", "web", "demo")
    assert live_obj is not None and live_obj["metadata"]["finalizers"] == names(merged)


def test_a_server_side_apply_with_an_unknown_field_fails(cluster: MemoryCluster) -> None:
    obj = deployment({"name": "app", "image": "a"})
    obj["spec"]["replica"] = 3
    with pytest.raises(ClusterError) as caught:
        cluster.apply(obj, field_manager="op")
    assert ".spec.replica: field not declared in schema" in str(caught.value)
    assert cluster.get("apps/v1", "Deployment", "web", "demo") is None


def test_a_create_drops_unknown_fields(cluster: MemoryCluster) -> None:
    obj = deployment({"name": "app", "image": "a", "imagePullPolicyy": "Always"})
    cluster.create(obj)
    assert containers(cluster) == [{"name": "app", "image": "a"}]


GADGETS = "example.com/v1"


def gadget_crd() -> dict:
    spec_schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                },
            },
            "plain": {"type": "array", "items": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    schema = {"type": "object", "properties": {"spec": spec_schema}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def gadget(**spec: Any) -> dict:
    meta = {"name": "g", "namespace": "demo"}
    return {"apiVersion": GADGETS, "kind": "Gadget", "metadata": meta, "spec": spec}


def test_a_custom_map_list_merges_by_key_and_an_untyped_list_is_atomic(
    cluster: MemoryCluster,
) -> None:
    cluster.apply(gadget_crd(), field_manager="admin")
    cluster.apply(gadget(items=[{"name": "a", "value": "1"}], plain=["x"]), field_manager="op")
    cluster.apply(gadget(items=[{"name": "b"}], plain=["y"]), field_manager="other")
    live = cluster.get(GADGETS, "Gadget", "g", "demo")
    assert live is not None
    assert live["spec"]["items"] == [{"name": "a", "value": "1"}, {"name": "b"}]
    assert live["spec"]["plain"] == ["y"]


def test_a_custom_resource_is_pruned_to_its_structural_schema(cluster: MemoryCluster) -> None:
    cluster.apply(gadget_crd(), field_manager="admin")
    cluster.create(gadget(extra=1, free={"any": {"thing": 1}}))
    live = cluster.get(GADGETS, "Gadget", "g", "demo")
    assert live is not None and live["spec"] == {"free": {"any": {"thing": 1}}}
