"""The CustomResourceDefinitions oper8d generates: a bundle kind's CRD (names, printer
columns, its spec schema converted to a structural schema with its defaults kept) and the
TemporaryPatch CRD.

``structural_violations`` below is an independent reading of the API server's rules
(every node typed unless int-or-string or preserve-unknown-fields, nothing the CRD API
forbids, junctors that only validate values of fields declared outside them); the tests
check it against schemas it must refuse, so that it can fail. The real API server checks
the same CRDs in tests/integration/test_crd_install.py.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import ControllerSpec
from oper8d.bundle.spec_schema import apply_defaults, validate_instance
from oper8d.errors import BundleError
from oper8d.manifests import crd_for, structural_schema, temporary_patch_crd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"
EXAMPLE_NAMES = ("webapp", "stateful", "fanout")

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
FORBIDDEN = {
    "$ref",
    "$schema",
    "$id",
    "id",
    "$defs",
    "definitions",
    "examples",
    "const",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "if",
    "then",
    "else",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
NOT_IN_JUNCTORS = {"type", "description", "title", "default", "nullable", "additionalProperties"}


# -- an independent check of the structural-schema rules --------------------------------


def structural_violations(schema: Any, path: str = "") -> list[str]:
    """Every way ``schema`` breaks the API server's structural-schema rules."""
    found: list[str] = []
    if not isinstance(schema, dict):
        return [f"{path}: not a mapping"]
    for key in FORBIDDEN & schema.keys():
        found.append(f"{path}: has {key}")
    if schema.get("additionalProperties") is False:
        found.append(f"{path}: additionalProperties is false")
    if "additionalProperties" in schema and schema.get("properties"):
        found.append(f"{path}: additionalProperties beside properties")
    if schema.get("uniqueItems") is True:
        found.append(f"{path}: uniqueItems is true")
    if schema.get(PRESERVE) is False:
        found.append(f"{path}: preserve-unknown-fields is false")
    kind = schema.get("type")
    if kind is None and not (schema.get(INT_OR_STRING) or schema.get(PRESERVE)):
        found.append(f"{path}: no type")
    if kind is not None and kind not in TYPES:
        found.append(f"{path}: type {kind!r}")
    if schema.get(INT_OR_STRING) and (kind or schema.get(PRESERVE)):
        found.append(f"{path}: int-or-string with a type or preserve-unknown-fields")
    if kind == "array" and not isinstance(schema.get("items"), dict):
        found.append(f"{path}: array without one items schema")
    for name, sub in (schema.get("properties") or {}).items():
        found += structural_violations(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        found += structural_violations(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        found += structural_violations(schema["additionalProperties"], f"{path}.*")
    for junctor, branch in _junctor_branches(schema):
        found += _junctor_violations(branch, schema, f"{path}/{junctor}", schema)
    return found


def _junctor_branches(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key in ("allOf", "anyOf", "oneOf"):
        for index, branch in enumerate(schema.get(key) or ()):
            yield f"{key}[{index}]", branch
    if "not" in schema:
        yield "not", schema["not"]


def _junctor_violations(
    branch: Any, outer: Mapping[str, Any], path: str, node: Mapping[str, Any]
) -> list[str]:
    if not isinstance(branch, dict):
        return [f"{path}: not a mapping"]
    int_or_string = [{"type": "integer"}, {"type": "string"}]
    if node.get(INT_OR_STRING) and node.get("anyOf") == int_or_string:
        return []  # the one allowed pattern
    found = [f"{path}: has {key}" for key in sorted(NOT_IN_JUNCTORS & branch.keys())]
    found += [f"{path}: has {key}" for key in branch if key.startswith("x-kubernetes-")]
    found += [f"{path}: has {key}" for key in FORBIDDEN & branch.keys()]
    for name, sub in (branch.get("properties") or {}).items():
        declared = (outer.get("properties") or {}).get(name)
        if declared is None:
            found.append(f"{path}.{name}: not declared outside the junctor")
        else:
            found += _junctor_violations(sub, declared, f"{path}.{name}", declared)
    if "items" in branch:
        if not isinstance(outer.get("items"), dict):
            found.append(f"{path}[*]: not declared outside the junctor")
        else:
            found += _junctor_violations(branch["items"], outer["items"], f"{path}[*]", node)
    for junctor, nested in _junctor_branches(branch):
        found += _junctor_violations(nested, outer, f"{path}/{junctor}", node)
    return found


def defaults_by_path(schema: Any, path: str = "") -> dict[str, Any]:
    """Every ``default`` in a schema, by the CR field it belongs to."""
    if not isinstance(schema, dict):
        return {}
    found = {path: schema["default"]} if "default" in schema else {}
    for name, sub in (schema.get("properties") or {}).items():
        found.update(defaults_by_path(sub, f"{path}.{name}"))
    if isinstance(schema.get("items"), dict):
        found.update(defaults_by_path(schema["items"], f"{path}[*]"))
    return found


# -- helpers -------------------------------------------------------------------------------


def example(name: str) -> ControllerSpec:
    (controller,) = load_bundle(EXAMPLES / name).controllers
    return controller


def with_schema(schema: Mapping[str, Any], **resource: Any) -> ControllerSpec:
    """The webapp controller with another spec schema (and other resource fields)."""
    controller = example("webapp")
    return replace(controller, resource=replace(controller.resource, schema=schema, **resource))


def version_of(crd: Mapping[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    return version


def root_schema(crd: Mapping[str, Any]) -> dict[str, Any]:
    return version_of(crd)["schema"]["openAPIV3Schema"]


def spec_schema(crd: Mapping[str, Any]) -> dict[str, Any]:
    return root_schema(crd)["properties"]["spec"]


def converted(schema: Mapping[str, Any]) -> dict[str, Any]:
    return structural_schema(schema).schema


def problem_texts(schema: Mapping[str, Any]) -> list[str]:
    with pytest.raises(BundleError) as info:
        structural_schema(schema)
    return [problem.message for problem in info.value.problems]


# -- the checker can fail ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "violation"),
    [
        ({"type": "object", "properties": {"a": {"minimum": 1}}}, ".a: no type"),
        ({"type": "object", "additionalProperties": False}, ": additionalProperties is false"),
        ({"type": "array"}, ": array without one items schema"),
        ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, ".a: has $ref"),
        (
            {"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}}]},
            "/anyOf[0].a: not declared outside the junctor",
        ),
        ({"type": "string", "anyOf": [{"type": "string"}]}, "/anyOf[0]: has type"),
    ],
)
def test_the_structural_checker_finds_what_the_api_server_refuses(
    schema: dict[str, Any], violation: str
) -> None:
    assert violation in structural_violations(schema)


# -- the example bundles -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "plural", "kind", "short_names"),
    [
        ("webapp", "webapps", "WebApp", ["wa"]),
        ("stateful", "notesapps", "NotesApp", None),
        ("fanout", "workerpools", "WorkerPool", None),
    ],
)
def test_an_example_crd_names_the_kind_the_bundle_declares(
    name: str, plural: str, kind: str, short_names: list[str] | None
) -> None:
    crd = crd_for(example(name))
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == f"{plural}.demo.oper8d.io"
    assert crd["spec"]["group"] == "demo.oper8d.io"
    assert crd["spec"]["scope"] == "Namespaced"
    names = crd["spec"]["names"]
    assert names["plural"] == plural
    assert names["singular"] == kind.lower()
    assert names["kind"] == kind
    assert names["listKind"] == f"{kind}List"
    assert names.get("shortNames") == short_names
    version = version_of(crd)
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_an_example_crd_schema_is_structural(name: str) -> None:
    root = root_schema(crd_for(example(name)))
    assert structural_violations(root) == []
    properties = root["properties"]
    assert properties["apiVersion"] == {"type": "string"}
    assert properties["kind"] == {"type": "string"}
    assert properties["metadata"] == {"type": "object"}
    assert properties["status"] == {"type": "object", PRESERVE: True}
    # configOverrides: only what resource.configSchema declares; nothing without one
    overrides = properties["configOverrides"]
    assert overrides["type"] == "object"
    declared = example(name).resource.config_schema
    if declared is None:  # kept, so that the server refuses it, not drops it unsaid
        assert (overrides["maxProperties"], overrides[PRESERVE]) == (0, True)
    else:
        assert overrides["properties"] == declared["properties"]
        assert PRESERVE not in overrides


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_an_example_crd_keeps_every_default_of_the_bundle_schema(name: str) -> None:
    controller = example(name)
    expected = defaults_by_path(controller.resource.schema)
    assert expected  # every example has defaults, so this test compares something
    assert defaults_by_path(spec_schema(crd_for(controller))) == expected


@pytest.mark.parametrize(
    ("name", "sample"),
    [
        ("webapp", "webapp.yaml"),
        ("webapp", "webapp-minimal.yaml"),
        ("stateful", "notes.yaml"),
        ("fanout", "pool.yaml"),
    ],
)
def test_the_crd_schema_defaults_a_sample_cr_as_the_engine_does(name: str, sample: str) -> None:
    controller = example(name)
    cr = yaml.safe_load((EXAMPLES / name / "samples" / sample).read_text())
    by_crd = apply_defaults(cr["spec"], spec_schema(crd_for(controller)))
    assert by_crd == apply_defaults(cr["spec"], controller.resource.schema)
    assert validate_instance(by_crd, spec_schema(crd_for(controller))) == []


def test_the_crd_of_a_schema_with_required_fields_requires_spec() -> None:
    root = root_schema(crd_for(example("webapp")))
    assert root["required"] == ["spec"]
    assert "default" not in root["properties"]["spec"]


def test_a_cr_without_spec_gets_the_schema_defaults_when_nothing_is_required() -> None:
    schema = {"type": "object", "properties": {"replicas": {"type": "integer", "default": 2}}}
    root = root_schema(crd_for(with_schema(schema)))
    assert "required" not in root
    spec = root["properties"]["spec"]
    assert spec["default"] == {}
    assert apply_defaults(spec["default"], spec) == {"replicas": 2}


# -- printer columns ---------------------------------------------------------------------


def test_printer_columns_show_readiness_version_and_age() -> None:
    columns = version_of(crd_for(example("webapp")))["additionalPrinterColumns"]
    assert [(c["name"], c["type"], c["jsonPath"]) for c in columns] == [
        ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
        ("Reason", "string", '.status.conditions[?(@.type=="Ready")].reason'),
        ("Version", "string", ".spec.version"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]


def test_the_bundles_columns_come_before_age_and_its_version_path_is_used() -> None:
    ours = {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1}
    controller = with_schema(
        example("webapp").resource.schema,
        printer_columns=(ours,),
        version_path="spec.release.version",
    )
    columns = version_of(crd_for(controller))["additionalPrinterColumns"]
    assert [c["name"] for c in columns] == ["Ready", "Reason", "Version", "Replicas", "Age"]
    assert columns[2]["jsonPath"] == ".spec.release.version"
    assert columns[3] == ours


def test_a_bundle_column_named_like_a_builtin_one_replaces_it() -> None:
    ours = {"name": "Version", "type": "string", "jsonPath": ".status.versions.reconciled"}
    controller = with_schema(example("webapp").resource.schema, printer_columns=(ours,))
    columns = version_of(crd_for(controller))["additionalPrinterColumns"]
    assert [c["name"] for c in columns] == ["Ready", "Reason", "Version", "Age"]
    assert columns[2] == ours


def test_a_cluster_scoped_kind_gets_a_cluster_scoped_crd() -> None:
    crd = crd_for(with_schema({"type": "object"}, scope="Cluster", plural="webfleets"))
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["metadata"]["name"] == "webfleets.demo.oper8d.io"


# -- converting JSON Schema to a structural schema ---------------------------------------


def test_json_schema_annotations_a_crd_cannot_hold_are_dropped_and_example_is_kept() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://example.com/spec.json",
        "type": "object",
        "properties": {
            "image": {"type": "string", "examples": ["nginx"], "example": "nginx:1.27"},
        },
    }
    assert converted(schema) == {
        "type": "object",
        "properties": {"image": {"type": "string", "example": "nginx:1.27"}},
    }


def test_const_becomes_an_enum_of_one() -> None:
    out = converted({"type": "object", "properties": {"mode": {"const": "fast"}}})
    assert out["properties"]["mode"] == {"type": "string", "enum": ["fast"]}


def test_a_local_ref_is_inlined_with_its_siblings() -> None:
    schema = {
        "type": "object",
        "$defs": {"port": {"type": "integer", "minimum": 1}},
        "properties": {"port": {"$ref": "#/$defs/port", "default": 8080}},
    }
    assert converted(schema) == {
        "type": "object",
        "properties": {"port": {"type": "integer", "default": 8080, "minimum": 1}},
    }


def test_additional_properties_false_is_dropped_and_a_map_keeps_its_value_schema() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    assert converted(schema) == {
        "type": "object",
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }


def test_an_object_without_properties_keeps_whatever_fields_it_is_given() -> None:
    out = converted({"type": "object", "properties": {"extra": {"type": "object"}}})
    assert out["properties"]["extra"] == {"type": "object", PRESERVE: True}


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ({"type": ["string", "null"]}, {"type": "string", "nullable": True}),
        ({"type": ["integer", "string"]}, {INT_OR_STRING: True}),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, {"type": "string", "nullable": True}),
        (
            {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            {INT_OR_STRING: True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        ),
        ({}, {PRESERVE: True}),
        ({"anyOf": [{"type": "string"}, {"type": "array"}]}, {PRESERVE: True}),
        (
            {"properties": {"a": {"type": "string"}}},
            {"type": "object", "properties": {"a": {"type": "string"}}},
        ),
        ({"enum": ["a", "b"]}, {"type": "string", "enum": ["a", "b"]}),
        ({"items": {"type": "integer"}}, {"type": "array", "items": {"type": "integer"}}),
        ({"type": "array"}, {"type": "array", "items": {PRESERVE: True}}),
    ],
)
def test_every_field_gets_a_type_or_a_marker(
    field: dict[str, Any], expected: dict[str, Any]
) -> None:
    out = converted({"type": "object", "properties": {"f": field}})
    assert out["properties"]["f"] == expected


def test_a_numeric_exclusive_minimum_becomes_the_openapi_3_0_form() -> None:
    out = converted(
        {"type": "object", "properties": {"r": {"type": "number", "exclusiveMinimum": 0}}}
    )
    assert out["properties"]["r"] == {"type": "number", "minimum": 0, "exclusiveMinimum": True}


def test_unique_items_becomes_a_set_list_for_scalars_and_is_noted_otherwise() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "rules": {"type": "array", "items": {"type": "object"}, "uniqueItems": True},
        },
    }
    result = structural_schema(schema)
    properties = result.schema["properties"]
    assert properties["tags"]["x-kubernetes-list-type"] == "set"
    assert "x-kubernetes-list-type" not in properties["rules"]
    assert any("properties.rules" in note and "uniqueItems" in note for note in result.notes)


