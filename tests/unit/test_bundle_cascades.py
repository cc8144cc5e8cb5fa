"""One mistake, one problem: a typo in an included component file is reported once, at its
line, and not again as "unknown component" wherever the component is referenced (a new
user saw one typo become five problems, three of them about operator.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import write_bundle
from click.testing import CliRunner

from oper8d.cli.main import main

CONTROLLER = """\
components:
  - include: components/db.yaml
  - name: app
    dependsOn: [db]
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('app') }}"}
          data: {svc: "{{ live('db.service').metadata.name }}"}
status:
  dbReady: "live('db.service') is not none"
"""

DB = """\
name: db
resources:
  - name: service
    object:
      apiVersion: v1
      kind: Service
      metadata: {name: "{{ scoped_name('db') }}"}
      spec: {ports: [{port: 5432}]}
"""


def validate(tmp_path: Path, db: str) -> list[str]:
    bundle = write_bundle(tmp_path / "b", CONTROLLER, files={"components/db.yaml": db})
    result = CliRunner().invoke(main, ["validate", str(bundle)])
    lines = result.output.strip().splitlines()
    assert "Traceback" not in result.output
    return [line.replace(str(bundle) + "/", "") for line in lines]


def test_the_bundle_is_valid_without_the_typo(tmp_path: Path) -> None:
    assert validate(tmp_path, DB)[0].startswith("ok: ")


@pytest.mark.parametrize(
    ("db", "problem"),
    [
        (
            DB.replace("resources:", "resourcs:"),
            "components/db.yaml:2:1: unknown key 'resourcs' in component 'db' "
            "(did you mean 'resources'?)",
        ),
        (DB.replace("    object:", "    objekt:"), "components/db.yaml:4:5: unknown key 'objekt'"),
        (DB.replace("name: db\n", "name: db\n  bad: [\n"), "components/db.yaml:2:"),
    ],
)
def test_a_mistake_in_an_included_component_is_one_problem(
    tmp_path: Path, db: str, problem: str
) -> None:
    lines = validate(tmp_path, db)
    assert lines[-1] == "1 problem in bundle " + str(tmp_path / "b")
    assert lines[0].startswith(problem), lines
    assert not any("unknown component" in line for line in lines)


def test_a_reference_to_a_component_that_does_not_exist_is_still_a_problem(
    tmp_path: Path,
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        CONTROLLER.replace("dependsOn: [db]", "dependsOn: [db, cache]"),
        files={"components/db.yaml": DB.replace("resources:", "resourcs:")},
    )
    output = CliRunner().invoke(main, ["validate", str(bundle)]).output
    assert "unknown component 'cache'" in output
    assert "unknown component 'db'" not in output
