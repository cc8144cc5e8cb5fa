"""Rendered objects checked against the shipped Kubernetes schemas, as the apiserver would.

The corpus (kubeschema_corpus.py) is the same the differential test sends to a real
apiserver; here each rejection must also name the right field.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubeschema_corpus import CASES, Case, deployment, rendered_examples

from oper8d.kubeschema import KubeSchemas, SchemaDataError, shipped_versions


@pytest.fixture(scope="module")
def schemas() -> KubeSchemas:
    return KubeSchemas.builtin()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_mistake_is_found_at_its_field_and_valid_objects_pass(
    schemas: KubeSchemas, case: Case
) -> None:
    result = schemas.validate(case.obj)
    if case.rejected:
        assert case.path in [f.path for f in result.errors], result
    else:
        assert result.ok, result
    assert result.warning is None


@pytest.mark.parametrize("name_obj", rendered_examples(), ids=[n for n, _ in rendered_examples()])
def test_every_object_the_examples_render_is_valid(
    schemas: KubeSchemas, name_obj: tuple[str, dict[str, Any]]
) -> None:
    result = schemas.validate(name_obj[1])
    assert result.ok and result.warning is None, result


def test_messages_read_like_the_apiservers(schemas: KubeSchemas) -> None:
    obj = deployment(env=[{"name": "N", "value": 3}], imagePullPolicy="always")
    obj["spec"]["replica"] = 3
    lines = [str(f) for f in schemas.validate(obj).errors]
    container = "spec.template.spec.containers[0]"
    assert sorted(lines) == [
        'spec.replica: unknown field "spec.replica"; did you mean "replicas"?',
        f"{container}.env[0].value: Invalid value: 3: must be of type string, not integer",
        f'{container}.imagePullPolicy: Unsupported value: "always": supported values: '
        '"Always", "IfNotPresent", "Never"',
    ]


def test_segments_walk_the_object_to_the_bad_value(schemas: KubeSchemas) -> None:
    obj = deployment(env=[{"name": "N", "value": 3}])
    (finding,) = schemas.validate(obj).errors
    node: Any = obj
    for part in finding.segments:
        node = node[part]
    assert node == 3


def test_an_unserved_version_names_the_served_one(schemas: KubeSchemas) -> None:
    obj = {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "x"}}
    (finding,) = schemas.validate(obj).errors
    assert finding.message == (
        'no matches for kind "Deployment" in version "apps/v1beta1": '
        "Deployment is served as apps/v1"
    )


def test_a_misspelt_builtin_kind_is_an_error_with_a_suggestion(schemas: KubeSchemas) -> None:
    result = schemas.validate({"apiVersion": "v1", "kind": "Servce", "metadata": {"name": "x"}})
    assert [f.message for f in result.errors] == [
        'no matches for kind "Servce" in version "v1"; did you mean "Service"?'
    ]


def test_a_kind_without_a_schema_is_one_warning_not_an_error(schemas: KubeSchemas) -> None:
    obj = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "x"},
        "spec": {"anything": 1},
    }
    result = schemas.validate(obj)
    assert result.ok
    assert result.warning is not None and "ServiceMonitor" in result.warning
    assert "--crds" in result.warning


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "apiVersion"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "kind"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "metadata.name"),
        ({"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "x"}}, "apiVersion"),
    ],
)
def test_identity_fields_are_required(schemas: KubeSchemas, obj: dict[str, Any], path: str) -> None:
    assert path in [f.path for f in schemas.validate(obj).errors]


def test_generate_name_stands_in_for_name(schemas: KubeSchemas) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cfg-"}}
    assert schemas.validate(obj).ok


def test_free_form_fields_take_anything(schemas: KubeSchemas) -> None:
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "r"},
        "revision": 1,
        "data": {"spec": {"anything": [1, "two", {"three": None}]}},
    }
    assert schemas.validate(revision).ok


def test_annotation_keys_and_total_size_are_checked(schemas: KubeSchemas) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "annotations": {"bad key": "v", "big": "x" * 300_000}},
    }
    paths = [f.path for f in schemas.validate(obj).errors]
    assert paths == ["metadata.annotations[bad key]", "metadata.annotations"]


def test_a_user_schema_file_replaces_the_shipped_set(tmp_path: Any) -> None:
    bad = tmp_path / "k8s.json.gz"
    bad.write_bytes(b"not gzip, not json")
    with pytest.raises(SchemaDataError, match="not a kubeschema data file"):
        KubeSchemas.load(bad)
    with pytest.raises(SchemaDataError, match=r"shipped: v1\.34\.4"):
        KubeSchemas.builtin("v1.2.3")


def test_the_shipped_version_is_the_test_environments() -> None:
    assert shipped_versions() == ["v1.34.4"]
    assert KubeSchemas.builtin().kubernetes_version == "v1.34.4"


def test_kind_info_gives_scope_and_plural(schemas: KubeSchemas) -> None:
    info = schemas.kind_info("rbac.authorization.k8s.io/v1", "ClusterRole")
    assert info is not None and (info.plural, info.namespaced) == ("clusterroles", False)
    assert schemas.kind_info("extensions/v1beta1", "Ingress") is None


def test_importing_kubeschema_loads_no_kubernetes_client() -> None:
    code = (
        "import sys, oper8d.kubeschema as k; k.KubeSchemas.builtin().validate({}); "
        "print(any(m == 'kubernetes' or m.startswith('kubernetes.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["name", "value", "spec", "x", "ports", "1"]), children, max_size=3
        )
    ),
    max_leaves=8,
)
_SHARED = KubeSchemas.builtin()
_PLACES = [
    ("spec",),
    ("spec", "template", "spec"),
    ("spec", "template", "spec", "containers", 0),
    ("spec", "template", "spec", "containers", 0, "env"),
    ("spec", "template", "spec", "containers", 0, "ports", 0, "name"),
    ("metadata", "labels"),
    ("metadata",),
]


@given(place=st.sampled_from(_PLACES), value=json_values)
def test_any_value_anywhere_gives_findings_never_an_exception(
    place: tuple[Any, ...], value: Any
) -> None:
    obj = deployment()
    parent: Any = obj
    for part in place[:-1]:
        parent = parent[part]
    parent[place[-1]] = value
    coerced = _SHARED.coerce(obj)
    after = _SHARED.validate(coerced.obj)
    _SHARED.validate(obj)
    coerced_paths = {c.path for c in coerced.coercions}
    retyped = [f for f in after.errors if f.path in coerced_paths]
    assert not [f for f in retyped if "must be of type" in f.message]


def test_the_cluster_scoped_kinds_are_those_of_the_shipped_schemas() -> None:
    from oper8d.kinds import CLUSTER_SCOPED, group_of

    schemas = KubeSchemas.builtin()
    served = {
        (group_of(api_version), kind)
        for api_version, kind in schemas.served_kinds()
        if not schemas.kind_info(api_version, kind).namespaced  # type: ignore[union-attr]
    }
    assert served == CLUSTER_SCOPED


def test_a_custom_kind_named_like_a_cluster_scoped_one_is_namespaced() -> None:
    from oper8d.kinds import is_cluster_scoped

    assert is_cluster_scoped("rbac.authorization.k8s.io/v1", "ClusterRole")
    assert not is_cluster_scoped("example.com/v1", "ClusterRole")
    assert not is_cluster_scoped("example.com/v1", "Namespace")


def test_checking_built_in_kinds_loads_no_cel() -> None:
    # CEL rules belong to custom kinds: a bundle of built-in kinds never pays for them
    code = (
        "import sys, oper8d.kubeschema as k; "
        "k.KubeSchemas.builtin().validate({'apiVersion': 'v1', 'kind': 'ConfigMap', "
        "'metadata': {'name': 'a'}}); "
        "cel = ('oper8d.kubeschema.cel', 'cel_expr_python'); "
        "print(any(m.startswith(cel) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
