"""Least-privilege RBAC from ``oper8d manifests``: exactly the verbs the operator uses on
each kind its bundle deploys, Roles per watched namespace or a ClusterRole, the Lease in
the operator's namespace only, and notes for what cannot be known from the bundle."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bundles import build
from hypothesis import given, settings
from hypothesis import strategies as st
from tutorial import TUTORIAL, tutorial_blocks, write_file_block

from oper8d.bundle.compile import load_bundle
from oper8d.manifests.package import InstallOptions, operator_manifests
from oper8d.manifests.rbac import (
    VERB_ORDER,
    Grant,
    Permissions,
    lease_grants,
    policy_rules,
    rbac_objects,
    required_permissions,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"

DEPLOYED = ("get", "list", "watch", "create", "patch", "delete")
CR = ("get", "list", "watch", "update")
STATUS = ("update",)
RANDOM_SECRETS = ("get", "create", "patch")
EVENTS = ("create",)

#: what every operator needs besides the kinds it deploys
COMMON = {
    ("events.k8s.io", "events"): EVENTS,
}
#: only for a bundle that turns temporary patches on (webapp; the others leave them off)
TEMPORARY_PATCHES = {("oper8.org", "temporarypatches"): CR}

EXPECTED = {
    "webapp": {
        ("", "configmaps"): DEPLOYED,
        ("", "services"): DEPLOYED,
        ("apps", "deployments"): DEPLOYED,
        ("autoscaling", "horizontalpodautoscalers"): DEPLOYED,
        ("networking.k8s.io", "ingresses"): DEPLOYED,
        ("demo.oper8d.io", "webapps"): CR,
        ("demo.oper8d.io", "webapps/status"): STATUS,
        ("demo.oper8d.io", "webapps/finalizers"): ("update",),
        **COMMON,
        **TEMPORARY_PATCHES,
    },
    "stateful": {
        ("", "configmaps"): ("get",),
        ("", "services"): DEPLOYED,
        ("", "secrets"): DEPLOYED,  # the bundle's own Secret, beside the random strings
        ("apps", "deployments"): DEPLOYED,
        ("apps", "statefulsets"): DEPLOYED,  # named only in a text template
        ("batch", "jobs"): DEPLOYED,
        ("demo.oper8d.io", "notesapps"): CR,
        ("demo.oper8d.io", "notesapps/status"): STATUS,
        ("demo.oper8d.io", "notesapps/finalizers"): ("update",),
        **COMMON,
    },
    "fanout": {
        ("", "configmaps"): DEPLOYED,
        ("apps", "deployments"): DEPLOYED,
        ("demo.oper8d.io", "workerpools"): CR,
        ("demo.oper8d.io", "workerpools/status"): STATUS,
        ("demo.oper8d.io", "workerpools/finalizers"): ("update",),
        **COMMON,
    },
}


def granted(rules: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(group, resource) -> verbs, from rules without resourceNames."""
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        if rule.get("resourceNames"):
            continue
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return {k: tuple(v for v in VERB_ORDER if v in verbs) for k, verbs in out.items()}


def objects(example: str, **options: Any) -> list[dict[str, Any]]:
    bundle = load_bundle(EXAMPLES / example)
    return [m.obj for m in operator_manifests(bundle, InstallOptions(**options))]


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_the_cluster_role_grants_exactly_the_verbs_each_kind_needs(example: str) -> None:
    (role,) = of_kind(objects(example), "ClusterRole")
    assert granted(role["rules"]) == EXPECTED[example]


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_each_watched_namespace_gets_a_role_with_the_same_verbs(example: str) -> None:
    objs = objects(example, namespace="ops", watch_namespaces=("team-b", "team-a"))
    assert of_kind(objs, "ClusterRole") == [] and of_kind(objs, "ClusterRoleBinding") == []
    roles = {r["metadata"]["namespace"]: r for r in of_kind(objs, "Role")}
    assert set(roles) == {"team-a", "team-b", "ops"}
    for ns in ("team-a", "team-b"):
        assert granted(roles[ns]["rules"]) == EXPECTED[example]
    bindings = {
        (b["metadata"]["namespace"], b["roleRef"]["name"]) for b in of_kind(objs, "RoleBinding")
    }
    name = roles["team-a"]["metadata"]["name"]
    assert {("team-a", name), ("team-b", name)} <= bindings


