"""The shipped schema data: made from the apiserver's OpenAPI by ``compact``, small, and
complete enough that every served kind compiles."""

from __future__ import annotations

import gzip
import json
from importlib import resources
from typing import Any

from oper8d.kubeschema import KubeSchemas
from oper8d.kubeschema.compact import ServedResource, compact

REF = "#/components/schemas/"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


def _doc() -> dict[str, Any]:
    """A miniature of one group-version's /openapi/v3 document."""
    return {
        "components": {
            "schemas": {
                "io.k8s.api.demo.v1.Thing": {
                    "description": "A thing.",
                    "type": "object",
                    "x-kubernetes-group-version-kind": [
                        {"group": "demo", "version": "v1", "kind": "Thing"}
                    ],
                    "properties": {
                        "apiVersion": {"type": "string", "description": "Version."},
                        "kind": {"type": "string"},
                        "metadata": {"allOf": [{"$ref": REF + "meta.ObjectMeta"}], "default": {}},
                        "size": {"type": "integer", "format": "int32", "description": "Size."},
                        "port": {"allOf": [{"$ref": REF + INT_OR_STRING}]},
                        "mem": {"$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"},
                        "items": {
                            "type": "array",
                            "items": {"type": "string", "enum": ["a", "b"]},
                            "x-kubernetes-list-type": "set",
                        },
                    },
                },
                "meta.ObjectMeta": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Name."}},
                },
                INT_OR_STRING: {
                    "format": "int-or-string",
                    "oneOf": [{"type": "integer"}, {"type": "string"}],
                },
                "io.k8s.apimachinery.pkg.api.resource.Quantity": {
                    "oneOf": [{"type": "string"}, {"type": "number"}]
                },
                "io.k8s.api.demo.v1.Unused": {"type": "object"},
            }
        }
    }


def test_compact_keeps_what_validation_reads_and_drops_the_rest() -> None:
    data = compact(
        "v9.9.9",
        {"demo/v1": _doc()},
        [ServedResource("demo/v1", "Thing", "things", True)],
        extra_groups=["olddemo"],
    )
    assert data["kinds"] == [["demo/v1", "Thing", "io.k8s.api.demo.v1.Thing", "things", True]]
    assert data["groups"] == ["demo", "olddemo"]
    thing = data["defs"]["io.k8s.api.demo.v1.Thing"]
    assert thing == {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "meta.ObjectMeta"},
            "size": {"type": "integer", "format": "int32"},
            "port": {"$ref": "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
            "mem": {"$ref": "io.k8s.apimachinery.pkg.api.resource.Quantity"},
            "items": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "x-kubernetes-list-type": "set",
            },
        },
    }
    assert "io.k8s.api.demo.v1.Unused" not in data["defs"]
    assert data["defs"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "x-kubernetes-int-or-string": True
    }
    schemas = KubeSchemas(data)
    ok = {"apiVersion": "demo/v1", "kind": "Thing", "metadata": {"name": "t"}, "port": "http"}
    assert schemas.validate({**ok, "mem": "1Gi", "items": ["a"]}).ok
    bad = schemas.validate({**ok, "port": 1.5, "items": ["c"], "size": 2**31})
    assert sorted(f.path for f in bad.errors) == ["items[0]", "port", "size"]


def _shipped() -> tuple[bytes, dict[str, Any]]:
    raw = resources.files("oper8d.kubeschema.data").joinpath("k8s-v1.34.4.json.gz").read_bytes()
    return raw, json.loads(gzip.decompress(raw))


def test_the_shipped_data_is_small_and_has_no_prose() -> None:
    raw, data = _shipped()
    assert len(raw) < 64 * 1024

    def prose(node: Any) -> bool:  # a description is a string; a property may be named so
        if isinstance(node, dict):
            return isinstance(node.get("description"), str) or any(map(prose, node.values()))
        return isinstance(node, list) and any(map(prose, node))

    assert not prose(data["defs"])
    assert ["apps/v1", "Deployment"] in [k[:2] for k in data["kinds"]]


def test_every_reference_resolves_and_every_kind_compiles() -> None:
    _, data = _shipped()

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
            return own + [r for v in node.values() for r in refs(v)]
        if isinstance(node, list):
            return [r for v in node for r in refs(v)]
        return []

    assert set(refs(data["defs"])) <= set(data["defs"])
    schemas = KubeSchemas(data)
    schemas.precompile()
    for api_version, kind, *_ in data["kinds"]:
        result = schemas.validate({"apiVersion": api_version, "kind": kind, "metadata": {}})
        assert result.warning is None
        paths = [f.path for f in result.errors]
        nameless = api_version.startswith(("authentication.", "authorization."))
        assert ("metadata.name" in paths) != nameless, paths
