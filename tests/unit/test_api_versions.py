"""An apiVersion is read by one grammar (``kinds.parse_api_version``) before any read,
write, request path or RBAC rule uses it: a group that is a DNS subdomain and a version
that is a DNS-1035 label, as the API server requires. Found by an outside audit:
``lookup('../api/v1', 'Secret', name)`` was not taken for a Secret read (its group parsed
as ``../api``), while the HTTP client normalised ``/apis/../api/v1/...`` into the core
group's Secrets, so a bundle allowed to read one Secret let a tenant read them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bundles import Harness, build, condition, write_bundle
from click.testing import CliRunner

from oper8d.cli.main import main
from oper8d.cluster.kube.discovery import Discovery, group_path
from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.deploy import INVENTORY_ANNOTATION, inventory_of
from oper8d.errors import BundleError, ClusterError
from oper8d.kinds import api_version_problem, parse_api_version

ACCEPTED = {
    "v1": ("", "v1"),
    "apps/v1": ("apps", "v1"),
    "storage.k8s.io/v1beta2": ("storage.k8s.io", "v1beta2"),
    "example.com/v2alpha1": ("example.com", "v2alpha1"),
    "example.com/v1-rc1": ("example.com", "v1-rc1"),  # a CRD may serve any DNS-1035 label
}

REFUSED = [
    "../api/v1",
    "apps/v1/x",
    "apps/../v1",
    "/v1",
    "apps/",
    "",
    "V1",
    "Apps/v1",
    "apps/V1",
    "a..b/v1",
    "-a/v1",
    "apps/1v",
    "apps/v1-",
    "apps/v1\n",
    "apps/v1?watch=1",
    "apps%2Fv1",
    "example.com/" + "v" * 64,
    "a" * 254 + "/v1",
]


@pytest.mark.parametrize(("text", "parsed"), ACCEPTED.items())
def test_group_versions_of_kubernetes_grammar_are_read(text: str, parsed: Any) -> None:
    assert parse_api_version(text) == parsed
    assert api_version_problem(text) is None


@pytest.mark.parametrize("text", REFUSED)
def test_anything_else_is_refused_saying_why(text: str) -> None:
    with pytest.raises(ValueError, match="apiVersion"):
        parse_api_version(text)
    assert "write `v1` or `<group>/<version>`" in (api_version_problem(text) or "")


@pytest.mark.parametrize("value", [None, 1, ["v1"], {"v": 1}])
def test_an_apiversion_that_is_not_a_string_is_refused(value: Any) -> None:
    assert api_version_problem(value) == (
        f"apiVersion must be a string, got {type(value).__name__}"
    )


# -- the request path ----------------------------------------------------------------------
class RecordingTransport:
    """Answers every discovery request with the core group's Secrets, and records it."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def request(self, method: str, path: str, **_: Any) -> Any:
        self.paths.append(path)
        return {"resources": [{"name": "secrets", "kind": "Secret", "namespaced": True}]}


@pytest.mark.parametrize("text", ["../api/v1", "x/../../api/v1", "apps/v1/../../../api/v1"])
def test_the_real_client_sends_no_request_for_a_path_traversing_apiversion(text: str) -> None:
    transport = RecordingTransport()
    discovery = Discovery(transport)  # type: ignore[arg-type]
    with pytest.raises(ClusterError) as caught:
        discovery.resource(text, "Secret")
    assert caught.value.status == 400
    assert "not an API group" in caught.value.message
    assert transport.paths == []


def test_request_paths_come_from_the_parsed_group_and_version() -> None:
    assert group_path("v1") == "/api/v1"
    assert group_path("apps/v1") == "/apis/apps/v1"
    with pytest.raises(ClusterError):
        group_path("../api/v1")


def test_the_in_memory_cluster_refuses_it_as_the_real_client_does() -> None:
    cluster = MemoryCluster()
    for call in (
        lambda: cluster.get("../api/v1", "Secret", "x", "default"),
        lambda: cluster.list("../api/v1", "Secret", "default"),
    ):
        with pytest.raises(ClusterError) as caught:
            call()
        assert caught.value.status == 400


# -- reads from templates ------------------------------------------------------------------
LOOKUP_WHAT_THE_CR_NAMES = """
components:
  - name: c
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('copy') }}"}
          data:
            copied: "{{ (lookup(spec.api, 'Secret', 'admin-token') or {}).get('data') | to_json }}"
reads:
  - {apiVersion: v1, kind: Secret, names: [registry-pull]}
"""


