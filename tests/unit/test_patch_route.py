"""Temporary patches: routing by internal name, order, identity protection, errors."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from oper8d.bundle.model import TemporaryPatchPolicy
from oper8d.engine.patch import (
    TemporaryPatchRef,
    apply_temporary_patches,
    check_identity_preserved,
    route_json6902_patch,
    route_strategic_patch,
)
from oper8d.errors import ConfigError

#: a policy that lets every patch here through, so these tests see routing and order alone
#: (test_patch_bounds.py tests the policy)
OPEN = TemporaryPatchPolicy(
    enabled=True, allowed_kinds=("Deployment",), allowed_paths=(("metadata",), ("spec",))
)


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app"}]}}},
    }


def smp_ref(name: str, patch: Any, timestamp: str = "2024-01-01T00:00:00Z") -> TemporaryPatchRef:
    return TemporaryPatchRef(name, "ns", "patchStrategicMerge", patch, timestamp)


def json_ref(name: str, patch: Any, timestamp: str = "2024-01-01T00:00:00Z") -> TemporaryPatchRef:
    return TemporaryPatchRef(name, "ns", "patchJson6902", patch, timestamp)


# -- routing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "internal_name",
    ["app.deployment", "app-eu-west.deployment", "app.extras-configmap-settings", "db-0.svc"],
)
def test_a_body_routes_to_the_object_whose_internal_name_it_spells(internal_name: str) -> None:
    component, resource = internal_name.split(".")
    body = {component: {resource: {"spec": {"replicas": 2}}}}

    assert route_strategic_patch(body, internal_name) == {"spec": {"replicas": 2}}


@pytest.mark.parametrize(
    "internal_name", ["other.deployment", "app.service", "app-eu.deployment", "app.x.y"]
)
def test_a_body_does_not_route_to_other_objects(internal_name: str) -> None:
    body = {"app": {"deployment": {"spec": {"replicas": 2}}}}

    assert route_strategic_patch(body, internal_name) is None


def test_a_body_that_is_not_a_map_addresses_nothing() -> None:
    assert route_strategic_patch(["app"], "app.deployment") is None
    assert route_strategic_patch({"app": "deployment"}, "app.deployment") is None


def test_a_routed_strategic_body_that_is_not_a_map_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"app\.deployment must be a map"):
        route_strategic_patch({"app": {"deployment": [1]}}, "app.deployment")


def test_json6902_bodies_route_the_same_way_to_a_list_of_operations() -> None:
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 2}]

    assert route_json6902_patch({"app": {"deployment": ops}}, "app.deployment") == ops
    assert route_json6902_patch({"app": {"deployment": ops}}, "app.service") is None
    with pytest.raises(ConfigError, match="list of operations"):
        route_json6902_patch({"app": {"deployment": {"op": "add"}}}, "app.deployment")


# -- applying --------------------------------------------------------------------------------


def test_temporary_patches_apply_oldest_first_whatever_their_list_order() -> None:
    newer = smp_ref("b-newer", {"app": {"deployment": {"spec": {"replicas": 5}}}}, "2024-02-01")
    older = smp_ref("z-older", {"app": {"deployment": {"spec": {"replicas": 3}}}}, "2024-01-01")

    result = apply_temporary_patches(deployment(), "app.deployment", [newer, older], OPEN)

    assert result["spec"]["replicas"] == 5


def test_temporary_patches_with_the_same_timestamp_apply_in_name_order() -> None:
    second = smp_ref("b", {"app": {"deployment": {"spec": {"replicas": 5}}}})
    first = smp_ref("a", {"app": {"deployment": {"spec": {"replicas": 3}}}})

    result = apply_temporary_patches(deployment(), "app.deployment", [second, first], OPEN)

    assert result["spec"]["replicas"] == 5


def test_strategic_temporary_patches_use_the_objects_merge_keys() -> None:
    patch = {
        "app": {
            "deployment": {"spec": {"template": {"spec": {"containers": [{"name": "sidecar"}]}}}}
        }
    }

    result = apply_temporary_patches(deployment(), "app.deployment", [smp_ref("p", patch)], OPEN)

    assert result["spec"]["template"]["spec"]["containers"] == [
        {"name": "sidecar"},
        {"name": "app"},
    ]


def test_json6902_temporary_patches_are_routed_then_applied() -> None:
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 4}]
    refs = [json_ref("p", {"app": {"deployment": ops}}), json_ref("q", {"app": {"other": ops}})]

    result = apply_temporary_patches(deployment(), "app.deployment", refs, OPEN)

    assert result["spec"]["replicas"] == 4


def test_patches_that_address_other_objects_leave_the_object_as_it_is() -> None:
    original = deployment()
    refs = [
        smp_ref("p", {"db": {"deployment": {"spec": {"replicas": 9}}}}),
        json_ref("q", {"app": {"service": [{"op": "remove", "path": "/spec"}]}}),
    ]

    assert apply_temporary_patches(original, "app.deployment", refs, OPEN) is original


def test_applying_temporary_patches_never_changes_the_object_or_the_patches() -> None:
    original = deployment()
    containers = [{"name": "app", "image": "x"}]
    ops = [{"op": "add", "path": "/spec/paused", "value": True}]
    refs = [
        smp_ref(
            "p",
            {"app": {"deployment": {"spec": {"template": {"spec": {"containers": containers}}}}}},
        ),
        json_ref("q", {"app": {"deployment": ops}}),
    ]
    original_before, refs_before = copy.deepcopy(original), copy.deepcopy(refs)

    result = apply_temporary_patches(original, "app.deployment", refs, OPEN)

    assert original == original_before
    assert refs == refs_before
    assert result["spec"]["paused"] is True


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"metadata": {"name": "other"}}, "metadata.name"),
        ({"metadata": {"namespace": "elsewhere"}}, "metadata.namespace"),
        ({"kind": "StatefulSet"}, "kind"),
        ({"apiVersion": "apps/v2"}, "apiVersion"),
        ({"metadata": {"name": None}}, "metadata.name"),
    ],
)
def test_a_temporary_patch_that_changes_identity_is_refused_naming_the_patch(
    patch: dict[str, Any], field: str
) -> None:
    ref = smp_ref("rename", {"app": {"deployment": patch}})

    with pytest.raises(ConfigError, match=re.escape(f"TemporaryPatch ns/rename changes {field}")):
        apply_temporary_patches(deployment(), "app.deployment", [ref], OPEN)


def test_a_failing_json6902_temporary_patch_names_the_patch_and_the_op() -> None:
    ops = [{"op": "remove", "path": "/spec/nothing"}]
    ref = json_ref("broken", {"app": {"deployment": ops}})

    with pytest.raises(ConfigError, match=r"TemporaryPatch ns/broken: .*operation 0"):
        apply_temporary_patches(deployment(), "app.deployment", [ref], OPEN)


def test_an_unknown_patch_type_is_a_config_error() -> None:
    ref = TemporaryPatchRef("p", "ns", "patchMerge", {}, "2024")  # type: ignore[arg-type]

    with pytest.raises(ConfigError, match="TemporaryPatch ns/p: unknown patchType 'patchMerge'"):
        apply_temporary_patches(deployment(), "app.deployment", [ref], OPEN)


# -- identity ----------------------------------------------------------------------------------


def test_changing_labels_spec_or_status_keeps_identity() -> None:
    after = deployment()
    after["metadata"]["labels"] = {"a": "b"}
    after["spec"]["replicas"] = 9

    check_identity_preserved(deployment(), after, source="operator.yaml:12:5")


def test_an_identity_change_names_the_source_the_field_and_both_values() -> None:
    after = deployment()
    after["metadata"]["name"] = "web2"

    with pytest.raises(ConfigError) as raised:
        check_identity_preserved(deployment(), after, source="operator.yaml:12:5")

    message = str(raised.value)
    assert "operator.yaml:12:5" in message
    assert "metadata.name of Deployment ns/web from 'web' to 'web2'" in message


def test_adding_a_namespace_to_a_cluster_scoped_object_changes_identity() -> None:
    before = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    after = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "namespace": "x"}}

    with pytest.raises(ConfigError, match=r"metadata\.namespace"):
        check_identity_preserved(before, after, source="TemporaryPatch ns/p")
