"""Where ``KubeSchemas.validate`` and the in-memory cluster used to differ from a real
apiserver (an outside tester's report): a Service without ports, finalizer names and
duplicates, an annotation key with an upper-case prefix, a null ``spec``. The verdicts
are in ``kubeschema_corpus.FIDELITY_CASES`` (checked against a real apiserver by
tests/integration/test_kubeschema_real.py); here: the messages, custom resources, and
the in-memory cluster's answers.
"""

from __future__ import annotations

from typing import Any

import pytest

from oper8d.cluster.memory import MemoryCluster, admission
from oper8d.errors import ClusterError
from oper8d.kubeschema import KubeSchemas

CRD = {
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
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    },
}


@pytest.fixture(scope="module")
def schemas() -> KubeSchemas:
    return KubeSchemas.builtin().with_crds([CRD])


def _configmap(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "conf", "namespace": "default", **meta},
    }


def _widget(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "test.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", **meta},
    }


def _service(spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


def _lines(schemas: KubeSchemas, obj: dict[str, Any]) -> list[str]:
    return [str(f) for f in schemas.validate(obj).errors]


def test_finalizer_mistakes_use_the_apiservers_words(schemas: KubeSchemas) -> None:
    assert _lines(schemas, _configmap(finalizers=["foo"])) == [
        'metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer '
        "name nor is it fully qualified"
    ]
    assert _lines(schemas, _configmap(finalizers=["orphan", "foregroundDeletion"])) == [
        'metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan '
        "and foregroundDeletion cannot be both set"
    ]
    (upper,) = _lines(schemas, _configmap(finalizers=["Example.com/x"]))
    assert upper.startswith('metadata.finalizers[0]: Invalid value: "Example.com/x": prefix part')
    assert _lines(schemas, _configmap(finalizers=["example.com/a", "example.com/a"])) == [
        'metadata.finalizers[1]: Duplicate value: duplicate entries for key [="example.com/a"] '
        "(server-side apply refuses them)"
    ]


@pytest.mark.parametrize(
    ("finalizers", "ok"),
    [
        (["foo"], True),  # the apiserver only warns: prefer a domain-qualified name
        (["orphan"], True),
        (["example.com/x"], True),
        (["Example.com/x"], False),
        (["a b"], False),
        (["orphan", "foregroundDeletion"], False),
        (["example.com/a", "example.com/a"], False),  # server-side apply refuses it
    ],
)
def test_a_custom_resource_takes_any_qualified_finalizer_name(
    schemas: KubeSchemas, finalizers: list[str], ok: bool
) -> None:
    assert schemas.validate(_widget(finalizers=finalizers)).ok is ok


@pytest.mark.parametrize("spec", [None, {}, {"ports": []}, {"type": "NodePort", "ports": None}])
def test_a_service_without_ports_is_refused_as_the_apiserver_refuses_it(
    schemas: KubeSchemas, spec: Any
) -> None:
    assert _lines(schemas, _service(spec)) == ["spec.ports: Required value"]


def test_a_service_with_a_null_spec_is_a_clear_refusal_in_the_memory_cluster(
    schemas: KubeSchemas,
) -> None:
    for write in ("create", "apply"):
        cluster = MemoryCluster(schemas=schemas)
        with pytest.raises(ClusterError) as refused:
            if write == "create":
                cluster.create(_service(None))
            else:
                cluster.apply(_service(None), field_manager="t")
        assert refused.value.status == 422
        assert "spec.ports: Required value" in refused.value.message


def test_mutate_takes_a_null_service_spec_as_absent() -> None:
    new = _service(None)
    admission.mutate(new, None, lambda: "10.0.0.9")
    assert new["spec"] == {"clusterIP": "10.0.0.9", "clusterIPs": ["10.0.0.9"]}


def test_an_annotation_key_with_an_upper_case_prefix_is_stored(schemas: KubeSchemas) -> None:
    cluster = MemoryCluster(schemas=schemas)
    cluster.apply(_configmap(annotations={"Example.COM/Key": "x"}), field_manager="t")
    stored = cluster.get("v1", "ConfigMap", "conf", "default")
    assert stored is not None and stored["metadata"]["annotations"] == {"Example.COM/Key": "x"}
    with pytest.raises(ClusterError, match=r"metadata\.labels"):
        cluster.apply(_configmap(labels={"Example.COM/Key": "x"}), field_manager="t")
