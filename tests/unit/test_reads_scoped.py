"""Scoped reads: a CR's templates read only its own namespace, and never a Secret, through
``lookup()`` and ``live()`` unless the bundle declares the read (``reads:``). An undeclared
read is a ConfigError naming the template position, at render time, and a bundle problem
at validate time when the call's arguments are constants."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path
from typing import Any

import pytest
from bundles import NAMESPACE, Harness, build, condition, is_ready

from oper8d.errors import BundleError

#: a ConfigMap whose data copies what the CR asks the template to look up
COPY_WHAT_THE_CR_NAMES = """
components:
  - name: c
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('copy') }}"}
          data:
            copied: "{{ (lookup(spec.api, spec.kind, spec.name, spec.ns) or {})
              .get('data') | to_json }}"
"""


def seed(h: Harness) -> None:
    """A Secret and a ConfigMap in kube-system and in the CR's namespace; a StorageClass."""
    token = base64.b64encode(b"s3cr3t-token").decode()
    for ns in ("kube-system", NAMESPACE):
        h.cluster.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            field_manager="admin",
        )
        h.cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "admin-token", "namespace": ns},
                "data": {"token": token},
            },
            field_manager="admin",
        )
        h.cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": ns},
                "data": {"where": ns},
            },
            field_manager="admin",
        )
    h.cluster.apply(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "fast"},
            "provisioner": "x",
        },
        field_manager="admin",
    )


def attempt(tmp_path: Path, reads: str, **spec: Any) -> Harness:
    """Reconcile a CR of a bundle with ``reads`` whose template looks up what ``spec`` names."""
    h = Harness(build(tmp_path / "b", COPY_WHAT_THE_CR_NAMES + reads))
    seed(h)
    h.create({"api": "v1", "kind": "Secret", "name": "admin-token", "ns": None, **spec})
    h.settle()
    return h


def copied(h: Harness) -> str | None:
    cm = h.get("ConfigMap", "demo-copy")
    return None if cm is None else cm["data"]["copied"]


def refused(h: Harness) -> str:
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError"), ready
    assert copied(h) is None, "nothing of the component is applied"
    return ready["message"]


def test_a_cr_cannot_read_a_secret_of_another_namespace(tmp_path: Path) -> None:
    message = refused(attempt(tmp_path, "", ns="kube-system"))
    assert "Secret kube-system/admin-token is not allowed" in message
    assert "s3cr3t" not in message and "czNjcjN0" not in message
    # the call's template position: the line of operator.yaml holding the lookup
    line = int(message.split("operator.yaml:")[1].split(":")[0])
    assert "lookup(" in (tmp_path / "b" / "operator.yaml").read_text().splitlines()[line - 1]
    assert "add {apiVersion: v1, kind: Secret, namespace: kube-system" in message


def test_a_cr_cannot_read_a_secret_of_its_own_namespace_unless_declared(tmp_path: Path) -> None:
    assert "Secrets are readable only when" in refused(attempt(tmp_path / "a", ""))
    declared = "reads: [{apiVersion: v1, kind: Secret, names: [admin-token]}]"
    h = attempt(tmp_path / "b", declared)
    assert is_ready(h.cr())
    assert copied(h) == '{"token": "czNjcjN0LXRva2Vu"}'


def test_a_declared_secret_read_is_limited_to_its_names_and_namespace(tmp_path: Path) -> None:
    declared = "reads: [{apiVersion: v1, kind: Secret, names: [other]}]"
    assert "not allowed" in refused(attempt(tmp_path / "a", declared))
    in_own_namespace = "reads: [{apiVersion: v1, kind: Secret}]"
    message = refused(attempt(tmp_path / "b", in_own_namespace, ns="kube-system"))
    assert "Secret kube-system/admin-token" in message


def test_other_kinds_are_readable_in_the_crs_namespace_only(tmp_path: Path) -> None:
    h = attempt(tmp_path / "a", "", kind="ConfigMap", name="settings")
    assert copied(h) == f'{{"where": "{NAMESPACE}"}}'
    elsewhere = attempt(tmp_path / "b", "", kind="ConfigMap", name="settings", ns="kube-system")
    message = refused(elsewhere)
    assert "templates read only the CR's namespace (default)" in message


def test_a_declared_namespace_is_readable(tmp_path: Path) -> None:
    declared = "reads: [{apiVersion: v1, kind: ConfigMap, namespace: kube-system}]"
    h = attempt(tmp_path, declared, kind="ConfigMap", name="settings", ns="kube-system")
    assert copied(h) == '{"where": "kube-system"}'


def test_cluster_scoped_kinds_are_readable_only_when_declared(tmp_path: Path) -> None:
    spec = {"api": "storage.k8s.io/v1", "kind": "StorageClass", "name": "fast"}
    message = refused(attempt(tmp_path / "a", "", **spec))
    assert "StorageClass 'fast' (cluster-scoped) is not allowed" in message
    declared = "reads: [{apiVersion: storage.k8s.io/v1, kind: StorageClass}]"
    assert is_ready(attempt(tmp_path / "b", declared, **spec).cr())


def test_a_kind_unknown_to_oper8d_that_the_server_stores_cluster_wide_is_refused(
    tmp_path: Path,
) -> None:
    bundle = build(tmp_path / "b", COPY_WHAT_THE_CR_NAMES)
    h = Harness(bundle)
    h.cluster.register_kind("x.io/v1", "Realm", namespaced=False)
    h.cluster.apply(
        {"apiVersion": "x.io/v1", "kind": "Realm", "metadata": {"name": "r"}, "data": {"a": "b"}},
        field_manager="admin",
    )
    h.create({"api": "x.io/v1", "kind": "Realm", "name": "r", "ns": None})
    h.settle()
    assert "Realm is cluster-scoped" in refused(h)
    assert "`scope: Cluster`" in refused(h)