@pytest.mark.parametrize("example", sorted(EXPECTED))
@pytest.mark.parametrize("watch", [(), ("team-a",)])
def test_no_rule_anywhere_uses_a_wildcard(example: str, watch: tuple[str, ...]) -> None:
    objs = objects(example, watch_namespaces=watch)
    for role in of_kind(objs, "Role") + of_kind(objs, "ClusterRole"):
        assert role["rules"]
        for rule in role["rules"]:
            values = [*rule["apiGroups"], *rule["resources"], *rule["verbs"]]
            assert not any("*" in v for v in values), rule


def test_the_lease_is_granted_only_in_the_operator_namespace_and_only_by_name() -> None:
    objs = objects("webapp", namespace="ops")
    (cluster_role,) = of_kind(objs, "ClusterRole")
    assert not any("leases" in r["resources"] for r in cluster_role["rules"])
    (lease_role,) = of_kind(objs, "Role")
    assert lease_role["metadata"]["namespace"] == "ops"
    by_names = {tuple(r.get("resourceNames", ())): r["verbs"] for r in lease_role["rules"]}
    assert by_names == {(): ["create"], ("webapp-oper8d",): ["get", "update"]}
    (binding,) = of_kind(objs, "RoleBinding")
    assert binding["roleRef"]["name"] == lease_role["metadata"]["name"]


def test_every_binding_names_the_operator_service_account() -> None:
    objs = objects("webapp", namespace="ops", watch_namespaces=("a",))
    (sa,) = of_kind(objs, "ServiceAccount")
    subject = {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": "ops"}
    bindings = of_kind(objs, "RoleBinding") + of_kind(objs, "ClusterRoleBinding")
    assert bindings and all(b["subjects"] == [subject] for b in bindings)
    deployment = of_kind(objs, "Deployment")[0]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]


def test_no_custom_resource_definition_access_is_granted() -> None:
    objs = objects("webapp")
    resources = {r for role in of_kind(objs, "ClusterRole") for r in strings(role["rules"])}
    assert "customresourcedefinitions" not in resources


# -- what decides the verbs ------------------------------------------------------------------
def _resource(
    name: str, kind: str, api_version: str, method: str = "apply", indent: int = 6
) -> str:
    """YAML of one resource, as an item of a ``resources:`` list indented ``indent``."""
    text = f"""\
- name: {name}
  method: {method}
  object:
    apiVersion: {api_version}
    kind: {kind}
    metadata: {{name: "{{{{ scoped_name('{name}') }}}}"}}
"""
    return textwrap.indent(text, " " * indent)


def test_update_is_granted_only_on_kinds_written_with_update_or_replace(tmp_path: Path) -> None:
    bundle = build(
        tmp_path / "b",
        "components:\n  - name: c\n    resources:\n"
        + _resource("cm", "ConfigMap", "v1", "update")
        + _resource("job", "Job", "batch/v1", "replace")
        + _resource("svc", "Service", "v1", "apply"),
    )
    permissions = required_permissions(bundle)
    # a PUT (or a POST when the object is missing): no patch
    updated = ("get", "list", "watch", "create", "update", "delete")
    assert permissions.verbs("", "configmaps") == updated
    assert permissions.verbs("batch", "jobs") == updated
    assert permissions.verbs("", "services") == DEPLOYED


def test_hook_resources_are_granted_like_component_resources(tmp_path: Path) -> None:
    bundle = build(
        tmp_path / "b",
        "components:\n  - name: c\n    resources:\n"
        + _resource("cm", "ConfigMap", "v1")
        + "hooks:\n  afterDeploy:\n    - name: h\n      resources:\n"
        + _resource("job", "Job", "batch/v1", indent=8),
    )
    assert required_permissions(bundle).verbs("batch", "jobs") == DEPLOYED


