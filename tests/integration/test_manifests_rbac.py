"""The RBAC ``oper8d manifests`` generates, on the real API server: the ServiceAccount may do
what the operator needs and nothing else (SubjectAccessReview), and the operator, running
in this process under that ServiceAccount's identity (impersonation), takes a WebApp to
Ready, handles a TemporaryPatch, records Events and finalizes the CR without one
forbidden request. The Deployment itself is not applied: envtest runs no containers."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from harness import EXAMPLES, is_ready, wait_for
from kubernetes import client

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.kube import KubeCluster
from oper8d.envtest import Environment
from oper8d.manifests.package import InstallOptions, names_for, operator_manifests
from oper8d.runtime.manager import Manager, ManagerOptions

pytestmark = pytest.mark.integration

WEBAPP = ("demo.oper8d.io/v1alpha1", "WebApp")
CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
BUNDLE = load_bundle(EXAMPLES / "webapp")
SERVICE_ACCOUNT = names_for(BUNDLE)["operator"]
LEASE = names_for(BUNDLE)["lease"]


@pytest.fixture
def admin(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s, field_manager="test")


@pytest.fixture
def names(admin: KubeCluster) -> Iterator[dict[str, str]]:
    """Fresh namespace names: the operator's (created by the manifests), a watched one and
    an unwatched one (created here)."""
    suffix = uuid.uuid4().hex[:8]
    out = {role: f"rbac-{role}-{suffix}" for role in ("operator", "watched", "other")}
    for role in ("watched", "other"):
        admin.apply(_namespace(out[role]), field_manager="test")
    yield out
    for ns in out.values():
        admin.delete("v1", "Namespace", ns)


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def install(admin: KubeCluster, options: InstallOptions) -> list[dict[str, Any]]:
    """Apply the generated manifests except the Deployment; wait for the CRDs."""
    objs = [m.obj for m in operator_manifests(BUNDLE, options) if m.obj["kind"] != "Deployment"]
    for obj in objs:
        admin.apply(obj, field_manager="test")
    for crd in (o for o in objs if o["kind"] == CRD[1]):
        wait_for(f"CRD {crd['metadata']['name']} Established", lambda c=crd: _established(admin, c))
    return objs


def _established(admin: KubeCluster, crd: dict[str, Any]) -> bool:
    live = admin.get(*CRD, crd["metadata"]["name"]) or {}
    conditions = (live.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def uninstall(admin: KubeCluster, objs: list[dict[str, Any]]) -> None:
    """Remove what is not namespaced (CRDs stay: other tests share them)."""
    for obj in objs:
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            admin.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])


def allowed(
    admin: KubeCluster,
    operator_ns: str,
    verb: str,
    group: str,
    resource: str,
    namespace: str = "",
    name: str = "",
) -> bool:
    """Whether the operator's ServiceAccount may ``verb`` ``resource`` (``plural`` or
    ``plural/subresource``) of API ``group``, asked as the API server's authorizer."""
    plural, _, subresource = resource.partition("/")
    review = admin.create(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:serviceaccount:{operator_ns}:{SERVICE_ACCOUNT}",
                "groups": [
                    "system:serviceaccounts",
                    f"system:serviceaccounts:{operator_ns}",
                    "system:authenticated",
                ],
                "resourceAttributes": {
                    "namespace": namespace,
                    "verb": verb,
                    "group": group,
                    "resource": plural,
                    "subresource": subresource,
                    "name": name,
                },
            },
        }
    )
    return bool(review["status"].get("allowed"))


def test_a_namespace_scoped_install_allows_what_the_operator_needs_and_nothing_more(
    admin: KubeCluster, names: dict[str, str]
) -> None:
    op, watched, other = names["operator"], names["watched"], names["other"]
    objs = install(admin, InstallOptions(namespace=op, watch_namespaces=(watched,)))
    try:

        def can(verb: str, group: str, resource: str, namespace: str = "", name: str = "") -> bool:
            return allowed(admin, op, verb, group, resource, namespace, name)

        demo, coordination = "demo.oper8d.io", "coordination.k8s.io"
        assert can("create", "apps", "deployments", watched)
        assert can("patch", "apps", "deployments", watched)
        assert can("delete", "networking.k8s.io", "ingresses", watched)
        assert can("update", demo, "webapps/status", watched)
        assert not can("patch", demo, "webapps/status", watched)  # status is PUT
        assert can("update", demo, "webapps", watched)
        assert can("create", "events.k8s.io", "events", watched)
        assert can("update", "oper8.org", "temporarypatches", watched)
        assert can("get", coordination, "leases", op, LEASE)
        assert can("create", coordination, "leases", op)

        assert not can("create", "", "pods", watched)
        assert not can("get", "", "nodes")
        assert not can("delete", "", "namespaces", name=watched)
        assert not can("get", "", "secrets", other)
        assert not can("create", "apps", "deployments", other)
        assert not can("list", demo, "webapps")  # in all namespaces
        assert not can("update", "apps", "deployments", watched)  # the bundle only applies them
        # webapp neither deploys, generates nor declares a Secret: no access to any
        assert not can("get", "", "secrets", watched)
        assert not can("list", "", "secrets", watched)
        assert not can("get", coordination, "leases", op, "someone-elses-lease")
        assert not can("create", coordination, "leases", watched)
        assert not can("get", "apiextensions.k8s.io", "customresourcedefinitions")
    finally:
        uninstall(admin, objs)


