"""bundle.validate: bundle files against the JSON Schemas, CR specs against the spec schema."""

from __future__ import annotations

import copy
import importlib.resources
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.bundle.loader import load_yaml_file, load_yaml_text
from oper8d.bundle.validate import (
    SchemaSet,
    apply_defaults,
    check_spec_schema,
    load_schema,
    validate_document,
    validate_instance,
)

REPO = Path(__file__).resolve().parents[2]

FULL_OPERATOR = """\
# yaml-language-server: $schema=../../schemas/operator.schema.json
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata:
  name: webapp
  version: 1.2.0
  description: A web application
controllers:
  - name: webapp
    resource:
      group: demo.oper8d.io
      version: v1alpha1
      kind: WebApp
      plural: webapps
      scope: Namespaced
      shortNames: [wa]
      versionPath: spec.version
      schema:
        type: object
        required: [image]
        properties:
          image: {type: string}
          replicas: {type: integer, minimum: 1, default: 2}
      printerColumns:
        - name: Ready
          type: string
          jsonPath: .status.conditions[?(@.type=="Ready")].status
          priority: 0
    config:
      logLevel: info
    components:
      - name: config
        resources:
          - name: settings
            readyWhen: exists
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('settings') }}"}
              data: {level: "{{ config.logLevel }}"}
      - name: app
        dependsOn:
          - config
          - component: database
            when: "live('database.statefulset').status.readyReplicas >= 1"
        enabled: "spec.ingress.enabled"
        forEach:
          items: spec.workers
          as: worker
          key: worker.name
        resources:
          - name: deployment
            method: apply
            readyWhen:
              - builtin: true
              - condition: {type: Available, status: "True", reason: MinimumReplicasAvailable}
              - expr: "obj.status.availableReplicas >= 1"
                message: waiting for one available replica
            object:
              apiVersion: apps/v1
              kind: Deployment
              metadata:
                name: "{{ scoped_name('app') }}"
              spec:
                replicas: "{{ spec.replicas }}"
          - name: extras
            method: replace
            template: templates/extras.yaml
          - name: child
            readyWhen: [{subsystem: {version: spec.version}}]
            template: templates/child.yaml
        readyWhen:
          - expr: "live('app.deployment').status.availableReplicas >= 1"
            message: waiting for one available replica
        patches:
          - target: {resource: deployment}
            type: strategicMerge
            patch: {spec: {template: {metadata: {labels: {tier: web}}}}}
          - target: {kind: Deployment, name: web}
            type: json6902
            patch:
              - {op: add, path: /metadata/labels/tier, value: web}
      - include: components/database.yaml
    hooks:
      afterDeploy:
        - name: migrated
          check: "live('migrate.job').status.succeeded == 1"
          message: waiting for the migration
          resources:
            - name: migrate
              object: {apiVersion: batch/v1, kind: Job, metadata: {name: migrate}}
      afterVerifyUnsuccessful:
        - name: notify
          check: "true"
    status:
      endpoint: "'http://' ~ live('app.service').metadata.name ~ ':8080'"
    finalize:
      enabled: true
      deleteComponents: true
    requeue:
      afterError: 60s
      whileWaiting: 10
      afterSuccess: null
    temporaryPatches:
      enabled: true
      allowedKinds: [Deployment]
      allowedPaths: [spec.replicas, "spec.template.spec.containers[*].resources"]
      allowedTypes: [patchStrategicMerge, patchJson6902]
"""

DATABASE = """\
name: database
resources:
  - name: statefulset
    template: templates/db.yaml
"""


@pytest.fixture(scope="module")
def schemas() -> SchemaSet:
    return SchemaSet()


def problems_of(schemas: SchemaSet, text: str, schema: str = "operator") -> list[str]:
    doc = load_yaml_text(text, "operator.yaml" if schema == "operator" else "c.yaml")
    return [str(p) for p in schemas.validate(doc, schema)]


def operator_with(component: str) -> str:
    """A valid operator.yaml whose only component is ``component`` (YAML, at column 0)."""
    head = FULL_OPERATOR.split("    components:\n")[0]
    body = "\n".join("      " + line for line in component.strip().splitlines())
    return f"{head}    components:\n{body}\n"


