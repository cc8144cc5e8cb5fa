"""``oper8d run`` as a process against the real control plane: leader election between two
replicas (and a takeover after SIGKILL), a graceful SIGTERM, a kill in the middle of a
rollout, a CR the schema refuses, the probes, metrics and Events; and, in-process (the CLI
has no resync flag), that periodic resyncs send no writes; and that a SIGTERM gives up the
Lease only after the in-flight reconcile has finished writing.

Processes come from ``procs.OperatorLauncher`` (logs under tmp_path, printed when a test
fails); every test runs in a fresh namespace, which also holds its leader-election Lease.
"""

from __future__ import annotations

import base64
import math
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import (
    EXAMPLES,
    condition,
    copy_example,
    is_ready,
    new_namespace,
    running_operator,
    wait_for,
)
from kubernetes import client, watch
from procs import OperatorLauncher, metric_value, scrape_metrics
from test_kube_cluster import crd, install_crd, request_totals

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.kube import KubeCluster
from oper8d.engine.config import INTERNAL_NAME_ANNOTATION
from oper8d.envtest import Environment
from oper8d.errors import ClusterError
from oper8d.manifests.install import install_crds
from oper8d.objects import OWNER_LABEL

pytestmark = pytest.mark.integration

DEMO = "demo.oper8d.io/v1alpha1"
FREEFORM_GROUP = "freeform.oper8d.io"
FREEFORM = f"{FREEFORM_GROUP}/v1alpha1"
CR_KINDS = ((DEMO, "WebApp"), (DEMO, "NotesApp"), (FREEFORM, "WebApp"))
LEASE = ("coordination.k8s.io/v1", "Lease", "webapp-oper8d")
#: the lease timing every leader-electing process gets (procs.OperatorLauncher)
LEASE_DURATION = 3.0
#: SIGTERM: the manager lets in-flight reconciles finish for this long (ManagerOptions default)
GRACE_PERIOD = 30.0

#: what the webapp operator writes; the workload controllers' own writes are not its
WEBAPP_RESOURCES = {
    "configmaps",
    "deployments",
    "services",
    "ingresses",
    "horizontalpodautoscalers",
    "secrets",
    "webapps",
}
CONTROLLER_SUBRESOURCES = {"status", "scale"}
#: server-side, deletes are left out: the namespace controller keeps deleting in namespaces
#: that earlier tests left Terminating (their CRs' finalizers outlived the operator), and the
#: metric has no namespace label; the operator's own deletes are in KubeCluster.writes
WRITE_VERBS = {"POST", "PUT", "PATCH", "APPLY"}


# -- fixtures -----------------------------------------------------------------------------
@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s, field_manager="test")


@pytest.fixture
def ns(cluster: KubeCluster) -> Iterator[str]:
    """A fresh namespace; afterwards its CRs lose their finalizers (the operator is stopped
    by then) so that deleting the namespace does not hang."""
    name = new_namespace(cluster, "proc")
    yield name
    release_crs(cluster, name)
    cluster.delete("v1", "Namespace", name)


@pytest.fixture
def operators(envtest: Environment, ns: str, tmp_path: Path) -> Iterator[OperatorLauncher]:
    """Starts ``oper8d run`` processes; stops them all after the test and prints their logs
    (pytest shows them when the test failed)."""
    assert envtest.kubeconfig_path is not None
    launcher = OperatorLauncher(tmp_path / "logs", envtest.kubeconfig_path)
    launcher.log_dir.mkdir()
    yield launcher
    launcher.stop_all()
    print(launcher.logs())


@pytest.fixture
def webapp_crds(cluster: KubeCluster) -> None:
    install_crds(cluster, load_bundle(EXAMPLES / "webapp"))


def release_crs(cluster: KubeCluster, namespace: str) -> None:
    for api_version, kind in CR_KINDS:
        try:
            crs = cluster.list(api_version, kind, namespace)
        except ClusterError:  # that CRD is not installed
            continue
        for cr in crs:
            for _ in range(3):
                cr["metadata"]["finalizers"] = []
                try:
                    cluster.update(cr)
                    break
                except ClusterError:
                    cr = cluster.get(api_version, kind, cr["metadata"]["name"], namespace)
                    if cr is None:
                        break


