"""A CR's inputs (engine.inputs.resolve_inputs): the one rule `oper8d validate`, the
reconciler and the render's would-delete list share for schema defaults, validation and
config precedence."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from bundles import build

from oper8d.bundle.model import ControllerSpec
from oper8d.engine.inputs import resolve_inputs

SCHEMA = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "minimum": 1},
        "mode": {"type": "string", "default": "safe"},
    },
}

BUNDLE = """
config:
  level: info
  db: {host: db.local, port: 5432}
components:
  - name: c
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
"""


#: what a CR may override (resource.configSchema)
OVERRIDABLE = {
    "type": "object",
    "properties": {
        "level": {"type": "string"},
        "db": {
            "type": "object",
            "properties": {"host": {"type": "string"}, "port": {"type": "integer"}},
        },
    },
}


@pytest.fixture
def controller(tmp_path: Path) -> ControllerSpec:
    return build(tmp_path, BUNDLE, schema=SCHEMA, config_schema=OVERRIDABLE).controllers[0]


def cr(spec: dict, *, config_map: str | None = None, overrides: object = None) -> dict:
    meta: dict = {"name": "demo", "namespace": "default"}
    if config_map:
        meta["annotations"] = {"oper8.org/config-defaults": config_map}
    body = {"apiVersion": "demo.oper8d.io/v1alpha1", "kind": "Demo", "metadata": meta}
    body["spec"] = spec
    if overrides is not None:
        body["configOverrides"] = overrides
    return body


def test_config_is_bundle_defaults_then_the_config_map_then_the_overrides(
    controller: ControllerSpec,
) -> None:
    inputs = resolve_inputs(
        controller,
        cr({"size": 1}, config_map="site", overrides={"db": {"port": 6432}}),
        {"site": {"level": "warn", "db": {"host": "db.site"}}},
    )
    assert inputs.problems == ()
    assert inputs.config == {"level": "warn", "db": {"host": "db.site", "port": 6432}}


def test_the_spec_gets_the_schema_defaults_and_the_cr_is_left_alone(
    controller: ControllerSpec,
) -> None:
    body = cr({"size": 2})
    before = copy.deepcopy(body)
    inputs = resolve_inputs(controller, body, {})
    assert inputs.spec == {"size": 2, "mode": "safe"}
    assert body == before


def test_a_config_map_that_does_not_exist_is_a_problem_at_the_annotation(
    controller: ControllerSpec,
) -> None:
    inputs = resolve_inputs(controller, cr({"size": 1}, config_map="gone"), {})
    error = inputs.error()
    assert error is not None and "ConfigMap 'gone'" in error.message
    assert error.field == "metadata.annotations[oper8.org/config-defaults]"


def test_without_a_cluster_a_named_config_map_is_not_looked_for(
    controller: ControllerSpec,
) -> None:
    inputs = resolve_inputs(controller, cr({"size": 1}, config_map="site"), None)
    assert inputs.problems == ()
    assert inputs.config["level"] == "info"


def test_spec_violations_are_reported_before_config_problems(
    controller: ControllerSpec,
) -> None:
    inputs = resolve_inputs(controller, cr({"size": 0}, overrides=["not", "a", "map"]), {})
    assert [p.field for p in inputs.problems] == ["spec.size", "configOverrides"]
    error = inputs.error()
    assert error is not None and error.field == "spec.size"
    fixed = resolve_inputs(controller, cr({"size": 1}, overrides=["not", "a", "map"]), {})
    error = fixed.error()
    assert error is not None and error.field == "configOverrides"


def test_the_error_counts_the_problems_it_does_not_show() -> None:
    from oper8d.engine.inputs import CrInputs
    from oper8d.errors import Problem

    problems = tuple(Problem(f"p{i}", None, field=f"spec.f{i}") for i in range(7))
    error = CrInputs(spec={}, config={}, spec_problems=problems).error()
    assert error is not None
    assert error.field == "spec.f0"
    assert error.message.startswith("p0; spec.f1: p1;")  # the first field named once
    assert error.message.endswith("spec.f4: p4 (and 2 more)")
    two = CrInputs(spec={}, config={}, spec_problems=problems[:2]).error()
    assert two is not None and two.message == "p0; spec.f1: p1"


def test_overrides_hold_only_what_the_config_schema_declares(controller: ControllerSpec) -> None:
    inputs = resolve_inputs(
        controller,
        cr({"size": 1}, config_map="site", overrides={"db": {"port": "x"}, "enabled": False}),
        {"site": {"level": "warn", "networkPolicy": "false"}},
    )
    assert [str(p) for p in inputs.config_problems] == [
        "metadata.annotations[oper8.org/config-defaults]: ConfigMap 'site': data.networkPolicy: "
        "unknown field",
        "configOverrides.db.port: must be an integer (got the string 'x')",
        "configOverrides.enabled: unknown field",
    ]


def test_without_a_config_schema_nothing_may_be_overridden(tmp_path: Path) -> None:
    controller = build(tmp_path, BUNDLE, schema=SCHEMA).controllers[0]
    body = cr({"size": 1}, config_map="site", overrides={"level": "debug"})
    inputs = resolve_inputs(controller, body, {"site": {"level": "warn"}})
    assert [p.field for p in inputs.config_problems] == [
        "metadata.annotations[oper8.org/config-defaults]",
        "configOverrides",
    ]
    assert all("override no config" in p.message for p in inputs.config_problems)
    assert resolve_inputs(controller, cr({"size": 1}, overrides={}), {}).problems == ()
