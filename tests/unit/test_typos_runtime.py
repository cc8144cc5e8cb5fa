"""Identity clashes and typos are errors, never a flip-flop or a rollout waiting forever:
two resources rendering one object, a patch matching nothing, a typo in a readiness rule,
a ``when:``, a hook check or a status projection (engine.render, engine.missing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import Harness, build, condition

from oper8d.cluster.memory.simulate import DefaultSimulator
from oper8d.errors import BundleError, ConfigError

LIVE = '"live('  # where a quoted live() expression starts
SHARED = "\"{{ scoped_name('shared') }}\""


def cm(component: str, name: str = SHARED, extra: str = "") -> str:
    return f"""\
  - name: {component}
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: {name}}}
          data: {{owner: {component}}}
{extra}"""


DEPLOYMENT = """\
  - name: web
    resources:
      - name: deploy
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "{{ scoped_name('web') }}"}
          spec:
            replicas: 1
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec: {containers: [{name: web, image: nginx}]}
"""


def at(path: Path, needle: str, nth: int = 0) -> str:
    """``operator.yaml:<line>:<col>`` of the ``nth`` occurrence of ``needle``, as errors
    name positions."""
    lines = path.read_text().splitlines()
    found = [(n, t.index(needle) + 1) for n, t in enumerate(lines, 1) if needle in t][nth]
    return f"{path.name}:{found[0]}:{found[1]}"


def compile_error(tmp_path: Path, controller: str, **kw: object) -> str:
    """The one problem compiling the bundle finds (what ``oper8d validate`` prints)."""
    with pytest.raises(BundleError) as caught:
        build(tmp_path, controller, **kw)  # type: ignore[arg-type]
    (problem,) = caught.value.problems
    return f"{problem.pos}: {problem.message}"


def reconciled_error(h: Harness) -> str:
    """The error of one reconcile: a ConfigError, also shown by the CR's Ready condition."""
    result = h.reconcile()
    assert isinstance(result.error, ConfigError), result.error
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert ready["message"] == str(result.error)
    return str(result.error)


