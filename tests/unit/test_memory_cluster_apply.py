"""Server-side apply, read-modify-write, PUT and merge patch in the in-memory cluster."""

from __future__ import annotations

import pytest

from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(uid_factory=sequential_uids())


def service(**spec: object) -> dict:
    spec.setdefault("ports", [{"port": 80}])  # (the apiserver refuses a Service without)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": spec,
    }


def live_service(cluster: MemoryCluster) -> dict:
    live = cluster.get("v1", "Service", "web", "demo")
    assert live is not None
    return live


def test_apply_removes_fields_the_manager_stopped_setting(cluster: MemoryCluster) -> None:
    cluster.apply(
        service(selector={"app": "web", "tier": "front"}, sessionAffinity="ClientIP"),
        field_manager="op",
    )
    cluster.apply(service(selector={"app": "web"}), field_manager="op")
    spec = live_service(cluster)["spec"]
    assert spec["selector"] == {"app": "web"}
    assert spec["sessionAffinity"] == "None"  # back to the server's default
    assert "sessionAffinityConfig" not in spec  # (defaulted for ClientIP, dropped with it)


def test_apply_keeps_fields_another_manager_set(cluster: MemoryCluster) -> None:
    cluster.apply(service(selector={"app": "web"}, ports=[{"port": 80}]), field_manager="op")
    cluster.apply(service(externalName="x", selector={"extra": "y"}), field_manager="admin")
    cluster.apply(service(ports=[{"port": 80}]), field_manager="op")  # op drops its selector
    spec = live_service(cluster)["spec"]
    assert spec["selector"] == {"extra": "y"}  # admin's label stays, op's went
    assert spec["externalName"] == "x"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]  # defaults


def test_a_field_both_managers_set_stays_when_one_drops_it(cluster: MemoryCluster) -> None:
    cluster.apply(service(sessionAffinity="ClientIP"), field_manager="op")
    cluster.apply(service(sessionAffinity="ClientIP"), field_manager="admin")  # shared owner
    cluster.apply(service(), field_manager="op")
    assert live_service(cluster)["spec"]["sessionAffinity"] == "ClientIP"


def test_apply_without_force_conflicts_on_fields_another_manager_owns(
    cluster: MemoryCluster,
) -> None:
    cluster.apply(service(sessionAffinity="ClientIP"), field_manager="admin")
    with pytest.raises(ClusterError) as caught:
        cluster.apply(service(sessionAffinity="None"), field_manager="op", force=False)
    assert caught.value.status == 409
    assert "spec.sessionAffinity" in str(caught.value) and "admin" in str(caught.value)
    assert live_service(cluster)["spec"]["sessionAffinity"] == "ClientIP"


def test_apply_with_force_takes_the_field_over(cluster: MemoryCluster) -> None:
    cluster.apply(service(sessionAffinity="ClientIP"), field_manager="admin")
    cluster.apply(service(sessionAffinity="None"), field_manager="op", force=True)
    owners = cluster.managed_fields("v1", "Service", "web", "demo")
    assert "spec.sessionAffinity" in owners["op"]
    assert "spec.sessionAffinity" not in owners.get("admin", [])
    cluster.apply(service(), field_manager="op")  # op owns it alone now: dropping removes it
    assert live_service(cluster)["spec"]["sessionAffinity"] == "None"  # (the default)
    assert (
        "spec.sessionAffinity" not in cluster.managed_fields("v1", "Service", "web", "demo")["op"]
    )


