"""The Role on Leases that ``oper8d manifests --sharding`` generates, on the real API server:
each of its verbs is needed by sharding, and nothing more is granted.

Sharding runs here under the ServiceAccount's identity (impersonation), with a FakeClock for
its timing: three replicas join, one stops gracefully (deleting its Lease), one dies (its
Lease is deleted by the survivor after expiry and grace). It starts with the Role empty;
whenever a request is refused (a 403, which sharding logs and survives), the verb the API
server names is put back and the scenario runs again with a fresh group. When a run sees no
403, every verb of the generated Role must have been put back: each one is needed.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from harness import EXAMPLES
from kubernetes import client

from oper8d.bundle.compile import load_bundle
from oper8d.clock import FakeClock
from oper8d.cluster.kube import KubeCluster
from oper8d.envtest import Environment
from oper8d.manifests.package import InstallOptions, names_for, operator_manifests
from oper8d.runtime.hashing import BUCKETS
from oper8d.runtime.sharding import GROUP_LABEL, Sharding

pytestmark = pytest.mark.integration

BUNDLE = load_bundle(EXAMPLES / "webapp")
SERVICE_ACCOUNT = names_for(BUNDLE)["operator"]
LEASES = ("coordination.k8s.io/v1", "Lease")
_FORBIDDEN = re.compile(r'cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)"')


class Forbidden:
    """The messages of every 403 the impersonated client received."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.seen: list[str] = []
        original = api_client.rest_client.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            response = original(method, url, *args, **kwargs)
            if response.status == 403:
                body = response.read().decode(errors="replace")
                try:
                    self.seen.append(json.loads(body)["message"])
                except (ValueError, KeyError, TypeError):
                    self.seen.append(body)
            return response

        api_client.rest_client.request = request  # type: ignore[method-assign]


@pytest.fixture
def admin(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s, field_manager="test")


@pytest.fixture
def installed(admin: KubeCluster) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The operator namespace, a watched one, and the shard Role (the manifests' Namespace,
    ServiceAccount and Lease Role + binding applied)."""
    suffix = uuid.uuid4().hex[:6]
    op, watched = f"shard-op-{suffix}", f"shard-w-{suffix}"
    options = InstallOptions(namespace=op, watch_namespaces=(watched,), sharding=True)
    objs = [m.obj for m in operator_manifests(BUNDLE, options)]
    admin.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": watched}},
        field_manager="test",
    )
    (role,) = [o for o in objs if o["kind"] == "Role" and o["metadata"]["namespace"] == op]
    for obj in objs:
        ours = obj["kind"] in ("Namespace", "ServiceAccount") or (
            obj["metadata"]["name"] == role["metadata"]["name"]
        )
        if ours and obj["metadata"].get("namespace", op) == op:
            admin.apply(obj, field_manager="test")
    try:
        yield op, watched, role
    finally:
        for ns in (op, watched):
            admin.delete("v1", "Namespace", ns)


def allowed(admin: KubeCluster, op: str, verb: str, namespace: str, name: str = "") -> bool:
    review = admin.create(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:serviceaccount:{op}:{SERVICE_ACCOUNT}",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "resourceAttributes": {
                    "namespace": namespace,
                    "verb": verb,
                    "group": "coordination.k8s.io",
                    "resource": "leases",
                    "name": name,
                },
            },
        }
    )
    return bool(review["status"].get("allowed"))


def write_role(admin: KubeCluster, role: dict[str, Any], verbs: list[str], op: str) -> None:
    rules = [{**role["rules"][0], "verbs": verbs}] if verbs else []
    admin.apply({**role, "rules": rules}, field_manager="test", method="replace")
    deadline = time.monotonic() + 30
    for verb in ("get", "list", "create", "update", "delete"):
        while allowed(admin, op, verb, op) != (verb in verbs):  # the authorizer's cache
            assert time.monotonic() < deadline, f"RBAC change for {verb} not visible"
            time.sleep(0.1)


def scenario(op_api: KubeCluster, namespace: str) -> dict[str, Sharding]:
    """Three replicas join; b stops gracefully; c dies and a outlives its Lease."""
    clock, group = FakeClock(), f"g{uuid.uuid4().hex[:6]}"
    replicas = {
        who: Sharding(
            op_api,
            group=group,
            namespace=namespace,
            identity=who,
            lease_duration=15,
            renew_deadline=10,
            retry_period=2,
            clock=clock,
        )
        for who in ("a", "b", "c")
    }
    for _ in range(4):
        for r in replicas.values():
            r.tick()
        clock.advance(2)
    replicas["b"].release()
    for _ in range(18):  # c is dead: 36 s > its Lease's 15 s + 15 s of grace
        replicas["a"].tick()
        clock.advance(2)
    return replicas


def test_the_shard_lease_role_grants_exactly_what_sharding_does(
    envtest: Environment, admin: KubeCluster, installed: tuple[str, str, dict[str, Any]]
) -> None:
    op, _watched, role = installed
    generated = list(role["rules"][0]["verbs"])
    granted: list[str] = []
    write_role(admin, role, granted, op)
    with envtest.api_client() as api_client:
        api_client.set_default_header(
            "Impersonate-User", f"system:serviceaccount:{op}:{SERVICE_ACCOUNT}"
        )
        forbidden = Forbidden(api_client)
        op_api = KubeCluster(api_client, field_manager="shards")
        for _attempt in range(len(generated) + 1):
            forbidden.seen.clear()
            replicas = scenario(op_api, op)
            if not forbidden.seen:
                break
            refused = {
                m["verb"]
                for m in map(_FORBIDDEN.search, forbidden.seen)
                if m and m["resource"] == "leases"
            }
            assert refused, forbidden.seen[:3]
            assert refused <= set(generated), f"refused beyond the generated Role: {refused}"
            granted = sorted(set(granted) | refused)
            write_role(admin, role, granted, op)
        else:
            raise AssertionError(f"still refused with {granted}: {forbidden.seen[:3]}")
    assert sorted(granted) == sorted(generated)  # every verb of the Role was needed
    # and with it sharding did its job: a holds every bucket, b's and c's Leases are gone
    assert replicas["a"].held == frozenset(range(BUCKETS))
    group = replicas["a"].group
    leases = admin.list(*LEASES, op, label_selector=f"{GROUP_LABEL}={group}")
    assert [lease["spec"]["holderIdentity"] for lease in leases] == ["a"]


def test_the_sharded_install_grants_no_other_lease_access(
    admin: KubeCluster, installed: tuple[str, str, dict[str, Any]]
) -> None:
    op, watched, _role = installed
    for verb in ("get", "list", "create", "update", "delete"):
        assert allowed(admin, op, verb, op)
        assert not allowed(admin, op, verb, watched)
        assert not allowed(admin, op, verb, "")  # cluster-wide
    for verb in ("watch", "patch", "deletecollection"):
        assert not allowed(admin, op, verb, op)