def test_a_oneof_over_properties_declares_them_outside_and_keeps_the_validation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "source": {
                "type": "object",
                "properties": {"git": {"type": "string"}},
                "oneOf": [
                    {"required": ["git"], "description": "from git"},
                    {
                        "properties": {"image": {"type": "string", "minLength": 1}},
                        "required": ["image"],
                    },
                ],
            }
        },
    }
    source = converted(schema)["properties"]["source"]
    assert source["properties"] == {"git": {"type": "string"}, "image": {"type": "string"}}
    assert source["oneOf"] == [
        {"required": ["git"]},
        {"properties": {"image": {"minLength": 1}}, "required": ["image"]},
    ]
    assert structural_violations(source) == []


def test_a_junctor_that_cannot_be_made_structural_is_left_out_with_a_note() -> None:
    schema = {
        "type": "object",
        "properties": {
            "size": {
                "type": "object",
                "anyOf": [
                    {"additionalProperties": False, "properties": {"a": {"type": "string"}}},
                    {"properties": {"b": {"type": "integer"}}},
                ],
            }
        },
    }
    result = structural_schema(schema)
    assert "anyOf" not in result.schema["properties"]["size"]
    assert structural_violations(result.schema) == []
    (note,) = result.notes
    assert note.startswith("resource.schema.properties.size: `anyOf` is left out")


