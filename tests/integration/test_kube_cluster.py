"""KubeCluster against a real kube-apiserver: reads, the three apply methods, status
writes through a CRD's status subresource, deletes, discovery and error mapping.

The helpers at the top (fresh namespaces, CRDs waited on until Established, the
apiserver's request counters) are shared with test_reconcile_real.py.
"""

from __future__ import annotations

import ssl
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from oper8d.cluster.kube import KubeCluster
from oper8d.envtest import Environment
from oper8d.errors import ClusterError

pytestmark = pytest.mark.integration

CRD_API = "apiextensions.k8s.io/v1"


def new_namespace(cluster: KubeCluster) -> str:
    name = f"kc-{uuid.uuid4().hex[:10]}"
    cluster.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager="test"
    )
    return name


def crd(group: str, kind: str, plural: str, version: str = "v1") -> dict[str, Any]:
    """A namespaced CRD with a status subresource and free-form spec and status."""
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": CRD_API,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": free, "status": free},
                        }
                    },
                }
            ],
        },
    }


def install_crd(
    api_client: client.ApiClient, cluster: KubeCluster, body: dict[str, Any], timeout: float = 60.0
) -> None:
    """Apply a CRD and watch it until its Established condition is True."""
    cluster.apply(body, field_manager="test")
    name = body["metadata"]["name"]
    ext = client.ApiextensionsV1Api(api_client)
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        stream = watch.Watch().stream(
            ext.list_custom_resource_definition,
            field_selector=f"metadata.name={name}",
            timeout_seconds=max(1, int(remaining)),
        )
        try:
            for event in stream:
                conditions = (event["object"].status and event["object"].status.conditions) or []
                if any(c.type == "Established" and c.status == "True" for c in conditions):
                    return
        finally:
            stream.close()
    raise AssertionError(f"CRD {name} not Established after {timeout}s")


def request_totals(
    env: Environment, *, succeeded_only: bool = False
) -> Counter[tuple[str, str, str]]:
    """``apiserver_request_total`` summed by (verb, resource, subresource); with
    ``succeeded_only``, only requests answered 2xx (a controller retrying a refused write in
    a terminating namespace then does not count)."""
    context = ssl.create_default_context(cafile=str(env.ca_file))
    request = urllib.request.Request(f"{env.server_url}/metrics")
    request.add_header("Authorization", f"Bearer {env.admin_token}")
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        text = response.read().decode()
    totals: Counter[tuple[str, str, str]] = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, value = line[len("apiserver_request_total{") :].rsplit("} ", 1)
        labels = dict(part.split("=", 1) for part in _split_labels(labels_text))
        labels = {k: v.strip('"') for k, v in labels.items()}
        if succeeded_only and not labels.get("code", "").startswith("2"):
            continue
        key = (labels.get("verb", ""), labels.get("resource", ""), labels.get("subresource", ""))
        totals[key] += int(float(value))
    return totals


def _split_labels(text: str) -> list[str]:
    """Split ``a="x",b="y,z"`` on the commas between labels."""
    parts, current, quoted = [], "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    if current:
        parts.append(current)
    return parts


# -- fixtures ---------------------------------------------------------------------------

GROUP = "kc.oper8d.io"
WIDGET = f"{GROUP}/v1"


@pytest.fixture
def cluster(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s)


@pytest.fixture
def ns(cluster: KubeCluster) -> Iterator[str]:
    name = new_namespace(cluster)
    yield name
    cluster.delete("v1", "Namespace", name)


@pytest.fixture
def widgets(k8s: client.ApiClient, cluster: KubeCluster) -> str:
    """The Widget CRD (status subresource), installed once per test that needs it."""
    install_crd(k8s, cluster, crd(GROUP, "Widget", "widgets"))
    return WIDGET


