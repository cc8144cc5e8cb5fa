"""The generated CRDs in a real kube-apiserver: it refuses non-structural schemas, so an
install that reaches Established proves the conversion; then the server itself defaults
and validates CRs with the converted schema, and must agree with the engine.

CRD names are fixed by group and plural and other tests install the same kinds (the
stateful example's NotesApp, with a free-form schema): each test deletes the CRD first,
waits until it is gone, installs its own and deletes it again in ``finally``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from test_kube_cluster import CRD_API, install_crd, new_namespace

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import ControllerSpec
from oper8d.bundle.spec_schema import apply_defaults
from oper8d.cluster.kube import KubeCluster
from oper8d.errors import ClusterError
from oper8d.manifests import crd_for, temporary_patch_crd

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"
CRD_KIND = "CustomResourceDefinition"


@dataclass(frozen=True)
class Case:
    """An example bundle, a spec that leaves defaulted fields out, what the server must
    fill in, and a spec its schema rejects at ``bad_field``."""

    example: str
    bare: dict[str, Any]
    filled: dict[str, Any]
    bad: dict[str, Any] = field(default_factory=dict)
    bad_field: str = ""


CASES = [
    Case(
        "webapp",
        bare={"image": "nginx:1.27"},
        filled={
            "replicas": 2,
            "port": 8080,
            "version": "1.0.0",
            "ingress": {"enabled": False, "host": "webapp.example.com"},
            "autoscaling": {"enabled": True, "maxReplicas": 5, "cpuPercent": 80},
        },
        bad={"image": "nginx:1.27", "replicas": 0},
        bad_field="spec.replicas",
    ),
    Case(
        "stateful",
        bare={"version": "2.1.0"},
        filled={"replicas": 2, "database": {"storage": "1Gi", "image": "postgres:16"}},
        bad={"version": 2},
        bad_field="spec.version",
    ),
    Case(
        "fanout",
        bare={"workers": [{"name": "ingest"}]},
        filled={"queue": "jobs", "workers": [{"name": "ingest", "replicas": 1}]},
        bad={"workers": [{"name": "Not_A_Label"}]},
        bad_field="spec.workers[0].name",
    ),
]


# -- helpers ---------------------------------------------------------------------------


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s)


def example(name: str) -> ControllerSpec:
    (controller,) = load_bundle(EXAMPLES / name).controllers
    return controller


def install_fresh(k8s: client.ApiClient, cluster: KubeCluster, body: dict[str, Any]) -> None:
    """Install ``body`` in place of any CRD of the same name, and wait until Established."""
    remove_crd(k8s, cluster, body)
    install_crd(k8s, cluster, body)


def remove_crd(
    k8s: client.ApiClient, cluster: KubeCluster, body: dict[str, Any], timeout: float = 90.0
) -> None:
    """Delete the CRD named like ``body`` and watch until it is gone. Custom resources left
    with finalizers (no operator runs here to remove them) are released so it can go."""
    name = body["metadata"]["name"]
    if not cluster.delete(CRD_API, CRD_KIND, name):
        return
    spec = body["spec"]
    api_version = f"{spec['group']}/{spec['versions'][0]['name']}"
    release_finalizers(cluster, api_version, spec["names"]["kind"])
    ext = client.ApiextensionsV1Api(k8s)
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        found = ext.list_custom_resource_definition(field_selector=f"metadata.name={name}")
        if not found.items:
            return
        stream = watch.Watch().stream(
            ext.list_custom_resource_definition,
            field_selector=f"metadata.name={name}",
            resource_version=found.metadata.resource_version,
            timeout_seconds=max(1, int(min(remaining, 10))),
        )
        try:
            if any(event["type"] == "DELETED" for event in stream):
                return
        finally:
            stream.close()
        release_finalizers(cluster, api_version, spec["names"]["kind"])
    raise AssertionError(f"CRD {name} still there {timeout}s after its deletion")


def release_finalizers(cluster: KubeCluster, api_version: str, kind: str) -> None:
    try:
        leftovers = cluster.list(api_version, kind)
    except ClusterError:
        return  # the kind is already gone
    for obj in leftovers:
        if obj["metadata"].get("finalizers"):
            obj["metadata"]["finalizers"] = []
            try:
                cluster.update(obj)
            except ClusterError as err:
                if err.status not in (404, 409):
                    raise


def custom_resource(
    controller: ControllerSpec, name: str, namespace: str, spec: dict[str, Any] | None
) -> dict[str, Any]:
    resource = controller.resource
    body: dict[str, Any] = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "namespace": namespace},
    }
    if spec is not None:
        body["spec"] = spec
    return body


def refusal(cluster: KubeCluster, body: dict[str, Any]) -> ClusterError:
    """The error creating ``body`` raises. A POST, not an apply: server-side apply turns
    a value of the wrong type into a 500 ("failed to create typed patch object")."""
    with pytest.raises(ClusterError) as info:
        cluster.create(body, field_manager="test")
    return info.value


def table_of(k8s: client.ApiClient, controller: ControllerSpec, namespace: str) -> dict[str, Any]:
    """``kubectl get``'s view of the kind: the server-side Table with the printer columns."""
    resource = controller.resource
    _, url, headers, _, _ = k8s.param_serialize(
        "GET",
        f"/apis/{resource.group}/{resource.version}/namespaces/{namespace}/{resource.plural}",
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        auth_settings=["BearerToken"],
    )
    response = k8s.rest_client.request("GET", url, headers=headers)
    return json.loads(response.read())


