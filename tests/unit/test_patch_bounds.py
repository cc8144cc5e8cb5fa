"""A TemporaryPatch changes only what the bundle's ``temporaryPatches`` policy allows: objects
of its kinds, fields at or below its paths, judged by what the patch changes (issue 17: a
TemporaryPatch could set hostNetwork, privileged, hostPath volumes, ownerReferences)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from oper8d.bundle.model import TemporaryPatchPolicy
from oper8d.engine.patch import TemporaryPatchRef, apply_temporary_patches
from oper8d.engine.patch.bounds import changed_paths
from oper8d.errors import ConfigError

POLICY = TemporaryPatchPolicy(
    enabled=True,
    allowed_kinds=("Deployment",),
    allowed_paths=(
        ("spec", "replicas"),
        ("spec", "template", "spec", "containers", "*", "resources"),
        ("metadata", "labels"),
    ),
)


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "app", "image": "app:1"},
                        {"name": "sidecar", "image": "proxy:1"},
                    ]
                }
            },
        },
    }


def patched(body: Any, patch_type: str = "patchStrategicMerge", obj: Any = None) -> Any:
    ref = TemporaryPatchRef("p", "ns", patch_type, {"app": {"deployment": body}}, "2024")  # type: ignore[arg-type]
    return apply_temporary_patches(obj or deployment(), "app.deployment", [ref], POLICY)


def pod_spec(**fields: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": fields}}}


# -- what is allowed -------------------------------------------------------------------------
def test_a_patch_within_the_allowed_paths_applies() -> None:
    result = patched({"spec": {"replicas": 3}, "metadata": {"labels": {"debug": "on"}}})
    assert result["spec"]["replicas"] == 3
    assert result["metadata"]["labels"] == {"app": "web", "debug": "on"}


def test_a_star_stands_for_any_list_index() -> None:
    limits = {"resources": {"limits": {"cpu": "2"}}}
    result = patched(pod_spec(containers=[{"name": "sidecar", **limits}]))
    assert result["spec"]["template"]["spec"]["containers"][1]["resources"] == limits["resources"]


def test_a_json6902_patch_is_bounded_alike() -> None:
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 4}]
    assert patched(ops, "patchJson6902")["spec"]["replicas"] == 4
    ops = [{"op": "add", "path": "/spec/template/spec/hostNetwork", "value": True}]
    with pytest.raises(ConfigError, match=r"changes spec\.template\.spec\.hostNetwork"):
        patched(ops, "patchJson6902")


# -- what is refused ----------------------------------------------------------------------------
REFUSED = {
    "hostNetwork": (pod_spec(hostNetwork=True), "spec.template.spec.hostNetwork"),
    "a privileged container": (
        pod_spec(containers=[{"name": "app", "securityContext": {"privileged": True}}]),
        "spec.template.spec.containers[0].securityContext",
    ),
    "a hostPath volume": (
        pod_spec(volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
        "spec.template.spec.volumes",
    ),
    "an extra ownerReference": (
        {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "x"}]}},
        "metadata.ownerReferences",
    ),
    "an added container": (
        pod_spec(containers=[{"name": "miner", "image": "evil"}]),
        "spec.template.spec.containers[0].image",
    ),
    "an image": (
        pod_spec(containers=[{"name": "app", "image": "evil"}]),
        "spec.template.spec.containers[0].image",
    ),
    "a replaced pod spec": (
        {"spec": {"template": {"spec": {"$patch": "replace", "containers": []}}}},
        "spec.template.spec.containers[0]",
    ),
}


@pytest.mark.parametrize(("body", "path"), REFUSED.values(), ids=REFUSED.keys())
def test_a_change_outside_the_allowed_paths_is_refused_naming_the_path(
    body: Any, path: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        patched(body)
    message = caught.value.message
    assert f"TemporaryPatch ns/p changes {path} of app.deployment" in message
    assert "temporaryPatches.allowedPaths" in message


def test_an_object_of_a_kind_not_allowed_is_refused_naming_the_kind() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    with pytest.raises(ConfigError, match=re.escape("a ConfigMap: the bundle's temporaryPatches")):
        patched({"data": {"a": "b"}}, obj=config_map)


def test_patches_that_address_nothing_are_not_judged() -> None:
    original = deployment()
    ref = TemporaryPatchRef("p", "ns", "patchStrategicMerge", {"db": {"x": {"a": 1}}}, "2024")
    assert apply_temporary_patches(original, "app.deployment", [ref], POLICY) is original


# -- the comparison -------------------------------------------------------------------------------
def test_changed_paths_start_where_the_difference_starts() -> None:
    before = {"a": {"b": 1, "c": [1, 2]}, "d": True, "gone": 1}
    after = {"a": {"b": 2, "c": [1]}, "d": 1, "new": {"x": 1}}
    assert list(changed_paths(before, after)) == [
        ("a", "b"),
        ("a", "c", 1),
        ("d",),  # True and 1 are not the same value
        ("gone",),
        ("new",),
    ]


def test_shared_subtrees_are_unchanged() -> None:
    shared = {"big": list(range(1000))}
    assert list(changed_paths({"s": shared, "x": 1}, {"s": shared, "x": 1})) == []
