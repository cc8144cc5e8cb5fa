"""Each traceback cause the fuzzing of the CLI found is now a clean error with a position.

Every case edits an example bundle (or its CR) the way the fuzzer did and runs the command
that crashed; it must exit 1 with a message saying what is wrong and where, and no exception
may escape the command.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oper8d.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"


def run(command: str, bundle: Path, cr: Path, *extra: str) -> Result:
    result = CliRunner().invoke(main, [command, str(bundle), "--cr", str(cr), *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def edited(tmp_path: Path, example: str, old: str, new: str) -> tuple[Path, Path]:
    bundle = tmp_path / example
    shutil.copytree(EXAMPLES / example, bundle)
    operator = bundle / "operator.yaml"
    text = operator.read_text()
    assert old in text
    operator.write_text(text.replace(old, new, 1))
    return bundle, next((bundle / "samples").glob("*.yaml"))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "name: \"{{ scoped_name('config') }}\"",
            'name: "{{ [1, 2] }}"',
            "metadata.name is a list",
        ),
        ('MESSAGE: "{{ spec.message }}"', 'MESSAGE: "{{ self }}"', "not data"),
        ('MESSAGE: "{{ spec.message }}"', "MESSAGE: \"{{ 'a' * 10**9 }}\"", "stringBytes"),
        ('MESSAGE: "{{ spec.message }}"', 'MESSAGE: "{{ 10 ** 100000000 }}"', "intBits"),
    ],
)
def test_a_bad_rendered_value_is_a_clean_error_at_its_position(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    bundle, cr = edited(tmp_path, "webapp", old, new)
    for command in ("render", "run"):
        extra = ("--dry-run",) if command == "run" else ()
        result = run(command, bundle, cr, *extra)
        assert result.exit_code == 1
        assert message in result.output
        assert "operator.yaml:" in result.output


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("enabled: spec.ingress.enabled", 'enabled: "@x"', "template syntax error"),
        (
            "    resource:\n      group: demo.oper8d.io",
            "    resource: 5\n    resourcex:\n      group: demo.oper8d.io",
            "resource",
        ),
        ("apiVersion: v1\n", "apiVersion: 1\n", "operator.yaml:"),
        ("kind: ConfigMap", "kind: {a: 1}", "operator.yaml:"),
        (
            "enabled: spec.ingress.enabled",
            'enabled: "' + "(" * 300 + "1" + ")" * 300 + '"',
            "nestingDepth",
        ),
    ],
)
def test_a_bad_bundle_is_a_clean_validate_error(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    bundle, cr = edited(tmp_path, "webapp", old, new)
    result = run("validate", bundle, cr)
    assert result.exit_code == 1
    assert message in result.output


def test_a_set_tag_on_a_scalar_in_a_cr_is_invalid_yaml(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text("apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nspec:\n  image: !!set a\n")
    result = run("validate", EXAMPLES / "webapp", cr)
    assert result.exit_code == 1
    assert "invalid YAML" in result.output


def test_render_o_keeps_a_slash_in_a_foreach_key_inside_the_folder(tmp_path: Path) -> None:
    bundle, _ = edited(tmp_path, "fanout", "key: w.name", "key: w.topic | default(w.name)")
    cr = tmp_path / "cr.yaml"
    cr.write_text(
        "apiVersion: demo.oper8d.io/v1alpha1\nkind: WorkerPool\n"
        "metadata: {name: p, namespace: default}\n"
        "spec:\n  workers:\n    - {name: a, topic: x/../../y}\n"
    )
    out = tmp_path / "out"
    result = run("render", bundle, cr, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "000-queue-config.configmap.yaml",
        "001-worker-x-..-..-y.deployment.yaml",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cr.yaml", "fanout", "out"]


@pytest.mark.parametrize(
    ("example", "old", "new"),
    [
        ("webapp", 'labels: {app: "{{ name }}"}', "labels: true"),
        ("fanout", 'replicas: "{{ w.replicas }}"', "replicas: spec.nope"),
    ],
)
def test_an_object_that_cannot_be_applied_is_named_with_its_resource_position(
    tmp_path: Path, example: str, old: str, new: str
) -> None:
    bundle, cr = edited(tmp_path, example, old, new)
    result = run("run", bundle, cr, "--dry-run")
    assert result.exit_code == 1
    assert "operator.yaml:" in result.output
    # Kubernetes' schema check refuses it before the deploy phase would try
    assert "could not be" in result.output or "the API server would refuse" in result.output
    assert "Error(" not in result.output  # no bare exception repr without a position