# -- the example bundles ---------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.example for case in CASES])
def test_an_example_crd_installs_and_the_server_defaults_and_validates_its_crs(
    k8s: client.ApiClient, cluster: KubeCluster, case: Case
) -> None:
    controller = example(case.example)
    body = crd_for(controller)
    install_fresh(k8s, cluster, body)
    ns = new_namespace(cluster)
    try:
        for sample in sorted((EXAMPLES / case.example / "samples").glob("*.yaml")):
            cr = yaml.safe_load(sample.read_text())
            cr["metadata"] = {"name": sample.stem, "namespace": ns}
            created = cluster.apply(cr, field_manager="test")
            assert created["spec"] == apply_defaults(cr["spec"], controller.resource.schema)

        bare = cluster.apply(
            custom_resource(controller, "bare", ns, case.bare), field_manager="test"
        )
        for key, value in case.filled.items():
            assert bare["spec"][key] == value
        assert bare["spec"] == apply_defaults(case.bare, controller.resource.schema)

        invalid = refusal(cluster, custom_resource(controller, "invalid", ns, case.bad))
        assert invalid.status == 422
        assert case.bad_field in str(invalid)

        without_spec = refusal(cluster, custom_resource(controller, "empty", ns, None))
        assert without_spec.status == 422
        assert "spec" in str(without_spec)
    finally:
        cluster.delete("v1", "Namespace", ns)
        remove_crd(k8s, cluster, body)


def test_the_server_takes_only_the_config_overrides_the_bundle_declares(
    k8s: client.ApiClient, cluster: KubeCluster
) -> None:
    """webapp declares ``logLevel`` (an enum) in ``resource.configSchema``; stateful
    declares nothing, so its CRD takes no override at all."""
    webapp, stateful = example("webapp"), example("stateful")
    crds = [crd_for(webapp), crd_for(stateful)]
    for body in crds:
        install_fresh(k8s, cluster, body)
    ns = new_namespace(cluster)
    try:
        spec = {"image": "nginx:1.27"}
        ok = custom_resource(webapp, "ok", ns, spec)
        ok["configOverrides"] = {"logLevel": "debug", "networkPolicy": False}
        created = cluster.create(ok, field_manager="test")
        assert created["configOverrides"] == {"logLevel": "debug"}  # the undeclared key pruned

        loud = custom_resource(webapp, "loud", ns, spec)
        loud["configOverrides"] = {"logLevel": "loud"}
        refused = refusal(cluster, loud)
        assert refused.status == 422 and "configOverrides.logLevel" in str(refused)

        notes = custom_resource(stateful, "notes", ns, {"version": "2.1.0"})
        notes["configOverrides"] = {"dbUser": "postgres"}
        refused = refusal(cluster, notes)
        assert refused.status == 422 and "configOverrides" in str(refused)
    finally:
        cluster.delete("v1", "Namespace", ns)
        for body in crds:
            remove_crd(k8s, cluster, body)


def test_kubectl_get_shows_readiness_version_and_age_of_a_cr(
    k8s: client.ApiClient, cluster: KubeCluster
) -> None:
    controller = example("webapp")
    body = crd_for(controller)
    install_fresh(k8s, cluster, body)
    ns = new_namespace(cluster)
    try:
        cr = custom_resource(controller, "hello", ns, {"image": "nginx:1.27"})
        cluster.apply(cr, field_manager="test")
        table = table_of(k8s, controller, ns)
    finally:
        cluster.delete("v1", "Namespace", ns)
        remove_crd(k8s, cluster, body)
    names = [column["name"] for column in table["columnDefinitions"]]
    assert names == ["Name", "Ready", "Reason", "Version", "Age"]
    (row,) = table["rows"]
    assert row["cells"][0] == "hello"
    assert row["cells"][3] == "1.0.0"  # the schema default of spec.version


