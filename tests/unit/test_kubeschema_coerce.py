"""Types as the author means them: a number or a boolean where the schema says string
becomes that string; every other mismatch is left for ``validate`` to report."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubeschema_corpus import CASES, deployment, rendered_examples

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


# -- checked(): coerce then validate, with the coercion walk skipped when it cannot matter


def _widget_schemas() -> KubeSchemas:
    """The built-in kinds plus a custom kind whose integers take whole floats."""
    spec = {
        "type": "object",
        "properties": {
            "size": {"type": "integer", "minimum": 1},
            "name": {"type": "string"},
            "port": {"x-kubernetes-int-or-string": True},
            "items": {"type": "array", "items": {"type": "integer"}},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.test.io"},
        "spec": {
            "group": "test.io",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }
    return _SCHEMAS.with_crds([crd])


_WITH_WIDGETS = _widget_schemas()
_WIDGET = {
    "apiVersion": "test.io/v1",
    "kind": "Widget",
    "metadata": {"name": "w", "namespace": "default"},
    "spec": {"size": 3, "name": "w", "port": 80, "items": [1, 2]},
}
_CORPUS = [
    *(case.obj for case in CASES),
    *(doc for _name, doc in rendered_examples()),
    _WIDGET,
    {**_WIDGET, "spec": {"size": 3.0}},
]


def _general(schemas: KubeSchemas, obj: Any) -> tuple[str, Any]:
    coerced = schemas.coerce(obj).obj
    return repr(coerced), schemas.validate(coerced)


def _fast(schemas: KubeSchemas, obj: Any) -> tuple[str, Any]:
    # (repr: 3.0 == 3 in Python, but not in what the API server is sent)
    coerced, found = schemas.checked(obj)
    return repr(coerced), found


@pytest.mark.parametrize("obj", _CORPUS)
def test_checked_is_coerce_then_validate_on_the_corpus(obj: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    assert _fast(_WITH_WIDGETS, obj) == _general(_WITH_WIDGETS, obj)
    assert obj == before


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (maps by key, lists by index), the root left out."""
    if not isinstance(value, dict | list):
        return []
    out: list[tuple[Any, ...]] = []
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        out += [(*at, key), *_paths(item, (*at, key))]
    return out


def _replaced(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


_VALUES = st.one_of(
    scalars,
    st.integers(min_value=-3, max_value=70000).map(float),  # whole floats
    st.from_regex(r"[0-9]{1,6}", fullmatch=True),  # a port as digits
    st.none(),
    st.just({}),
    st.just([]),
)


@given(data=st.data())
def test_checked_is_coerce_then_validate_with_any_value_anywhere(data: st.DataObject) -> None:
    obj = data.draw(st.sampled_from(_CORPUS))
    path = data.draw(st.sampled_from(_paths(obj)))
    changed = _replaced(obj, path, data.draw(_VALUES))
    assert _fast(_WITH_WIDGETS, changed) == _general(_WITH_WIDGETS, changed)