# -- helpers ------------------------------------------------------------------------------
def sample(name: str, file: str, namespace: str, **spec: object) -> dict[str, Any]:
    cr = yaml.safe_load((EXAMPLES / name / "samples" / file).read_text())
    cr["metadata"]["namespace"] = namespace
    cr["spec"].update(spec)
    return cr


def ready_cr(cluster: KubeCluster, api_version: str, kind: str, name: str, namespace: str):
    cr = cluster.get(api_version, kind, name, namespace)
    return cr if is_ready(cr) else None


def lease_spec(cluster: KubeCluster, namespace: str) -> dict[str, Any]:
    lease = cluster.get(*LEASE, namespace) or {}
    return lease.get("spec") or {}


def config_message(cluster: KubeCluster, namespace: str) -> str | None:
    cm = cluster.get("v1", "ConfigMap", "hello-config", namespace)
    return (cm or {}).get("data", {}).get("MESSAGE")


def micro_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


# -- resync (in-process: the CLI has no resync flag) ------------------------------------------
def test_resyncs_of_a_stable_cr_reconcile_but_send_no_writes(
    envtest: Environment, k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    resync = 2.0
    with running_operator(k8s, EXAMPLES / "webapp", ns, resync_period=resync) as manager:
        cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
        wait_for("WebApp Ready", lambda: ready_cr(cluster, DEMO, "WebApp", "hello", ns), 90)
        # the reconcile that wrote Ready records its Events after the status: let the
        # operator's own writes settle first (bounded; a write every poll fails the test)
        wait_for("the operator to stop writing", _quiet(manager.api), 30)
        # kube-controller-manager writes a kube-root-ca.crt ConfigMap into every namespace:
        # let it land before counting ConfigMap writes
        wait_for(
            "kube-root-ca.crt in the namespace",
            lambda: cluster.get("v1", "ConfigMap", "kube-root-ca.crt", ns),
            30,
        )
        metrics_port = manager.probe_ports[-1]
        reconciles_before = _reconcile_total(metrics_port)
        writes_before = manager.api.writes
        server_before = _webapp_writes(request_totals(envtest, succeeded_only=True))

        time.sleep(2 * resync + 1)  # resyncs are time-based: let at least two happen

        server_after = _webapp_writes(request_totals(envtest, succeeded_only=True))
        assert manager.api.writes == writes_before, manager.api.requests
        assert server_after == server_before, server_after - server_before
        assert _reconcile_total(metrics_port) >= reconciles_before + 2


def _quiet(api: KubeCluster):
    """A probe true once ``api.writes`` has not changed for a second."""
    seen = {"writes": api.writes, "since": time.monotonic()}

    def probe() -> bool:
        now, writes = time.monotonic(), api.writes
        if writes != seen["writes"]:
            seen.update(writes=writes, since=now)
        return now - seen["since"] >= 1.0

    return probe


def _reconcile_total(port: int) -> float:
    return metric_value(scrape_metrics(port), "oper8d_reconcile_total")


def _webapp_writes(totals: Counter[tuple[str, str, str]]) -> Counter[tuple[str, str, str]]:
    return Counter(
        {
            key: count
            for key, count in totals.items()
            if key[0] in WRITE_VERBS
            and key[1] in WEBAPP_RESOURCES
            and not (key[1] != "webapps" and key[2] in CONTROLLER_SUBRESOURCES)
        }
    )


# -- leader election ------------------------------------------------------------------------
def test_only_the_lease_holder_reconciles_and_the_standby_takes_over_after_a_kill(
    cluster: KubeCluster, ns: str, operators: OperatorLauncher, webapp_crds: None
) -> None:
    a = operators.start(EXAMPLES / "webapp", ns, name="replica-a", leader_elect=True)
    b = operators.start(EXAMPLES / "webapp", ns, name="replica-b", leader_elect=True)
    a.wait_ready()
    b.wait_ready()
    holder = wait_for("a Lease holder", lambda: lease_spec(cluster, ns).get("holderIdentity"), 30)
    by_identity = {a.identity: a, b.identity: b}
    assert holder in by_identity, f"Lease held by {holder!r}, not by {list(by_identity)}"
    leader = by_identity[holder]
    follower = b if leader is a else a

    cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
    wait_for("WebApp Ready", lambda: ready_cr(cluster, DEMO, "WebApp", "hello", ns), 90)
    assert leader.messages("reconciled"), leader.tail()
    assert not follower.messages("reconciled"), follower.tail()
    assert not follower.messages("started leading"), follower.tail()
    assert leader.metric("oper8d_leader") == 1
    assert follower.metric("oper8d_leader") == 0
    assert follower.metric("oper8d_reconcile_total") == 0
    transitions = lease_spec(cluster, ns).get("leaseTransitions", 0)

    killed_at = time.time()
    assert leader.kill() == -9
    cluster.apply(
        sample("webapp", "webapp.yaml", ns, message="after the kill"), field_manager="test"
    )

    spec = wait_for(
        "the standby to take the Lease",
        lambda: (s := lease_spec(cluster, ns)).get("holderIdentity") == follower.identity and s,
        LEASE_DURATION + 7,
    )
    assert spec["leaseTransitions"] == transitions + 1
    assert micro_time(spec["acquireTime"]) > killed_at
    wait_for(
        "the change made after the kill",
        lambda: config_message(cluster, ns) == "after the kill",
        30,
    )
    assert not leader.running

    # nobody reconciled between the kill and the takeover: the survivor started leading
    # once, after the kill, and reconciled only after that
    # (a reconcile logs when it ends, after the ConfigMap write)
    wait_for("the survivor's first reconcile", lambda: follower.messages("reconciled"), 30)
    records = follower.records()
    started = [i for i, r in enumerate(records) if r.msg.startswith("started leading")]
    assert len(started) == 1, follower.tail()
    first_reconcile = next(i for i, r in enumerate(records) if r.msg.startswith("reconciled"))
    assert first_reconcile > started[0]
    started_at = records[started[0]].ts
    assert started_at is not None
    assert started_at >= math.floor(killed_at)  # log times may be whole seconds
    assert follower.metric("oper8d_leader") == 1
    assert follower.metric("oper8d_reconcile_total") > 0


def test_sigterm_stops_gracefully_and_releases_the_lease(
    cluster: KubeCluster, ns: str, operators: OperatorLauncher, webapp_crds: None
) -> None:
    proc = operators.start(EXAMPLES / "webapp", ns, leader_elect=True)
    proc.wait_ready()
    wait_for(
        "the operator to hold the Lease",
        lambda: lease_spec(cluster, ns).get("holderIdentity") == proc.identity,
        30,
    )
    cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
    wait_for("WebApp Ready", lambda: ready_cr(cluster, DEMO, "WebApp", "hello", ns), 90)

    assert proc.terminate(GRACE_PERIOD) == 0, proc.tail()
    assert any(r.msg == "stopped" for r in proc.records()), proc.tail()
    assert lease_spec(cluster, ns).get("holderIdentity") == ""


def test_sigterm_during_a_reconcile_releases_the_lease_only_after_the_reconcile_ends(
    cluster: KubeCluster, ns: str, operators: OperatorLauncher, tmp_path: Path, webapp_crds: None
) -> None:
    # a copy of the webapp whose every reconcile takes seconds (its ConfigMap renders slowly)
    bundle = copy_example("webapp", tmp_path)
    text = (bundle / "operator.yaml").read_text()
    message = 'MESSAGE: "{{ spec.message }}"'
    assert message in text
    slow = "{% for i in range(40000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}"
    (bundle / "operator.yaml").write_text(
        text.replace(message, f'MESSAGE: "{slow}{{{{ spec.message }}}}"')
    )
    proc = operators.start(bundle, ns, leader_elect=True)
    proc.wait_ready()
    wait_for(
        "the operator to hold the Lease",
        lambda: lease_spec(cluster, ns).get("holderIdentity") == proc.identity,
        30,
    )
    taken = "oper8d_workqueue_queue_duration_seconds_count"
    before = proc.metric(taken, name="webapp")
    cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
    wait_for("a worker to take the CR", lambda: proc.metric(taken, name="webapp") > before, 30)

    assert proc.terminate(GRACE_PERIOD) == 0, proc.tail()
    messages = [r.msg for r in proc.records()]
    released = [i for i, m in enumerate(messages) if " released lease " in m]
    reconciled = [i for i, m in enumerate(messages) if m.startswith("reconciled")]
    assert released and reconciled, proc.tail()
    assert reconciled[-1] < released[0], proc.tail()
    lease = lease_spec(cluster, ns)
    assert lease.get("holderIdentity") == ""
    # what the operator wrote, it wrote while it held the Lease (managedFields times are
    # whole seconds, the release time has microseconds)
    released_at = micro_time(lease["renewTime"])
    for kind, name in (("ConfigMap", "hello-config"), ("Deployment", "hello-app")):
        obj = cluster.get("apps/v1" if kind == "Deployment" else "v1", kind, name, ns) or {}
        for entry in obj.get("metadata", {}).get("managedFields", []):
            if entry.get("manager") == "webapp":
                assert micro_time(entry["time"]) <= released_at, (kind, entry["time"], lease)


# -- a kill in the middle of a rollout --------------------------------------------------------
OWNED_KINDS = (
    ("v1", "Secret"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
)


def test_an_operator_killed_mid_rollout_converges_after_a_restart(
    k8s: client.ApiClient,
    cluster: KubeCluster,
    ns: str,
    operators: OperatorLauncher,
) -> None:
    bundle = EXAMPLES / "stateful"
    first = operators.start(bundle, ns, name="first", install_crds=True)
    first.wait_ready()
    cr = cluster.apply(sample("stateful", "notes.yaml", ns), field_manager="test")
    uid = cr["metadata"]["uid"]

    _wait_for_first_owned_secret(k8s, ns, uid)
    assert first.kill() == -9
    assert not is_ready(cluster.get(DEMO, "NotesApp", "notes", ns)), "the rollout had finished"

    second = operators.start(bundle, ns, name="restarted")
    second.wait_ready()
    wait_for("NotesApp Ready", lambda: ready_cr(cluster, DEMO, "NotesApp", "notes", ns), 150)

    owned = [
        obj
        for api_version, kind in OWNED_KINDS
        for obj in cluster.list(api_version, kind, ns, label_selector=f"{OWNER_LABEL}={uid}")
    ]
    names = Counter(
        (o["metadata"].get("annotations") or {}).get(INTERNAL_NAME_ANNOTATION) for o in owned
    )
    names.pop(None, None)  # the Secret keeping generated values has no internal name
    assert set(names) == {
        "secrets.password",
        "database.manifests-service",
        "database.manifests-statefulset",
        "migrate.job",
        "app.deployment",
        "frontend.service",
    }
    assert all(count == 1 for count in names.values()), names
    # the password generated before the kill is the one in use after the restart
    credentials = cluster.get("v1", "Secret", "notes-db-credentials", ns)
    generated = cluster.get("v1", "Secret", "notes-oper8d-generated", ns)
    assert credentials is not None and generated is not None
    assert credentials["data"]["password"] in generated["data"].values()
    assert base64.b64decode(credentials["data"]["password"])

    errors = [r.line for r in second.records() if r.level in ("error", "critical")]
    errors += [r.line for r in second.records() if r.level == "raw" and "ERROR" in r.line]
    assert not errors, second.tail()
    assert "Traceback" not in second.log_text(), second.tail()


def _wait_for_first_owned_secret(k8s: client.ApiClient, ns: str, uid: str) -> None:
    """Return as soon as a Secret owned by the CR exists (the first component of the
    stateful example makes Secrets; a watch reports existing objects too)."""
    stream = watch.Watch().stream(
        client.CoreV1Api(k8s).list_namespaced_secret,
        ns,
        label_selector=f"{OWNER_LABEL}={uid}",
        timeout_seconds=60,
    )
    try:
        for _event in stream:
            return
    finally:
        stream.close()
    raise AssertionError(f"no Secret owned by {uid} in {ns} within 60s")


# -- a CR the schema refuses ------------------------------------------------------------------
def test_a_cr_that_violates_the_schema_is_a_config_error_and_creates_nothing(
    k8s: client.ApiClient,
    cluster: KubeCluster,
    ns: str,
    operators: OperatorLauncher,
    tmp_path: Path,
) -> None:
    # the generated CRD would refuse the CR at admission: serve the kind free-form
    install_crd(k8s, cluster, crd(FREEFORM_GROUP, "WebApp", "webapps", version="v1alpha1"))
    bundle = copy_example("webapp", tmp_path)
    text = (bundle / "operator.yaml").read_text()
    assert "group: demo.oper8d.io" in text
    (bundle / "operator.yaml").write_text(
        text.replace("group: demo.oper8d.io", f"group: {FREEFORM_GROUP}")
    )

    proc = operators.start(bundle, ns)
    proc.wait_ready()
    cr = sample("webapp", "webapp.yaml", ns, replicas=0)
    cr["apiVersion"] = FREEFORM
    cluster.apply(cr, field_manager="test")

    ready = wait_for(
        "a Ready condition",
        lambda: condition(cluster.get(FREEFORM, "WebApp", "hello", ns), "Ready"),
        60,
    )
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError"), ready
    assert "spec.replicas" in ready["message"]
    for api_version, kind in (
        ("apps/v1", "Deployment"),
        ("v1", "ConfigMap"),
        ("v1", "Service"),
        ("networking.k8s.io/v1", "Ingress"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ):
        objects = [
            o["metadata"]["name"]
            for o in cluster.list(api_version, kind, ns)
            if o["metadata"]["name"] != "kube-root-ca.crt"
        ]
        assert objects == [], f"{kind}s created for a refused CR: {objects}"


# -- probes, metrics, events ------------------------------------------------------------------
def test_probes_answer_ok_once_synced_and_metrics_name_the_operator_families(
    cluster: KubeCluster, ns: str, operators: OperatorLauncher
) -> None:
    proc = operators.start(EXAMPLES / "webapp", ns, install_crds=True)
    proc.wait_ready()
    assert proc.http_get("/readyz") == (200, "ok\n")
    assert proc.http_get("/healthz") == (200, "ok\n")
    cluster.apply(sample("webapp", "webapp.yaml", ns), field_manager="test")
    wait_for("WebApp Ready", lambda: ready_cr(cluster, DEMO, "WebApp", "hello", ns), 90)

    samples = proc.metrics()
    names = {name for name, _, _ in samples}
    assert {"oper8d_reconcile_total", "oper8d_workqueue_depth", "oper8d_api_requests_total"} <= (
        names
    )
    assert proc.metric("oper8d_reconcile_total", controller="webapp", result="success") >= 1
    api = [labels for name, labels, _ in samples if name == "oper8d_api_requests_total"]
    assert any(labels.get("code") == "200" for labels in api), api
    depth = [labels for name, labels, _ in samples if name == "oper8d_workqueue_depth"]
    assert {"name": "webapp"} in depth, depth


def test_an_update_of_a_ready_cr_is_recorded_as_events_and_its_first_rollout_is_not(
    cluster: KubeCluster, ns: str, operators: OperatorLauncher, webapp_crds: None
) -> None:
    proc = operators.start(EXAMPLES / "webapp", ns)
    proc.wait_ready()
    cr = sample("webapp", "webapp.yaml", ns)
    cluster.apply(cr, field_manager="test")
    ready = wait_for("WebApp Ready", lambda: ready_cr(cluster, DEMO, "WebApp", "hello", ns), 90)

    def ours() -> list[dict[str, Any]]:
        return [
            e
            for e in cluster.list("events.k8s.io/v1", "Event", ns)
            if e.get("regarding", {}).get("uid") == ready["metadata"]["uid"]
            and e.get("reportingController") == "oper8d.io/webapp"
        ]

    # a new image: the Deployment rolls out again, so the update spans reconciles
    cr["spec"].update(version="1.1.0", image="nginx:1.28")
    cluster.apply(cr, field_manager="test")

    def updating() -> list[dict[str, Any]]:
        return [e for e in ours() if e.get("note", "").startswith("Updating True")]

    event, *_ = wait_for("an Event for the update", updating, 60)
    assert event["type"] == "Normal"
    assert event["regarding"]["kind"] == "WebApp" and event["regarding"]["name"] == "hello"
    # the first rollout's steps (Initializing, InProgress, its Ready) are in its status only
    assert not [e for e in ours() if e.get("reason") == "Initializing"]


def test_a_taken_metrics_address_is_a_clear_error_not_a_traceback(
    envtest: Environment, ns: str, webapp_crds: None
) -> None:
    import socket
    import subprocess
    import sys

    assert envtest.kubeconfig_path is not None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [sys.executable, "-m", "oper8d", "run", str(EXAMPLES / "webapp")]
        argv += ["--kubeconfig", str(envtest.kubeconfig_path), "--namespace", ns]
        argv += ["--metrics-bind-address", f"127.0.0.1:{port}"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "cannot serve the health probes or metrics" in done.stderr
    assert "Traceback" not in done.stderr