def test_validations_the_api_server_lacks_are_left_out_with_a_note() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"type": "string"}},
        "if": {"properties": {"x": {"const": "a"}}},
        "then": {"required": ["x"]},
    }
    result = structural_schema(schema)
    assert set(result.schema) == {"type", "properties"}
    assert [n.split("`")[1] for n in result.notes] == ["if", "then"]


def test_what_cannot_be_converted_is_reported_all_at_once_with_its_schema_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "loop": {"type": "object", "properties": {"next": {"$ref": "#/properties/loop"}}},
            "remote": {"$ref": "https://example.com/x.json"},
            "nothing": {"type": "null"},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "name": {"type": "string", "pattern": "^(?!kube-)"},
        },
    }
    problems = problem_texts(schema)
    assert [p.split(" ")[0] for p in problems] == [
        "resource.schema.properties.loop.properties.next",
        "resource.schema.properties.remote",
        "resource.schema.properties.nothing",
        "resource.schema.properties.pair",
        "resource.schema.properties.name",
    ]
    assert "recursive $ref" in problems[0]
    assert "points outside the schema" in problems[1]
    assert "nullable: true" in problems[2]
    assert "one schema for every item" in problems[3]
    assert "RE2" in problems[4]


def test_a_recursive_ref_inside_a_junctor_is_left_out_instead_of_followed_forever() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tree": {
                "type": "object",
                "anyOf": [{"properties": {"child": {"$ref": "#/properties/tree"}}}],
            }
        },
    }
    result = structural_schema(schema)
    assert "anyOf" not in result.schema["properties"]["tree"]
    (note,) = result.notes
    assert "recursive $ref" in note


