"""A CR author cannot reach objects the bundle does not give them: names that would be
other request paths are refused, and no CR takes over an object it did not create (an
administrator's, or another CR's). Found by an outside tester; see docs/security.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import NAMESPACE, Harness, build, condition

from oper8d.cluster.kube.discovery import Resource
from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.inputs import CONFIG_DEFAULTS_FIELD, read_config_maps
from oper8d.errors import ClusterError

TRAVERSAL = "../../kube-system/secrets/topsecret"

BUNDLE = """
components:
  - name: app
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ name }}-data"}
          data: {greeting: "{{ config.greeting | default('hi') }}"}
"""


@pytest.mark.parametrize("name", [TRAVERSAL, "..", ".", "a/b", "a%2Fb", "?", "a#b", "a?watch=true"])
def test_a_name_that_is_another_path_is_refused_before_any_request(name: str) -> None:
    cluster = MemoryCluster()
    with pytest.raises(ClusterError) as caught:
        cluster.get("v1", "ConfigMap", name, "default")
    assert caught.value.status == 400
    resource = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
    with pytest.raises(ClusterError, match="invalid name"):
        resource.object_path(name, "default")
    with pytest.raises(ClusterError, match="invalid namespace"):
        resource.object_path("ok", name)


def test_the_config_defaults_annotation_cannot_name_another_path(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "topsecret", "namespace": "kube-system"},
            "stringData": {"greeting": "LEAKED"},
        }
    )
    cr = h.create({}, annotations={"oper8.org/config-defaults": TRAVERSAL})
    requests = h.cluster.requests["get"]
    assert read_config_maps(h.cluster, cr) == {}
    assert h.cluster.requests["get"] == requests, "nothing was read"
    h.settle()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert CONFIG_DEFAULTS_FIELD in ready["message"] and "DNS-1123" in ready["message"]
    assert h.names("ConfigMap") == []


def test_a_cr_does_not_take_over_an_object_an_administrator_made(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    admin = h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "payments-data", "namespace": NAMESPACE},
            "data": {"greeting": "the admin's"},
        }
    )
    h.create({}, name="payments")
    h.settle(name="payments")
    ready = condition(h.cr("payments"), "Ready")
    assert ready["reason"] == "ConfigError"
    assert (
        "ConfigMap default/payments-data already exists and is not created by oper8d"
        in (ready["message"])
    )
    assert h.get("ConfigMap", "payments-data") == admin, "untouched: no data, owner or label"
    h.cluster.delete(*("demo.oper8d.io/v1alpha1", "Demo", "payments", NAMESPACE))
    assert h.get("ConfigMap", "payments-data") == admin, "not garbage-collected with the CR"


def test_an_object_handed_over_by_its_label_is_managed(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    cr = h.create({}, name="payments")
    h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "payments-data",
                "namespace": NAMESPACE,
                "labels": {"oper8d.io/owner-uid": cr["metadata"]["uid"]},
            },
            "data": {"greeting": "old"},
        }
    )
    h.settle(name="payments")
    assert condition(h.cr("payments"), "Ready")["status"] == "True"
    assert h.get("ConfigMap", "payments-data")["data"] == {"greeting": "hi"}  # type: ignore[index]


def test_two_crs_rendering_one_object_do_not_fight_over_it(tmp_path: Path) -> None:
    clash = BUNDLE.replace('"{{ name }}-data"', '"shared-{{ spec.tenant }}"')
    h = Harness(build(tmp_path, clash))
    h.create({"tenant": "x"}, name="first")
    h.settle(name="first")
    assert condition(h.cr("first"), "Ready")["status"] == "True"
    before = h.get("ConfigMap", "shared-x")
    h.create({"tenant": "x"}, name="second")
    h.settle(name="second")
    ready = condition(h.cr("second"), "Ready")
    assert ready["reason"] == "ConfigError"
    assert "already exists and is another CR's" in ready["message"]
    for _ in range(3):
        h.reconcile("first")
        h.reconcile("second")
    assert condition(h.cr("first"), "Ready")["status"] == "True"
    assert h.get("ConfigMap", "shared-x") == before, "never written for the second CR"


def test_random_string_does_not_read_a_secret_it_did_not_create(tmp_path: Path) -> None:
    bundle = BUNDLE.replace(
        "{{ config.greeting | default('hi') }}", "{{ random_string('pw', 12) | length }}"
    )
    h = Harness(build(tmp_path, bundle))
    h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "payments-oper8d-generated", "namespace": NAMESPACE},
            "stringData": {"pw.12": "the admin's password"},
        }
    )
    h.create({}, name="payments")
    h.settle(name="payments")
    ready = condition(h.cr("payments"), "Ready")
    assert ready["reason"] == "ConfigError"
    assert "Secret default/payments-oper8d-generated already exists" in ready["message"]


def test_a_resource_may_not_render_the_secret_random_string_keeps(tmp_path: Path) -> None:
    bundle = (
        BUNDLE.replace("kind: ConfigMap", "kind: Secret")
        .replace('"{{ name }}-data"', "\"{{ scoped_name('oper8d-generated') }}\"")
        .replace("data: {greeting:", "stringData: {greeting:")
    )
    h = Harness(build(tmp_path, bundle))
    h.create({})
    h.settle()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert (
        "Secret default/demo-oper8d-generated, the Secret random_string() keeps"
        in (ready["message"])
    )