def configmap(ns: str, name: str = "cm", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


# -- reads and discovery ----------------------------------------------------------------


def test_get_of_a_missing_object_returns_none(cluster: KubeCluster, ns: str) -> None:
    assert cluster.get("v1", "ConfigMap", "nope", ns) is None


def test_an_unknown_kind_is_a_404_that_names_the_kind(cluster: KubeCluster, ns: str) -> None:
    with pytest.raises(ClusterError) as info:
        cluster.get("v1", "Gadget", "x", ns)
    assert info.value.status == 404
    assert "Gadget" in str(info.value) and "CustomResourceDefinition" in str(info.value)


def test_a_crd_installed_after_a_failed_lookup_is_found(
    k8s: client.ApiClient, cluster: KubeCluster, ns: str
) -> None:
    group = f"late{uuid.uuid4().hex[:6]}.oper8d.io"
    with pytest.raises(ClusterError):
        cluster.get(f"{group}/v1", "Late", "x", ns)
    install_crd(k8s, cluster, crd(group, "Late", "lates"))
    try:
        assert cluster.get(f"{group}/v1", "Late", "x", ns) is None
        assert cluster.resource(f"{group}/v1", "Late").plural == "lates"
    finally:
        cluster.delete(CRD_API, "CustomResourceDefinition", f"lates.{group}")


def test_list_filters_by_label_and_spans_namespaces_when_none_is_given(
    cluster: KubeCluster, ns: str
) -> None:
    other = new_namespace(cluster)
    try:
        for where, tier in ((ns, "web"), (other, "web"), (ns, "db")):
            body = configmap(where, f"cm-{tier}")
            body["metadata"]["labels"] = {"tier": tier, "suite": ns}
            cluster.apply(body, field_manager="test")

        in_ns = cluster.list("v1", "ConfigMap", ns, label_selector="tier=web")
        everywhere = cluster.list("v1", "ConfigMap", None, label_selector=f"suite={ns},tier=web")
    finally:
        cluster.delete("v1", "Namespace", other)
    assert [(o["kind"], o["metadata"]["name"]) for o in in_ns] == [("ConfigMap", "cm-web")]
    assert sorted(o["metadata"]["namespace"] for o in everywhere) == sorted([ns, other])


# -- server-side apply ------------------------------------------------------------------


def test_apply_creates_and_reapplying_the_same_body_changes_nothing(
    cluster: KubeCluster, ns: str
) -> None:
    cluster.reset_requests()
    created = cluster.apply(configmap(ns, a="1"), field_manager="test")
    again = cluster.apply(configmap(ns, a="1"), field_manager="test")
    assert created["data"] == {"a": "1"}
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert cluster.requests["apply"] == cluster.writes == 2


def test_a_field_the_manager_stops_applying_is_removed(cluster: KubeCluster, ns: str) -> None:
    cluster.apply(configmap(ns, a="1", b="2"), field_manager="test")
    cluster.apply(configmap(ns, a="1"), field_manager="test")
    assert cluster.get("v1", "ConfigMap", "cm", ns)["data"] == {"a": "1"}  # type: ignore[index]


def test_apply_keeps_fields_of_other_managers(cluster: KubeCluster, ns: str) -> None:
    cluster.apply(configmap(ns, a="1"), field_manager="first")
    cluster.apply(configmap(ns, b="2"), field_manager="second")
    assert cluster.get("v1", "ConfigMap", "cm", ns)["data"] == {"a": "1", "b": "2"}  # type: ignore[index]


# -- update, replace ---------------------------------------------------------------------


def test_update_method_merges_our_fields_into_the_live_object(
    cluster: KubeCluster, ns: str
) -> None:
    body = configmap(ns, a="1")
    body["metadata"]["labels"] = {"keep": "me"}
    cluster.apply(body, field_manager="other")
    result = cluster.apply(configmap(ns, b="2"), field_manager="test", method="update")
    assert result["data"] == {"a": "1", "b": "2"}
    assert result["metadata"]["labels"] == {"keep": "me"}


def test_update_method_and_replace_create_missing_objects(cluster: KubeCluster, ns: str) -> None:
    cluster.reset_requests()
    cluster.apply(configmap(ns, "u", a="1"), field_manager="test", method="update")
    cluster.apply(configmap(ns, "r", a="1"), field_manager="test", method="replace")
    assert cluster.requests["create"] == 2
    assert cluster.get("v1", "ConfigMap", "u", ns) and cluster.get("v1", "ConfigMap", "r", ns)


def test_replace_drops_fields_it_does_not_send(cluster: KubeCluster, ns: str) -> None:
    cluster.apply(configmap(ns, a="1", b="2"), field_manager="other")
    result = cluster.apply(configmap(ns, c="3"), field_manager="test", method="replace")
    assert result["data"] == {"c": "3"}


def test_update_with_a_stale_resource_version_is_a_409(cluster: KubeCluster, ns: str) -> None:
    live = cluster.apply(configmap(ns, a="1"), field_manager="test")
    cluster.apply(configmap(ns, a="2"), field_manager="test")
    live["data"] = {"a": "3"}
    with pytest.raises(ClusterError) as info:
        cluster.update(live)
    assert info.value.status == 409
    assert "modified" in str(info.value)  # the server's own message


def test_an_invalid_object_is_refused_with_the_servers_message(
    cluster: KubeCluster, ns: str
) -> None:
    with pytest.raises(ClusterError) as info:
        cluster.apply(configmap(ns, "Not_A_Name"), field_manager="test")
    assert info.value.status == 422
    assert "Not_A_Name" in str(info.value)


# -- status -----------------------------------------------------------------------------


def test_update_status_writes_status_through_the_subresource(
    cluster: KubeCluster, ns: str, widgets: str
) -> None:
    body = {
        "apiVersion": widgets,
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": ns},
        "spec": {"size": 1},
        "status": {"ignored": True},
    }
    created = cluster.apply(body, field_manager="test")
    assert "status" not in created  # the main resource does not write status

    # no resourceVersion: KubeCluster fetches the live one
    without_version = {
        **created,
        "metadata": {"name": "w", "namespace": ns},
        "status": {"phase": "Ready"},
    }
    written = cluster.update_status(without_version)

    live = cluster.get(widgets, "Widget", "w", ns)
    assert written["status"] == live["status"] == {"phase": "Ready"}  # type: ignore[index]
    assert live["spec"] == {"size": 1}  # type: ignore[index]


def test_update_status_of_a_missing_object_is_a_404(
    cluster: KubeCluster, ns: str, widgets: str
) -> None:
    body = {
        "apiVersion": widgets,
        "kind": "Widget",
        "metadata": {"name": "gone", "namespace": ns},
        "status": {"phase": "Ready"},
    }
    with pytest.raises(ClusterError) as info:
        cluster.update_status(body)
    assert info.value.status == 404


# -- delete ------------------------------------------------------------------------------


def test_delete_returns_false_when_the_object_is_already_gone(
    cluster: KubeCluster, ns: str
) -> None:
    cluster.apply(configmap(ns), field_manager="test")
    assert cluster.delete("v1", "ConfigMap", "cm", ns) is True
    assert cluster.delete("v1", "ConfigMap", "cm", ns) is False


def test_delete_of_an_object_with_finalizers_keeps_it_marked_for_deletion(
    cluster: KubeCluster, ns: str
) -> None:
    body = configmap(ns)
    body["metadata"]["finalizers"] = ["example.com/keep"]
    cluster.apply(body, field_manager="test")

    assert cluster.delete("v1", "ConfigMap", "cm", ns) is True

    live = cluster.get("v1", "ConfigMap", "cm", ns)
    assert live is not None and live["metadata"]["deletionTimestamp"]
    live["metadata"]["finalizers"] = []
    cluster.update(live)
    assert cluster.get("v1", "ConfigMap", "cm", ns) is None


# -- connection errors -------------------------------------------------------------------


def test_an_unreachable_server_is_a_cluster_error_without_status() -> None:
    config = client.Configuration()
    config.host = "https://127.0.0.1:1"
    config.verify_ssl = False
    config.retries = 0
    with client.ApiClient(config) as api_client, pytest.raises(ClusterError) as info:
        KubeCluster(api_client).get("v1", "ConfigMap", "x", "default")
    assert info.value.status is None
    assert "127.0.0.1:1" in str(info.value)
