"""Strategic merge patch directives ($patch, $retainKeys, $setElementOrder,
$deleteFromPrimitiveList) and what a merge does not do to its inputs.

Every expected value here is what apimachinery gives (``kubectl patch --local``, the
strategic-merge tool of testenv), quirks included."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from oper8d.engine.patch import strategic_merge
from oper8d.errors import ConfigError


def deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "finalizers": ["a", "b", "c"]},
        "spec": {
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": spec},
        },
    }


def smp(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    return strategic_merge(original, patch, kind="Deployment", api_version="apps/v1")


def containers_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    return result["spec"]["template"]["spec"]["containers"]


def pod_patch(**spec: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


THREE = [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "c", "image": "c"}]


# -- $patch in a map -----------------------------------------------------------------------


def test_patch_replace_in_a_map_replaces_the_whole_map() -> None:
    patch = {"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}}

    assert smp(deployment(), patch)["spec"]["strategy"] == {"type": "Recreate"}


def test_patch_replace_takes_the_map_as_written_nulls_included() -> None:
    patch = {"spec": {"strategy": {"$patch": "replace", "type": "Recreate", "x": None}}}

    assert smp(deployment(), patch)["spec"]["strategy"] == {"type": "Recreate", "x": None}


def test_patch_replace_of_a_map_the_original_lacks_adds_nothing() -> None:
    original = deployment()
    del original["spec"]["strategy"]

    result = smp(original, {"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}})

    assert "strategy" not in result["spec"]


def test_patch_delete_in_a_map_leaves_an_empty_map() -> None:
    patch = {"spec": {"strategy": {"rollingUpdate": {"$patch": "delete"}}}}

    assert smp(deployment(), patch)["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {},
    }


def test_patch_delete_of_a_map_the_original_lacks_adds_nothing() -> None:
    result = smp(deployment(), {"spec": {"missing": {"$patch": "delete", "a": 1}}})

    assert "missing" not in result["spec"]


def test_patch_delete_at_the_top_leaves_an_empty_object() -> None:
    assert smp(deployment(), {"$patch": "delete"}) == {}


def test_patch_merge_in_a_map_is_refused_as_apimachinery_refuses_it() -> None:
    with pytest.raises(ConfigError, match=r"spec\.strategy.*\$patch: merge"):
        smp(deployment(), {"spec": {"strategy": {"$patch": "merge", "type": "Recreate"}}})


def test_an_unknown_patch_directive_is_a_config_error_naming_where() -> None:
    with pytest.raises(ConfigError, match=r"spec\.strategy.*\$patch: remove"):
        smp(deployment(), {"spec": {"strategy": {"$patch": "remove"}}})


# -- $patch items in lists ---------------------------------------------------------------


def test_patch_replace_item_replaces_a_merge_list() -> None:
    patch = pod_patch(containers=[{"name": "z", "image": "z"}, {"$patch": "replace"}])

    assert containers_of(smp(deployment(containers=THREE), patch)) == [{"name": "z", "image": "z"}]


def test_a_list_without_merge_key_is_replaced_by_the_patch_list_as_written() -> None:
    # apimachinery keeps directive items there; the API server then refuses `$patch`
    patch = pod_patch(tolerations=[{"$patch": "replace"}, {"key": "b"}])

    result = smp(deployment(tolerations=[{"key": "a"}]), patch)

    tolerations = result["spec"]["template"]["spec"]["tolerations"]
    assert tolerations == [{"$patch": "replace"}, {"key": "b"}]


def test_patch_replace_item_ignores_other_directive_items() -> None:
    patch = pod_patch(
        containers=[{"$patch": "replace"}, {"name": "a", "$patch": "delete"}, {"name": "b"}]
    )

    assert containers_of(smp(deployment(containers=THREE), patch)) == [{"name": "b"}]


def test_patch_delete_item_removes_every_item_with_that_key() -> None:
    original = deployment(containers=[*THREE, {"name": "b", "image": "dup"}])
    patch = pod_patch(containers=[{"name": "b", "$patch": "delete"}, {"name": "d"}])

    assert containers_of(smp(original, patch)) == [{"name": "d"}, THREE[0], THREE[2]]


def test_patch_delete_then_re_add_in_one_patch_gives_a_fresh_item() -> None:
    patch = pod_patch(containers=[{"name": "a", "$patch": "delete"}, {"name": "a", "image": "new"}])

    assert containers_of(smp(deployment(containers=THREE), patch)) == [
        {"name": "a", "image": "new"},
        THREE[1],
        THREE[2],
    ]


def test_patch_delete_item_without_the_merge_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="merge key 'name'"):
        smp(deployment(containers=THREE), pod_patch(containers=[{"$patch": "delete"}]))


def test_patch_merge_item_in_a_merge_list_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"containers.*\$patch: merge"):
        smp(deployment(containers=THREE), pod_patch(containers=[{"name": "a", "$patch": "merge"}]))


# -- $retainKeys ---------------------------------------------------------------------------


def test_retain_keys_drops_original_keys_not_listed_then_merges() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}

    assert smp(deployment(), patch)["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_keeps_listed_original_keys() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type", "rollingUpdate"], "type": "X"}}}

    assert smp(deployment(), patch)["spec"]["strategy"] == {
        "type": "X",
        "rollingUpdate": {"maxSurge": 1},
    }


def test_retain_keys_must_list_every_key_the_patch_sets() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "X", "other": 1}}}

    with pytest.raises(ConfigError, match=r"\$retainKeys does not list other"):
        smp(deployment(), patch)


# -- $setElementOrder ----------------------------------------------------------------------


def test_set_element_order_places_listed_items_in_its_order_among_the_others() -> None:
    patch = pod_patch(
        **{
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "a2"}],
        }
    )

    # c before a as listed; b, not listed, stays before c as in the original
    assert containers_of(smp(deployment(containers=THREE), patch)) == [
        THREE[1],
        THREE[2],
        {"name": "a", "image": "a2"},
    ]


def test_set_element_order_orders_a_primitive_list() -> None:
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "a"]}}

    assert smp(deployment(), patch)["metadata"]["finalizers"] == ["b", "c", "a"]


def test_set_element_order_places_items_the_patch_adds() -> None:
    patch = pod_patch(
        **{
            "$setElementOrder/containers": [{"name": "new"}, {"name": "b"}],
            "containers": [{"name": "new"}],
        }
    )

    names = [c["name"] for c in containers_of(smp(deployment(containers=THREE), patch))]

    assert names == ["new", "a", "b", "c"]


# -- $deleteFromPrimitiveList ----------------------------------------------------------------


def test_delete_from_primitive_list_removes_those_values() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "c", "zz"]}}

    assert smp(deployment(), patch)["metadata"]["finalizers"] == ["a"]


def test_delete_from_primitive_list_with_values_the_patch_adds() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["d"]}}

    assert smp(deployment(), patch)["metadata"]["finalizers"] == ["d", "b", "c"]


def test_delete_from_primitive_list_that_is_not_a_list_changes_nothing() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}

    assert smp(deployment(), patch) == deployment()


@pytest.mark.parametrize(
    "patch",
    [
        {"metadata": {"$setElementOrder/finalizers": "a"}},
        {"spec": {"strategy": {"$retainKeys": "type"}}},
    ],
)
def test_an_order_or_retain_directive_that_is_not_a_list_is_a_config_error(
    patch: dict[str, Any],
) -> None:
    with pytest.raises(ConfigError, match="takes a list"):
        smp(deployment(), patch)


def test_set_element_order_that_contradicts_the_patch_is_a_config_error() -> None:
    patch = pod_patch(
        **{
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a"}, {"name": "b"}],
        }
    )

    with pytest.raises(ConfigError, match="must name every item the patch sets"):
        smp(deployment(containers=THREE), patch)


def test_dollar_keys_that_are_not_directives_are_ordinary_fields() -> None:
    original = {"kind": "CustomResourceDefinition", "spec": {"schema": {"$ref": "a"}}}

    result = strategic_merge(original, {"spec": {"schema": {"$ref": "b", "$id": "c"}}})

    assert result["spec"]["schema"] == {"$ref": "b", "$id": "c"}


# -- inputs ----------------------------------------------------------------------------------


def test_merging_never_changes_the_original_or_the_patch() -> None:
    original = deployment(containers=THREE, volumes=[{"name": "v"}])
    patch = {
        "metadata": {"finalizers": ["z"], "$deleteFromPrimitiveList/finalizers": ["a"]},
        "spec": {
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}],
                    "containers": [{"name": "a", "$patch": "delete"}, {"name": "b", "env": []}],
                    "volumes": [{"$patch": "replace"}, {"name": "w"}],
                }
            },
        },
    }
    original_before, patch_before = copy.deepcopy(original), copy.deepcopy(patch)

    smp(original, patch)

    assert original == original_before
    assert patch == patch_before


def test_changing_the_result_does_not_change_the_patch() -> None:
    patch = {
        "spec": {"template": {"spec": {"containers": [{"name": "x", "env": [{"name": "A"}]}]}}}
    }
    patch_before = copy.deepcopy(patch)

    result = smp(deployment(containers=THREE), patch)
    added = next(c for c in containers_of(result) if c["name"] == "x")
    added["env"].append({"name": "B"})
    added["image"] = "changed"

    assert patch == patch_before


def test_untouched_subtrees_are_shared_rather_than_copied() -> None:
    original = deployment(containers=THREE)

    result = smp(original, {"spec": {"replicas": 2}})

    assert result is not original
    assert result["spec"] is not original["spec"]
    assert result["spec"]["selector"] is original["spec"]["selector"]
    assert result["metadata"] is original["metadata"]