def test_a_templated_kind_is_granted_from_the_kinds_the_resource_declares(
    tmp_path: Path,
) -> None:
    controller = """\
        components:
          - name: c
            resources:
              - name: thing
                kinds: [{apiVersion: batch/v1, kind: CronJob}]
                object:
                  apiVersion: "{{ spec.api }}"
                  kind: "{{ spec.kind }}"
                  metadata: {name: x}
        """
    bundle = build(tmp_path / "b", controller)
    plain = required_permissions(bundle)
    assert not plain.notes
    assert "create" in plain.verbs("batch", "cronjobs")


def test_a_text_template_with_one_computed_document_is_reported(tmp_path: Path) -> None:
    controller = """\
        components:
          - name: c
            resources:
              - name: manifests
                template: templates/all.yaml
        """
    template = """\
        {# a Service, then whatever spec.extra renders #}
        apiVersion: v1
        kind: Service
        metadata: {name: a}
        ---
        {% if spec.extra %}
        {{ spec.extra | to_yaml }}
        {% endif %}
        """
    bundle = build(tmp_path / "b", controller, files={"templates/all.yaml": template})
    permissions = required_permissions(bundle)
    assert permissions.verbs("", "services") == DEPLOYED
    assert any("'manifests'" in n for n in permissions.notes), permissions.notes


def test_a_text_template_with_only_literal_kinds_raises_no_note(tmp_path: Path) -> None:
    controller = """\
        components:
          - name: c
            resources:
              - name: manifests
                template: templates/all.yaml
        """
    template = """\
        {% for port in spec.ports %}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: "a-{{ port }}"}
        {% endfor %}
        ---
        # trailing comment only
        """
    bundle = build(tmp_path / "b", controller, files={"templates/all.yaml": template})
    assert required_permissions(bundle).notes == ()


def test_an_unknown_kind_gets_a_guessed_plural_and_a_note(tmp_path: Path) -> None:
    bundle = build(
        tmp_path / "b",
        "components:\n  - name: c\n    resources:\n"
        + _resource("sm", "ServiceMonitor", "monitoring.coreos.com/v1"),
    )
    permissions = required_permissions(bundle)
    assert permissions.verbs("monitoring.coreos.com", "servicemonitors") == DEPLOYED
    assert any("'servicemonitors'" in n and "guessed" in n for n in permissions.notes)


def test_a_cluster_scoped_kind_goes_to_a_cluster_role_even_when_namespaces_are_watched(
    tmp_path: Path,
) -> None:
    bundle = build(
        tmp_path / "b",
        "components:\n  - name: c\n    resources:\n"
        + _resource("pc", "PriorityClass", "scheduling.k8s.io/v1")
        + _resource("cm", "ConfigMap", "v1"),
    )
    objs = [
        m.obj
        for m in operator_manifests(
            bundle, InstallOptions(namespace="ops", watch_namespaces=("a",))
        )
    ]
    (cluster_role,) = of_kind(objs, "ClusterRole")
    assert granted(cluster_role["rules"]) == {("scheduling.k8s.io", "priorityclasses"): DEPLOYED}
    (role,) = [r for r in of_kind(objs, "Role") if r["metadata"]["namespace"] == "a"]
    assert ("scheduling.k8s.io", "priorityclasses") not in granted(role["rules"])
    assert granted(role["rules"])[("", "configmaps")] == DEPLOYED


def test_a_bundle_that_creates_roles_says_that_escalation_is_not_granted(tmp_path: Path) -> None:
    bundle = build(
        tmp_path / "b",
        "components:\n  - name: c\n    resources:\n"
        + _resource("r", "Role", "rbac.authorization.k8s.io/v1"),
    )
    permissions = required_permissions(bundle)
    assert permissions.verbs("rbac.authorization.k8s.io", "roles") == DEPLOYED
    assert any("escalate" in n for n in permissions.notes)
    for rule in policy_rules(permissions.grants):
        assert "escalate" not in rule["verbs"] and "bind" not in rule["verbs"]