def test_two_components_rendering_one_computed_name_are_a_config_error_not_a_flip_flop(
    tmp_path: Path,
) -> None:
    bundle = build(tmp_path, "components:\n" + cm("backend") + cm("frontend"))
    h = Harness(bundle)
    h.create({})
    op = tmp_path / "operator.yaml"
    assert reconciled_error(h) == (
        f"{at(op, 'name: cm', 1)}: frontend.cm and backend.cm both render ConfigMap "
        "default/demo-shared: one object can have one source; rename one of them"
    )
    first = h.get("ConfigMap", "demo-shared")
    assert first is not None and first["data"] == {"owner": "backend"}
    for _ in range(3):  # the other component never overwrites it
        h.clock.advance(30)
        h.reconcile()
    again = h.get("ConfigMap", "demo-shared")
    assert again is not None
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_two_resources_with_one_literal_name_are_a_compile_error(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as caught:
        build(tmp_path, "components:\n" + cm("backend", "shared") + cm("frontend", "shared"))
    op = tmp_path / "operator.yaml"
    first = at(op, "name: cm")
    assert [f"{p.pos.line}:{p.pos.col}: {p.message}" for p in caught.value.problems] == [
        f"{at(op, 'name: cm', 1).split(':', 1)[1]}: resources backend.cm ({first}) and "
        "frontend.cm both render ConfigMap shared: one object can have one source; rename "
        "one of them"
    ]


def test_components_that_may_be_disabled_can_be_alternatives_for_one_name(
    tmp_path: Path,
) -> None:
    bundle = build(
        tmp_path,
        "components:\n"
        + cm("small", "shared", "    enabled: \"spec.size == 'small'\"\n")
        + cm("large", "shared", "    enabled: \"spec.size == 'large'\"\n"),
    )
    h = Harness(bundle)
    h.create({"size": "large"})
    assert h.settle().error is None
    shared = h.get("ConfigMap", "shared")
    assert shared is not None and shared["data"] == {"owner": "large"}


def test_a_patch_whose_target_matches_nothing_is_an_error(tmp_path: Path) -> None:
    patch = (
        "    patches:\n"
        "      - target: {kind: ConfigMap, name: demo-sharde}\n"
        "        patch: {data: {patched: 'yes'}}\n"
    )
    h = Harness(build(tmp_path, "components:\n" + cm("app", extra=patch)))
    h.create({})
    op = tmp_path / "operator.yaml"
    assert reconciled_error(h) == (
        f"{at(op, 'target:')}: patch of component 'app' targets kind 'ConfigMap', name "
        "'demo-sharde' but no object the component rendered matches (its resources: cm)"
    )
    assert h.names("ConfigMap") == []


def test_a_patch_naming_a_resource_the_component_lacks_is_a_compile_error(
    tmp_path: Path,
) -> None:
    patch = "    patches:\n      - target: {resource: c}\n        patch: {data: {x: 'y'}}\n"
    with pytest.raises(BundleError) as caught:
        build(tmp_path, "components:\n" + cm("app", extra=patch))
    (problem,) = caught.value.problems
    assert problem.message == (
        "patch targets resource 'c', which component 'app' does not have (did you mean 'cm'?)"
    )


def readiness(rule: str) -> str:
    return DEPLOYMENT + f"        readyWhen:\n          - {rule}\n"


def test_validate_finds_a_readiness_field_the_kind_lacks_despite_the_rules_message(
    tmp_path: Path,
) -> None:
    rule = '{expr: "obj.status.readyReplicaz >= 1", message: "web is starting"}'
    error = compile_error(tmp_path, "components:\n" + readiness(rule))
    where = at(tmp_path / "operator.yaml", '"obj.status.readyReplicaz')
    assert error == (
        f"{where}: 'obj.status.readyReplicaz >= 1': Deployment (apps/v1) "
        "has no field status.readyReplicaz (did you mean 'readyReplicas'?)"
    )


def test_a_field_the_kind_has_but_the_object_lacks_yet_waits(tmp_path: Path) -> None:
    rule = '{expr: "obj.status.readyReplicas >= 1", message: "web is starting"}'
    h = Harness(
        build(tmp_path, "components:\n" + readiness(rule)),
        simulator=DefaultSimulator(delay_writes=1),
    )
    h.create({})
    assert not isinstance(h.reconcile().error, ConfigError)
    assert "web is starting" in condition(h.cr(), "Updating")["message"]
    h.cluster.tick()
    h.settle()
    assert condition(h.cr(), "Ready")["reason"] == "Stable"


def test_validate_finds_an_undefined_name_in_a_readiness_rule(tmp_path: Path) -> None:
    rule = '{expr: "ob.status.readyReplicas >= 1"}'
    error = compile_error(tmp_path, "components:\n" + readiness(rule))
    where = at(tmp_path / "operator.yaml", '"ob.status')
    assert error == (
        f"{where}: 'ob.status.readyReplicas >= 1': 'ob' is undefined: no such name (a typo?)"
    )


def test_validate_finds_a_when_over_a_field_the_kind_lacks(tmp_path: Path) -> None:
    when = (
        "    dependsOn:\n"
        "      - component: app\n"
        "        when: \"live('app.cm').dta.owner == 'app'\"\n"
    )
    error = compile_error(tmp_path, "components:\n" + cm("app") + cm("web", "web", when))
    op = tmp_path / "operator.yaml"
    assert error == (
        f"{at(op, LIVE)}: \"live('app.cm').dta.owner == 'app'\": ConfigMap (v1) has no "
        "field dta (did you mean 'data'?)"
    )


def test_validate_finds_a_typo_in_a_hook_check(tmp_path: Path) -> None:
    hooks = (
        "hooks:\n  afterDeploy:\n    - name: up\n"
        "      check: \"live('web.deploy').status.availableReplicaz >= 1\"\n"
        "      message: waiting for web\n"
    )
    error = compile_error(tmp_path, "components:\n" + DEPLOYMENT + hooks)
    op = tmp_path / "operator.yaml"
    assert error == (
        f"{at(op, LIVE)}: \"live('web.deploy').status.availableReplicaz >= 1\": "
        "Deployment (apps/v1) has no field status.availableReplicaz (did you mean "
        "'availableReplicas'?)"
    )


def test_validate_finds_a_typo_in_a_status_projection(
    tmp_path: Path,
) -> None:
    status = "status:\n  name: spec.nmae\n"
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    error = compile_error(tmp_path, "components:\n" + cm("app") + status, schema=schema)
    op = tmp_path / "operator.yaml"
    assert error == (
        f"{at(op, 'spec.nmae')}: 'spec.nmae': the CR's spec schema has no field spec.nmae "
        "(did you mean 'name'?)"
    )


@pytest.mark.parametrize(
    ("extra", "typo"),
    [
        ("    enabled: spec.enabeld\n", "spec.enabeld"),
        ("    forEach:\n      items: spec.workerz\n", "spec.workerz"),
    ],
)
def test_validate_finds_a_typo_in_enabled_and_foreach_items(
    tmp_path: Path, extra: str, typo: str
) -> None:
    # validate checked readiness and status paths but not these (issue 18)
    schema = {
        "type": "object",
        "properties": {"enabled": {"type": "boolean"}, "workers": {"type": "array"}},
    }
    error = compile_error(tmp_path, "components:\n" + cm("app", extra=extra), schema=schema)
    assert f"'{typo}': the CR's spec schema has no field {typo}" in error


def test_a_foreach_item_may_switch_its_copy_on_and_off(tmp_path: Path) -> None:
    extra = "    forEach:\n      items: spec.workers\n    enabled: item.on\n"
    schema = {"type": "object", "properties": {"workers": {"type": "array"}}}
    component = cm("app", name='"w-{{ item.name }}"', extra=extra)
    build(tmp_path, "components:\n" + component, schema=schema)


# -- where the kind is computed, the same typos are ConfigErrors at run time ------------

TEMPLATED = """\
components:
  - name: app
    resources:
      - name: cm
        template: cm.yaml
"""
FILES = {
    "cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{ scoped_name('app') }}"}
        data: {owner: app}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{ scoped_name('app2') }}"}
    """,
}


def test_a_when_over_a_templated_object_with_a_typo_is_a_config_error_at_run_time(
    tmp_path: Path,
) -> None:
    when = (
        "    dependsOn:\n"
        "      - component: app\n"
        "        when: \"live('app.cm-configmap-demo-app').dta.owner == 'app'\"\n"
    )
    bundle = build(tmp_path, TEMPLATED + cm("web", "web", when), files=FILES)
    h = Harness(bundle)
    h.create({})
    op = tmp_path / "operator.yaml"
    assert reconciled_error(h) == (
        f"{at(op, LIVE)}: \"live('app.cm-configmap-demo-app').dta.owner == 'app'\": "
        "ConfigMap (v1) has no field dta (did you mean 'data'?)"
    )


def test_a_status_projection_with_a_typo_is_a_config_error_at_run_time(
    tmp_path: Path,
) -> None:
    status = "status:\n  owner: \"live('app.cm-configmap-demo-app').metadata.nam\"\n"
    h = Harness(build(tmp_path, TEMPLATED + status, files=FILES))
    h.create({})
    op = tmp_path / "operator.yaml"
    assert reconciled_error(h) == (
        f"{at(op, LIVE)}: \"live('app.cm-configmap-demo-app').metadata.nam\": ConfigMap (v1) "
        "has no field metadata.nam (did you mean 'name'?)"
    )


def test_a_projection_over_an_object_not_created_yet_is_left_out_until_it_exists(
    tmp_path: Path,
) -> None:
    status = "status:\n  owner: \"live('app.cm-configmap-demo-app').data.owner\"\n"
    h = Harness(build(tmp_path, TEMPLATED + status, files=FILES))
    h.create({})
    h.settle()
    assert h.cr()["status"]["owner"] == "app"


def test_a_rule_over_a_computed_kind_with_a_typo_is_a_config_error_at_run_time(
    tmp_path: Path,
) -> None:
    computed = (
        DEPLOYMENT.replace("kind: Deployment", "kind: \"{{ 'Deployment' }}\"")
        + "        kinds: [{apiVersion: apps/v1, kind: Deployment},"
        " {apiVersion: apps/v1, kind: StatefulSet}]\n"
        "        readyWhen:\n"
        '          - {expr: "obj.status.readyReplicaz >= 1", message: web is starting}\n'
    )
    h = Harness(build(tmp_path, "components:\n" + computed))
    h.create({})
    where = at(tmp_path / "operator.yaml", '"obj.status')
    assert reconciled_error(h) == (
        f"{where}: 'obj.status.readyReplicaz >= 1': Deployment (apps/v1) has no field "
        "status.readyReplicaz (did you mean 'readyReplicas'?)"
    )


def test_two_workers_rendering_one_object_report_one_clash(tmp_path: Path) -> None:
    bundle = build(tmp_path, "components:\n" + cm("a") + cm("b") + cm("c") + cm("d"))
    h = Harness(bundle, max_workers=4)
    h.create({})
    result = h.reconcile()
    assert isinstance(result.error, ConfigError)
    assert "both render ConfigMap default/demo-shared" in str(result.error)
    assert h.names("ConfigMap") == ["demo-shared"]
