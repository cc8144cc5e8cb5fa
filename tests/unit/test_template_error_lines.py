"""Errors in what a text template rendered are reported at the template's own file and
line, as a new user needs them: a misspelt key is named, a YAML error gives the template
line (loops, conditions and macros make it differ from the rendered line), and nothing
tells the user to run the command that just failed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from bundles import demo_cr, write_bundle
from click.testing import CliRunner

from oper8d.cli.main import main
from oper8d.errors import ConfigError
from oper8d.template import TemplateEngine

RESOURCE = """\
components:
  - name: app
    resources:
      - name: cm
        template: templates/cm.yaml.j2
"""

# the loop and the macro make rendered lines and template lines differ
HEAD = """\
{% macro labels() -%}
app: x
tier: y
{%- endmacro %}
apiVersion: v1
kind: ConfigMap
"""


def render_error(tmp_path: Path, template: str) -> str:
    bundle = write_bundle(tmp_path / "b", RESOURCE, files={"templates/cm.yaml.j2": template})
    cr = tmp_path / "cr.yaml"
    cr.write_text(yaml.safe_dump(demo_cr()))
    result = CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.stderr.strip()


def test_a_misspelt_metadata_key_is_named_at_its_template_line(tmp_path: Path) -> None:
    template = HEAD + (
        "{% for k in ['a', 'b'] %}\n"
        "# {{ k }}\n"
        "{% endfor %}\n"
        "metdata:\n"  # line 10
        "  name: {{ scoped_name('cm') }}\n"
        "data: {a: b}\n"
    )
    message = render_error(tmp_path, template)
    assert "/templates/cm.yaml.j2:10: " in message.split(" ", 1)[0] + " "
    assert "unknown key 'metdata' (did you mean 'metadata'?)" in message
    assert "operator.yaml" not in message


def test_a_yaml_error_gives_the_template_line_not_the_rendered_one(tmp_path: Path) -> None:
    template = HEAD + (
        "metadata:\n"
        "  name: {{ scoped_name('cm') }}\n"
        "  labels:\n"
        "    {{ labels() | nindent(4) }}\n"
        "data:\n"  # line 11
        "{% for k in ['a', 'b', 'c'] %}\n"
        "  {{ k }}: x\n"  # line 13
        "{% endfor %}\n"
        "  port: '80'\n"
        "    bad: 1\n"  # line 16; rendered line 20
    )
    message = render_error(tmp_path, template)
    assert "/templates/cm.yaml.j2:16: the rendered template is not valid YAML" in message
    assert "at line 16 (rendered: 'bad: 1')" in message
    assert "at line 13 (rendered: '{{…}}: x')" in message  # where the mapping began
    assert "oper8d render" not in message


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("a: 1\n{% for i in [1, 2, 3] %}\nb{{ i }}: 1\n{% endfor %}\nc: [\n", 5),
        ("a: 1\n{%- if true %}\nb: 2\n{%- endif %}\n  c: 3\nd: [\n", 5),
        ("a: 1\n{% if true -%}\n\n\nb: 2\n  c: 3\n{%- endif %}\n", 6),
        ("{% set x %}\nq: 1\nr: 2\n{% endset %}\na: 1\n{{ x }}\nb: [\n", 7),
    ],
)
def test_the_line_of_an_error_after_loops_conditions_and_blocks(source: str, line: int) -> None:
    template = TemplateEngine().text(source, "t.yaml")
    with pytest.raises(ConfigError) as caught:
        template.render({})
    assert caught.value.pos is not None and caught.value.pos.line == line, caught.value


def test_a_field_the_api_server_refuses_is_at_its_template_line(tmp_path: Path) -> None:
    template = (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        "  name: {{ scoped_name('app') }}\n"
        "spec:\n"
        "  selector: {matchLabels: {a: b}}\n"
        "  template:\n"
        "    metadata: {labels: {a: b}}\n"
        "    spec:\n"
        "      containers:\n"
        "{% for name in ['a', 'b'] %}\n"
        "        - name: {{ name }}\n"
        "          image: x\n"
        "{% endfor %}\n"
        "        - name: c\n"
        "          imagePullPolcy: Always\n"  # line 16
    )
    message = render_error(tmp_path, template)
    assert "/templates/cm.yaml.j2:16: resource 'app.cm' renders Deployment" in message
    assert 'did you mean "imagePullPolicy"?' in message
