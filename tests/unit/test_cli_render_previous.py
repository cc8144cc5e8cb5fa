"""``oper8d render --previous FILE``: a change of a field the API server keeps once an
object exists, against the objects as they are, is an error naming the field and the way
out (onImmutableChange: fail) or a warning (recreate); nothing else is (no false alarm)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from bundles import demo_cr, write_bundle
from click.testing import CliRunner, Result
from immutable_corpus import BUNDLE

from oper8d.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"


def render(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["render", *map(str, args)])


def _files(tmp_path: Path, policy: str) -> tuple[Path, Path, Path]:
    bundle = write_bundle(tmp_path / "bundle", BUNDLE.format(policy=policy))
    before, after = tmp_path / "a.yaml", tmp_path / "b.yaml"
    before.write_text(yaml.safe_dump(demo_cr(track="a")))
    after.write_text(yaml.safe_dump(demo_cr(track="b")))
    previous = tmp_path / "previous.yaml"
    result = render(bundle, "--cr", before)
    assert result.exit_code == 0, result.output
    previous.write_text(result.stdout)
    return bundle, after, previous


def test_an_immutable_change_is_an_error_naming_the_field(tmp_path: Path) -> None:
    bundle, after, previous = _files(tmp_path, "")
    result = render(bundle, "--cr", after, "--previous", previous)
    assert result.exit_code == 1
    assert "error: Deployment default/demo-web: spec.selector cannot change" in result.stderr
    assert "`onImmutableChange: recreate` on resource 'app.deployment'" in result.stderr
    assert result.stdout == ""


def test_a_recreated_object_is_a_warning(tmp_path: Path) -> None:
    bundle, after, previous = _files(tmp_path, "onImmutableChange: recreate")
    result = render(bundle, "--cr", after, "--previous", previous)
    assert result.exit_code == 0, result.output
    assert "warning: Deployment default/demo-web: spec.selector cannot change" in result.stderr
    assert "track: b" in result.stdout


@pytest.mark.parametrize("example", ["webapp", "stateful", "fanout"])
def test_an_unchanged_render_of_the_examples_has_no_immutable_change(
    tmp_path: Path, example: str
) -> None:
    (sample,) = sorted((EXAMPLES / example / "samples").glob("*.yaml"))[:1]
    first = render(EXAMPLES / example, "--cr", sample)
    assert first.exit_code == 0, first.output
    previous = tmp_path / "previous.yaml"
    previous.write_text(first.stdout)
    again = render(EXAMPLES / example, "--cr", sample, "--previous", previous)
    assert again.exit_code == 0, again.output
    assert again.stderr == "" and again.stdout == first.stdout


def test_a_previous_file_that_is_not_yaml_is_a_message(tmp_path: Path) -> None:
    bundle, after, _previous = _files(tmp_path, "")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    result = render(bundle, "--cr", after, "--previous", bad)
    assert result.exit_code == 1
    assert "bad.yaml:" in result.stderr and "not valid YAML" in result.stderr
    assert "Traceback" not in result.output
