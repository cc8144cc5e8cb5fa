"""``oper8d render`` and ``run --dry-run`` as a user sees them: Secret values, and values
from Secrets wherever they went, are ``***`` unless ``--show-secrets``; ``render -o``
creates the files that hold them readable by their owner only; offline random strings
say that they are not real passwords."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml
from bundles import write_bundle
from click.testing import CliRunner, Result

from oper8d.cli.main import main

BUNDLE = """
components:
  - name: creds
    resources:
      - name: secret
        object:
          apiVersion: v1
          kind: Secret
          metadata: {name: "{{ scoped_name('creds') }}"}
          stringData:
            username: dbadmin
            password: "{{ random_string('pw', 20) }}"
  - name: app
    dependsOn: [creds]
    resources:
      - name: config
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('app') }}"}
          data:
            url: "postgres://app:{{ live('creds.secret').data.password | b64decode }}@db"
            mode: "{{ spec.mode | default('production') }}"
  - name: web
    resources:
      - name: service
        object:
          apiVersion: v1
          kind: Service
          metadata: {name: "{{ scoped_name('web') }}"}
          spec: {ports: [{port: 80}]}
reads: [{apiVersion: v1, kind: Secret}]  # the app reads the generated password back
"""

# the password is compared with a map's keys: a wrong one fails the render, quoting it
FAILING = BUNDLE.replace(
    "mode: \"{{ spec.mode | default('production') }}\"",
    "mode: \"{{ {'x': 1}[live('creds.secret').data.password | b64decode] }}\"",
)

CR = """\
apiVersion: demo.oper8d.io/v1alpha1
kind: Demo
metadata: {name: demo, namespace: default}
spec: {}
"""


def setup(tmp_path: Path, body: str = BUNDLE) -> tuple[Path, Path]:
    bundle = write_bundle(tmp_path / "bundle", body)
    cr = tmp_path / "cr.yaml"
    cr.write_text(CR, encoding="utf-8")
    return bundle, cr


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, list(map(str, args)))


def by_kind(text: str) -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(text) if d}


def generated_password(bundle: Path, cr: Path) -> str:
    shown = cli("render", bundle, "--cr", cr, "--show-secrets")
    assert shown.exit_code == 0, shown.output
    return str(by_kind(shown.stdout)["Secret"]["stringData"]["password"])


def test_render_masks_secret_values_and_the_values_copied_from_them(tmp_path: Path) -> None:
    bundle, cr = setup(tmp_path)
    password = generated_password(bundle, cr)
    result = cli("render", bundle, "--cr", cr)
    assert result.exit_code == 0, result.output
    assert password not in result.stdout
    objects = by_kind(result.stdout)
    assert objects["Secret"]["stringData"] == {"username": "***", "password": "***"}
    assert objects["ConfigMap"]["data"] == {"url": "postgres://app:***@db", "mode": "production"}
    assert objects["Secret"]["metadata"]["name"] == "demo-creds"
    assert [line for line in result.stdout.splitlines() if line.startswith("#")] == [
        "# masked: the values of v1 Secret default/demo-creds "
        "(oper8d render --show-secrets prints them)",
        "# masked: values from Secrets in v1 ConfigMap default/demo-app "
        "(oper8d render --show-secrets prints them)",
    ]


def test_show_secrets_prints_offline_values_that_say_they_are_not_real(tmp_path: Path) -> None:
    bundle, cr = setup(tmp_path)
    result = cli("render", bundle, "--cr", cr, "--show-secrets")
    objects = by_kind(result.stdout)
    password = objects["Secret"]["stringData"]["password"]
    assert password.startswith("offline") and len(password) == 20 and password.isalnum()
    assert objects["ConfigMap"]["data"]["url"] == f"postgres://app:{password}@db"
    assert "# masked" not in result.stdout
    # deterministic: the same CR renders the same value
    assert cli("render", bundle, "--cr", cr, "--show-secrets").stdout == result.stdout


@pytest.mark.parametrize("show", [False, True])
def test_render_to_a_folder_creates_files_holding_secrets_owner_only(
    tmp_path: Path, show: bool
) -> None:
    bundle, cr = setup(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    # left by an earlier render, readable by everyone: it must not keep that mode
    (out / "000-creds.secret.yaml").write_text("old", encoding="utf-8")
    os.chmod(out / "000-creds.secret.yaml", 0o644)
    result = cli("render", bundle, "--cr", cr, "-o", out, *(["--show-secrets"] if show else []))
    assert result.exit_code == 0, result.output
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    umask = os.umask(0)
    os.umask(umask)
    assert modes == {
        "000-creds.secret.yaml": 0o600,
        "001-app.config.yaml": 0o600,  # holds the password, shown or masked
        "002-web.service.yaml": 0o666 & ~umask,
    }
    secret = yaml.safe_load((out / "000-creds.secret.yaml").read_text(encoding="utf-8"))
    assert (secret["stringData"]["username"] == "***") is not show
    if show:
        assert "masked" not in result.stderr
    else:
        assert "values from Secrets are shown as *** in 2 objects" in result.stderr


def test_a_failed_render_does_not_print_the_value_it_quotes(tmp_path: Path) -> None:
    bundle, cr = setup(tmp_path, FAILING)
    password = generated_password(setup(tmp_path / "ok")[0], cr)  # same CR, same value
    result = cli("render", bundle, "--cr", cr)
    assert result.exit_code == 1
    assert "has no attribute '***'" in result.stderr
    assert password not in result.output


def test_the_dry_run_does_not_print_the_value_a_failed_component_quotes(tmp_path: Path) -> None:
    bundle, cr = setup(tmp_path, FAILING)
    password = generated_password(setup(tmp_path / "ok")[0], cr)
    result = cli("run", bundle, "--dry-run", "--cr", cr)
    assert result.exit_code == 1
    failed = [line for line in result.stdout.splitlines() if "failed" in line]
    assert any("has no attribute '***'" in line for line in failed), result.stdout
    [ready] = [line for line in result.stdout.splitlines() if line.startswith("Ready ")]
    assert "ConfigError" in ready and "has no attribute '***'" in ready
    assert password not in result.output


SHOP = """
components:
  - name: creds
    resources:
      - name: secret
        object:
          apiVersion: v1
          kind: Secret
          metadata: {name: "{{ scoped_name('creds') }}"}
          stringData: {username: shop, password: "{{ random_string('pw', 20) }}"}
  - name: app
    dependsOn: [creds]
    resources:
      - name: deployment
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "{{ scoped_name('app') }}"}
          spec:
            selector: {matchLabels: {app: shop}}
            template:
              metadata: {labels: {app: shop}}
              spec:
                containers:
                  - name: api
                    image: registry.example.com/shop/api:1
                    env:
                      - {name: GREETING, value: welcome to the shop}
                      - name: DB_USER
                        value: "{{ live('creds.secret').data.username | b64decode }}"
                      - name: DB_URL
                        value: "postgres://shop:{{ random_string('pw', 20) }}@db"
reads: [{apiVersion: v1, kind: Secret}]
"""


def test_a_short_secret_value_does_not_mangle_other_text_in_render(tmp_path: Path) -> None:
    bundle, cr = setup(tmp_path, SHOP)
    result = cli("render", bundle, "--cr", cr)
    assert result.exit_code == 0, result.output
    deployment = by_kind(result.stdout)["Deployment"]
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    assert container["image"] == "registry.example.com/shop/api:1"
    # a whole value equal to the Secret's is masked wherever it came from (docs/security.md)
    assert pod["metadata"]["labels"] == {"app": "***"}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {
        "GREETING": "welcome to the shop",
        "DB_USER": "***",  # the field is the Secret's value
        "DB_URL": "postgres://shop:***@db",  # the generated password looks secret
    }
