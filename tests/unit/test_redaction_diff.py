"""``oper8d diff`` never prints a value from a Secret: not a Secret's data, nor the real
password the running operator generated and a template copied into a ConfigMap (the live
side), nor the offline stand-in the render put there (the merged side)."""

from __future__ import annotations

import base64
from pathlib import Path

from bundles import build
from test_diff import FakeServer

from oper8d.diff import diff_cr, render_for_diff
from oper8d.engine.deploy import OWNER_LABEL

BUNDLE = """
components:
  - name: creds
    resources:
      - name: secret
        object:
          apiVersion: v1
          kind: Secret
          metadata: {name: "{{ scoped_name('creds') }}"}
          stringData: {password: "{{ random_string('pw', 20) }}"}
  - name: app
    resources:
      - name: config
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('app') }}"}
          data: {url: "postgres://app:{{ random_string('pw', 20) }}@db"}
"""

CR = {
    "apiVersion": "demo.oper8d.io/v1alpha1",
    "kind": "Demo",
    "metadata": {"name": "demo", "namespace": "default"},
    "spec": {},
}
REAL = "Zq8rT1vW3xY5aB7cD9eF"  # what the running operator generated
OLD = "Hk2mP4nQ6rS8tU0vW1xY"  # what the objects still hold (the generated value was replaced)


def test_the_real_and_the_offline_password_are_masked_on_both_sides(tmp_path: Path) -> None:
    bundle = build(tmp_path, BUNDLE)
    live = render_for_diff(bundle, CR)
    offline = base64.b64decode(
        live.cluster.get("v1", "Secret", "demo-creds", "default")["data"]["password"]
    ).decode()
    uid = live.cr["metadata"]["uid"]
    # the cluster as the real operator left it: its generated Secret and the real value
    live.cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "demo-oper8d-generated",
                "namespace": "default",
                "labels": {OWNER_LABEL: uid},
            },
            "data": {"pw.20": base64.b64encode(REAL.encode()).decode()},
        },
        field_manager="oper8d",
    )
    for kind, key, value in (
        ("Secret", "data", {"password": base64.b64encode(OLD.encode()).decode()}),
        ("ConfigMap", "data", {"url": f"postgres://app:{OLD}@db"}),
    ):
        name = "demo-creds" if kind == "Secret" else "demo-app"
        obj = live.cluster.get("v1", kind, name, "default")
        live.cluster.update({**obj, key: value}, field_manager="oper8d")
    server = FakeServer(live.cluster, render_for_diff(bundle, CR).cluster)
    report = diff_cr(bundle, CR, server)
    assert offline.startswith("offline")
    assert REAL not in report.text and OLD not in report.text and offline not in report.text
    assert REAL[:8] not in report.text
    config = next(d for d in report.diffs if d.name == "v1.ConfigMap.default.demo-app")
    # the diff renders with the generated Secret's value (REAL), the objects hold OLD: the
    # change shows, the values do not
    lines = config.text.splitlines()
    assert "-  url: postgres://app:***@db (before)" in lines
    assert "+  url: postgres://app:***@db (after)" in lines
    secret = next(d for d in report.diffs if d.name == "v1.Secret.default.demo-creds")
    assert "+  password: '*** (after)'" in secret.text.splitlines()
