"""``KubeSchemas.has_field``: whether a kind can hold a field path, the question that tells
a typo in a condition ("no such field") from a field not set yet ("waiting")."""

from __future__ import annotations

import pytest

from oper8d.kubeschema import KubeSchemas


@pytest.fixture(scope="module")
def schemas() -> KubeSchemas:
    return KubeSchemas.builtin()


@pytest.mark.parametrize(
    "path",
    [
        ("status", "readyReplicas"),
        ("spec", "template", "spec", "containers", 0, "image"),
        ("metadata", "labels", "any-key"),  # a map: every key may exist
        ("status", "conditions", 3, "reason"),
    ],
)
def test_fields_a_deployment_can_hold(schemas: KubeSchemas, path: tuple) -> None:
    assert schemas.has_field("apps/v1", "Deployment", path) == (True, ())


def test_a_misspelled_field_is_refused_with_the_names_it_could_be(schemas: KubeSchemas) -> None:
    known, names = schemas.has_field("apps/v1", "Deployment", ("status", "readyReplicaz"))
    assert known is False
    assert "readyReplicas" in names and "availableReplicas" in names


def test_a_field_under_a_string_does_not_exist(schemas: KubeSchemas) -> None:
    assert schemas.has_field("v1", "ConfigMap", ("metadata", "name", "x"))[0] is False


def test_a_kind_without_a_schema_cannot_tell(schemas: KubeSchemas) -> None:
    assert schemas.has_field("example.com/v1", "Widget", ("status", "x")) == (None, ())