def test_ports_a_manager_stops_applying_are_removed(cluster: MemoryCluster) -> None:
    cluster.apply(
        service(ports=[{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]),
        field_manager="op",
    )
    cluster.apply(service(ports=[{"port": 8080}]), field_manager="op")
    ports = [{"port": 8080, "protocol": "TCP", "targetPort": 8080}]
    assert live_service(cluster)["spec"]["ports"] == ports


def test_finalizers_of_different_managers_are_kept_apart(cluster: MemoryCluster) -> None:
    def with_finalizers(*names: str) -> dict:
        obj = service()
        obj["metadata"]["finalizers"] = list(names)
        return obj

    cluster.apply(with_finalizers("op.io/cleanup"), field_manager="op")
    cluster.apply(with_finalizers("backup.io/keep"), field_manager="backup")
    assert live_service(cluster)["metadata"]["finalizers"] == ["op.io/cleanup", "backup.io/keep"]
    cluster.apply(with_finalizers(), field_manager="op")
    assert live_service(cluster)["metadata"]["finalizers"] == ["backup.io/keep"]


def test_an_update_by_another_writer_takes_the_fields_it_changed(cluster: MemoryCluster) -> None:
    cluster.apply(service(sessionAffinity="ClientIP"), field_manager="op")
    live = live_service(cluster)
    live["spec"]["sessionAffinity"] = "None"
    cluster.update(live, field_manager="kubectl-edit")
    cluster.apply(service(), field_manager="op")  # no longer op's: stays
    assert live_service(cluster)["spec"]["sessionAffinity"] == "None"


def test_update_method_keeps_fields_it_does_not_set(cluster: MemoryCluster) -> None:
    cluster.apply(
        service(selector={"app": "web"}, sessionAffinity="ClientIP"), field_manager="admin"
    )
    cluster.apply(service(selector={"tier": "front"}), field_manager="op", method="update")
    spec = live_service(cluster)["spec"]
    assert spec["selector"] == {"app": "web", "tier": "front"}
    assert spec["sessionAffinity"] == "ClientIP"


def test_update_method_creates_a_missing_object(cluster: MemoryCluster) -> None:
    live = cluster.apply(service(sessionAffinity="None"), field_manager="op", method="update")
    assert live["metadata"]["resourceVersion"] == "1"
    assert cluster.requests["create"] == 1


def test_replace_method_puts_the_whole_object(cluster: MemoryCluster) -> None:
    cluster.apply(
        service(selector={"app": "web"}, sessionAffinity="ClientIP"), field_manager="admin"
    )
    cluster.apply(service(selector={"tier": "front"}), field_manager="op", method="replace")
    spec = live_service(cluster)["spec"]
    assert spec["selector"] == {"tier": "front"}
    assert spec["sessionAffinity"] == "None"  # the PUT did not send it: defaulted again
    assert spec["clusterIP"] == "10.96.0.1"  # allocated by the server, kept by a PUT


def test_merge_patch_merges_maps_deletes_nulls_and_replaces_lists(cluster: MemoryCluster) -> None:
    cluster.apply(
        service(
            selector={"app": "web", "tier": "front"},
            ports=[{"port": 80, "name": "http"}, {"port": 443, "name": "https"}],
        ),
        field_manager="op",
    )
    live = cluster.patch(
        "v1",
        "Service",
        "web",
        "demo",
        patch={"spec": {"selector": {"tier": None, "zone": "a"}, "ports": [{"port": 81}]}},
    )
    assert live["spec"]["selector"] == {"app": "web", "zone": "a"}
    assert live["spec"]["ports"] == [{"port": 81, "protocol": "TCP", "targetPort": 81}]


def test_patch_with_a_stale_resource_version_conflicts(cluster: MemoryCluster) -> None:
    cluster.apply(service(), field_manager="op")
    with pytest.raises(ClusterError) as caught:
        cluster.patch("v1", "Service", "web", "demo", patch={"metadata": {"resourceVersion": "0"}})
    assert caught.value.status == 409


def test_patch_of_a_missing_object_is_not_found(cluster: MemoryCluster) -> None:
    with pytest.raises(ClusterError) as caught:
        cluster.patch("v1", "Service", "web", "demo", patch={"spec": {}})
    assert caught.value.status == 404


def test_unknown_apply_method_is_refused(cluster: MemoryCluster) -> None:
    with pytest.raises(ClusterError, match="unknown apply method"):
        cluster.apply(service(), field_manager="op", method="upsert")  # type: ignore[arg-type]