# -- JSON Schema that needs converting ------------------------------------------------

KITCHEN_SINK = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "$defs": {"port": {"type": "integer", "minimum": 1, "maximum": 65535, "examples": [80]}},
    "properties": {
        "port": {"$ref": "#/$defs/port", "default": 8080},
        "mode": {"const": "fast", "default": "fast"},
        "size": {"type": ["integer", "string"]},
        "note": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "source": {
            "type": "object",
            "oneOf": [
                {"properties": {"git": {"type": "string"}}, "required": ["git"]},
                {"properties": {"image": {"type": "string"}}, "required": ["image"]},
            ],
        },
        "extra": {"type": "object"},
    },
}


def test_json_schema_with_refs_unions_and_sets_installs_and_validates_as_written(
    k8s: client.ApiClient, cluster: KubeCluster
) -> None:
    webapp = example("webapp")
    resource = replace(
        webapp.resource,
        group=f"k{uuid.uuid4().hex[:8]}.oper8d.io",
        kind="Kitchen",
        plural="kitchens",
        short_names=(),
        schema=KITCHEN_SINK,
    )
    controller = replace(webapp, resource=resource)
    body = crd_for(controller)
    install_fresh(k8s, cluster, body)
    ns = new_namespace(cluster)
    try:
        # nothing is required: a CR without spec gets {} and the schema's defaults
        empty = cluster.apply(custom_resource(controller, "empty", ns, None), field_manager="test")
        assert empty["spec"] == {"port": 8080, "mode": "fast"}
        assert empty["spec"] == apply_defaults({}, KITCHEN_SINK)

        spec = {
            "size": "50%",
            "note": None,
            "tags": ["a", "b"],
            "source": {"git": "https://example.com/repo"},
            "extra": {"any": {"thing": [1]}},
            "undeclared": True,
        }
        # a POST: server-side apply refuses undeclared fields instead of pruning them
        created = cluster.create(
            custom_resource(controller, "kept", ns, spec), field_manager="test"
        )
        kept = created["spec"]
        assert kept["size"] == "50%" and kept["note"] is None and kept["tags"] == ["a", "b"]
        assert kept["extra"] == {"any": {"thing": [1]}}
        assert "undeclared" not in kept  # pruned: what additionalProperties: false meant

        for name, bad, where in [
            ("both", {"source": {"git": "g", "image": "i"}}, "oneOf"),
            ("dupes", {"tags": ["a", "a"]}, "spec.tags[1]"),
            ("slow", {"mode": "slow"}, "spec.mode"),
            ("port", {"port": 0}, "spec.port"),
            ("float", {"size": 1.5}, "spec.size"),
        ]:
            error = refusal(cluster, custom_resource(controller, name, ns, bad))
            assert error.status == 422, name
            assert where in str(error), name
    finally:
        cluster.delete("v1", "Namespace", ns)
        remove_crd(k8s, cluster, body)


# -- TemporaryPatch ----------------------------------------------------------------------


def test_the_temporary_patch_crd_installs_and_checks_what_a_patch_names(
    k8s: client.ApiClient, cluster: KubeCluster
) -> None:
    body = temporary_patch_crd()
    install_fresh(k8s, cluster, body)
    ns = new_namespace(cluster)

    def patch(patch_name: str, /, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "oper8.org/v1",
            "kind": "TemporaryPatch",
            "metadata": {"name": patch_name, "namespace": ns},
            "spec": spec,
        }

    target = {"apiVersion": "demo.oper8d.io/v1alpha1", "kind": "WebApp", "name": "hello"}
    try:
        strategic = cluster.apply(
            patch("scale", **target, patch={"app": {"deployment": {"spec": {"replicas": 5}}}}),
            field_manager="test",
        )
        assert strategic["spec"]["patchType"] == "patchStrategicMerge"
        assert strategic["spec"]["patch"] == {"app": {"deployment": {"spec": {"replicas": 5}}}}

        operations = [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]
        json6902 = cluster.apply(
            patch("label", **target, patchType="patchJson6902", patch=operations),
            field_manager="test",
        )
        assert json6902["spec"]["patch"] == operations

        no_name = refusal(cluster, patch("anonymous", apiVersion="v1", kind="WebApp"))
        assert no_name.status == 422 and "spec.name" in str(no_name)
        bad_type = refusal(cluster, patch("merge", **target, patchType="merge"))
        assert bad_type.status == 422 and "spec.patchType" in str(bad_type)
    finally:
        cluster.delete("v1", "Namespace", ns)
        remove_crd(k8s, cluster, body)
