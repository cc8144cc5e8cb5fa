"""``oper8d render``'s ``# would delete`` lines: every disabled component is listed, also
one whose templates read other objects with ``live()``."""

from __future__ import annotations

from pathlib import Path

import yaml
from bundles import demo_cr, write_bundle
from click.testing import CliRunner

from oper8d.cli.main import main

SCHEMA = {"type": "object", "properties": {"monitor": {"type": "boolean", "default": False}}}

COMPONENTS = """\
components:
  - name: config
    resources:
      - name: configmap
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}"}
          data: {A: "1"}
  - name: metrics
    enabled: spec.monitor
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('metrics') }}"}
          data:
            HASH: "{{ live('config.configmap').data | to_json | sha256 }}"
  - name: monitor
    enabled: spec.monitor
    resources:
      - name: cm
        template: templates/monitor.yaml
  - name: named
    enabled: spec.monitor
    resources:
      - name: svc
        object:
          apiVersion: v1
          kind: Service
          metadata: {name: "{{ live('metrics.cm').metadata.name }}-x"}
          spec: {ports: [{port: 80}]}
      - name: job
        object:
          apiVersion: batch/v1
          kind: Job
          metadata: {name: "{{ scoped_name('job') }}"}
          spec:
            template:
              spec:
                restartPolicy: Never
                containers: [{name: a, image: "x:{{ live('metrics.cm').data.A }}"}]
  - name: broken
    enabled: spec.monitor
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('broken') }}"}
          data: {N: "{{ live('metrics.cm').data.n + 1 }}"}
"""

MONITOR = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ scoped_name('monitor') }}
data:
  FROM: {{ live('metrics.cm').data.HASH }}
"""


def _deletions(tmp_path: Path) -> list[str]:
    bundle = write_bundle(
        tmp_path / "b", COMPONENTS, schema=SCHEMA, files={"templates/monitor.yaml": MONITOR}
    )
    cr = tmp_path / "cr.yaml"
    cr.write_text(yaml.safe_dump(demo_cr()))
    result = CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr)])
    assert result.exit_code == 0, result.output
    return [line for line in result.stdout.splitlines() if line.startswith("# would delete")]


def test_every_disabled_component_is_listed_also_when_it_reads_live_objects(
    tmp_path: Path,
) -> None:
    lines = _deletions(tmp_path)
    assert [line.split(": ", 1)[0] for line in lines] == [
        "# would delete (component 'metrics' is disabled)",
        "# would delete (component 'monitor' is disabled)",
        "# would delete (component 'named' is disabled)",
        "# would delete (component 'named' is disabled)",
        "# would delete (component 'broken' is disabled)",
    ]
    # live() of an enabled component reads it as the run left it: exact names
    assert lines[0].endswith(": v1 ConfigMap default/demo-metrics")
    # live() of another disabled component's object: absent, the name does not need it
    assert lines[1].endswith(": v1 ConfigMap default/demo-monitor")
    assert lines[3].endswith(": batch/v1 Job default/demo-job")


def test_a_name_that_needs_an_absent_object_is_said_by_kind(tmp_path: Path) -> None:
    lines = _deletions(tmp_path)
    assert lines[2] == (
        "# would delete (component 'named' is disabled): all v1 Service objects of the "
        "component (the name of named.svc depends on a live() object that does not exist "
        "offline)"
    )
    assert lines[4].startswith(
        "# would delete (component 'broken' is disabled): all v1 ConfigMap objects of the "
        "component (it does not render offline: "
    )
