"""The TemporaryPatch controller (``runtime.temporarypatch.TemporaryPatchSync``): a
TemporaryPatch shows up in its target CR's ``oper8.org/temporary-patches`` annotation while
it exists, and leaves it (then goes away) when deleted. Over the in-memory cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.engine.config import TEMPORARY_PATCHES_ANNOTATION
from oper8d.errors import ClusterError
from oper8d.runtime.temporarypatch import API_VERSION, FINALIZER, KIND, TemporaryPatchSync

TARGET = ("demo.oper8d.io/v1alpha1", "Demo")
NS = "apps"


@pytest.fixture
def api() -> MemoryCluster:
    return MemoryCluster(clock=FakeClock().now, uid_factory=sequential_uids("tp"))


def sync_for(api: Any) -> TemporaryPatchSync:
    return TemporaryPatchSync(api, targets={TARGET}, clock=FakeClock())


def create_target(api: MemoryCluster, annotations: dict[str, str] | None = None) -> None:
    meta: dict[str, Any] = {"name": "demo", "namespace": NS}
    if annotations:
        meta["annotations"] = annotations
    api.create({"apiVersion": TARGET[0], "kind": TARGET[1], "metadata": meta, "spec": {}})


def create_patch(api: MemoryCluster, name: str, target: tuple[str, str] = TARGET) -> Obj:
    return api.create(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "apiVersion": target[0],
                "kind": target[1],
                "name": "demo",
                "patch": {"web": {"data": {"debug": "true"}}},
            },
        }
    )


def entries(api: MemoryCluster) -> dict[str, Any] | None:
    """The target's annotation, parsed (None when absent)."""
    target = api.get(*TARGET, "demo", NS)
    assert target is not None
    text = (target["metadata"].get("annotations") or {}).get(TEMPORARY_PATCHES_ANNOTATION)
    return json.loads(text) if text is not None else None


def finalizers(api: MemoryCluster, name: str) -> list[str] | None:
    patch = api.get(API_VERSION, KIND, name, NS)
    return None if patch is None else patch["metadata"].get("finalizers", [])


def test_a_patch_is_listed_on_its_target_and_holds_a_finalizer(api: MemoryCluster) -> None:
    create_target(api)
    patch = create_patch(api, "debug")
    sync_for(api).sync(NS, "debug")

    assert entries(api) == {
        "debug": {
            "timestamp": patch["metadata"]["creationTimestamp"],
            "api_version": TARGET[0],
            "kind": TARGET[1],
        }
    }
    assert finalizers(api, "debug") == [FINALIZER]


def test_syncing_an_unchanged_patch_again_writes_nothing(api: MemoryCluster) -> None:
    create_target(api)
    create_patch(api, "debug")
    sync = sync_for(api)
    sync.sync(NS, "debug")
    api.reset_requests()

    sync.sync(NS, "debug")
    assert api.writes == 0


def test_a_deleted_patch_leaves_its_target_and_then_goes_away(api: MemoryCluster) -> None:
    create_target(api, annotations={"team": "web"})
    create_patch(api, "debug")
    create_patch(api, "trace")
    sync = sync_for(api)
    sync.sync(NS, "debug")
    sync.sync(NS, "trace")

    api.delete(API_VERSION, KIND, "debug", NS)
    assert finalizers(api, "debug") == [FINALIZER]  # held until the target no longer lists it
    sync.sync(NS, "debug")
    assert set(entries(api) or {}) == {"trace"}
    assert finalizers(api, "debug") is None

    api.delete(API_VERSION, KIND, "trace", NS)
    sync.sync(NS, "trace")
    assert entries(api) is None  # the last one gone: no empty annotation left behind
    target = api.get(*TARGET, "demo", NS)
    assert target is not None and target["metadata"]["annotations"] == {"team": "web"}


def test_a_patch_for_a_kind_this_operator_does_not_reconcile_is_left_alone(
    api: MemoryCluster,
) -> None:
    create_target(api)
    create_patch(api, "elsewhere", target=("other.io/v1", "Demo"))
    sync_for(api).sync(NS, "elsewhere")

    assert finalizers(api, "elsewhere") == []
    assert entries(api) is None


def test_a_patch_whose_target_does_not_exist_yet_still_gets_its_finalizer(
    api: MemoryCluster,
) -> None:
    create_patch(api, "early")
    sync_for(api).sync(NS, "early")

    assert finalizers(api, "early") == [FINALIZER]


def test_a_patch_that_is_gone_is_nothing_to_do(api: MemoryCluster) -> None:
    sync_for(api).sync(NS, "never-existed")
    assert api.writes == 0


def test_an_unreadable_annotation_is_replaced_by_the_patches(api: MemoryCluster) -> None:
    create_target(api, annotations={TEMPORARY_PATCHES_ANNOTATION: "{not json"})
    create_patch(api, "debug")
    sync_for(api).sync(NS, "debug")

    assert set(entries(api) or {}) == {"debug"}


class Conflicting:
    """The in-memory cluster, but the first ``conflicts`` updates fail with 409 as if
    someone else had written first."""

    def __init__(self, api: MemoryCluster, conflicts: int):
        self.api, self.conflicts = api, conflicts

    def get(self, *args: Any, **kwargs: Any) -> Obj | None:
        return self.api.get(*args, **kwargs)

    def update(self, obj: Obj) -> Obj:
        if self.conflicts > 0:
            self.conflicts -= 1
            raise ClusterError("the object has been modified", status=409)
        return self.api.update(obj)


def test_a_conflicting_write_is_retried_on_a_fresh_read(api: MemoryCluster) -> None:
    create_target(api)
    create_patch(api, "debug")
    sync_for(Conflicting(api, conflicts=3)).sync(NS, "debug")

    assert finalizers(api, "debug") == [FINALIZER]
    assert set(entries(api) or {}) == {"debug"}


def test_endless_conflicts_end_in_a_409_to_retry_later(api: MemoryCluster) -> None:
    create_target(api)
    create_patch(api, "debug")
    with pytest.raises(ClusterError) as info:
        sync_for(Conflicting(api, conflicts=100)).sync(NS, "debug")
    assert info.value.status == 409


@pytest.mark.parametrize("value", ["[1,2]", '"x"', '{"debug": 1}', "null"])
def test_an_annotation_of_another_shape_is_replaced_by_the_patches(
    api: MemoryCluster, value: str
) -> None:
    create_target(api, annotations={TEMPORARY_PATCHES_ANNOTATION: value})
    create_patch(api, "debug")
    sync_for(api).sync(NS, "debug")  # (before: a TypeError that ended the worker)

    assert set(entries(api) or {}) == {"debug"}
