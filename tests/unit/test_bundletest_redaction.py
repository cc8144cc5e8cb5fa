"""``oper8d test`` masks what it prints with the redactor ``oper8d render`` uses: a failed
field check quoting a value from a Secret showed the value (an outside audit: render
masked ``postgres://app:***@db``, test printed the password)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from click.testing import CliRunner

from oper8d.cli.main import main
from oper8d.testing import run_offline

OPERATOR = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata: {name: demo, version: 1.0.0}
controllers:
  - name: demo
    resource: {group: demo.oper8d.io, version: v1alpha1, kind: Demo, schema: {type: object}}
    components:
      - name: db
        resources:
          - name: secret
            object:
              apiVersion: v1
              kind: Secret
              metadata: {name: "{{ scoped_name('db') }}"}
              stringData: {password: "{{ random_string('pw', 24) }}"}
          - name: config
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('cfg') }}"}
              data: {url: "postgres://app:{{ random_string('pw', 24) }}@db"}
      - name: check
        dependsOn: [db]
        enabled: "spec.fail | default(false)"
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: x}
              data: {x: "{{ config_error('cannot reach ' ~ random_string('pw', 24)) }}"}
"""

CR = """\
apiVersion: demo.oper8d.io/v1alpha1
kind: Demo
metadata: {name: demo, namespace: default}
"""

TESTS = """\
cases:
  - name: a field check fails on the url
    crFile: cr.yaml
    render:
      expect:
        - kind: ConfigMap
          name: demo-cfg
          fields:
            - {path: data.url, equals: "postgres://app:x@db"}
            - {path: data, contains: {url: y}}
  - name: an error case fails on the message
    crFile: cr.yaml
    crPatch: {spec: {fail: true}}
    error: "something else"
  - name: a rollout case fails
    crFile: cr.yaml
    crPatch: {spec: {fail: true}}
    rollout: {ready: true}
"""


def test_a_failed_check_shows_a_secret_value_as_render_does(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "operator.yaml").write_text(OPERATOR)
    (tmp_path / "cr.yaml").write_text(CR)
    (tmp_path / "tests" / "cases.yaml").write_text(textwrap.dedent(TESTS))
    password = run_offline(tmp_path, tmp_path / "cr.yaml").applied["db.secret"]["stringData"][
        "password"
    ]
    assert password.startswith("offline")

    rendered = CliRunner().invoke(
        main, ["render", str(tmp_path), "--cr", str(tmp_path / "cr.yaml")]
    )
    assert "url: postgres://app:***@db" in rendered.stdout
    result = CliRunner().invoke(main, ["test", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "0 passed, 3 failed" in result.output
    assert password not in result.output, result.output
    assert 'got "postgres://app:***@db"' in result.output
    assert '{"url": "postgres://app:***@db"}' in result.output
    assert "cannot reach ***" in result.output
