"""``oper8d trace`` against the real control plane: the webapp operator runs in this process
and has made CRs Ready; the command shows their trees (readiness by the operator's rules,
field managers from the server's managedFields), reads only, shows what holds a deletion,
and a ``--watch`` ended by Ctrl-C exits 0."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result
from harness import EXAMPLES, is_ready, new_namespace, running_operator, wait_for

from oper8d.bundle.compile import load_bundle
from oper8d.cli.main import main
from oper8d.cluster.kube import MUTATING_VERBS, KubeCluster
from oper8d.envtest import Environment
from oper8d.trace import find_controller, trace_cr

pytestmark = pytest.mark.integration

WEBAPP = ("demo.oper8d.io/v1alpha1", "WebApp")
ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas/trace.schema.json").read_text())


@dataclass(frozen=True)
class Running:
    """The webapp operator watching ``namespace``, the sample WebApp ``hello`` Ready."""

    api: Any
    cluster: KubeCluster
    namespace: str
    kubeconfig: Path

    def apply(self, name: str, **spec: Any) -> None:
        cr = yaml.safe_load((EXAMPLES / "webapp/samples/webapp.yaml").read_text())
        cr["metadata"].update(name=name, namespace=self.namespace)
        cr["spec"].update(spec)
        self.cluster.apply(cr, field_manager="test")
        wait_for(f"WebApp {name} Ready", lambda: is_ready(self.live(*WEBAPP, name)))

    def trace(self, *args: str) -> Result:
        common = ["--kubeconfig", str(self.kubeconfig), "-n", self.namespace]
        return CliRunner().invoke(main, ["trace", str(EXAMPLES / "webapp"), *args, *common])

    def live(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        return self.cluster.get(api_version, kind, name, self.namespace)


@pytest.fixture(scope="module")
def running(envtest: Environment) -> Iterator[Running]:
    assert envtest.kubeconfig_path is not None
    with envtest.api_client() as api:
        cluster = KubeCluster(api, field_manager="test")
        ns = new_namespace(cluster, "trace")
        setup = Running(api, cluster, ns, envtest.kubeconfig_path)
        try:
            with running_operator(api, EXAMPLES / "webapp", ns):
                setup.apply("hello")
                yield setup
        finally:
            cluster.delete("v1", "Namespace", ns)


def tree(text: str) -> list[tuple[str, str, str]]:
    """(name cell, state, reason) of each row under the header."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("NAME "))
    width = lines[header].index("STATE")
    rows = []
    for line in lines[header + 1 :]:
        if not line.strip():
            break
        state, reason, *_ = line[width:].split()
        rows.append((line[:width].rstrip(), state, reason))
    return rows


def test_a_ready_webapp_shows_its_tree(running: Running) -> None:
    result = running.trace("webapp/hello")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"WebApp {running.namespace}/hello, Ready=True (Stable), ")
    assert tree(result.stdout) == [
        ("WebApp/hello", "ready", "Stable"),
        ("├─ config", "ready", "Exists"),
        ("│  └─ ConfigMap/hello-config", "ready", "Exists"),
        ("├─ app", "ready", "Ready"),
        ("│  └─ Deployment/hello-app", "ready", "Ready"),
        ("├─ service", "ready", "Ready"),
        ("│  └─ Service/hello-web", "ready", "Ready"),
        ("├─ ingress", "ready", "Exists"),
        ("│  └─ Ingress/hello-web", "ready", "Exists"),
        ("└─ autoscaler", "ready", "Exists"),
        ("   └─ HorizontalPodAutoscaler/hello-app", "ready", "Exists"),
    ]


def test_wide_shows_the_servers_field_managers(running: Running) -> None:
    result = running.trace("wa", "hello", "-o", "wide")
    assert result.exit_code == 0, result.output
    deployment = next(ln for ln in result.stdout.splitlines() if "Deployment/hello-app" in ln)
    # the operator applies (field manager: the bundle's name), the Deployment controller
    # writes the status
    assert "webapp(Apply)" in deployment
    assert "kube-controller-manager(Update/status)" in deployment


