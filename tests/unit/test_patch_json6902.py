"""JSON 6902 patches: every op, errors that name the failing op, inputs left alone."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from oper8d.engine.patch import json_patch
from oper8d.errors import ConfigError


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "a", "args": ["-v"]}, {"name": "b"}]}},
        },
    }


def test_add_remove_replace_move_copy_and_test_each_apply() -> None:
    ops = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/metadata/labels/tier", "value": "web"},
        {"op": "remove", "path": "/metadata/labels/app"},
        {"op": "add", "path": "/spec/template/spec/containers/-", "value": {"name": "c"}},
        {"op": "move", "from": "/spec/template/spec/containers/0", "path": "/spec/first"},
        {"op": "copy", "from": "/spec/first/args", "path": "/spec/args"},
    ]

    result = json_patch(deployment(), ops)

    assert result["spec"] == {
        "replicas": 3,
        "template": {"spec": {"containers": [{"name": "b"}, {"name": "c"}]}},
        "first": {"name": "a", "args": ["-v"]},
        "args": ["-v"],
    }
    assert result["metadata"]["labels"] == {"tier": "web"}


def test_a_failing_op_is_a_config_error_naming_its_index_and_path() -> None:
    ops = [
        {"op": "replace", "path": "/spec/replicas", "value": 2},
        {"op": "remove", "path": "/spec/missing/field"},
    ]

    with pytest.raises(ConfigError, match=r"operation 1 \(remove '/spec/missing/field'\)"):
        json_patch(deployment(), ops)


def test_a_test_op_that_does_not_hold_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"operation 0 \(test '/spec/replicas'\)"):
        json_patch(deployment(), [{"op": "test", "path": "/spec/replicas", "value": 5}])


@pytest.mark.parametrize(
    "ops",
    [
        {"op": "add", "path": "/a", "value": 1},
        [{"op": "frobnicate", "path": "/a"}],
        [{"op": "add", "path": "/a"}],
        ["add /a 1"],
    ],
)
def test_malformed_operations_are_config_errors(ops: Any) -> None:
    with pytest.raises(ConfigError):
        json_patch(deployment(), ops)


def test_replacing_the_whole_object_with_a_non_map_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="must stay a map"):
        json_patch(deployment(), [{"op": "replace", "path": "", "value": [1]}])


def test_moving_a_map_into_its_own_child_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="operation 0"):
        json_patch(deployment(), [{"op": "move", "from": "/spec", "path": "/spec/template/x"}])


def test_patching_never_changes_the_original_or_the_operations() -> None:
    original = deployment()
    ops = [
        {"op": "add", "path": "/spec/extra", "value": {"list": [1]}},
        {"op": "add", "path": "/spec/extra/list/-", "value": 2},
        {"op": "move", "from": "/spec/template/spec/containers/0", "path": "/spec/extra/moved"},
        {"op": "add", "path": "/spec/extra/moved/args/0", "value": "-x"},
        {"op": "remove", "path": "/metadata/labels/app"},
        {"op": "copy", "from": "/spec/extra", "path": "/spec/copied"},
        {"op": "add", "path": "/spec/copied/list/0", "value": 0},
    ]
    original_before, ops_before = copy.deepcopy(original), copy.deepcopy(ops)

    result = json_patch(original, ops)

    assert original == original_before
    assert ops == ops_before
    assert result["spec"]["extra"] == {"list": [1, 2], "moved": {"name": "a", "args": ["-x", "-v"]}}
    assert result["spec"]["copied"]["list"] == [0, 1, 2]


def test_changing_the_result_does_not_change_the_operations() -> None:
    ops = [{"op": "add", "path": "/spec/extra", "value": {"list": [1]}}]

    result = json_patch(deployment(), ops)
    result["spec"]["extra"]["list"].append(2)

    assert ops == [{"op": "add", "path": "/spec/extra", "value": {"list": [1]}}]


def test_untouched_subtrees_are_shared_rather_than_copied() -> None:
    original = deployment()

    result = json_patch(original, [{"op": "replace", "path": "/spec/replicas", "value": 2}])

    assert result["spec"] is not original["spec"]
    assert result["spec"]["template"] is original["spec"]["template"]
    assert result["metadata"] is original["metadata"]


def test_an_empty_operation_list_gives_an_equal_object() -> None:
    original = deployment()

    assert json_patch(original, []) == original
