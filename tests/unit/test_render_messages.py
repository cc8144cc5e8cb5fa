"""What a template author reads when a render is refused: what is wrong, at which template
line, never an internal error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bundles import demo_cr, write_bundle

from oper8d.testing import run_offline

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ scoped_name('%s') }}\n"


def failure(bundle: Path, cr: dict[str, Any]) -> str:
    run = run_offline(bundle, cr)
    assert run.fatal_error is not None
    return str(run.fatal_error)


def test_live_of_the_components_own_object_names_the_line_and_says_why(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n  - name: web\n    resources:\n"
        "      - {name: cm, template: templates/cm.yaml}\n"
        "      - {name: copy, template: templates/copy.yaml}\n",
        files={
            "templates/cm.yaml": CONFIGMAP % "cm",
            "templates/copy.yaml": CONFIGMAP % "copy"
            + "data:\n  uid: {{ live('web.cm').metadata.uid }}\n",
        },
    )
    message = failure(bundle, demo_cr())
    assert message.startswith("templates/copy.yaml:6")
    assert "live('web.cm') reads an object of component 'web', the component this" in message
    assert "read it from a component that depends on 'web'" in message
    assert "has no attribute" not in message


def test_live_of_another_components_object_still_reads_it(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n  - name: web\n    resources:\n"
        "      - {name: cm, template: templates/cm.yaml}\n"
        "  - name: app\n    resources:\n"
        "      - {name: copy, template: templates/copy.yaml}\n",
        files={
            "templates/cm.yaml": CONFIGMAP % "cm",
            "templates/copy.yaml": CONFIGMAP % "copy"
            + "data:\n  name: {{ live('web.cm').metadata.name }}\n",
        },
    )
    run = run_offline(bundle, demo_cr())
    assert run.fatal_error is None
    assert run.applied["app.copy"]["data"] == {"name": "demo-cm"}


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../../kube-system/secrets/x", "may not contain '/'"),
        ("x?watch=true", "may not contain '?'"),
        ("", "it is empty"),
    ],
)
def test_a_lookup_of_a_name_no_object_can_have_names_the_template_line(
    tmp_path: Path, name: str, problem: str
) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        "components:\n  - name: web\n    resources:\n"
        "      - {name: copy, template: templates/copy.yaml}\n",
        files={
            "templates/copy.yaml": CONFIGMAP % "copy"
            + "data:\n  got: {{ lookup('v1', 'ConfigMap', spec.src) is none }}\n"
        },
    )
    message = failure(bundle, demo_cr(src=name))
    assert message.startswith("templates/copy.yaml:6")
    assert f"lookup('v1', 'ConfigMap', {name!r}, None): invalid name: " in message
    assert problem in message


def test_a_failing_json6902_patch_names_its_place_in_the_bundle(tmp_path: Path) -> None:
    # it named the operation and path, but not where the patch is written (third outsider)
    bundle = write_bundle(
        tmp_path / "b",
        """\
        components:
          - name: app
            resources:
              - name: cm
                object:
                  apiVersion: v1
                  kind: ConfigMap
                  metadata: {name: "{{ scoped_name('cm') }}"}
            patches:
              - target: {resource: cm}
                type: json6902
                patch: [{op: replace, path: /metadata/namespace, value: elsewhere}]
        """,
    )
    message = failure(bundle, demo_cr())
    assert "operator.yaml:" in message
    assert "JSON patch operation 0 (replace '/metadata/namespace') failed" in message