def test_lookup_of_a_literal_kind_grants_get_and_a_computed_one_is_reported(
    tmp_path: Path,
) -> None:
    controller = """\
        components:
          - name: c
            resources:
              - name: cm
                object:
                  apiVersion: v1
                  kind: ConfigMap
                  metadata: {name: x}
                  data:
                    node: "{{ lookup(\\"apps/v1\\", \\"DaemonSet\\", 'agent').metadata.uid }}"
        status:
          other: "lookup(spec.api, spec.kind, 'y')"
        """
    bundle = build(tmp_path / "b", controller)
    permissions = required_permissions(bundle)
    assert permissions.verbs("apps", "daemonsets") == ("get",)
    assert permissions.verbs("", "secrets") == ()
    assert any("lookup()" in n and "operator.yaml" in n for n in permissions.notes)


def test_a_bundle_without_secrets_gets_no_rule_on_secrets(tmp_path: Path) -> None:
    from oper8d.scaffold import ScaffoldOptions, scaffold

    scaffold(tmp_path / "p", ScaffoldOptions(name="demo"))
    objs = [m.obj for m in operator_manifests(load_bundle(tmp_path / "p"), InstallOptions())]
    rules = [r for o in of_kind(objs, "ClusterRole") + of_kind(objs, "Role") for r in o["rules"]]
    assert rules and not any("secrets" in r["resources"] for r in rules)


def test_the_tutorial_bundle_gets_no_rule_on_secrets(tmp_path: Path) -> None:
    # the files the tutorial writes, as its own test writes them
    for block in tutorial_blocks(TUTORIAL.read_text(encoding="utf-8")):
        if block.op:
            write_file_block(block, tmp_path)
    bundle = load_bundle(tmp_path / "greeter")
    assert [c.name for c in bundle.controllers[0].components] == ["config", "web", "service"]
    objs = [m.obj for m in operator_manifests(bundle, InstallOptions())]
    (role,) = of_kind(objs, "ClusterRole")
    assert not any("secrets" in r["resources"] for r in role["rules"])


def test_random_strings_grant_what_the_generated_secret_needs(tmp_path: Path) -> None:
    bundle = build(
        tmp_path / "b",
        "components:\n  - name: c\n    resources:\n"
        + _resource("cm", "ConfigMap", "v1")
        + "status:\n  p: \"random_string('k', 8) | length\"\n",
    )
    assert required_permissions(bundle).verbs("", "secrets") == RANDOM_SECRETS


def _reads(tmp_path: Path, reads: str) -> Any:
    controller = "components:\n  - name: c\n    resources:\n" + _resource("cm", "ConfigMap", "v1")
    return build(tmp_path / "b", controller + "reads:\n" + textwrap.indent(reads, "  "))