def test_json_is_the_documented_structure(running: Running) -> None:
    result = running.trace("WebApp/hello", "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    live = running.live(*WEBAPP, "hello")
    assert live is not None
    assert data["resource"]["uid"] == live["metadata"]["uid"]
    [configmap] = data["components"][0]["objects"]
    assert configmap["managers"][0]["manager"] == "webapp"
    assert configmap["readiness"]["state"] == "ready"


def test_tracing_sends_only_gets_and_lists(running: Running) -> None:
    bundle = load_bundle(EXAMPLES / "webapp")
    cluster = KubeCluster(running.api, field_manager="webapp")
    controller = find_controller(bundle, "webapp")
    trace = trace_cr(bundle, controller, cluster, "hello", running.namespace, now=_now())
    assert trace is not None
    assert cluster.writes == 0
    assert set(cluster.requests) <= {"get", "list", "discovery"}, cluster.requests
    assert not set(cluster.requests) & set(MUTATING_VERBS)


def test_a_deleting_webapp_shows_what_holds_it(running: Running) -> None:
    running.apply("doomed")
    cm = running.live("v1", "ConfigMap", "doomed-config")
    assert cm is not None
    running.cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "doomed-config",
                "namespace": running.namespace,
                "finalizers": ["example.com/hold"],
            },
        },
        field_manager="holder",
    )
    running.cluster.delete(*WEBAPP, "doomed", running.namespace)
    # the operator deletes downstream components first; the config's ConfigMap stays
    wait_for(
        "all but the held ConfigMap deleted",
        lambda: (
            running.live("apps/v1", "Deployment", "doomed-app") is None
            and running.live("v1", "Service", "doomed-web") is None
            and (running.live("v1", "ConfigMap", "doomed-config") or {})
            .get("metadata", {})
            .get("deletionTimestamp")
        ),
    )
    result = running.trace("webapp/doomed")
    assert result.exit_code == 0, result.output
    rows = tree(result.stdout)
    assert rows[0][:2] == ("WebApp/doomed", "deleting")
    assert ("│  └─ ConfigMap/doomed-config", "deleting", "Terminating") in rows
    assert "Deployment/doomed-app" not in result.stdout
    blockers = result.stdout.split("deletion waits for:\n")[1].splitlines()
    assert blockers[0].startswith(
        "  - finalizer finalizers.webapp.demo.oper8d.io on the WebApp: the operator removes it"
    )
    assert blockers[1].startswith(f"  - ConfigMap {running.namespace}/doomed-config: being deleted")
    assert blockers[1].endswith("held by finalizers example.com/hold")
    # let it go
    running.cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "doomed-config", "namespace": running.namespace, "finalizers": []},
        },
        field_manager="holder",
    )
    wait_for("WebApp doomed gone", lambda: running.live(*WEBAPP, "doomed") is None)
    gone = running.trace("webapp/doomed")
    assert gone.exit_code == 1
    assert gone.stderr == f"error: WebApp {running.namespace}/doomed not found\n"


def test_a_watch_ends_with_ctrl_c_and_exit_0(running: Running) -> None:
    env = {**os.environ, "KUBECONFIG": str(running.kubeconfig)}
    args = [sys.executable, "-m", "oper8d", "trace", str(EXAMPLES / "webapp"), "wa/hello"]
    args += ["-n", running.namespace, "--watch", "--interval", "0.5"]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(f"WebApp {running.namespace}/hello, Ready=True"), first
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_an_unknown_cr_and_a_kind_without_crd_are_one_line(
    running: Running, tmp_path: Path
) -> None:
    result = running.trace("webapp/nope")
    assert result.exit_code == 1
    assert result.stderr == f"error: WebApp {running.namespace}/nope not found\n"
    # the stateful example under a group no test installs (others install its CRD)
    bundle = tmp_path / "stateful"
    shutil.copytree(EXAMPLES / "stateful", bundle)
    operator = bundle / "operator.yaml"
    text = operator.read_text()
    operator.write_text(text.replace("group: demo.oper8d.io", "group: absent.oper8d.io", 1))
    result = CliRunner().invoke(
        main,
        [
            "trace",
            str(bundle),
            "notesapp/x",
            "--kubeconfig",
            str(running.kubeconfig),
        ],
    )
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and "is the CRD installed?" in line, line


def _now() -> datetime:
    return datetime.now(UTC)