# -- the schemas themselves -------------------------------------------------------------------


def test_schemas_are_read_from_the_installed_package():
    resource = importlib.resources.files("oper8d") / "schemas" / "operator.schema.json"
    schema = json.loads(resource.read_text(encoding="utf-8"))
    assert schema["$id"] == "https://oper8d.io/schemas/operator.schema.json"
    assert load_schema("operator") == schema == SchemaSet().get("operator.schema.json")
    assert load_schema("component")["$id"] == "https://oper8d.io/schemas/component.schema.json"
    with pytest.raises(ValueError, match=r"no schema 'nope\.schema\.json'"):
        load_schema("nope")


def test_a_schema_set_reads_each_schema_once():
    schemas = SchemaSet()
    assert schemas.operator is schemas.get("operator") is schemas.get("operator.schema.json")


def walk_schemas(node: Any, where: str):
    """Every subschema, skipping values that are instance data (examples, defaults, ...)."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            if key not in ("examples", "default", "const", "enum"):
                yield from walk_schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk_schemas(value, f"{where}/{index}")


@pytest.mark.parametrize("name", ["operator", "component"])
def test_every_property_is_described_and_every_definition_titled(name: str):
    # the reference docs are generated from these texts
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = {**load_schema("operator")["$defs"], **load_schema("component")["$defs"]}
    for def_name, definition in schema["$defs"].items():
        assert definition.get("title"), f"$defs/{def_name} has no title"
        assert definition.get("description"), f"$defs/{def_name} has no description"
    for where, node in walk_schemas(schema, name):
        if re.search(r"/(if|then|else)(/|$)", where):
            continue  # conditional overlays constrain properties documented elsewhere
        for prop, sub in node.get("properties", {}).items():
            target = defs.get(sub.get("$ref", "").rsplit("/", 1)[-1], {})
            assert sub.get("description") or target.get("description"), f"{where}/{prop}"


def test_objects_reject_unknown_keys_except_the_free_form_parts():
    free_form = {"config", "schema", "configSchema", "object", "patch", "statusProjection"}
    for name in ("operator", "component"):
        for where, node in walk_schemas(load_schema(name), name):
            last = where.rsplit("/", 1)[-1]
            if node.get("type") == "object" and last not in free_form and last != "if":
                assert "additionalProperties" in node, where


# -- bundle documents -------------------------------------------------------------------------


def test_a_full_bundle_has_no_problems(tmp_path: Path, schemas: SchemaSet):
    (tmp_path / "components").mkdir()
    (tmp_path / "operator.yaml").write_text(FULL_OPERATOR)
    (tmp_path / "components" / "database.yaml").write_text(DATABASE)
    operator = load_yaml_file(tmp_path, "operator.yaml")
    assert validate_document(operator, schemas.operator) == []
    component = load_yaml_file(tmp_path, "components/database.yaml")
    assert validate_document(component, schemas.component, registry=schemas.registry) == []


def test_every_example_in_the_bundle_format_doc_is_accepted(schemas: SchemaSet):
    text = (REPO / "docs" / "bundle-format.md").read_text()
    blocks = [
        b.replace("[...]", "[]").replace("{...}", "{}")
        for b in re.findall(r"```yaml\n(.*?)```", text, re.S)
    ]
    operator, components, reads, hooks, rest = (load_yaml_text(b, "doc.md").data for b in blocks)
    controller = operator["controllers"][0]
    controller.update(components, **hooks, **rest, reads=reads["controllers"][0]["reads"])
    assert problems_of(schemas, json.dumps(operator)) == []
    rules = [load_yaml_text(r, "doc.md").data for r in re.findall(r"^\| `(\{.*\})` \|", text, re.M)]
    assert len(rules) == 3
    component = {"name": "c", "resources": [{"name": "r", "object": {}, "readyWhen": rules}]}
    assert problems_of(schemas, json.dumps(component), "component") == []


def test_an_unknown_key_points_at_the_key_and_suggests_the_closest_one(schemas: SchemaSet):
    text = operator_with("- name: app\n  resources: [{name: r, object: {}}]\n  dependOn: [db]")
    line = text.splitlines().index("        dependOn: [db]") + 1
    assert problems_of(schemas, text) == [
        f"operator.yaml:{line}:9: unknown key 'dependOn' in component 'app' "
        "(did you mean 'dependsOn'?)"
    ]


def test_an_unknown_top_level_key_is_named_with_the_file(schemas: SchemaSet):
    text = FULL_OPERATOR.replace("kind: Operator\n", "kind: Operator\ncontroler: []\n")
    assert problems_of(schemas, text) == [
        "operator.yaml:4:1: unknown key 'controler' at the top level of operator.yaml "
        "(did you mean 'controllers'?)"
    ]


def test_a_resource_without_object_or_template_reads_as_one_sentence(schemas: SchemaSet):
    text = operator_with("- name: app\n  resources:\n    - name: web\n      method: apply")
    [problem] = problems_of(schemas, text)
    assert problem.endswith("resource 'web': needs exactly one of 'object' or 'template'")


def test_a_resource_with_both_object_and_template_says_which_to_drop(schemas: SchemaSet):
    text = operator_with(
        "- name: app\n  resources:\n    - {name: web, object: {}, template: t.yaml}"
    )
    [problem] = problems_of(schemas, text)
    assert problem.endswith(
        "resource 'web': has 'object' and 'template': give exactly one of 'object' or 'template'"
    )


def test_a_readiness_rule_needs_exactly_one_kind(schemas: SchemaSet):
    text = operator_with(
        "- name: app\n  resources: [{name: r, object: {}}]\n"
        "  readyWhen:\n    - {message: hi}\n    - {exists: true, expr: x}"
    )
    assert [p.split(": ", 1)[1] for p in problems_of(schemas, text)] == [
        "the readiness rule: needs exactly one of 'builtin', 'exists', 'condition', 'expr' "
        "or 'subsystem'",
        "the readiness rule: has 'exists' and 'expr': give exactly one of 'builtin', 'exists', "
        "'condition', 'expr' or 'subsystem'",
    ]


@pytest.mark.parametrize(
    ("fragment", "message"),
    [
        (
            "readyWhen: bultin",
            "readyWhen: must be one of 'builtin', 'exists' or 'subsystem' (got 'bultin'); "
            "did you mean 'builtin'?",
        ),
        (
            "readyWhen: [{condition: {type: Ready, status: True}}]",
            "status: must be one of 'True', 'False' or 'Unknown' (got true); "
            'put it in quotes: "True"',
        ),
        (
            "method: patch",
            "method: must be one of 'apply', 'update' or 'replace' (got 'patch')",
        ),
        (
            "template: ../outside.yaml",
            "template: '../outside.yaml' is not a valid bundle-relative path",
        ),
    ],
)
def test_resource_field_errors_say_what_is_allowed(schemas: SchemaSet, fragment: str, message: str):
    body = "{name: r, object: {}, " + fragment + "}"
    if fragment.startswith("template"):
        body = "{name: r, " + fragment + "}"
    [problem] = problems_of(schemas, operator_with(f"- name: app\n  resources: [{body}]"))
    assert message in problem


def test_component_names_must_be_dns_labels(schemas: SchemaSet):
    [problem] = problems_of(
        schemas, operator_with("- name: My_App\n  resources: [{name: r, object: {}}]")
    )
    assert "name: 'My_App' is not a valid DNS-1123 label: lower-case letters" in problem


def test_a_number_where_a_string_belongs_suggests_quotes(schemas: SchemaSet):
    text = FULL_OPERATOR.replace("version: 1.2.0", "version: 1.2")
    assert problems_of(schemas, text) == [
        "operator.yaml:6:12: version: must be a string (got the number 1.2); "
        'put it in quotes: "1.2"'
    ]


@pytest.mark.parametrize("good", ["30s", "5m", "1h30m", "250ms", "1.5h", 60, 0.5, None])
def test_requeue_durations_accept_units_numbers_and_null(schemas: SchemaSet, good: Any):
    text = FULL_OPERATOR.replace("afterError: 60s", f"afterError: {json.dumps(good)}")
    assert problems_of(schemas, text) == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("5 min", "'5 min' is not a valid duration"),
        ("10", "'10' is not a valid duration"),
        (-1, "must be >= 0 (got -1)"),
        (True, "must be a string, a number or null (got true)"),
    ],
)
def test_requeue_durations_reject_other_values(schemas: SchemaSet, bad: Any, message: str):
    text = FULL_OPERATOR.replace("afterError: 60s", f"afterError: {json.dumps(bad)}")
    [problem] = problems_of(schemas, text)
    assert message in problem


def test_all_problems_are_reported_sorted_by_position(schemas: SchemaSet):
    text = (
        FULL_OPERATOR.replace("kind: Operator", "kind: Operatr")
        .replace("scope: Namespaced", "scope: Global")
        .replace("deleteComponents: true", "deleteComponents: yes")
    )
    problems = problems_of(schemas, text)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "kind: must be 'Operator' (got 'Operatr')",
        "scope: must be one of 'Namespaced' or 'Cluster' (got 'Global')",
        "deleteComponents: must be true or false (got the string 'yes')",
    ]
    lines = [int(p.split(":")[1]) for p in problems]
    assert lines == sorted(lines)


def test_problems_in_an_included_file_point_into_that_file(tmp_path: Path, schemas: SchemaSet):
    (tmp_path / "c.yaml").write_text("- name: db\n  resources: []\n- name: cache\n  resource: []\n")
    doc = load_yaml_file(tmp_path, "c.yaml")
    assert [str(p) for p in schemas.validate(doc, "component")] == [
        "c.yaml:2:14: resources: must not be empty",
        # (not also "missing required key 'resources'": the misspelling is the one problem)
        "c.yaml:4:3: unknown key 'resource' in component 'cache' (did you mean 'resources'?)",
    ]


def test_an_include_entry_holds_only_the_path(schemas: SchemaSet):
    problems = problems_of(schemas, operator_with("- include: /etc/passwd\n  name: x"))
    assert [p.split(": ", 1)[1] for p in problems] == [
        "include: '/etc/passwd' is not a valid bundle-relative path: a path relative to the "
        "bundle folder, using '/', that stays inside the bundle (no leading '/', no '..')",
        "unknown key 'name' in component include 'x'",
    ]


def test_status_field_names_are_checked_at_the_key(schemas: SchemaSet):
    text = FULL_OPERATOR.replace("      endpoint:", "      end-point:")
    line = (
        text.splitlines().index(
            "      end-point: \"'http://' ~ live('app.service').metadata.name ~ ':8080'\""
        )
        + 1
    )
    assert problems_of(schemas, text) == [
        f"operator.yaml:{line}:7: key 'end-point' is not a valid variable name: letters, digits "
        "and '_', not starting with a digit"
    ]


def test_a_hook_needs_a_check_or_resources(schemas: SchemaSet):
    text = FULL_OPERATOR.replace('          check: "true"\n', "")
    [problem] = problems_of(schemas, text)
    assert problem.endswith("hook 'notify': needs at least one of 'check' or 'resources'")


def test_a_malformed_spec_schema_is_reported_at_its_position():
    doc = load_yaml_text(
        "schema:\n  type: object\n  properties:\n    a: {type: strin}\n"
        "    b: {type: string, pattern: '([a-z'}\n",
        "operator.yaml",
    )
    assert [str(p) for p in check_spec_schema(doc, ("schema",))] == [
        "operator.yaml:4:15: type: must be one of 'array', 'boolean', 'integer', 'null', "
        "'number', 'object' or 'string' (got 'strin'); did you mean 'string'?",
        "operator.yaml:5:32: pattern: '([a-z' is not a valid regex",
    ]


# -- CR specs -------------------------------------------------------------------------------

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["image"],
    "properties": {
        "image": {"type": "string"},
        "replicas": {"type": "integer", "format": "int32", "minimum": 1, "default": 2},
        "port": {"type": "integer", "maximum": 65536, "exclusiveMaximum": True},
        "mode": {"type": "string", "enum": ["fast", "safe"], "nullable": True},
        "size": {"x-kubernetes-int-or-string": True},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "workers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                    "cpu": {"type": "string", "default": "100m"},
                },
            },
        },
        "storage": {
            "type": "object",
            "default": {},
            "properties": {
                "size": {"type": "string", "default": "1Gi"},
                "class": {"type": "string", "nullable": True, "default": "standard"},
            },
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}},
        "note": {"type": "string"},
    },
}


def messages(problems) -> list[str]:
    return [str(p) for p in problems]


def test_cr_problems_name_the_field():
    spec = {"replicas": 0, "port": 65536, "workers": [{"name": "ok"}, {"name": "Bad"}, {}]}
    assert messages(validate_instance(spec, SPEC_SCHEMA)) == [
        "spec.image: required field is missing",
        "spec.port: must be < 65536 (got 65536)",
        "spec.replicas: must be >= 1 (got 0)",
        "spec.workers[1].name: must match the pattern ^[a-z]+$ (got 'Bad')",
        "spec.workers[2].name: required field is missing",
    ]
    [problem] = validate_instance({"image": "x", "replicas": 0}, SPEC_SCHEMA)
    assert (problem.field, problem.message) == ("spec.replicas", "must be >= 1 (got 0)")


def test_cr_type_and_enum_errors_say_what_was_given():
    spec = {"image": 3, "mode": "fsat", "size": 1.5, "tags": ["a", "a"]}
    assert messages(validate_instance(spec, SPEC_SCHEMA, field_prefix="cr.spec")) == [
        'cr.spec.image: must be a string (got the number 3); put it in quotes: "3"',
        "cr.spec.mode: must be one of 'fast' or 'safe' (got 'fsat'); did you mean 'fast'?",
        "cr.spec.size: must be an integer or a string (got the number 1.5)",
        "cr.spec.tags: must not contain the same item twice (repeated: 'a')",
    ]


def test_openapi_leniencies_match_the_api_server():
    spec = {
        "image": "x",
        "replicas": 3.0,  # an integral float is an integer
        "mode": None,  # nullable
        "size": "50%",  # int-or-string
        "port": 65535,
    }
    assert validate_instance(spec, SPEC_SCHEMA) == []
    # ``format: int32`` is an annotation: the API server does not range-check it either
    assert validate_instance({"image": "x", "replicas": 2**40}, SPEC_SCHEMA) == []


def test_an_invalid_spec_schema_is_a_problem_not_a_crash():
    [problem] = validate_instance({"a": 1}, {"properties": {"a": {"type": "strin"}}})
    assert problem.field == "spec" and "unknown type 'strin'" in problem.message


def test_defaults_fill_absent_fields_recursively_without_overwriting_given_values():
    spec = {"image": "x", "replicas": 5, "workers": [{"name": "a"}, {"name": "b", "cpu": "2"}]}
    assert apply_defaults(spec, SPEC_SCHEMA) == {
        "image": "x",
        "replicas": 5,
        "workers": [{"name": "a", "cpu": "100m"}, {"name": "b", "cpu": "2"}],
        # a default of {} lets the defaults of its properties apply
        "storage": {"size": "1Gi", "class": "standard"},
    }
    assert spec["workers"][0] == {"name": "a"}, "the input is not modified"


def test_defaults_handle_nulls_the_way_kubernetes_does():
    spec = {
        "image": "x",
        "replicas": None,  # non-nullable null with a default: defaulted
        "note": None,  # non-nullable null without a default: dropped
        "storage": {"class": None},  # nullable: kept as null
        "labels": {"a": None, "b": "given"},  # additionalProperties default replaces null
    }
    assert apply_defaults(spec, SPEC_SCHEMA) == {
        "image": "x",
        "replicas": 2,
        "storage": {"class": None, "size": "1Gi"},
        "labels": {"a": "x", "b": "given"},
    }


def test_an_absent_spec_gets_the_root_default_only():
    assert apply_defaults(None, SPEC_SCHEMA) is None
    with_root = {**SPEC_SCHEMA, "default": {"image": "nginx"}}
    assert apply_defaults(None, with_root)["image"] == "nginx"
    assert apply_defaults(None, with_root)["replicas"] == 2


def test_defaults_are_copies_not_shared_objects():
    first = apply_defaults({}, SPEC_SCHEMA)
    first["storage"]["size"] = "changed"
    assert apply_defaults({}, SPEC_SCHEMA)["storage"]["size"] == "1Gi"
    assert SPEC_SCHEMA["properties"]["storage"]["default"] == {}


spec_values = st.fixed_dictionaries(
    {},
    optional={
        "image": st.text(max_size=3),
        "replicas": st.none() | st.integers(),
        "note": st.none() | st.text(max_size=3),
        "workers": st.lists(
            st.fixed_dictionaries(
                {"name": st.text(max_size=3)}, optional={"cpu": st.none() | st.text(max_size=2)}
            ),
            max_size=3,
        ),
        "storage": st.none()
        | st.fixed_dictionaries({}, optional={"class": st.none(), "size": st.text(max_size=2)}),
        "labels": st.dictionaries(st.text(max_size=2), st.none() | st.text(max_size=2), max_size=3),
    },
)


def given_values(value: Any, path: tuple = ()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from given_values(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from given_values(item, (*path, index))
    elif value is not None:
        yield path, value


def lookup(value: Any, path: tuple) -> Any:
    for part in path:
        value = value[part]
    return value


@settings(max_examples=200, deadline=None)
@given(spec_values)
def test_defaulting_is_idempotent_and_keeps_every_given_value(spec: dict[str, Any]):
    original = copy.deepcopy(spec)
    once = apply_defaults(spec, SPEC_SCHEMA)
    assert apply_defaults(once, SPEC_SCHEMA) == once
    assert spec == original
    for path, value in given_values(spec):
        assert lookup(once, path) == value


def test_list_map_entries_must_have_unique_keys():
    schema = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    assert messages(validate_instance([{"name": "a"}, {"name": "b"}], schema)) == []
    assert messages(validate_instance([{"name": "a"}, {"name": "a"}], schema, field_prefix="")) == [
        "must not contain the same key (name) twice (repeated: name='a')"
    ]


@pytest.mark.parametrize(
    ("schema", "keyword", "hint"),
    [
        ({"type": "object", "propertes": {"a": {"type": "string"}}}, "propertes", "properties"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "defualt": "x"}}},
            "defualt",
            "default",
        ),
        (
            {"type": "object", "properties": {"l": {"type": "array", "items": {"enm": [1]}}}},
            "enm",
            "enum",
        ),
        ({"type": "object", "x-kubernetes-preserve-unknown-field": True}, None, None),
    ],
)
def test_a_misspelt_schema_keyword_is_a_problem_at_its_line(
    tmp_path: Path, schema: dict[str, Any], keyword: str | None, hint: str | None
) -> None:
    # JSON Schema ignores an unknown keyword: `propertes` switched off every check below it
    from bundles import write_bundle

    from oper8d.bundle import load_bundle
    from oper8d.errors import BundleError

    root = write_bundle(tmp_path, "components: []", schema=schema)
    with pytest.raises(BundleError) as caught:
        load_bundle(root)
    text = str(caught.value)
    assert "unknown schema keyword" in text and "operator.yaml:" in text
    if keyword is not None:
        assert f"{keyword!r} (did you mean {hint!r}?)" in text


def test_the_schema_vocabularies_and_extensions_are_accepted(tmp_path: Path) -> None:
    from bundles import write_bundle

    from oper8d.bundle import load_bundle

    schema = {
        "type": "object",
        "x-oper8d-note": "an extension of the bundle author's",
        "properties": {
            "a": {"type": "string", "pattern": "^a", "description": "d", "example": "ab"},
            "n": {"type": "integer", "minimum": 0, "maximum": 10, "nullable": True},
            "l": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "o": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            },
        },
    }
    load_bundle(write_bundle(tmp_path, "components: []", schema=schema))