def test_a_default_the_api_server_would_refuse_is_a_problem() -> None:
    schema = {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "minimum": 1, "default": 0},
            "ingress": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"host": {"type": "string"}},
                "default": {"host": "a", "tls": True},
            },
        },
    }
    replicas, ingress = problem_texts(schema)
    assert replicas.startswith("resource.schema.properties.replicas has a default")
    assert "must be >= 1 (got 0)" in replicas
    assert ingress.startswith("resource.schema.properties.ingress has a default")
    assert "'tls'" in ingress and "prune" in ingress


def test_crd_for_reports_problems_at_the_controller_with_the_cr_field() -> None:
    controller = with_schema({"type": "object", "properties": {"n": {"type": "null"}}})
    with pytest.raises(BundleError) as info:
        crd_for(controller)
    (problem,) = info.value.problems
    assert problem.pos == controller.pos
    assert problem.field == "spec.n"
    assert str(problem).startswith(f"{controller.pos}: resource.schema.properties.n has type null")


def test_a_spec_schema_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(BundleError, match=r"resource\.schema has type 'string'"):
        crd_for(with_schema({"type": "string"}))


def test_the_bundle_schema_is_left_unchanged() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"mode": {"const": "a"}, "tags": {"type": "array", "uniqueItems": True}},
    }
    before = copy.deepcopy(schema)
    crd_for(with_schema(schema))
    assert schema == before


