"""What a CR may override of the config: only what the bundle's ``resource.configSchema``
declares, with its types; nothing without one. An outside audit found ``configOverrides``
free-form, so ``enabled: "{{ config.networkPolicy }}"`` let a tenant switch off, and
prune, a NetworkPolicy the bundle author meant to keep. Checked offline (validate,
render), live (a ConfigError on the CR) and by the API server (the generated CRD)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from bundles import Harness, build, condition
from click.testing import CliRunner, Result

from oper8d.bundle import load_bundle
from oper8d.cli.main import main
from oper8d.manifests.crd import crd_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"
WEBAPP = EXAMPLES / "webapp"

POLICY_BUNDLE = """
config:
  networkPolicy: true
  logLevel: info
components:
  - name: policy
    enabled: "{{ config.networkPolicy }}"
    resources:
      - name: np
        object:
          apiVersion: networking.k8s.io/v1
          kind: NetworkPolicy
          metadata: {name: "{{ scoped_name('deny') }}"}
          spec: {podSelector: {}, policyTypes: [Ingress]}
"""


def invoke(*args: str | Path) -> Result:
    result = CliRunner().invoke(main, [*map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def webapp_cr(tmp_path: Path, overrides: str) -> Path:
    cr = tmp_path / "cr.yaml"
    cr.write_text(
        "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
        "metadata: {name: hello, namespace: default}\nspec: {image: nginx}\n"
        f"configOverrides:\n{overrides}"
    )
    return cr


def test_a_tenant_cannot_switch_off_a_component_the_bundle_keeps(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, POLICY_BUNDLE))
    h.create({})
    h.settle()
    assert h.names("NetworkPolicy") == ["demo-deny"]

    h.edit_cr(lambda cr: cr.update(configOverrides={"networkPolicy": False}))
    h.reconcile()

    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert "configOverrides: this operator lets a CR override no config" in ready["message"]
    assert h.names("NetworkPolicy") == ["demo-deny"]  # neither disabled nor pruned


def test_a_declared_override_is_typed(tmp_path: Path) -> None:
    overridable = {"type": "object", "properties": {"logLevel": {"type": "string"}}}
    h = Harness(build(tmp_path, POLICY_BUNDLE, config_schema=overridable))
    h.create({}, configOverrides={"logLevel": "debug"})
    h.settle()
    assert condition(h.cr(), "Ready")["reason"] == "Stable"

    h.edit_cr(lambda cr: cr.update(configOverrides={"networkPolicy": False}))
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert "configOverrides.networkPolicy: unknown field" in ready["message"]
    assert h.names("NetworkPolicy") == ["demo-deny"]


def test_render_and_validate_take_a_declared_override(tmp_path: Path) -> None:
    cr = webapp_cr(tmp_path, "  logLevel: debug\n")
    assert invoke("validate", WEBAPP, "--cr", cr).exit_code == 0
    rendered = invoke("render", WEBAPP, "--cr", cr)
    assert rendered.exit_code == 0
    assert "LOG_LEVEL: debug" in rendered.stdout


def test_render_and_validate_refuse_an_undeclared_or_mistyped_override(tmp_path: Path) -> None:
    cr = webapp_cr(tmp_path, "  logLevel: loud\n  networkPolicy: false\n")
    for command in ("validate", "render"):
        result = invoke(command, WEBAPP, "--cr", cr)
        assert result.exit_code == 1
        assert f"{cr}:6:13: configOverrides.logLevel: must be one of" in result.stderr
        assert f"{cr}:7:18: configOverrides.networkPolicy: unknown field" in result.stderr


def test_a_bundle_without_a_config_schema_refuses_overrides_offline(tmp_path: Path) -> None:
    stateful = EXAMPLES / "stateful"
    cr = tmp_path / "cr.yaml"
    sample = yaml.safe_load((stateful / "samples" / "notes.yaml").read_text())
    cr.write_text(yaml.safe_dump({**sample, "configOverrides": {"dbUser": "postgres"}}))
    result = invoke("render", stateful, "--cr", cr)
    assert result.exit_code == 1
    assert "configOverrides: this operator lets a CR override no config" in result.stderr


def test_the_crd_carries_the_config_schema(tmp_path: Path) -> None:
    webapp = crd_for(load_bundle(WEBAPP).controllers[0])
    root = webapp["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    overrides = root["properties"]["configOverrides"]
    assert overrides["properties"]["logLevel"]["enum"] == ["debug", "info", "warn", "error"]
    assert "x-kubernetes-preserve-unknown-fields" not in overrides
    stateful = crd_for(load_bundle(EXAMPLES / "stateful").controllers[0])
    root = stateful["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    overrides = root["properties"]["configOverrides"]
    assert (overrides["maxProperties"], overrides["x-kubernetes-preserve-unknown-fields"]) == (
        0,
        True,
    )


def test_a_config_schema_is_checked_when_the_bundle_loads(tmp_path: Path) -> None:
    bundle = tmp_path / "webapp"
    shutil.copytree(WEBAPP, bundle)
    operator = bundle / "operator.yaml"
    text = operator.read_text()
    declared = "logLevel: {type: string, enum: [debug, info, warn, error]}"
    assert declared in text
    operator.write_text(text.replace(declared, "logLevel: {type: strin, default: info}"))
    result = invoke("validate", bundle)
    assert result.exit_code == 1
    assert "strin" in result.stderr
    operator.write_text(text.replace(declared, "logLevel: {type: string, default: info}"))
    result = invoke("validate", bundle)
    assert result.exit_code == 1
    assert "configSchema sets a default for configOverrides.logLevel" in result.stderr