def test_a_cluster_wide_install_grants_the_kinds_in_every_namespace_but_nothing_else(
    admin: KubeCluster, names: dict[str, str]
) -> None:
    op, other = names["operator"], names["other"]
    objs = install(admin, InstallOptions(namespace=op))
    try:
        assert [o["kind"] for o in objs].count("ClusterRole") == 1
        assert allowed(admin, op, "create", "apps", "deployments", other)
        assert allowed(admin, op, "list", "demo.oper8d.io", "webapps")
        assert not allowed(admin, op, "create", "", "pods", other)
        assert not allowed(admin, op, "get", "", "nodes")
        assert not allowed(admin, op, "delete", "", "namespaces", name=other)
        assert not allowed(admin, op, "create", "coordination.k8s.io", "leases", other)
    finally:
        uninstall(admin, objs)


def test_the_deployment_is_accepted_and_its_pods_meet_the_restricted_pod_security_level(
    admin: KubeCluster, names: dict[str, str]
) -> None:
    op = names["operator"]
    objs = install(admin, InstallOptions(namespace=op, watch_namespaces=(names["watched"],)))
    try:
        namespace = admin.get("v1", "Namespace", op)
        assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        manifests = operator_manifests(BUNDLE, InstallOptions(namespace=op))
        (deployment,) = [m.obj for m in manifests if m.obj["kind"] == "Deployment"]
        admin.apply(deployment, field_manager="test")
        # kwok plays the kubelet: the Pods exist once Pod Security admission let them in
        wait_for(
            "the operator's two Pods",
            lambda: (
                (admin.get("apps/v1", "Deployment", deployment["metadata"]["name"], op) or {})
                .get("status", {})
                .get("replicas")
                == 2
            ),
            timeout=60,
        )
        pods = admin.list("v1", "Pod", op)
        assert len(pods) == 2
        volumes = {v["name"]: v for v in pods[0]["spec"]["volumes"]}
        assert volumes["bundle"]["configMap"]["items"][0]["path"] == "operator.yaml"
    finally:
        uninstall(admin, objs)


def test_the_operator_running_as_its_service_account_takes_a_webapp_to_ready(
    envtest: Environment,
    admin: KubeCluster,
    names: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    op, watched = names["operator"], names["watched"]
    objs = install(admin, InstallOptions(namespace=op, watch_namespaces=(watched,)))
    caplog.set_level(logging.DEBUG, logger="oper8d")
    requests: list[tuple[str, int | None]] = []
    with envtest.api_client() as api_client:
        api_client.set_default_header(
            "Impersonate-User", f"system:serviceaccount:{op}:{SERVICE_ACCOUNT}"
        )
        cluster = KubeCluster(api_client, field_manager=BUNDLE.name)
        cluster.on_request = lambda verb, code: requests.append((verb, code))
        manager = Manager(
            BUNDLE,
            cluster,
            ManagerOptions(
                namespaces=(watched,),
                leader_elect=True,
                leader_election_namespace=op,
                metrics_bind_address="127.0.0.1:0",
                health_probe_bind_address="127.0.0.1:0",
                graceful_shutdown_timeout=10.0,
            ),
        )

        def forbidden() -> str:
            refused = [r for r in requests if r[1] == 403]
            said = list(
                dict.fromkeys(r.getMessage() for r in caplog.records if "403" in r.getMessage())
            )
            return f"{len(refused)} forbidden requests {sorted(set(refused))}: {said[:5]}"

        manager.start()
        try:
            assert manager.tp_queue is not None, "the TemporaryPatch controller did not start"
            wait_for("the leader Lease", lambda: manager.is_leader, timeout=30)
            cr = yaml.safe_load((EXAMPLES / "webapp" / "samples" / "webapp.yaml").read_text())
            cr["metadata"]["namespace"] = watched
            admin.apply(cr, field_manager="test")
            name = cr["metadata"]["name"]
            try:
                wait_for("WebApp Ready", lambda: is_ready(admin.get(*WEBAPP, name, watched)))
            except AssertionError as err:
                live = admin.get(*WEBAPP, name, watched) or {}
                raise AssertionError(f"{err}; status {live.get('status')}; {forbidden()}") from err

            admin.apply(_temporary_patch(watched, name), field_manager="test")
            wait_for(
                "the TemporaryPatch on the Deployment",
                lambda: _labels(admin, watched).get("debug") == "on",
            )
            annotations = admin.get(*WEBAPP, name, watched)["metadata"]["annotations"]
            assert "debug" in json.loads(annotations["oper8.org/temporary-patches"])
            # Events are written by the recorder's own thread: wait for one, not a snapshot
            wait_for(
                "an Event of the operator's",
                lambda: any(
                    e.get("reportingController") == "oper8d.io/webapp"
                    for e in admin.list("events.k8s.io/v1", "Event", watched)
                ),
            )

            admin.delete("oper8.org/v1", "TemporaryPatch", "debug", watched)
            admin.delete(*WEBAPP, name, watched)
            wait_for("the WebApp to be finalized", lambda: not admin.get(*WEBAPP, name, watched))
            assert [r for r in requests if r[1] == 403] == [], forbidden()
        finally:
            manager.stop()
    uninstall(admin, objs)


def _temporary_patch(namespace: str, target: str) -> dict[str, Any]:
    return {
        "apiVersion": "oper8.org/v1",
        "kind": "TemporaryPatch",
        "metadata": {"name": "debug", "namespace": namespace},
        "spec": {
            "apiVersion": WEBAPP[0],
            "kind": WEBAPP[1],
            "name": target,
            "patchType": "patchStrategicMerge",
            "patch": {"app": {"deployment": {"metadata": {"labels": {"debug": "on"}}}}},
        },
    }


def _labels(admin: KubeCluster, namespace: str) -> dict[str, str]:
    deployment = admin.get("apps/v1", "Deployment", "hello-app", namespace) or {}
    return (deployment.get("metadata") or {}).get("labels") or {}