# -- properties over generated schemas ---------------------------------------------------

_scalar_types = st.sampled_from(["string", "integer", "number", "boolean"])
_scalar = st.one_of(
    st.builds(lambda t: {"type": t}, _scalar_types),
    st.builds(lambda t: {"type": [t, "null"]}, _scalar_types),
    st.builds(lambda v: {"const": v}, st.one_of(st.text(max_size=3), st.integers())),
    st.builds(lambda v: {"enum": v}, st.lists(st.text(max_size=3), min_size=1, max_size=3)),
    st.just({"type": ["integer", "string"]}),
    st.just({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    st.just({"type": "string", "examples": ["x"], "$comment": "c"}),
    st.just({"type": "integer", "exclusiveMinimum": 3}),
    st.just({}),
)


def _compound(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    fields = st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3)
    return st.one_of(
        st.builds(
            lambda p, closed: (
                {"type": "object", "properties": p}
                | ({"additionalProperties": False} if closed else {})
            ),
            fields,
            st.booleans(),
        ),
        st.builds(lambda p: {"properties": p}, fields),
        st.builds(lambda v: {"type": "object", "additionalProperties": v}, children),
        st.builds(
            lambda i, u: {"type": "array", "items": i} | ({"uniqueItems": True} if u else {}),
            children,
            st.booleans(),
        ),
        st.builds(
            lambda p, q: {"type": "object", "properties": p, "oneOf": [q, {"required": ["a"]}]},
            fields,
            st.builds(lambda f: {"properties": f}, fields),
        ),
        st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
        st.builds(lambda a: {"allOf": [a]}, children),
    )


schemas = st.recursive(_scalar, _compound, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(schemas)
def test_any_convertible_schema_becomes_structural(schema: dict[str, Any]) -> None:
    root = {"type": "object", "properties": {"field": schema}}
    out = converted(root)
    assert structural_violations(out) == []


@settings(max_examples=300, deadline=None)
@given(schemas)
def test_converting_a_structural_schema_again_changes_nothing(schema: dict[str, Any]) -> None:
    once = converted({"type": "object", "properties": {"field": schema}})
    assert converted(once) == once


# -- the TemporaryPatch CRD --------------------------------------------------------------


def test_the_temporary_patch_crd_is_oper8s_namespaced_kind() -> None:
    crd = temporary_patch_crd()
    assert crd["metadata"]["name"] == "temporarypatches.oper8.org"
    assert crd["spec"]["group"] == "oper8.org"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"] == {
        "plural": "temporarypatches",
        "singular": "temporarypatch",
        "kind": "TemporaryPatch",
        "listKind": "TemporaryPatchList",
    }
    assert version_of(crd)["name"] == "v1"


def test_a_temporary_patch_names_its_target_and_carries_any_patch() -> None:
    root = root_schema(temporary_patch_crd())
    assert structural_violations(root) == []
    assert root["properties"]["status"][PRESERVE] is True
    spec = root["properties"]["spec"]
    assert spec["required"] == ["apiVersion", "kind", "name"]
    for name in ("apiVersion", "kind", "name"):
        assert spec["properties"][name]["type"] == "string"
    assert spec["properties"]["patchType"]["enum"] == ["patchStrategicMerge", "patchJson6902"]
    assert spec["properties"]["patch"][PRESERVE] is True
    assert validate_instance({"apiVersion": "a/v1", "kind": "K"}, spec) != []
    json6902 = {"apiVersion": "a/v1", "kind": "K", "name": "x", "patchType": "patchJson6902"}
    json6902["patch"] = [{"op": "add", "path": "/a", "value": 1}]
    assert validate_instance(json6902, spec) == []
    bad_type = {"apiVersion": "a/v1", "kind": "K", "name": "x", "patchType": "merge"}
    assert validate_instance(bad_type, spec) != []


def test_the_temporary_patch_crd_shows_its_target_and_age() -> None:
    columns = version_of(temporary_patch_crd())["additionalPrinterColumns"]
    assert [(c["name"], c["jsonPath"]) for c in columns] == [
        ("Target", ".spec.name"),
        ("Age", ".metadata.creationTimestamp"),
    ]
    assert columns[1]["type"] == "date"


def test_each_temporary_patch_crd_is_a_fresh_object() -> None:
    first = temporary_patch_crd()
    root_schema(first)["properties"]["spec"]["required"].append("patch")
    assert root_schema(temporary_patch_crd())["properties"]["spec"]["required"] == [
        "apiVersion",
        "kind",
        "name",
    ]
