"""Bad input never gives a traceback: every command reports it and exits non-zero.

Each broken bundle and each broken CR goes through every command. ``CliRunner`` catches
exceptions instead of printing them, so the test checks that the command ended with
``sys.exit`` (``result.exception`` is a ``SystemExit`` or None), not with an exception.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bundles import configmap, write_bundle
from click.testing import CliRunner, Result

from oper8d.cli.main import main

REPO = Path(__file__).resolve().parents[2]
WEBAPP = REPO / "examples" / "operators" / "webapp"
DEMO_CR = "apiVersion: demo.oper8d.io/v1alpha1\nkind: Demo\nmetadata: {name: demo}\nspec: {}\n"

_ONE_CM = "components:\n" + configmap("a")


def _text_template(body: str) -> tuple[str, dict[str, str]]:
    controller = """\
    components:
      - name: a
        resources:
          - name: t
            template: templates/t.yaml
    """
    return controller, {"templates/t.yaml": body}


#: name -> (controller YAML, extra files, fails at load time)
BROKEN_BUNDLES: dict[str, tuple[str, dict[str, str], bool]] = {
    "malformed-yaml": (_ONE_CM + "    colour: a: b\n", {}, True),
    "unknown-key": (_ONE_CM + "    colour: blue\n", {}, True),
    "tab-indentation": (_ONE_CM + "\tcolour: blue\n", {}, True),
    "template-syntax": (
        "components:\n  - name: a\n    resources:\n      - name: cm\n"
        "        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ x }'}}\n",
        {},
        True,
    ),
    "text-template-syntax": (*_text_template("kind: {% if %}\n"), True),
    "cycle": (
        "components:\n"
        + configmap("a").replace("    resources:", "    dependsOn: [b]\n    resources:", 1)
        + configmap("b").replace("    resources:", "    dependsOn: [a]\n    resources:", 1),
        {},
        True,
    ),
    "unknown-component": (
        "components:\n"
        + configmap("a").replace("    resources:", "    dependsOn: [ghost]\n    resources:", 1),
        {},
        True,
    ),
    "missing-include": ("components:\n  - include: components/db.yaml\n", {}, True),
    "include-outside": ("components:\n  - include: ../../etc/passwd\n", {}, True),
    "broken-include": (
        "components:\n  - include: components/db.yaml\n",
        {"components/db.yaml": "name: db\nresources: [\n"},
        True,
    ),
    "missing-template": (*_text_template("")[:1], {}, True),
    "bad-live-reference": (
        "components:\n" + configmap("a", data="{x: \"{{ live('nope').metadata.name }}\"}"),
        {},
        True,
    ),
    "undefined-name": (
        "components:\n" + configmap("a", data='{x: "{{ spec.missing }}"}'),
        {},
        False,
    ),
    "config-error-call": (
        "components:\n" + configmap("a", data="{x: \"{{ config_error('size is too big') }}\"}"),
        {},
        False,
    ),
    "text-template-not-yaml": (
        *_text_template("apiVersion: v1\nkind: ConfigMap\ndata: [\n"),
        False,
    ),
    "text-template-not-an-object": (
        *_text_template("apiVersion: v1\nkind: ConfigMap\n---\n- just\n- a list\n"),
        False,
    ),
    "text-template-computed-kind": (*_text_template("apiVersion: v1\nkind: {{ k }}\n"), True),
    "for-each-not-a-list": (
        "components:\n"
        + configmap("a").replace("    resources:", "    forEach: {items: spec}\n    resources:", 1),
        {},
        False,
    ),
    "renders-an-invalid-object": (
        "components:\n"
        "  - name: a\n    resources:\n      - name: cm\n"
        "        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: 'Not_Valid'}}\n",
        {},
        False,
    ),
}


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [*map(str, args)])


def assert_reported_without_traceback(
    result: Result, *, exit_code: int = 1, reported_on: str = "stderr"
) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{result.exception!r} escaped:\n{result.output}"
    )
    assert "Traceback" not in result.output
    assert result.exit_code == exit_code, result.output
    assert getattr(result, reported_on).strip(), "an error must say what is wrong"


@pytest.mark.parametrize("case", sorted(BROKEN_BUNDLES))
@pytest.mark.parametrize("command", ["validate", "graph", "render", "run"])
def test_a_broken_bundle_is_reported_without_a_traceback(
    tmp_path: Path, case: str, command: str
) -> None:
    controller, files, fails_at_load = BROKEN_BUNDLES[case]
    bundle = write_bundle(tmp_path / "b", controller, files=files)
    cr = tmp_path / "cr.yaml"
    cr.write_text(DEMO_CR)
    args: list[str | Path] = {
        "validate": ["validate", bundle],
        "graph": ["graph", bundle],
        "render": ["render", bundle, "--cr", cr],
        "run": ["run", bundle, "--dry-run", "--cr", cr],
    }[command]
    result = invoke(*args)
    if fails_at_load or command == "render":
        assert_reported_without_traceback(result)
    elif command == "run":  # the rollout fails: the progress and the status say why
        assert_reported_without_traceback(result, reported_on="stdout")
        assert "not Ready" in result.stdout.splitlines()[-1]
    else:  # only rendering finds this problem
        assert result.exit_code == 0, result.output


BROKEN_CRS: dict[str, str | bytes] = {
    "empty": "",
    "a-list": "- a\n- b\n",
    "a-string": "just text\n",
    "malformed-yaml": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nspec: {image: [x\n",
    "two-documents": "kind: WebApp\n---\nkind: WebApp\n",
    "not-utf8": b"\xff\xfe\x00kind: WebApp\n",
    "no-kind": "apiVersion: demo.oper8d.io/v1alpha1\nmetadata: {name: x}\n",
    "other-kind": "apiVersion: demo.oper8d.io/v1alpha1\nkind: Other\nmetadata: {name: x}\n",
    "kind-not-a-string": "apiVersion: demo.oper8d.io/v1alpha1\nkind: [WebApp]\n"
    "metadata: {name: x}\n",
    "no-name": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nspec: {image: x}\n",
    "metadata-a-string": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: x\n",
    "name-a-list": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: {name: [x]}\n",
    "invalid-name": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: {name: Web_App}\n"
    "spec: {image: x}\n",
    "namespace-a-number": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
    "metadata: {name: x, namespace: 5}\nspec: {image: x}\n",
    "labels-a-list": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
    "metadata: {name: x, labels: [a]}\nspec: {image: x}\n",
    "spec-a-number": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: {name: x}\n"
    "spec: 5\n",
    "spec-violates-schema": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
    "metadata: {name: x}\nspec: {image: 5, replicas: -1, ingress: []}\n",
    "config-overrides-not-a-mapping": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
    "metadata: {name: x}\nspec: {image: x}\nconfigOverrides: [1]\n",
    "missing-config-defaults": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
    "metadata: {name: x, annotations: {oper8.org/config-defaults: nope}}\nspec: {image: x}\n",
    "temporary-patches-not-json": "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\n"
    "metadata: {name: x, annotations: {oper8.org/temporary-patches: '{'}}\nspec: {image: x}\n",
}

#: problems only a reconcile finds: validate accepts the CR, render and run refuse it
_FOUND_BY_RECONCILE = {
    "missing-config-defaults",
    "temporary-patches-not-json",
}


@pytest.mark.parametrize("case", sorted(BROKEN_CRS))
@pytest.mark.parametrize("command", ["validate", "render", "run"])
def test_a_broken_cr_is_reported_without_a_traceback(
    tmp_path: Path, case: str, command: str
) -> None:
    cr = tmp_path / "cr.yaml"
    content = BROKEN_CRS[case]
    if isinstance(content, bytes):
        cr.write_bytes(content)
    else:
        cr.write_text(content)
    extra = ["--dry-run"] if command == "run" else []
    result = invoke(command, WEBAPP, *extra, "--cr", cr)
    if command == "validate" and case in _FOUND_BY_RECONCILE:
        assert result.exit_code == 0, result.output
        return
    if command == "run" and case in _FOUND_BY_RECONCILE:
        # the reconciler refuses it: the status says ConfigError, the run ends not Ready
        assert result.exit_code == 1
        assert "ConfigError" in result.stdout
        return
    assert_reported_without_traceback(result)
    assert str(cr) in result.stderr, "the error names the CR file"


def test_a_bundle_path_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke("validate", tmp_path / "nope")
    assert_reported_without_traceback(result, exit_code=2)
    assert "does not exist" in result.stderr


def test_an_unreadable_operator_yaml_is_reported(tmp_path: Path) -> None:
    (tmp_path / "operator.yaml").write_bytes(b"\xff\xfe\x00\x01")
    assert_reported_without_traceback(invoke("validate", tmp_path))


_MERGED_CR = (
    "apiVersion: demo.oper8d.io/v1alpha1\nkind: WebApp\nmetadata: {name: x}\n"
    "spec:\n  <<: [{image: 'nginx:1'}, {replicas: 3}]\n"
)


def test_a_merge_of_a_list_of_mappings_reads_as_the_merged_mapping(tmp_path: Path) -> None:
    """``<<: [{..}, {..}]`` as a mapping's only entry ended in a traceback."""
    merged, plain = tmp_path / "merged.yaml", tmp_path / "plain.yaml"
    merged.write_text(_MERGED_CR)
    plain.write_text(
        _MERGED_CR.replace(
            "  <<: [{image: 'nginx:1'}, {replicas: 3}]", "  image: nginx:1\n  replicas: 3"
        )
    )
    assert invoke("validate", WEBAPP, "--cr", merged).exit_code == 0
    assert (
        invoke("render", WEBAPP, "--cr", merged).stdout
        == invoke("render", WEBAPP, "--cr", plain).stdout
    )
    bundle = tmp_path / "b"
    shutil.copytree(WEBAPP, bundle)
    operator = bundle / "operator.yaml"
    operator.write_text(
        operator.read_text().replace(
            "    config:\n", "    config:\n      <<: [{a: 1}, {b: 2}]\n", 1
        )
    )
    result = invoke("validate", bundle)
    assert result.exit_code == 0, result.output


def test_a_tagged_list_where_a_mapping_belongs_is_an_error_at_its_line(tmp_path: Path) -> None:
    """``!foo [x]`` ended in a traceback; now it is a list, which the schema refuses."""
    cr = tmp_path / "cr.yaml"
    cr.write_text(
        _MERGED_CR.replace(
            "  <<: [{image: 'nginx:1'}, {replicas: 3}]", "  image: x\n  ingress: !foo [x]"
        )
    )
    for command in ("validate", "render"):
        result = invoke(command, WEBAPP, "--cr", cr)
        assert_reported_without_traceback(result)
        assert f"{cr}:6:12: spec.ingress" in result.stderr, result.stderr
    bundle = tmp_path / "b"
    shutil.copytree(WEBAPP, bundle)
    operator = bundle / "operator.yaml"
    operator.write_text(operator.read_text().replace("shortNames: [wa]", "shortNames: [!foo [wa]]"))
    result = invoke("validate", bundle)
    assert_reported_without_traceback(result)
    assert "operator.yaml:14:" in result.stderr, result.stderr
