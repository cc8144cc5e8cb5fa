"""A typo in a ``leaveToOthers`` path is a compile error at its line (issue 18): a path no
field matches leaves nothing to the autoscaler, so oper8d sets the field back each time
(the HPA fight comes back live). Paths are held to the schema of the kinds the resource
renders, as readiness paths are (``bundle.paths``); a kind without a known schema is not
judged."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import build, write_bundle
from click.testing import CliRunner
from test_typos_runtime import at, compile_error

from oper8d.cli.main import main


def deployment(leave: str, api: str = "apps/v1", kind: str = "Deployment") -> str:
    return f"""\
components:
  - name: app
    resources:
      - name: deployment
        leaveToOthers:
          - {leave}
        object:
          apiVersion: {api}
          kind: {kind}
          metadata: {{name: app}}
          spec:
            replicas: 2
            selector: {{matchLabels: {{app: a}}}}
            template:
              metadata: {{labels: {{app: a}}}}
              spec: {{containers: [{{name: app, image: "app:1"}}]}}
"""


def test_a_typo_in_a_left_path_is_an_error_at_its_line_with_did_you_mean(
    tmp_path: Path,
) -> None:
    error = compile_error(tmp_path, deployment("spec.replcas"))
    assert error == (
        f"{at(tmp_path / 'operator.yaml', 'spec.replcas')}: leaveToOthers 'spec.replcas': "
        "Deployment (apps/v1) has no field spec.replcas (did you mean 'replicas'?)"
    )


def test_the_mapping_form_and_an_early_typo(tmp_path: Path) -> None:
    error = compile_error(tmp_path, deployment("{path: spce.replicas}"))
    assert error.endswith(
        "leaveToOthers 'spce.replicas': Deployment (apps/v1) has no field spce.replicas "
        "(did you mean 'spec'?)"
    )


def test_a_path_into_a_list_is_an_error_naming_the_list(tmp_path: Path) -> None:
    error = compile_error(tmp_path, deployment("spec.template.spec.containers.resources"))
    assert (
        "Deployment (apps/v1): spec.template.spec.containers is a list, and a left field is "
        "named by map keys only (leave spec.template.spec.containers whole)"
    ) in error


def test_a_typo_in_the_when_of_a_left_field_is_an_error(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"autoscaling": {"type": "boolean"}}}
    error = compile_error(
        tmp_path, deployment("{path: spec.replicas, when: spec.autoscalng}"), schema=schema
    )
    assert error.endswith(
        "'spec.autoscalng': the CR's spec schema has no field spec.autoscalng "
        "(did you mean 'autoscaling'?)"
    )


@pytest.mark.parametrize(
    "leave",
    [
        "spec.replicas",
        "spec.template.metadata.annotations",
        "metadata.annotations[sidecar.istio.io/status]",
        "spec.template.spec.containers",
        "{path: spec.replicas, when: 'true'}",
    ],
)
def test_paths_the_kind_has_compile(tmp_path: Path, leave: str) -> None:
    build(tmp_path, deployment(leave))


def test_a_custom_kind_without_a_schema_is_not_judged(tmp_path: Path) -> None:
    build(tmp_path, deployment("spec.replcas", api="example.com/v1", kind="Widget"))


def test_a_path_one_of_the_rendered_kinds_has_compiles(tmp_path: Path) -> None:
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
    )
    controller = """\
components:
  - name: app
    resources:
      - name: all
        template: all.yaml
        leaveToOthers: [%s]
"""
    build(tmp_path / "ok", controller % "spec.replicas", files={"all.yaml": template})
    error = compile_error(
        tmp_path / "bad", controller % "spec.replcas", files={"all.yaml": template}
    )
    assert "ConfigMap (v1) has no field spec.replcas" in error
    assert "Deployment (apps/v1) has no field spec.replcas (did you mean 'replicas'?)" in error


def test_validate_prints_the_typo_and_exits_1(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", deployment("spec.replcas"))
    result = CliRunner().invoke(main, ["validate", str(bundle)])
    assert result.exit_code == 1
    where = at(bundle / "operator.yaml", "spec.replcas")
    assert (
        f"{bundle}/{where}: leaveToOthers 'spec.replcas': Deployment (apps/v1) has no field "
        "spec.replcas (did you mean 'replicas'?)"
    ) in result.stderr
    assert "Traceback" not in result.output
