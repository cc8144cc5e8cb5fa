"""``oper8d manifests --sharding``: a Deployment whose replicas share the CRs, and a Role on
Leases with exactly the verbs ``runtime.sharding`` uses, in the operator's namespace only
(tests/integration/test_rbac_sharding.py shows each verb used on the real API server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from oper8d.cli.main import main
from oper8d.cli.manifests_cmd import manifests

WEBAPP = Path(__file__).resolve().parents[2] / "examples" / "operators" / "webapp"


def docs(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(manifests, [str(WEBAPP), *args])
    assert result.exit_code == 0, result.output
    return list(yaml.safe_load_all(result.stdout))


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def args(objs: list[dict[str, Any]]) -> list[str]:
    (deployment,) = of_kind(objs, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container["args"]


def lease_rules(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        r
        for o in of_kind(objs, "Role") + of_kind(objs, "ClusterRole")
        for r in o["rules"]
        if "leases" in r["resources"]
    ]


def test_sharded_replicas_share_the_crs_instead_of_electing_a_leader() -> None:
    objs = docs("--namespace", "ops", "--sharding")
    (deployment,) = of_kind(objs, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert args(objs) == [
        "run",
        "/bundle",
        "--sharding",
        "--leader-election-namespace",
        "$(POD_NAMESPACE)",
    ]
    run_flags = {opt for p in main.commands["run"].params for opt in p.opts}
    assert {a for a in args(objs) if a.startswith("--")} <= run_flags


def test_the_replicas_can_be_chosen_with_or_without_sharding() -> None:
    for extra, want in ((["--sharding", "--replicas", "5"], 5), (["--replicas", "1"], 1)):
        (deployment,) = of_kind(docs(*extra), "Deployment")
        assert deployment["spec"]["replicas"] == want
    result = CliRunner().invoke(manifests, [str(WEBAPP), "--replicas", "0"])
    assert result.exit_code == 2 and "--replicas" in result.output


def test_shard_leases_are_granted_in_the_operator_namespace_with_the_verbs_used() -> None:
    objs = docs("--namespace", "ops", "--watch-namespace", "team-a", "--sharding")
    (role,) = [o for o in of_kind(objs, "Role") if lease_rules([o])]
    assert role["metadata"]["name"] == "webapp-operator-shards"
    assert role["metadata"]["namespace"] == "ops"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "list", "create", "update", "delete"],
        }
    ]
    # no leader-election Role, and no Lease access anywhere else
    assert not [o for o in objs if o["metadata"]["name"].endswith("-leader-election")]
    assert lease_rules(objs) == role["rules"]
    (binding,) = [
        b for b in of_kind(objs, "RoleBinding") if b["metadata"]["name"] == role["metadata"]["name"]
    ]
    assert binding["metadata"]["namespace"] == "ops"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "webapp-operator-shards",
    }


def test_without_sharding_the_lease_role_is_leader_elections_by_name() -> None:
    rules = lease_rules(docs("--namespace", "ops"))
    assert {tuple(r.get("resourceNames", ())): tuple(r["verbs"]) for r in rules} == {
        (): ("create",),
        ("webapp-oper8d",): ("get", "update"),
    }
