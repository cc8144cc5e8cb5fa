"""``oper8d diff`` against the real control plane: the webapp operator runs in this process
and has made a CR Ready; the command compares CR files with what it deployed, through the
API server's dry-run server-side apply, and must never change the cluster."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from harness import EXAMPLES, is_ready, new_namespace, running_operator, wait_for

from oper8d.cli.diff_cmd import diff
from oper8d.cluster.kube import KubeCluster
from oper8d.envtest import Environment

pytestmark = pytest.mark.integration

WEBAPP = ("demo.oper8d.io/v1alpha1", "WebApp")


@dataclass(frozen=True)
class RolledOut:
    """The sample WebApp ``hello``, Ready in ``namespace``, the operator still running."""

    cluster: KubeCluster
    namespace: str
    kubeconfig: Path

    def cr(self, name: str = "hello", **spec: Any) -> dict[str, Any]:
        cr = yaml.safe_load((EXAMPLES / "webapp" / "samples" / "webapp.yaml").read_text())
        cr["metadata"].update(name=name, namespace=self.namespace)
        cr["spec"].update(spec)
        return cr

    def diff(self, cr: dict[str, Any], tmp_path: Path) -> Result:
        path = tmp_path / "cr.yaml"
        path.write_text(yaml.safe_dump(cr), encoding="utf-8")
        args = [str(EXAMPLES / "webapp"), "--cr", str(path), "--kubeconfig", str(self.kubeconfig)]
        return CliRunner().invoke(diff, args)

    def live(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        return self.cluster.get(api_version, kind, name, self.namespace)


@pytest.fixture(scope="module")
def rolled_out(envtest: Environment) -> Iterator[RolledOut]:
    assert envtest.kubeconfig_path is not None
    with envtest.api_client() as api:
        cluster = KubeCluster(api, field_manager="test")
        ns = new_namespace(cluster, "diff")
        setup = RolledOut(cluster, ns, envtest.kubeconfig_path)
        try:
            with running_operator(api, EXAMPLES / "webapp", ns):
                cluster.apply(setup.cr(), field_manager="test")
                wait_for("WebApp Ready", lambda: is_ready(setup.live(*WEBAPP, "hello")))
                yield setup
        finally:
            cluster.delete("v1", "Namespace", ns)


def test_the_cr_the_operator_deployed_shows_no_difference(
    rolled_out: RolledOut, tmp_path: Path
) -> None:
    result = rolled_out.diff(rolled_out.cr(), tmp_path)
    assert result.exit_code == 0, result.output
    assert (result.stdout, result.stderr) == ("", "")


def test_a_replicas_change_shows_in_the_autoscaler_only_and_changes_nothing(
    rolled_out: RolledOut, tmp_path: Path
) -> None:
    before = rolled_out.live("apps/v1", "Deployment", "hello-app")
    assert before is not None
    result = rolled_out.diff(rolled_out.cr(replicas=5), tmp_path)
    assert result.exit_code == 1, result.output
    ns = rolled_out.namespace
    assert f"+++ merged/autoscaling.v2.HorizontalPodAutoscaler.{ns}.hello-app\n" in result.stdout
    assert "-  minReplicas: 3\n+  minReplicas: 5\n" in result.stdout
    changed = [ln.split(".")[-3] for ln in result.stdout.splitlines() if ln.startswith("+++ ")]
    # the Deployment leaves spec.replicas to the autoscaler (leaveToOthers): no change there
    assert changed == ["HorizontalPodAutoscaler"]
    assert "managedFields" not in result.stdout and "resourceVersion" not in result.stdout
    after = rolled_out.live("apps/v1", "Deployment", "hello-app")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_disabling_the_ingress_shows_it_as_a_deletion(
    rolled_out: RolledOut, tmp_path: Path
) -> None:
    result = rolled_out.diff(rolled_out.cr(ingress={"enabled": False}), tmp_path)
    assert result.exit_code == 1, result.output
    ns = rolled_out.namespace
    assert f"--- live/networking.k8s.io.v1.Ingress.{ns}.hello-web\n+++ /dev/null\n" in result.stdout
    assert result.stdout.count("+++ /dev/null") == 1
    assert result.stdout.count("--- live/") == 1  # nothing else changes
    assert rolled_out.live("networking.k8s.io/v1", "Ingress", "hello-web") is not None


def test_a_cr_not_yet_in_the_cluster_makes_every_object_new(
    rolled_out: RolledOut, tmp_path: Path
) -> None:
    result = rolled_out.diff(rolled_out.cr(name="fresh"), tmp_path)
    assert result.exit_code == 1, result.output
    headers = [ln for ln in result.stdout.splitlines() if ln.startswith(("--- ", "+++ "))]
    ns = rolled_out.namespace
    assert headers == [
        "--- /dev/null",
        f"+++ merged/v1.ConfigMap.{ns}.fresh-config",
        "--- /dev/null",
        f"+++ merged/apps.v1.Deployment.{ns}.fresh-app",
        "--- /dev/null",
        f"+++ merged/v1.Service.{ns}.fresh-web",
        "--- /dev/null",
        f"+++ merged/networking.k8s.io.v1.Ingress.{ns}.fresh-web",
        "--- /dev/null",
        f"+++ merged/autoscaling.v2.HorizontalPodAutoscaler.{ns}.fresh-app",
    ]
    # the server's defaults are part of what it would store
    assert "+  revisionHistoryLimit: 10" in result.stdout
    assert "does not exist in the cluster" in result.stderr
    assert rolled_out.live("apps/v1", "Deployment", "fresh-app") is None
