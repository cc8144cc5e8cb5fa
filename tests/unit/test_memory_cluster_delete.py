"""Deletion in the in-memory cluster: finalizers, owner references and namespaces."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(
        clock=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), uid_factory=sequential_uids()
    )


def cm(name: str, *, owners: list[dict] | None = None, finalizers: list[str] | None = None) -> dict:
    meta: dict = {"name": name, "namespace": "demo"}
    if owners:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": o["metadata"]["name"],
                "uid": o["metadata"]["uid"],
                "blockOwnerDeletion": True,
            }
            for o in owners
        ]
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def names(cluster: MemoryCluster) -> list[str]:
    return [o["metadata"]["name"] for o in cluster.list("v1", "ConfigMap", "demo")]


def get(cluster: MemoryCluster, name: str) -> dict | None:
    return cluster.get("v1", "ConfigMap", name, "demo")


def test_delete_removes_an_object_and_reports_whether_it_was_there(cluster: MemoryCluster) -> None:
    cluster.apply(cm("a"), field_manager="op")
    assert cluster.delete("v1", "ConfigMap", "a", "demo") is True
    assert get(cluster, "a") is None
    assert cluster.delete("v1", "ConfigMap", "a", "demo") is False


def test_finalizers_hold_deletion_and_removing_them_completes_it(cluster: MemoryCluster) -> None:
    created = cluster.apply(cm("a", finalizers=["op.io/cleanup"]), field_manager="op")
    assert cluster.delete("v1", "ConfigMap", "a", "demo") is True
    held = get(cluster, "a")
    assert held is not None
    assert held["metadata"]["deletionTimestamp"] == "2026-01-02T03:04:05Z"
    assert int(held["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    cluster.delete("v1", "ConfigMap", "a", "demo")  # again: nothing changes
    assert get(cluster, "a") == held
    cluster.apply(cm("a"), field_manager="op")  # the manager drops its finalizer
    assert get(cluster, "a") is None


def test_no_finalizer_can_be_added_to_an_object_being_deleted(cluster: MemoryCluster) -> None:
    cluster.apply(cm("a", finalizers=["op.io/cleanup"]), field_manager="op")
    cluster.delete("v1", "ConfigMap", "a", "demo")
    with pytest.raises(ClusterError) as caught:
        cluster.apply(cm("a", finalizers=["op.io/cleanup", "late.io/x"]), field_manager="op")
    assert caught.value.status == 422 and "late.io/x" in str(caught.value)


def test_an_update_that_empties_the_finalizers_completes_deletion(cluster: MemoryCluster) -> None:
    cluster.apply(cm("a", finalizers=["op.io/cleanup"]), field_manager="op")
    cluster.delete("v1", "ConfigMap", "a", "demo")
    live = get(cluster, "a")
    assert live is not None
    live["metadata"]["finalizers"] = []
    cluster.update(live)
    assert get(cluster, "a") is None


def test_deleting_an_owner_deletes_dependents_two_levels_down(cluster: MemoryCluster) -> None:
    root = cluster.apply(cm("root"), field_manager="op")
    child = cluster.apply(cm("child", owners=[root]), field_manager="op")
    cluster.apply(cm("grandchild", owners=[child]), field_manager="op")
    cluster.apply(cm("bystander"), field_manager="op")
    cluster.delete("v1", "ConfigMap", "root", "demo")
    assert names(cluster) == ["bystander"]


def test_a_dependent_with_finalizers_waits_for_them_during_cascading_deletion(
    cluster: MemoryCluster,
) -> None:
    root = cluster.apply(cm("root"), field_manager="op")
    child = cluster.apply(cm("child", owners=[root], finalizers=["op.io/x"]), field_manager="op")
    cluster.apply(cm("grandchild", owners=[child]), field_manager="op")
    cluster.delete("v1", "ConfigMap", "root", "demo")
    assert names(cluster) == ["child", "grandchild"]
    held = get(cluster, "child")
    assert held is not None and "deletionTimestamp" in held["metadata"]
    cluster.apply(cm("child", owners=[root]), field_manager="op")  # finalizer dropped
    assert names(cluster) == []


def test_a_dependent_with_another_live_owner_only_loses_the_reference(
    cluster: MemoryCluster,
) -> None:
    a = cluster.apply(cm("a"), field_manager="op")
    b = cluster.apply(cm("b"), field_manager="op")
    cluster.apply(cm("shared", owners=[a, b]), field_manager="op")
    cluster.delete("v1", "ConfigMap", "a", "demo")
    shared = get(cluster, "shared")
    assert shared is not None
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["b"]


def test_orphan_propagation_keeps_dependents_and_removes_their_references(
    cluster: MemoryCluster,
) -> None:
    root = cluster.apply(cm("root"), field_manager="op")
    cluster.apply(cm("child", owners=[root]), field_manager="op")
    cluster.delete("v1", "ConfigMap", "root", "demo", propagation="Orphan")
    child = get(cluster, "child")
    assert child is not None and "ownerReferences" not in child["metadata"]
    assert names(cluster) == ["child"]


def test_foreground_deletion_removes_the_owner_after_its_dependents(cluster: MemoryCluster) -> None:
    root = cluster.apply(cm("root"), field_manager="op")
    cluster.apply(cm("child", owners=[root], finalizers=["op.io/x"]), field_manager="op")
    events: list[tuple[str, str]] = []
    cluster.watch(lambda kind, obj: events.append((kind, obj["metadata"]["name"])))
    cluster.delete("v1", "ConfigMap", "root", "demo", propagation="Foreground")
    waiting = get(cluster, "root")
    assert waiting is not None
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert "deletionTimestamp" in waiting["metadata"]
    cluster.apply(cm("child", owners=[root]), field_manager="op")  # child's finalizer dropped
    assert names(cluster) == []
    deleted = [name for kind, name in events if kind == "DELETED"]
    assert deleted == ["child", "root"]


def test_deleting_a_namespace_deletes_its_contents_then_itself(cluster: MemoryCluster) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}
    cluster.apply(ns, field_manager="op")
    cluster.apply(cm("a"), field_manager="op")
    cluster.apply(cm("held", finalizers=["op.io/x"]), field_manager="op")
    cluster.delete("v1", "Namespace", "demo")
    terminating = cluster.get("v1", "Namespace", "demo")
    assert terminating is not None and terminating["status"]["phase"] == "Terminating"
    assert names(cluster) == ["held"]
    with pytest.raises(ClusterError) as caught:
        cluster.apply(cm("new"), field_manager="op")
    assert caught.value.status == 403
    cluster.apply(cm("held"), field_manager="op")
    assert cluster.get("v1", "Namespace", "demo") is None


def test_unknown_propagation_is_refused(cluster: MemoryCluster) -> None:
    with pytest.raises(ClusterError, match="propagation"):
        cluster.delete("v1", "ConfigMap", "a", "demo", propagation="Later")  # type: ignore[arg-type]
