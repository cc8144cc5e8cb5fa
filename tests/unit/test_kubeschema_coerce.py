"""Types as the author means them: a number or a boolean where the schema says string
becomes that string; every other mismatch is left for ``validate`` to report."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubeschema_corpus import deployment

from oper8d.kubeschema import KubeSchemas

ENV0 = "spec.template.spec.containers[0].env[0].value"


@pytest.fixture(scope="module")
def schemas() -> KubeSchemas:
    return KubeSchemas.builtin()


@pytest.mark.parametrize(
    ("value", "text"), [(3, "3"), (True, "true"), (False, "false"), (1.5, "1.5"), (0, "0")]
)
def test_an_env_value_becomes_its_string(schemas: KubeSchemas, value: Any, text: str) -> None:
    obj = deployment(env=[{"name": "N", "value": value}])
    coerced = schemas.coerce(obj)
    assert coerced.obj["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == text
    assert [(c.path, c.before, c.after) for c in coerced.coercions] == [(ENV0, value, text)]
    assert schemas.validate(coerced.obj).ok


def test_configmap_data_and_label_values_become_strings(schemas: KubeSchemas) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "labels": {"tier": 2}},
        "data": {"replicas": 3, "debug": True, "name": "web"},
    }
    coerced = schemas.coerce(obj)
    assert coerced.obj["data"] == {"replicas": "3", "debug": "true", "name": "web"}
    assert coerced.obj["metadata"]["labels"] == {"tier": "2"}
    assert sorted(c.path for c in coerced.coercions) == [
        "data[debug]",
        "data[replicas]",
        "metadata.labels[tier]",
    ]
    assert schemas.validate(coerced.obj).ok


def test_other_mismatches_stay_errors(schemas: KubeSchemas) -> None:
    obj = deployment(env=[{"name": "N", "value": ["a"]}])
    obj["spec"]["replicas"] = "3"
    coerced = schemas.coerce(obj)
    assert coerced.coercions == ()
    assert coerced.obj is obj
    paths = sorted(f.path for f in schemas.validate(coerced.obj).errors)
    assert paths == ["spec.replicas", ENV0]


def test_int_or_string_and_quantities_keep_their_numbers(schemas: KubeSchemas) -> None:
    obj = deployment(resources={"limits": {"cpu": 1}}, ports=[{"containerPort": 80}])
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}]},
    }
    assert schemas.coerce(obj).coercions == ()
    assert schemas.coerce(service).coercions == ()


def test_a_port_given_as_digits_becomes_the_number(schemas: KubeSchemas) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {
            "ports": [
                {"name": "a", "port": 80, "targetPort": "8080"},
                {"name": "b", "port": 81, "targetPort": "web"},
            ]
        },
    }
    assert not schemas.validate(service).ok
    coerced = schemas.coerce(service)
    assert [p["targetPort"] for p in coerced.obj["spec"]["ports"]] == [8080, "web"]
    assert [(c.path, c.after) for c in coerced.coercions] == [("spec.ports[0].targetPort", 8080)]
    assert schemas.validate(coerced.obj).ok


def test_the_input_is_not_modified(schemas: KubeSchemas) -> None:
    obj = deployment(env=[{"name": "N", "value": 3}])
    before = copy.deepcopy(obj)
    coerced = schemas.coerce(obj)
    assert obj == before
    # untouched branches are shared, changed ones copied
    assert coerced.obj["metadata"] is obj["metadata"]
    assert coerced.obj["spec"] is not obj["spec"]


def test_allow_limits_coercion_to_chosen_fields(schemas: KubeSchemas) -> None:
    obj = deployment(env=[{"name": "A", "value": 1}, {"name": "B", "value": 2}])
    coerced = schemas.coerce(obj, allow=lambda segments: segments[-2] == 1)
    env = coerced.obj["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["value"] for e in env] == [1, "2"]


def test_an_unknown_kind_is_returned_as_is(schemas: KubeSchemas) -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"value": 3}}
    assert schemas.coerce(obj).obj is obj


scalars = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)


@given(values=st.lists(scalars, min_size=1, max_size=4))
def test_any_scalar_env_values_validate_once_coerced(values: list[Any]) -> None:
    schemas = _SCHEMAS
    env = [{"name": f"V{i}", "value": v} for i, v in enumerate(values)]
    coerced = schemas.coerce(deployment(env=env))
    assert schemas.validate(coerced.obj).ok
    assert len(coerced.coercions) == sum(not isinstance(v, str) for v in values)


_SCHEMAS = KubeSchemas.builtin()