def rules_by_role(objs: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(kind, namespace) of each Role and ClusterRole -> its rules."""
    return {
        (o["kind"], o["metadata"].get("namespace", "")): o["rules"]
        for o in objs
        if o["kind"] in ("Role", "ClusterRole")
    }


def test_declared_reads_grant_get_where_and_on_what_they_name(tmp_path: Path) -> None:
    bundle = _reads(
        tmp_path,
        """\
- {apiVersion: v1, kind: Secret, namespace: vault, names: [db, ca]}
- {apiVersion: v1, kind: Secret, names: [tls]}
- {apiVersion: storage.k8s.io/v1, kind: StorageClass, names: [fast]}
- {apiVersion: v1, kind: ConfigMap, namespace: shared}
""",
    )
    secrets_in_vault = {
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": ["ca", "db"],
        "verbs": ["get"],
    }
    tls = {**secrets_in_vault, "resourceNames": ["tls"]}
    fast = {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["storageclasses"],
        "resourceNames": ["fast"],
        "verbs": ["get"],
    }
    shared = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}

    cluster_wide = rules_by_role(objects_of(bundle, namespace="ops"))
    assert tls in cluster_wide[("ClusterRole", "")] and fast in cluster_wide[("ClusterRole", "")]
    assert cluster_wide[("Role", "vault")] == [secrets_in_vault]
    # the ClusterRole's get on every ConfigMap already covers namespace shared
    assert ("Role", "shared") not in cluster_wide

    scoped = rules_by_role(objects_of(bundle, namespace="ops", watch_namespaces=("team-a",)))
    assert scoped[("ClusterRole", "")] == [fast]
    assert tls in scoped[("Role", "team-a")]
    assert scoped[("Role", "vault")] == [secrets_in_vault]
    assert scoped[("Role", "shared")] == [shared]


def test_a_read_the_deploy_rules_already_cover_adds_no_rule(tmp_path: Path) -> None:
    bundle = _reads(tmp_path, "- {apiVersion: v1, kind: ConfigMap, names: [settings]}\n")
    (role,) = of_kind(objects_of(bundle), "ClusterRole")
    assert not any(r.get("resourceNames") for r in role["rules"])


def _in_namespace(namespace: str) -> str:
    """A controller with one ConfigMap resource declaring ``namespace``."""
    return (
        "config: {monitoringNamespace: monitoring}\n"
        "components:\n  - name: c\n    resources:\n"
        + _resource("cm", "ConfigMap", "v1")
        + f'        namespace: "{namespace}"\n'
    )


@pytest.mark.parametrize("namespace", ["monitoring", "{{ config.monitoringNamespace }}"])
def test_a_declared_namespace_gets_the_deploy_verbs_where_only_some_are_watched(
    tmp_path: Path, namespace: str
) -> None:
    # the operator watching team-a still writes its ConfigMaps to monitoring
    bundle = build(tmp_path / "b", _in_namespace(namespace))
    configmaps = {"apiGroups": [""], "resources": ["configmaps"], "verbs": list(DEPLOYED)}

    scoped = rules_by_role(objects_of(bundle, namespace="ops", watch_namespaces=("team-a",)))
    assert scoped[("Role", "monitoring")] == [configmaps]
    # everywhere: the ClusterRole covers it, no Role of its own
    assert ("Role", "monitoring") not in rules_by_role(objects_of(bundle, namespace="ops"))


def test_a_namespace_derived_from_the_crs_gets_no_role_of_its_own(tmp_path: Path) -> None:
    bundle = build(tmp_path / "b", _in_namespace("{{ namespace }}-mon"))
    scoped = rules_by_role(objects_of(bundle, namespace="ops", watch_namespaces=("team-a",)))
    assert sorted(ns for kind, ns in scoped if kind == "Role") == ["ops", "team-a"]


def objects_of(bundle: Any, **options: Any) -> list[dict[str, Any]]:
    return [m.obj for m in operator_manifests(bundle, InstallOptions(**options))]


def test_the_notes_are_written_as_comments_above_the_first_role(tmp_path: Path) -> None:
    bundle = build(
        tmp_path / "b",
        "components:\n  - name: c\n    resources:\n"
        + _resource("sm", "ServiceMonitor", "monitoring.coreos.com/v1"),
    )
    manifests = operator_manifests(bundle, InstallOptions())
    (role,) = [m for m in manifests if m.obj["kind"] == "ClusterRole"]
    text = role.yaml()
    assert text.startswith("# note: ServiceMonitor (monitoring.coreos.com/v1)")
    assert "kind: ClusterRole" in text


# -- the rule algebra ---------------------------------------------------------------------
_names = st.sampled_from(["a", "b", "c/status"])
_grants = st.builds(
    Grant,
    group=st.sampled_from(["", "apps", "x.io"]),
    resource=_names,
    verbs=st.sets(st.sampled_from(VERB_ORDER), min_size=1).map(
        lambda s: tuple(v for v in VERB_ORDER if v in s)
    ),
    namespaced=st.booleans(),
    names=st.sampled_from([(), ("lease",)]),
)


def _triples(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    return {
        (g, r, v, n)
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
        for n in rule.get("resourceNames") or [""]
    }


@settings(max_examples=200, deadline=None)
@given(st.lists(_grants, max_size=12))
def test_merging_grants_into_rules_grants_exactly_the_same_requests(grants: list[Grant]) -> None:
    rules = policy_rules(grants)
    expected = {
        (g.group, g.resource, v, n) for g in grants for v in g.verbs for n in g.names or [""]
    }
    assert _triples(rules) == expected
    assert policy_rules(reversed(grants)) == rules  # order of the input does not matter


@settings(max_examples=100, deadline=None)
@given(
    st.lists(_grants, max_size=8),
    st.lists(st.sampled_from(["n1", "n2", "n3"]), max_size=3),
)
def test_a_namespaced_install_grants_cluster_wide_only_what_lives_outside_namespaces(
    grants: list[Grant], watched: list[str]
) -> None:
    permissions = Permissions(tuple(sorted(grants)))
    objs = rbac_objects(
        permissions,
        name="op",
        namespace="ops",
        service_account="op",
        lease_name="op-lease",
        watch_namespaces=watched,
    )
    cluster = _triples([r for o in of_kind(objs, "ClusterRole") for r in o["rules"]])
    in_cluster = {g for g in grants if not watched or not g.namespaced}
    assert cluster == _triples(policy_rules(in_cluster))
    for ns in set(watched):
        (role,) = [o for o in of_kind(objs, "Role") if o["metadata"]["namespace"] == ns]
        assert _triples(role["rules"]) == _triples(policy_rules(g for g in grants if g.namespaced))


# -- reads pinned to a namespace ------------------------------------------------------------
_NAMESPACES = ["n1", "n2", "x", "ops"]
_OBJECT_NAMES = ["lease", "other"]
_any_grants = st.builds(
    Grant,
    group=st.sampled_from(["", "apps"]),
    resource=_names,
    verbs=st.sets(st.sampled_from(VERB_ORDER), min_size=1).map(
        lambda s: tuple(v for v in VERB_ORDER if v in s)
    ),
    namespaced=st.booleans(),
    names=st.sampled_from([(), ("lease",)]),
    namespace=st.sampled_from(["", "x", "n1"]),
).filter(lambda g: g.namespaced or not g.namespace)


def _effective(objs: list[dict[str, Any]]) -> set[tuple[str, str, str, str, str]]:
    """Every (namespace or "" for cluster scope, group, resource, verb, object name) the
    objects let the ServiceAccount do, as the API server's RBAC authorizer decides it."""
    out = set()
    for role in of_kind(objs, "Role") + of_kind(objs, "ClusterRole"):
        scopes = [role["metadata"]["namespace"]] if role["kind"] == "Role" else ["", *_NAMESPACES]
        for g, r, v, n in _triples(role["rules"]):
            for scope in scopes:
                for name in [n] if n else _OBJECT_NAMES:
                    out.add((scope, g, r, v, name))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(_any_grants, max_size=8), st.lists(st.sampled_from(["n1", "n2"]), max_size=2))
def test_roles_grant_exactly_what_the_grants_say_where_they_say_it(
    grants: list[Grant], watched: list[str]
) -> None:
    objs = rbac_objects(
        Permissions(tuple(sorted(grants))),
        name="op",
        namespace="ops",
        service_account="op",
        lease_name="lease",
        watch_namespaces=watched,
    )
    everywhere = ["", *_NAMESPACES]
    expected = set()
    for g in [*grants, *lease_grants("lease")]:
        if g.resource == "leases":
            scopes = ["ops"]
        elif g.namespace:
            scopes = [g.namespace]
        elif g.namespaced and watched:
            scopes = list(watched)
        else:
            scopes = everywhere  # a ClusterRole
        for scope in scopes:
            for verb in g.verbs:
                for name in g.names or _OBJECT_NAMES:
                    expected.add((scope, g.group, g.resource, verb, name))
    assert _effective(objs) == expected
