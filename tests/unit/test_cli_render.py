"""``oper8d render``: one YAML stream on stdout, or one file per object with ``-o DIR``."""

from __future__ import annotations

from pathlib import Path

import yaml
from bundles import write_bundle
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d import yamlio
from oper8d.cli.main import main

REPO = Path(__file__).resolve().parents[2]
WEBAPP = REPO / "examples" / "operators" / "webapp"
FULL = WEBAPP / "samples" / "webapp.yaml"
MINIMAL = WEBAPP / "samples" / "webapp-minimal.yaml"


def render(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["render", *map(str, args)])


def test_render_prints_every_object_as_one_yaml_stream_on_stdout() -> None:
    result = render(WEBAPP, "--cr", FULL)
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.stdout))
    assert [d["kind"] for d in docs] == [
        "ConfigMap",
        "Deployment",
        "Service",
        "Ingress",
        "HorizontalPodAutoscaler",
    ]
    assert all(d["metadata"]["namespace"] == "default" for d in docs)
    assert result.stderr == ""


def test_rendered_objects_carry_their_internal_name_and_owner() -> None:
    docs = list(yaml.safe_load_all(render(WEBAPP, "--cr", FULL).stdout))
    deployment = docs[1]
    assert deployment["metadata"]["annotations"]["oper8.org/internal-name"] == "app.deployment"
    [owner] = deployment["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("WebApp", "hello", True)


def test_render_to_a_folder_writes_one_file_per_object(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = render(WEBAPP, "--cr", FULL, "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "000-config.configmap.yaml",
        "001-app.deployment.yaml",
        "002-service.service.yaml",
        "003-ingress.ingress.yaml",
        "004-autoscaler.hpa.yaml",
    ]
    for path in out.iterdir():
        [doc] = list(yaml.safe_load_all(path.read_text()))
        internal = doc["metadata"]["annotations"]["oper8.org/internal-name"]
        assert path.name == f"{path.name[:3]}-{internal}.yaml"
    assert "wrote 5 files to" in result.stderr


def test_folder_output_holds_the_same_objects_as_the_stream(tmp_path: Path) -> None:
    render(WEBAPP, "--cr", FULL, "-o", tmp_path)
    files = [yaml.safe_load(p.read_text()) for p in sorted(tmp_path.glob("*.yaml"))]
    assert files == list(yaml.safe_load_all(render(WEBAPP, "--cr", FULL).stdout))


def test_deletions_of_disabled_components_go_to_deletions_txt(tmp_path: Path) -> None:
    result = render(WEBAPP, "--cr", MINIMAL, "-o", tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "deletions.txt").read_text() == (
        "would delete (component 'ingress' is disabled): "
        "networking.k8s.io/v1 Ingress default/hello-web\n"
        "would delete (component 'autoscaler' is disabled): "
        "autoscaling/v2 HorizontalPodAutoscaler default/hello-app\n"
    )


def test_rendering_again_into_a_folder_replaces_its_earlier_files_only(tmp_path: Path) -> None:
    render(WEBAPP, "--cr", FULL, "-o", tmp_path)
    (tmp_path / "README.md").write_text("mine")
    render(WEBAPP, "--cr", MINIMAL, "-o", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "000-config.configmap.yaml",
        "001-app.deployment.yaml",
        "002-service.service.yaml",
        "README.md",
        "deletions.txt",
    ]
    assert (tmp_path / "README.md").read_text() == "mine"


def test_an_undefined_name_in_a_template_fails_the_render_at_its_file_and_line(
    tmp_path: Path,
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        """\
        components:
          - name: a
            resources:
              - name: t
                template: templates/t.yaml
        """,
        files={
            "templates/t.yaml": """\
                apiVersion: v1
                kind: ConfigMap
                metadata:
                  name: {{ name }}-a
                data:
                  size: {{ spec.size.typo }}
                """
        },
    )
    cr = tmp_path / "cr.yaml"
    cr.write_text(
        "apiVersion: demo.oper8d.io/v1alpha1\nkind: Demo\nmetadata: {name: d}\nspec: {}\n"
    )
    result = render(bundle, "--cr", cr)
    assert result.exit_code == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"{bundle / 'templates' / 't.yaml'}:6:")
    assert "undefined variable" in line and "size" in line
    assert "Traceback" not in result.output


def test_a_cr_violating_the_schema_is_not_rendered(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text(
        "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: {name: x}\n"
        "spec:\n  image: nginx\n  replicas: zero\n"
    )
    result = render(WEBAPP, "--cr", cr)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"{cr}:6:13: spec.replicas: must be an integer")


def test_render_needs_a_cr() -> None:
    result = render(WEBAPP)
    assert result.exit_code == 2
    assert "Missing option '--cr'" in result.stderr


_scalars = st.none() | st.booleans() | st.integers() | st.text()
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(), _values, max_size=5), min_size=1, max_size=3))
def test_the_rendered_stream_reads_back_as_the_same_objects(objects: list[dict]) -> None:
    assert list(yaml.safe_load_all(yamlio.dump_all(objects))) == objects


def test_long_strings_stay_on_one_line_and_multi_line_strings_are_blocks() -> None:
    text = yamlio.dump({"long": "word " * 50 + "end", "script": "set -e\nmake\n"})
    assert text.splitlines()[0] == "long: " + "word " * 50 + "end"
    assert "script: |\n  set -e\n  make\n" in text