def test_live_reads_follow_the_same_rule(tmp_path: Path) -> None:
    bundle = """
    components:
      - name: s
        resources:
          - name: secret
            object:
              apiVersion: v1
              kind: Secret
              metadata: {name: "{{ scoped_name('s') }}"}
              stringData: {a: b}
      - name: c
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('copy') }}"}
              data: {copied: "{{ live(spec.ref).data | to_json }}"}
    """
    # a reference computed at render time: refused when it is rendered
    h = Harness(build(tmp_path / "a", bundle))
    h.create({"ref": "s.secret"})
    h.settle()
    assert "live('s.secret'): reading Secret default/demo-s is not allowed" in refused(h)
    h = Harness(build(tmp_path / "b", bundle + "reads: [{apiVersion: v1, kind: Secret}]"))
    h.create({"ref": "s.secret"})
    h.settle()
    assert copied(h) == '{"a": "Yg=="}'
    # a constant reference: refused by validate
    constant = bundle.replace("live(spec.ref)", "live('s.secret')")
    (problem,) = problems(tmp_path / "c", constant)
    assert "live('s.secret') reads a Secret: Secrets are readable only when" in problem
    assert "- name: cm" in line_of(problem, tmp_path / "c")  # the resource that reads it


# -- validate time: constant arguments --------------------------------------------------------
def problems(tmp_path: Path, controller: str, files: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(BundleError) as err:
        build(tmp_path / "b", controller, files=files)
    return [str(p) for p in err.value.problems]


def _object(data: str) -> str:
    return textwrap.dedent(f"""
    components:
      - name: c
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {{name: x}}
              data: {{v: "{data}"}}
    """)


def line_of(problem: str, tmp_path: Path) -> str:
    """The bundle line a problem names (``file:line:...``)."""
    file, line = problem.split(":")[:2]
    return (tmp_path / "b" / file).read_text().splitlines()[int(line) - 1]


@pytest.mark.parametrize(
    ("call", "says"),
    [
        ("lookup('v1', 'Secret', 'db')", "Secret <the CR's namespace>/db"),
        ("lookup('v1', 'Secret', spec.name, spec.ns)", "Secret <namespace>/<name>"),
        ("lookup('v1', 'ConfigMap', 'x', 'kube-system')", "ConfigMap kube-system/x"),
        ("lookup('v1', 'Node', 'n1')", "Node 'n1' (cluster-scoped)"),
        ("lookup(api_version='v1', kind='Secret', name='db')", "Secret <the CR's namespace>/db"),
    ],
)
def test_an_undeclared_constant_read_is_a_bundle_problem(
    tmp_path: Path, call: str, says: str
) -> None:
    (problem,) = problems(tmp_path, _object("{{ " + call + " }}"))
    assert says in problem and call in line_of(problem, tmp_path), problem


def test_reads_that_a_render_may_allow_pass_validation(tmp_path: Path) -> None:
    calls = [
        "lookup('v1', 'ConfigMap', 'x')",
        "lookup('v1', 'ConfigMap', 'x', spec.ns)",  # may be the CR's own namespace
        "lookup(spec.api, spec.kind, 'x')",
        "lookup('v1', 'Secret', 'db', 'vault')",
        "lookup('v1', 'Namespace', spec.ns)",
    ]
    reads = """
reads:
  - {apiVersion: v1, kind: Secret, namespace: vault, names: [db]}
  - {apiVersion: v1, kind: Namespace}
"""
    controller = _object(" ".join("{{ " + c + " }}" for c in calls)) + reads
    bundle = build(tmp_path / "b", controller)
    (controller_spec,) = bundle.controllers
    assert len(controller_spec.lookups) == len(calls)


def test_an_undeclared_read_in_a_text_template_names_the_template_line(tmp_path: Path) -> None:
    controller = """
    components:
      - name: c
        resources:
          - name: all
            template: templates/all.yaml
    """
    template = """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: x}
        data:
          ca: {{ lookup('v1', 'Secret', 'ca', 'cert-manager').data['ca.crt'] | quote }}
        """
    (problem,) = problems(tmp_path, controller, files={"templates/all.yaml": template})
    assert problem.startswith("templates/all.yaml:5: lookup() reading Secret cert-manager/ca")


def test_an_undeclared_read_in_an_expression_is_found(tmp_path: Path) -> None:
    controller = _object("x") + "status:\n  ca: \"lookup('v1', 'Secret', 'ca') is none\"\n"
    (problem,) = problems(tmp_path, controller)
    assert "Secret <the CR's namespace>/ca" in problem
    assert "lookup('v1', 'Secret', 'ca')" in line_of(problem, tmp_path)


def test_a_namespace_on_a_cluster_scoped_read_is_a_problem(tmp_path: Path) -> None:
    controller = _object("x") + "reads: [{apiVersion: v1, kind: Node, namespace: a}]\n"
    (problem,) = problems(tmp_path, controller)
    assert "Node is cluster-scoped: a read of it takes no `namespace`" in problem


def test_random_string_calls_are_found(tmp_path: Path) -> None:
    plain = build(tmp_path / "a", _object("{{ spec.x }}"))
    assert not plain.controllers[0].random_strings
    randoms = build(tmp_path / "b", _object("{{ random_string('k', 8) }}"))
    assert randoms.controllers[0].random_strings