def test_a_cr_cannot_read_a_secret_through_a_traversing_apiversion(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, LOOKUP_WHAT_THE_CR_NAMES))
    h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "admin-token", "namespace": "default"},
            "stringData": {"token": "LEAKED"},
        }
    )
    reads: list[tuple[Any, ...]] = []
    get = h.cluster.get

    def recording_get(*args: Any, **kwargs: Any) -> Any:
        reads.append(args)
        return get(*args, **kwargs)

    h.cluster.get = recording_get  # type: ignore[method-assign]
    h.create({"api": "../api/v1"})
    h.settle()
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError"), ready
    assert "invalid apiVersion '../api/v1'" in ready["message"]
    assert "operator.yaml" in ready["message"], "it names the template's position"
    assert h.get("ConfigMap", "demo-copy") is None, "nothing of the component is applied"
    assert not [r for r in reads if "admin-token" in r], "no read was sent"


# -- the bundle ------------------------------------------------------------------------------
def problems(tmp_path: Path, body: str) -> str:
    with pytest.raises(BundleError) as caught:
        build(tmp_path, body)
    return str(caught.value)


def test_a_constant_lookup_of_a_bad_apiversion_is_a_bundle_problem_at_its_line(
    tmp_path: Path,
) -> None:
    body = LOOKUP_WHAT_THE_CR_NAMES.replace("spec.api", "'../api/v1'")
    text = problems(tmp_path / "a", body)
    assert "invalid apiVersion '../api/v1'" in text
    assert "operator.yaml:" in text
    computed_kind = body.replace("'Secret'", "spec.kind")
    assert "invalid apiVersion '../api/v1'" in problems(tmp_path / "b", computed_kind)


@pytest.mark.parametrize("api_version", ["../api/v1", "apps/v1/x", "Apps/v1"])
def test_a_declared_kind_must_be_an_apiversion(tmp_path: Path, api_version: str) -> None:
    body = f"""
components:
  - name: c
    resources:
      - name: cm
        object:
          apiVersion: "{{{{ spec.api }}}}"
          kind: ConfigMap
          metadata: {{name: x}}
        kinds: [{{apiVersion: "{api_version}", kind: ConfigMap}}]
"""
    text = problems(tmp_path, body)
    assert f"invalid apiVersion '{api_version}'" in text
    assert "operator.yaml:" in text


def test_a_literal_apiversion_of_an_inline_object_must_be_one(tmp_path: Path) -> None:
    body = """
components:
  - name: c
    resources:
      - name: cm
        object:
          apiVersion: ../api/v1
          kind: Secret
          metadata: {name: x}
"""
    assert "invalid apiVersion '../api/v1'" in problems(tmp_path, body)


def test_a_declared_read_must_be_an_apiversion(tmp_path: Path) -> None:
    body = LOOKUP_WHAT_THE_CR_NAMES.replace(
        "{apiVersion: v1, kind: Secret", "{apiVersion: 'example.com/v1/../..', kind: Secret"
    )
    assert "example.com/v1/../.." in problems(tmp_path, body)


def test_an_extra_rbac_kind_must_be_an_apiversion(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle", LOOKUP_WHAT_THE_CR_NAMES)
    result = CliRunner().invoke(
        main, ["manifests", str(bundle), "--extra-kind", "../api/v1/Secret"], catch_exceptions=False
    )
    assert result.exit_code == 2, result.output
    assert "invalid apiVersion '../api/v1'" in result.output


def test_the_inventory_annotation_names_only_kinds_that_parse(tmp_path: Path) -> None:
    """Whoever may edit a CR may edit its inventory annotation, whose kinds are listed
    and pruned: a key that is not <apiVersion>/<Kind> is ignored, never sent."""
    body = """
components:
  - name: c
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('cm') }}"}}
"""
    h = Harness(build(tmp_path, body))
    h.create({})
    h.settle()

    def inject(cr: dict[str, Any]) -> None:
        annotations = cr["metadata"]["annotations"]
        annotations[INVENTORY_ANNOTATION] += ",../api/v1/Secret,apps/v1/x/Deployment,v1/"

    h.edit_cr(inject)
    assert inventory_of(h.cr()) == ["v1/ConfigMap"]
    result = h.settle()  # (before: a ValueError, or a list sent to /apis/../api/v1)
    assert result.error is None
    assert condition(h.cr(), "Ready")["status"] == "True"
