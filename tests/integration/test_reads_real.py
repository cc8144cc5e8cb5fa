"""Scoped reads on the real API server: the engine, running as the ServiceAccount that
``oper8d manifests`` generates, reads a Secret of another namespace only when the bundle
declares it, and the generated RBAC grants exactly that read. A CR of namespace ``team``
that names a Secret in ``kube-system`` (or in its own namespace) gets a ConfigError naming
the template line, and no request for it reaches the API server."""

from __future__ import annotations

import base64
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import condition, is_ready
from kubernetes import client

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle
from oper8d.cluster.kube import KubeCluster
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.envtest import Environment
from oper8d.errors import ClusterError
from oper8d.manifests.package import InstallOptions, names_for, operator_manifests

pytestmark = pytest.mark.integration

KIND = ("reads.oper8d.io/v1", "Copier")

OPERATOR = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata: {{name: copier}}
controllers:
  - name: copier
    resource:
      group: reads.oper8d.io
      version: v1
      kind: Copier
      schema:
        type: object
        properties:
          secret: {{type: string}}
          namespace: {{type: string}}
    reads:
      - {{apiVersion: v1, kind: Secret, namespace: {vault}, names: [ca]}}
    components:
      - name: copy
        resources:
          - name: configmap
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {{name: "{{{{ scoped_name('copy') }}}}"}}
              data:
                ca: "{{{{ lookup('v1', 'Secret', spec.secret, spec.namespace).data.ca }}}}"
"""


@dataclass
class Setup:
    bundle: Bundle
    admin: KubeCluster
    operator: KubeCluster
    requests: list[str]
    team: str
    vault: str


@pytest.fixture
def setup(envtest: Environment, k8s: client.ApiClient, tmp_path: Path) -> Iterator[Setup]:
    suffix = uuid.uuid4().hex[:6]
    team, vault, op = f"team-{suffix}", f"vault-{suffix}", f"copier-op-{suffix}"
    (tmp_path / "operator.yaml").write_text(textwrap.dedent(OPERATOR.format(vault=vault)))
    bundle = load_bundle(tmp_path)
    admin = KubeCluster(k8s, field_manager="test")
    for ns in (team, vault):
        admin.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            field_manager="test",
        )
    for ns in (team, vault, "kube-system"):
        admin.apply(_secret(ns, "ca", f"ca of {ns}"), field_manager="test")
    options = InstallOptions(namespace=op, watch_namespaces=(team,))
    objs = [m.obj for m in operator_manifests(bundle, options) if m.obj["kind"] != "Deployment"]
    for obj in objs:
        admin.apply(obj, field_manager="test")
    _wait_established(admin, bundle)
    requests: list[str] = []
    with envtest.api_client() as api_client:
        sa = names_for(bundle)["operator"]
        api_client.set_default_header("Impersonate-User", f"system:serviceaccount:{op}:{sa}")
        original = api_client.rest_client.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            requests.append(f"{method} {url.split('?')[0]}")
            return original(method, url, *args, **kwargs)

        api_client.rest_client.request = request  # type: ignore[method-assign]
        yield Setup(
            bundle, admin, KubeCluster(api_client, field_manager="copier"), requests, team, vault
        )
    for cr in admin.list(*KIND, team):
        admin.delete(*KIND, cr["metadata"]["name"], team)
    for ns in (team, vault, op):
        admin.delete("v1", "Namespace", ns)
    admin.delete("v1", "Secret", "ca", "kube-system")


def _secret(ns: str, name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "data": {"ca": base64.b64encode(value.encode()).decode()},
    }


def _wait_established(admin: KubeCluster, bundle: Bundle) -> None:
    name = f"{bundle.controllers[0].resource.plural}.reads.oper8d.io"
    deadline = time.monotonic() + 60
    while True:
        live = admin.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name) or {}
        if condition(live, "Established").get("status") == "True":
            return
        assert time.monotonic() < deadline, f"CRD {name} not Established"
        time.sleep(0.2)


def copy(s: Setup, secret_ns: str) -> dict[str, Any]:
    """Create a Copier in the team namespace naming Secret ``ca`` of ``secret_ns`` and
    reconcile it with the engine as the operator's ServiceAccount; the CR afterwards."""
    name = f"c-{uuid.uuid4().hex[:6]}"
    s.admin.apply(
        {
            "apiVersion": KIND[0],
            "kind": KIND[1],
            "metadata": {"name": name, "namespace": s.team},
            "spec": {"secret": "ca", "namespace": secret_ns},
        },
        field_manager="test",
    )
    controller = s.bundle.controllers[0]
    reconciler = Reconciler(s.bundle, controller, s.operator, ReconcilerOptions("copier"))
    reconciler.reconcile(s.team, name)
    cr = s.admin.get(*KIND, name, s.team)
    assert cr is not None
    return cr


def copied(s: Setup, cr: dict[str, Any]) -> str | None:
    cm = s.admin.get("v1", "ConfigMap", f"{cr['metadata']['name']}-copy", s.team)
    return None if cm is None else cm["data"]["ca"]


def test_a_declared_read_of_another_namespace_works(setup: Setup) -> None:
    cr = copy(setup, setup.vault)
    assert is_ready(cr), cr.get("status")
    assert base64.b64decode(copied(setup, cr) or "").decode() == f"ca of {setup.vault}"
    # the generated RBAC grants that one Secret and no other
    setup.admin.apply(_secret(setup.vault, "other", "x"), field_manager="test")
    for ns, name in ((setup.vault, "other"), ("kube-system", "ca"), (setup.team, "ca")):
        with pytest.raises(ClusterError) as refused:
            setup.operator.get("v1", "Secret", name, ns)
        assert refused.value.status == 403


@pytest.mark.parametrize("where", ["kube-system", "own namespace"])
def test_an_undeclared_secret_read_is_refused_before_any_request(setup: Setup, where: str) -> None:
    secret_ns = setup.team if where == "own namespace" else where
    setup.requests.clear()
    cr = copy(setup, secret_ns)
    ready = condition(cr, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert f"reading Secret {secret_ns}/ca is not allowed" in ready["message"]
    lines = (setup.bundle.root / "operator.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "lookup(" in text)
    assert ready["message"].startswith(f"operator.yaml:{line}:")
    assert copied(setup, cr) is None
    assert not [r for r in setup.requests if "/secrets/" in r], setup.requests
