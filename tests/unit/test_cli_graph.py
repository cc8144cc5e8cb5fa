"""``oper8d graph``: the component graph as text, Mermaid and Graphviz dot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bundles import write_bundle
from click.testing import CliRunner

from oper8d.cli.main import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"


def graph(bundle: Path, fmt: str | None = None) -> str:
    args = ["graph", str(bundle)] + (["--format", fmt] if fmt else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_text_lists_components_by_level_with_what_they_wait_for() -> None:
    assert graph(EXAMPLES / "webapp") == (
        "controller webapp (demo.oper8d.io/v1alpha1 WebApp)\n"
        "  [0] config\n"
        "  [1] app  <- config (inferred)\n"
        "  [2] service  <- app\n"
        "  [2] autoscaler (if spec.autoscaling.enabled)  <- app\n"
        "  [3] ingress (if spec.ingress.enabled)  <- service\n"
        "(inferred): from a live('<component>.<resource>') call in a template\n"
    )


def test_text_shows_edge_conditions_and_for_each() -> None:
    stateful = graph(EXAMPLES / "stateful")
    assert "  [3] app  <- migrate ready\n" in stateful
    assert "  [1] worker (for each w in spec.workers)  <- queue-config\n" in graph(
        EXAMPLES / "fanout"
    )


def test_mermaid_draws_inferred_edges_dashed_and_declared_ones_solid() -> None:
    out = graph(EXAMPLES / "webapp", "mermaid")
    assert out.startswith("flowchart TD\n")
    assert "  c0_config -.-> c0_app\n" in out
    assert "  c0_app --> c0_service\n" in out
    assert "  c0_service --> c0_ingress\n" in out
    assert '  c0_ingress["ingress (if spec.ingress.enabled)"]\n' in out


WHEN_EDGE = """\
    components:
      - name: migrate
        resources:
          - name: job
            object:
              apiVersion: batch/v1
              kind: Job
              metadata: {name: "{{ name }}-m"}
              spec:
                template:
                  spec:
                    restartPolicy: Never
                    containers: [{name: m, image: migrate}]
      - name: app
        dependsOn:
          - component: migrate
            when: "live('migrate.job').status.succeeded | default(0) >= 1"
        resources:
          - name: cm
            object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ name }}-app"}}
    """


def test_mermaid_edge_labels_escape_the_characters_that_would_end_them(tmp_path: Path) -> None:
    out = graph(write_bundle(tmp_path / "b", WHEN_EDGE), "mermaid")
    [edge] = [line for line in out.splitlines() if "c0_app" in line and "c0_migrate" in line]
    assert edge == (
        "  c0_migrate -->|\"live('migrate.job').status.succeeded #124; default(0) #gt;= 1\"| c0_app"
    )
    # a raw `|` or `"` inside a label would break the diagram
    label = re.fullmatch(r'.*\|"(.*)"\|.*', edge)
    assert label is not None and "|" not in label[1] and '"' not in label[1]


def test_dot_draws_inferred_edges_dashed_and_labels_conditions(tmp_path: Path) -> None:
    out = graph(EXAMPLES / "webapp", "dot")
    assert out.startswith('digraph "webapp" {\n')
    assert '  "config" -> "app" [style=dashed];\n' in out
    assert '  "app" -> "service";\n' in out
    conditional = graph(write_bundle(tmp_path / "b", WHEN_EDGE), "dot")
    assert (
        '  "migrate" -> "app" [label="live(\'migrate.job\').status.succeeded | default(0) >= 1"];\n'
        in conditional
    )
    assert '  "migrate" -> "app" [label="ready"];\n' in graph(EXAMPLES / "stateful", "dot")
    assert out.rstrip().endswith("}")


@pytest.mark.parametrize("fmt", ["text", "mermaid", "dot"])
def test_every_format_marks_an_edge_inferred_only_when_no_dependency_is_declared(
    tmp_path: Path, fmt: str
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        """\
        components:
          - name: db
            resources:
              - name: svc
                object: {apiVersion: v1, kind: Service, metadata: {name: "{{ name }}-db"}}
          - name: app
            resources:
              - name: cm
                object:
                  apiVersion: v1
                  kind: ConfigMap
                  metadata: {name: "{{ name }}-app"}
                  data: {host: "{{ live('db.svc').metadata.name }}"}
          - name: web
            dependsOn: [db]
            resources:
              - name: cm
                object:
                  apiVersion: v1
                  kind: ConfigMap
                  metadata: {name: "{{ name }}-web"}
                  data: {host: "{{ live('db.svc').metadata.name }}"}
        """,
    )
    out = graph(bundle, fmt)
    inferred = {
        "text": "app  <- db (inferred)",
        "mermaid": "c0_db -.-> c0_app",
        "dot": '"db" -> "app" [style=dashed];',
    }[fmt]
    declared = {
        "text": "web  <- db\n",
        "mermaid": "c0_db --> c0_web",
        "dot": '"db" -> "web";',
    }[fmt]
    assert inferred in out
    assert declared in out


def test_an_unknown_format_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["graph", str(EXAMPLES / "webapp"), "--format", "png"])
    assert result.exit_code == 2
    assert "'png' is not one of 'text', 'mermaid', 'dot'" in result.stderr


TWO_CONTROLLERS = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata: {name: pair}
controllers:
  - name: front
    resource: {group: demo.oper8d.io, version: v1alpha1, kind: Front}
    components:
      - name: end
        resources:
          - name: cm
            object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ name }}-end"}}
  - name: back
    resource: {group: demo.oper8d.io, version: v1alpha1, kind: Back}
    components:
      - name: end
        resources:
          - name: cm
            object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ name }}-end"}}
      - name: api
        dependsOn: [end]
        resources:
          - name: cm
            object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ name }}-api"}}
"""


def test_several_controllers_become_one_diagram_with_a_group_each(tmp_path: Path) -> None:
    (tmp_path / "operator.yaml").write_text(TWO_CONTROLLERS)
    mermaid = graph(tmp_path, "mermaid").splitlines()
    assert mermaid.count("flowchart TD") == 1
    assert '  subgraph c0["front: Front"]' in mermaid
    assert '  subgraph c1["back: Back"]' in mermaid
    # same component name in two controllers, and Mermaid's `end` keyword: distinct safe ids
    assert '    c0_end["end"]' in mermaid and '    c1_end["end"]' in mermaid
    assert "    c1_end --> c1_api" in mermaid
    dot = graph(tmp_path, "dot").splitlines()
    assert dot.count('digraph "pair" {') == 1
    assert '  subgraph "cluster_back" {' in dot
    assert '    "back/end" -> "back/api";' in dot
