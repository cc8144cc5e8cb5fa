"""The apiserver's cross-field rules, offline: each mistake is named at its field in the
apiserver's words; the corpus (kubeschema_corpus.SEMANTIC_CASES) holds each rule's
verdict as a real apiserver gave it."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from kubeschema_corpus import SEMANTIC_CASES, deployment
from test_kubeschema_crds import crd, widget

from oper8d.kubeschema import KubeSchemas
from oper8d.kubeschema.podspec import quantity_value
from oper8d.kubeschema.semantic import host_problem

P = "spec.template.spec.containers[0]"


@pytest.fixture(scope="module")
def schemas() -> KubeSchemas:
    return KubeSchemas.builtin()


def messages(schemas: KubeSchemas, obj: dict[str, Any]) -> dict[str, str]:
    return {f.path: f.message for f in schemas.validate(obj).errors}


def test_every_semantic_case_is_found_at_its_field(schemas: KubeSchemas) -> None:
    for case in SEMANTIC_CASES:
        found = messages(schemas, case.obj)
        assert (case.path in found) if case.rejected else not found, (case.name, found)


def test_a_pod_template_label_is_checked_like_the_objects_own(schemas: KubeSchemas) -> None:
    obj = deployment()
    obj["spec"]["template"]["metadata"]["labels"]["bad key!"] = "x"
    found = messages(schemas, obj)
    message = found["spec.template.metadata.labels[bad key!]"]
    assert message.startswith('Invalid value: "bad key!": name part must consist of')


def test_the_pod_template_metadata_of_each_workload_is_found(schemas: KubeSchemas) -> None:
    from oper8d.kubeschema.semantic import SemanticChecks

    checks = SemanticChecks(schemas.definitions)
    apps = "io.k8s.api.apps.v1."
    assert checks.meta_positions(apps + "Deployment") == (("spec", "template", "metadata"),)
    cron = checks.meta_positions("io.k8s.api.batch.v1.CronJob")
    assert cron == (("spec", "jobTemplate", "spec", "template", "metadata"),)
    assert checks.meta_positions("io.k8s.api.core.v1.ConfigMap") == ()


def _positions_by_full_walk(defs: Any, name: str) -> set[tuple[Any, ...]]:
    """Where ObjectMeta sits below definition ``name``, walking every property (no leaf
    skipped), for the checked owners (pod templates) only: ``meta_positions``' answer."""
    from oper8d.kubeschema.semantic import _CHECKED_OWNERS, OBJECT_META

    found: set[tuple[Any, ...]] = set()

    def walk(schema: Any, path: tuple[Any, ...], owner: str | None, depth: int) -> None:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref == OBJECT_META:
                if owner in _CHECKED_OWNERS:
                    found.add(path)
            elif depth < 12:
                walk(defs.get(ref) or {}, path, ref, depth + 1)
            return
        for one in schema.get("allOf") or ():
            walk(one, path, owner, depth)
        for key, sub in (schema.get("properties") or {}).items():
            walk(sub, (*path, key), owner, depth)
        if isinstance(schema.get("items"), dict):
            walk(schema["items"], (*path, -1), owner, depth)

    walk(defs[name], (), name, 0)
    return found - {("metadata",)}


def test_embedded_metadata_positions_match_a_full_walk(schemas: KubeSchemas) -> None:
    from oper8d.kubeschema.semantic import SemanticChecks

    checks = SemanticChecks(schemas.definitions)
    for api_version, kind in schemas.served_kinds():
        source = schemas.raw_schema(api_version, kind)
        name = next((n for n, d in schemas.definitions.items() if d is source), None)
        if name is None:
            continue
        expected = _positions_by_full_walk(schemas.definitions, name)
        assert set(checks.meta_positions(name)) == expected, name


def test_duplicate_map_keys_are_named_as_server_side_apply_names_them(
    schemas: KubeSchemas,
) -> None:
    obj = deployment(ports=[{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}])
    message = messages(schemas, obj)[f"{P}.ports[1]"]
    assert 'duplicate entries for key [containerPort=80,protocol="TCP"]' in message
    env = deployment(env=[{"name": "A", "value": "1"}, {"name": "A"}])
    assert 'key [name="A"]' in messages(schemas, env)[f"{P}.env[1]"]


def test_a_job_needs_a_restart_policy_other_than_always(schemas: KubeSchemas) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }
    where = "spec.template.spec.restartPolicy"
    assert messages(schemas, job)[where].startswith("Required value")
    job["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    unsupported = 'Unsupported value: "Always": supported values: "OnFailure", "Never"'
    assert messages(schemas, job)[where] == unsupported


def test_container_mistakes_use_the_apiservers_words(schemas: KubeSchemas) -> None:
    obj = deployment(
        image="",
        env=[{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
        livenessProbe={"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}},
        resources={"requests": {"cpu": "1500m"}, "limits": {"cpu": 1}},
        volumeMounts=[{"name": "cache", "mountPath": "/cache"}],
    )
    assert messages(schemas, obj) == {
        f"{P}.image": "Required value",
        f"{P}.env[0].valueFrom": (
            'Invalid value: "": may not be specified when `value` is not empty'
        ),
        f"{P}.livenessProbe.tcpSocket": "Forbidden: may not specify more than 1 handler type",
        f"{P}.resources.requests[cpu]": 'Invalid value: "1500m": must be less than or equal to '
        "cpu limit of 1",
        f"{P}.volumeMounts[0].name": 'Not found: "cache"',
    }


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", Fraction(1, 2)), ("1Gi", 2**30), ("1e3", 1000), ("2k", 2000), (0.25, Fraction(1, 4))],
)
def test_quantities_are_compared_by_value(text: Any, value: Fraction) -> None:
    assert quantity_value(text) == value


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("shop.acme.test", True),
        ("*.acme.test", True),
        ("Shop.acme.test", False),
        ("acme.test:8080", False),
        ("10.0.0.1", False),
        ("*", False),
        ("a.*.test", False),
    ],
)
def test_ingress_hosts(host: str, ok: bool) -> None:
    assert (host_problem(host) is None) == ok


def test_hpa_bounds(schemas: KubeSchemas) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 8,
            "maxReplicas": 4,
        },
    }
    expected = "Invalid value: 4: must be greater than or equal to `minReplicas`"
    assert messages(schemas, hpa) == {"spec.maxReplicas": expected}


def test_a_whole_float_becomes_the_integer_the_apiserver_returns(schemas: KubeSchemas) -> None:
    obj = deployment()
    obj["spec"]["replicas"] = 3.0
    assert not schemas.validate(obj).ok  # the Go decoder refuses 3.0 for an int32
    coerced = schemas.coerce(obj)
    assert coerced.obj["spec"]["replicas"] == 3
    assert type(coerced.obj["spec"]["replicas"]) is int
    assert schemas.validate(coerced.obj).ok
    obj["spec"]["replicas"] = 2.5
    assert schemas.coerce(obj).coercions == ()


def test_a_custom_resource_takes_a_whole_float_for_an_integer() -> None:
    spec = {"type": "object", "properties": {"size": {"type": "integer"}}}
    custom = KubeSchemas.builtin().with_crds([crd(spec)])
    assert custom.validate(widget({"size": 3.0})).ok
    assert not custom.validate(widget({"size": 2.5})).ok
    assert custom.coerce(widget({"size": 3.0})).obj["spec"]["size"] == 3
