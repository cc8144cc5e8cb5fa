"""``oper8d init``: a new bundle that validates, renders and passes its own tests.

The command object is invoked directly (``oper8d.cli.init_cmd.init``); ``validate`` and
``render`` come from the ``oper8d`` group, ``test`` from its own module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from oper8d.cli import init_cmd, test_cmd
from oper8d.cli.main import main
from oper8d.errors import Oper8dError
from oper8d.scaffold import ScaffoldOptions, default_kind, scaffold

FILES = [
    "README.md",
    "operator.yaml",
    "samples/example.yaml",
    "tests/golden/example.yaml",
    "tests/render.yaml",
]


def init(*args: str | Path) -> Result:
    return CliRunner().invoke(init_cmd.init, [str(a) for a in args])


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def greeter(tmp_path: Path) -> Path:
    target = tmp_path / "greeter"
    result = init("greeter", "--dir", target)
    assert result.exit_code == 0, result.output
    return target


def test_init_writes_a_bundle_with_a_sample_tests_a_golden_file_and_a_readme(
    greeter: Path,
) -> None:
    assert files_under(greeter) == FILES


def test_init_lists_what_it_wrote_and_what_to_run_next(tmp_path: Path) -> None:
    target = tmp_path / "hello"
    result = init("hello", "--dir", target)
    assert result.stdout.splitlines() == [
        f"created bundle 'hello' (example.com/v1alpha1 Hello) in {target}:",
        *(f"  {f}" for f in FILES),
        "next:",
        f"  oper8d validate {target}",
        f"  oper8d test {target}",
        f"  oper8d run {target} --dry-run --cr {target}/samples/example.yaml",
    ]


def test_the_new_bundle_passes_validate(greeter: Path) -> None:
    result = CliRunner().invoke(
        main, ["validate", str(greeter), "--cr", str(greeter / "samples" / "example.yaml")]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "ok: bundle 'greeter': 1 controller, 1 component; CR example matches the Greeter schema\n"
    )


def test_the_new_bundle_passes_its_own_tests(greeter: Path) -> None:
    result = CliRunner().invoke(test_cmd.test, [str(greeter)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PASS  tests/render.yaml::the sample renders as committed",
        "PASS  tests/render.yaml::the image is required",
        "PASS  tests/render.yaml::the sample becomes Ready",
        "3 passed, 0 failed",
    ]


def test_the_generated_golden_file_is_what_oper8d_render_prints(greeter: Path) -> None:
    rendered = CliRunner().invoke(
        main, ["render", str(greeter), "--cr", str(greeter / "samples" / "example.yaml")]
    )
    assert rendered.exit_code == 0, rendered.output
    assert (greeter / "tests" / "golden" / "example.yaml").read_bytes() == rendered.stdout_bytes
    kinds = [d["kind"] for d in yaml.safe_load_all(rendered.stdout)]
    assert kinds == ["ConfigMap", "Deployment"]


def test_the_yaml_files_point_editors_at_the_json_schemas(greeter: Path) -> None:
    first = {
        name: (greeter / name).read_text().splitlines()[0]
        for name in ("operator.yaml", "tests/render.yaml")
    }
    assert first == {
        "operator.yaml": "# yaml-language-server: "
        "$schema=https://oper8d.io/schemas/operator.schema.json",
        "tests/render.yaml": "# yaml-language-server: "
        "$schema=https://oper8d.io/schemas/bundle-test.schema.json",
    }


def test_the_readme_says_how_to_point_the_modelines_at_a_local_copy_of_the_schemas(
    greeter: Path,
) -> None:
    readme = (greeter / "README.md").read_text()
    assert readme.startswith("# greeter\n")
    assert "pathlib.Path(oper8d.__file__).parent / 'schemas'" in readme
    assert "# yaml-language-server: $schema=/path/to/site-packages/oper8d/schemas/" in readme
    assert '"yaml.schemas"' in readme
    assert "oper8d test ." in readme


def test_the_modeline_urls_are_the_ids_of_the_shipped_schemas() -> None:
    schemas = Path(__file__).resolve().parents[2] / "schemas"
    for name in ("operator.schema.json", "bundle-test.schema.json"):
        schema_id = json.loads((schemas / name).read_text())["$id"]
        assert schema_id == f"https://oper8d.io/schemas/{name}"


def test_group_and_kind_options_shape_the_custom_resource(tmp_path: Path) -> None:
    target = tmp_path / "b"
    result = init("my-app", "--dir", target, "--group", "apps.acme.io", "--kind", "Shop")
    assert result.exit_code == 0, result.output
    sample = yaml.safe_load((target / "samples" / "example.yaml").read_text())
    assert (sample["apiVersion"], sample["kind"]) == ("apps.acme.io/v1alpha1", "Shop")
    resource = yaml.safe_load((target / "operator.yaml").read_text())["controllers"][0]["resource"]
    assert (resource["group"], resource["kind"]) == ("apps.acme.io", "Shop")
    assert CliRunner().invoke(test_cmd.test, [str(target)]).exit_code == 0


def test_without_dir_the_bundle_is_created_in_a_folder_named_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(init_cmd.init, ["web-shop"])
    assert result.exit_code == 0, result.output
    assert files_under(tmp_path / "web-shop") == FILES
    operator = yaml.safe_load((tmp_path / "web-shop" / "operator.yaml").read_text())
    assert operator["controllers"][0]["resource"]["kind"] == "WebShop"


@pytest.mark.parametrize(
    ("name", "kind"), [("greeter", "Greeter"), ("my-app", "MyApp"), ("a1-b2", "A1B2")]
)
def test_the_default_kind_is_the_name_in_camel_case(name: str, kind: str) -> None:
    assert default_kind(name) == kind


def test_init_refuses_a_folder_that_is_not_empty_and_leaves_it_alone(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    result = init("greeter", "--dir", target)
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {target} already exists and is not empty: oper8d init never overwrites files; "
        "choose another --dir or remove the folder first\n"
    )
    assert files_under(target) == ["notes.txt"]


def test_init_writes_into_an_existing_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    assert init("greeter", "--dir", target).exit_code == 0
    assert files_under(target) == FILES


def test_running_init_twice_refuses_the_second_time(greeter: Path) -> None:
    before = (greeter / "operator.yaml").read_bytes()
    assert init("greeter", "--dir", greeter).exit_code == 1
    assert (greeter / "operator.yaml").read_bytes() == before


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["My_App"], "Invalid value for 'NAME': 'My_App' is not a valid operator name"),
        (["app", "--group", "nodot"], "Invalid value for '--group': 'nodot' is not a valid API"),
        (["app", "--kind", "shop"], "Invalid value for '--kind': 'shop' is not a valid kind"),
        (["1app"], "the kind derived from '1app' would be '1app', which is not a valid kind"),
    ],
)
def test_bad_names_are_usage_errors_and_nothing_is_written(
    tmp_path: Path, args: list[str], complaint: str
) -> None:
    target = tmp_path / "out"
    result = init(*args, "--dir", target)
    assert result.exit_code == 2
    assert complaint in result.stderr
    assert not target.exists()


def test_scaffold_refuses_bad_input_before_writing_anything(tmp_path: Path) -> None:
    with pytest.raises(Oper8dError, match="pass --kind"):
        scaffold(tmp_path / "x", ScaffoldOptions(name="9lives"))
    assert not (tmp_path / "x").exists()
