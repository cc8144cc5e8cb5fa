"""Custom kinds: schemas from CRD objects (the bundle's own, files given with --crds) and the
structural-schema rules the apiserver applies to custom resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from oper8d.bundle.compile import load_bundle
from oper8d.kubeschema import CRDError, KubeSchemas, load_crd_dir
from oper8d.manifests import crd_for
from oper8d.manifests.package import InstallOptions, operator_manifests

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"


def crd(spec: dict[str, Any], *, served: bool = True, group: str = "test.io") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": served,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


def widget(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "test.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", **meta},
        "spec": spec,
    }


SPEC = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 10},
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
        "mode": {"type": "string", "enum": ["fast", "safe"]},
        "ratio": {"type": "number", "nullable": True},
        "port": {"x-kubernetes-int-or-string": True},
        "when": {"type": "string", "format": "date-time"},
        "address": {"type": "string", "format": "ipv4"},
        "blob": {"type": "string", "format": "byte"},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "routes": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "to": {"type": "string"}},
            },
        },
        "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "closed": {"type": "object"},
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        "either": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        },
    },
}


@pytest.fixture(scope="module")
def schemas() -> KubeSchemas:
    return KubeSchemas.builtin().with_crds([crd(SPEC)])


VALID = [
    {"size": 3},
    {"size": 3.0, "ratio": None},  # a whole float is an integer for custom resources
    {"size": 1, "port": 8080, "mode": "safe", "tags": ["a", "b"], "name": "abc"},
    {"size": 1, "port": "http", "when": "2024-01-02T03:04:05Z", "address": "10.0.0.1"},
    {"size": 1, "blob": "aGk=", "limits": {"cpu": 2}, "extra": {"any": {"thing": [1]}}},
    {"size": 1, "routes": [{"name": "a"}, {"name": "b", "to": "x"}], "either": {"a": "x"}},
    {"size": 1, "template": {"apiVersion": "v1", "kind": "Pod", "spec": {"x": 1}}},
]


@pytest.mark.parametrize("spec", VALID)
def test_valid_custom_resources_pass(schemas: KubeSchemas, spec: dict[str, Any]) -> None:
    result = schemas.validate(widget(spec))
    assert result.ok and result.warning is None, result


INVALID = [
    ({"sise": 3}, "spec.size"),  # required, and...
    ({"size": 3, "colour": "red"}, "spec.colour"),
    ({"size": 0}, "spec.size"),
    ({"size": "3"}, "spec.size"),
    ({"size": 2.5}, "spec.size"),
    ({"size": 1, "name": "ABC"}, "spec.name"),
    ({"size": 1, "name": "abcdefghij"}, "spec.name"),
    ({"size": 1, "mode": "slow"}, "spec.mode"),
    ({"size": 1, "port": 1.5}, "spec.port"),
    ({"size": 1, "when": "tomorrow"}, "spec.when"),
    ({"size": 1, "address": "10.0.0"}, "spec.address"),
    ({"size": 1, "blob": "not base64!"}, "spec.blob"),
    ({"size": 1, "tags": ["a", "a"]}, "spec.tags[1]"),
    ({"size": 1, "routes": [{"name": "a"}, {"name": "a"}]}, "spec.routes[1]"),
    ({"size": 1, "routes": [{"to": "x"}]}, "spec.routes[0].name"),
    ({"size": 1, "limits": {"cpu": "2"}}, "spec.limits[cpu]"),
    ({"size": 1, "closed": {"x": 1}}, "spec.closed.x"),
    ({"size": 1, "template": {"kind": "Pod"}}, "spec.template.apiVersion"),
    (
        {"size": 1, "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"nam": "x"}}},
        "spec.template.metadata.nam",
    ),
    ({"size": 1, "either": {"a": "x", "b": "y"}}, "spec.either"),
    ({"size": 1, "either": {}}, "spec.either"),
    ({"size": 1, "tags": [None]}, "spec.tags[0]"),
]


@pytest.mark.parametrize(("spec", "path"), INVALID, ids=[p for _, p in INVALID])
def test_invalid_custom_resources_name_the_field(
    schemas: KubeSchemas, spec: dict[str, Any], path: str
) -> None:
    assert path in [f.path for f in schemas.validate(widget(spec)).errors]


def test_a_custom_resource_has_object_meta(schemas: KubeSchemas) -> None:
    result = schemas.validate(widget({"size": 1}, labelz={}, labels={"a": "b c"}))
    assert sorted(f.path for f in result.errors) == ["metadata.labels[a]", "metadata.labelz"]


def test_an_unserved_version_of_a_known_group_is_an_error() -> None:
    schemas = KubeSchemas.builtin().with_crds([crd(SPEC, served=False)])
    (finding,) = schemas.validate(widget({"size": 1})).errors
    assert finding.message == 'no matches for kind "Widget" in version "test.io/v1"'


def test_a_version_without_schema_is_a_warning() -> None:
    bare = crd(SPEC)
    del bare["spec"]["versions"][0]["schema"]
    result = KubeSchemas.builtin().with_crds([bare]).validate(widget({"anything": 1}))
    assert result.ok and result.warning is not None


def test_an_old_v1beta1_crd_with_one_version_and_shared_schema_is_read() -> None:
    old = crd(SPEC)
    schema = old["spec"].pop("versions")[0]["schema"]
    old["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    old["spec"].update(version="v1", validation=schema)
    schemas = KubeSchemas.builtin().with_crds([old])
    assert schemas.validate(widget({"size": 1})).ok
    assert [f.path for f in schemas.validate(widget({"size": 1, "x": 1})).errors] == ["spec.x"]


def test_the_bundles_own_crd_checks_its_custom_resources() -> None:
    bundle = load_bundle(EXAMPLES / "webapp")
    schemas = KubeSchemas.builtin().with_crds(crd_for(c) for c in bundle.controllers)
    sample = yaml.safe_load((EXAMPLES / "webapp" / "samples" / "webapp.yaml").read_text())
    assert schemas.validate(sample).ok
    sample["spec"]["ingress"]["enabeld"] = True
    sample["spec"]["replicas"] = 0
    paths = sorted(f.path for f in schemas.validate(sample).errors)
    assert paths == ["spec.ingress.enabeld", "spec.replicas"]


def test_crd_files_are_read_from_a_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "widgets.yaml").write_text(
        yaml.safe_dump_all([{"apiVersion": "v1", "kind": "ConfigMap"}, crd(SPEC)])
    )
    other = crd(SPEC, group="other.io")
    (tmp_path / "list.json").write_text(yaml.safe_dump({"kind": "List", "items": [other]}))
    (tmp_path / "README.md").write_text("not a CRD")
    crds = load_crd_dir(tmp_path)
    assert [c["spec"]["group"] for c in crds] == ["other.io", "test.io"]
    schemas = KubeSchemas.builtin().with_crds(crds)
    assert schemas.kind_info("other.io/v1", "Widget") is not None


def test_a_crd_file_is_read_as_kubectl_reads_it(tmp_path: Path) -> None:
    """A plain ``=`` is a string to kubectl (prometheus-operator's AlertmanagerConfig CRD
    lists the matchers so), where PyYAML's safe loader stops; a date stays a string."""
    spec = {"type": "string", "enum": ["MATCHER", "2024-01-01"]}
    text = yaml.safe_dump(crd(spec)).replace("MATCHER", "=").replace("'2024-01-01'", "2024-01-01")
    (tmp_path / "widgets.yaml").write_text(text)
    schemas = KubeSchemas.builtin().with_crds(load_crd_dir(tmp_path))
    widget = {"apiVersion": "test.io/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert schemas.validate({**widget, "spec": "="}).ok
    assert schemas.validate({**widget, "spec": "2024-01-01"}).ok
    assert not schemas.validate({**widget, "spec": "=="}).ok


def test_a_broken_crd_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("kind: CustomResourceDefinition\nspec: [unclosed\n")
    with pytest.raises(CRDError, match=r"bad\.yaml:3"):
        load_crd_dir(tmp_path)
    with pytest.raises(CRDError, match="not a directory"):
        load_crd_dir(tmp_path / "missing")


def test_a_malformed_crd_object_is_named() -> None:
    broken = {"kind": "CustomResourceDefinition", "metadata": {"name": "x.io"}, "spec": {}}
    with pytest.raises(CRDError, match=r"CRD x\.io: spec\.group"):
        KubeSchemas.builtin().with_crds([broken])


@pytest.mark.parametrize("example", ["webapp", "stateful", "fanout"])
def test_the_examples_install_manifests_and_samples_are_valid(example: str) -> None:
    bundle = load_bundle(EXAMPLES / example)
    manifests = [m.obj for m in operator_manifests(bundle, InstallOptions())]
    crds = [m for m in manifests if m["kind"] == "CustomResourceDefinition"]
    schemas = KubeSchemas.builtin().with_crds(crds)
    samples = [
        doc
        for path in sorted((EXAMPLES / example / "samples").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
    ]
    for obj in [*manifests, *samples]:
        result = schemas.validate(obj)
        assert result.ok and result.warning is None, (obj["kind"], result)
