"""Rendered objects are checked against Kubernetes' own schemas before anything is applied:
``oper8d render`` fails where the API server would refuse, naming resource and field, and
values are the types the author meant (a lone number in an env value becomes its text)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from bundles import write_bundle
from click.testing import CliRunner, Result

from oper8d.cli.main import main

CR = """\
apiVersion: demo.oper8d.io/v1alpha1
kind: Demo
metadata: {name: demo, namespace: default}
spec: {replicas: 3}
"""


def render(tmp_path: Path, obj: str, *args: str) -> Result:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n  - name: a\n    resources:\n      - name: obj\n        object:\n"
        + "".join(f"          {line}\n" for line in obj.strip("\n").splitlines()),
    )
    cr = tmp_path / "cr.yaml"
    cr.write_text(CR)
    return CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr), *args])


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  {replicas_key}: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx
          env: [{name: N, value: "{{ spec.replicas }}"}]
"""


def test_a_lone_number_in_a_string_field_becomes_its_text(tmp_path: Path) -> None:
    result = render(tmp_path, DEPLOYMENT.replace("{replicas_key}", "replicas"))
    assert result.exit_code == 0, result.output
    (deployment,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "N", "value": "3"}
    ]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            DEPLOYMENT.replace("{replicas_key}", "replica"),
            'spec.replica: unknown field "spec.replica"; did you mean "replicas"?',
        ),
        (
            "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: web}\n",
            'no matches for kind "Ingress" in version "extensions/v1beta1"',
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: not base64!}\n",
            "data[password]",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {list: [a, b]}\n",
            "data[list]",
        ),
    ],
)
def test_an_object_the_api_server_would_refuse_fails_render_at_its_field(
    tmp_path: Path, obj: str, expected: str
) -> None:
    result = render(tmp_path, obj)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "resource 'a.obj' renders" in result.stderr
    assert "which the API server would refuse" in result.stderr
    assert expected in result.stderr


WIDGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
"""


def test_a_custom_kind_is_checked_when_its_crd_is_given(tmp_path: Path) -> None:
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {sise: 3}\n"
    unchecked = render(tmp_path / "a", widget)
    assert unchecked.exit_code == 0, unchecked.output
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "widget.yaml").write_text(WIDGET_CRD)
    checked = render(tmp_path / "b", widget, "--crds", str(crds))
    assert checked.exit_code == 1
    assert 'spec.sise: unknown field "spec.sise"' in checked.stderr
