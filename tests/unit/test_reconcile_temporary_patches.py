"""oper8's temporary patches end to end: a TemporaryPatch object named in the CR's
``oper8.org/temporary-patches`` annotation changes the object it routes to, until it is
removed (engine.reconcile + engine.patch against the in-memory cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bundles import API_VERSION, KIND, Harness, build, condition

from oper8d.cluster.base import Obj
from oper8d.errors import BundleError
from oper8d.manifests.package import InstallOptions, operator_manifests

BUNDLE = """
components:
  - name: app
    resources:
      - name: deployment
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "{{ scoped_name('app') }}"}
          spec:
            replicas: 2
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec:
                containers:
                  - {name: app, image: "nginx:1", env: [{name: MODE, value: normal}]}
  - name: config
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}"}
          data: {a: "1"}
"""
POLICY = """
temporaryPatches:
  enabled: true
  allowedKinds: [Deployment]
  allowedPaths: [spec.replicas, "spec.template.spec.containers[*].env"]
"""


def harness(tmp_path: Path, body: str) -> Harness:
    h = Harness(build(tmp_path, body))
    h.create({})
    h.settle()
    return h


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return harness(tmp_path, BUNDLE + POLICY)


def temporary_patch(
    h: Harness,
    name: str,
    patch: Any,
    *,
    target: str = "demo",
    patch_type: str = "patchStrategicMerge",
) -> Obj:
    return h.cluster.create(
        {
            "apiVersion": "oper8.org/v1",
            "kind": "TemporaryPatch",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": target,
                "patchType": patch_type,
                "patch": patch,
            },
        }
    )


def announce(h: Harness, *names: str, cr: str = "demo") -> None:
    """What the TemporaryPatch controller does: list the patches on the target CR."""
    value = {
        n: {
            "timestamp": f"2026-01-01T00:00:0{i}Z",
            "api_version": "oper8.org/v1",
            "kind": "TemporaryPatch",
        }
        for i, n in enumerate(names)
    }

    def change(obj: Obj) -> None:
        obj["metadata"].setdefault("annotations", {})["oper8.org/temporary-patches"] = json.dumps(
            value
        )

    h.edit_cr(change, cr)


def container(h: Harness) -> dict[str, Any]:
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    return live["spec"]["template"]["spec"]["containers"][0]


DEBUG = {"app": {"deployment": {"spec": {"template": {"spec": {"containers": [
    {"name": "app", "env": [{"name": "MODE", "value": "debug"}]},
]}}}}}}  # fmt: skip


def test_a_strategic_merge_temporary_patch_lands_on_the_routed_object(h: Harness) -> None:
    temporary_patch(h, "debug", DEBUG)
    announce(h, "debug")
    h.reconcile()
    assert container(h)["env"] == [{"name": "MODE", "value": "debug"}]
    assert container(h)["image"] == "nginx:1"  # the rest of the container is kept
    assert h.get("ConfigMap", "demo-config")["data"] == {"a": "1"}  # type: ignore[index]
    assert condition(h.cr(), "Ready")["reason"] == "Stable"


def test_a_removed_temporary_patch_is_undone_on_the_next_reconcile(h: Harness) -> None:
    temporary_patch(h, "debug", DEBUG)
    announce(h, "debug")
    h.reconcile()
    h.cluster.delete("oper8.org/v1", "TemporaryPatch", "debug", "default")
    announce(h)
    h.reconcile()
    assert container(h)["env"] == [{"name": "MODE", "value": "normal"}]


def test_a_json6902_temporary_patch_lands_on_the_routed_object(h: Harness) -> None:
    ops = {"app": {"deployment": [{"op": "replace", "path": "/spec/replicas", "value": 5}]}}
    temporary_patch(h, "scale", ops, patch_type="patchJson6902")
    announce(h, "scale")
    h.reconcile()
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None and live["spec"]["replicas"] == 5


def test_temporary_patches_apply_oldest_first(h: Harness) -> None:
    first = {"app": {"deployment": {"spec": {"replicas": 3}}}}
    second = {"app": {"deployment": {"spec": {"replicas": 4}}}}
    temporary_patch(h, "z-first", first)
    temporary_patch(h, "a-second", second)
    announce(h, "z-first", "a-second")  # timestamps follow this order
    h.reconcile()
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None and live["spec"]["replicas"] == 4


def test_a_temporary_patch_renaming_the_object_is_rejected_with_a_clear_error(
    h: Harness,
) -> None:
    rename = {"app": {"deployment": {"metadata": {"name": "hijacked"}}}}
    temporary_patch(h, "rename", rename)
    announce(h, "rename")
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert ready["status"] == "False"
    assert "TemporaryPatch default/rename" in ready["message"]
    assert "metadata.name" in ready["message"]
    assert h.get("Deployment", "hijacked", "apps/v1") is None
    assert h.get("Deployment", "demo-app", "apps/v1") is not None


def test_a_temporary_patch_for_another_cr_is_ignored(h: Harness) -> None:
    temporary_patch(h, "other", DEBUG, target="someone-else")
    announce(h, "other")
    h.reconcile()
    assert container(h)["env"] == [{"name": "MODE", "value": "normal"}]
    assert condition(h.cr(), "Ready")["reason"] == "Stable"


def test_a_temporary_patch_of_a_kind_not_allowed_is_refused(h: Harness) -> None:
    temporary_patch(h, "cm", {"config": {"cm": {"data": {"a": "2"}}}})
    announce(h, "cm")
    h.reconcile()
    assert h.get("ConfigMap", "demo-config")["data"] == {"a": "1"}  # type: ignore[index]
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert "TemporaryPatch default/cm patches config.cm, a ConfigMap" in ready["message"]


def test_temporary_patches_are_off_unless_the_bundle_turns_them_on(tmp_path: Path) -> None:
    h = harness(tmp_path, BUNDLE)
    temporary_patch(h, "debug", DEBUG)
    announce(h, "debug")
    h.reconcile()
    assert container(h)["env"] == [{"name": "MODE", "value": "normal"}]
    assert condition(h.cr(), "Ready")["reason"] == "Stable"


ESCAPES = {
    "hostNetwork": ({"spec": {"hostNetwork": True}}, "spec.template.spec.hostNetwork"),
    "privileged": (
        {"spec": {"containers": [{"name": "app", "securityContext": {"privileged": True}}]}},
        "spec.template.spec.containers[0].securityContext",
    ),
    "hostPath": (
        {"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}},
        "spec.template.spec.volumes",
    ),
}


@pytest.mark.parametrize(("template", "path"), ESCAPES.values(), ids=ESCAPES.keys())
def test_a_temporary_patch_beyond_the_allowed_paths_is_refused_naming_the_path(
    h: Harness, template: dict[str, Any], path: str
) -> None:
    temporary_patch(h, "escape", {"app": {"deployment": {"spec": {"template": template}}}})
    announce(h, "escape")
    h.set_spec(replicas=3)  # (a change the reconcile would apply)
    writes = h.cluster.writes
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert f"TemporaryPatch default/escape changes {path} of app.deployment" in ready["message"]
    live = h.get("Deployment", "demo-app", "apps/v1")
    assert live is not None
    pod = live["spec"]["template"]["spec"]
    assert not pod.get("hostNetwork") and not pod.get("volumes")
    assert "securityContext" not in pod["containers"][0]
    assert h.cluster.writes - writes <= 1, "only the CR's status is written"


def test_an_extra_owner_reference_is_refused(h: Harness) -> None:
    owner = {"apiVersion": "v1", "kind": "Namespace", "name": "default", "uid": "u"}
    temporary_patch(h, "owner", {"app": {"deployment": {"metadata": {"ownerReferences": [owner]}}}})
    announce(h, "owner")
    h.reconcile()
    assert "changes metadata.ownerReferences" in condition(h.cr(), "Ready")["message"]


def test_an_announced_patch_that_does_not_exist_is_skipped(h: Harness) -> None:
    announce(h, "gone")
    h.reconcile()
    assert condition(h.cr(), "Ready")["reason"] == "Stable"
    assert container(h)["env"] == [{"name": "MODE", "value": "normal"}]


def test_an_unparseable_annotation_is_a_config_error(h: Harness) -> None:
    h.edit_cr(
        lambda cr: (
            cr["metadata"]["annotations"].update({"oper8.org/temporary-patches": "{nope"})
            if cr["metadata"].get("annotations")
            else cr["metadata"].update(annotations={"oper8.org/temporary-patches": "{nope"})
        )
    )
    result = h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert "oper8.org/temporary-patches" in ready["message"]
    assert result.status_written


def annotate(h: Harness, value: str) -> None:
    def change(cr: Obj) -> None:
        cr["metadata"].setdefault("annotations", {})["oper8.org/temporary-patches"] = value

    h.edit_cr(change)


MALFORMED = {
    "an array": "[1,2]",
    "a string": '"debug"',
    "a number": "1",
    "null": "null",
    "an entry that is not an object": '{"debug": 1}',
    "an entry that is an array": '{"debug": [1]}',
    "a name that is not one": '{"../debug": {}}',
    "a timestamp that is not a string": '{"debug": {"timestamp": 5}}',
    "JSON nested past the interpreter's depth": "[" * 100_000,
}


@pytest.mark.parametrize("value", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_annotation_is_a_config_error_on_the_cr_and_nothing_is_applied(
    h: Harness, value: str
) -> None:
    temporary_patch(h, "debug", DEBUG)
    h.set_spec(replicas=3)  # a change the next reconcile would apply
    annotate(h, value)
    before = {verb: h.cluster.requests[verb] for verb in ("apply", "create", "update", "delete")}
    result = h.reconcile()  # (before the fix: AttributeError or TypeError, at every attempt)
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert "annotation oper8.org/temporary-patches" in ready["message"]
    assert "Traceback" not in ready["message"]
    assert result.status_written
    after = {verb: h.cluster.requests[verb] for verb in before}
    assert after == before, "nothing of the rollout is applied"
    assert container(h)["env"] == [{"name": "MODE", "value": "normal"}]


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        ("{enabled: true, allowedPaths: [spec]}", "lists no `allowedKinds`"),
        ("{enabled: true, allowedKinds: [Deployment]}", "lists no `allowedPaths`"),
        (
            "{enabled: true, allowedKinds: [Deployment], allowedPaths: ['spec..replicas']}",
            "'spec..replicas' is not a dotted field path",
        ),
    ],
)
def test_turned_on_the_policy_must_say_what_patches_may_change(
    tmp_path: Path, policy: str, problem: str
) -> None:
    with pytest.raises(BundleError) as caught:
        build(tmp_path, BUNDLE + f"temporaryPatches: {policy}\n")
    assert problem in str(caught.value)
    assert "operator.yaml:" in str(caught.value)


def test_without_temporary_patches_the_manifests_have_no_crd_or_rule_for_them(
    tmp_path: Path,
) -> None:
    def manifests(body: str) -> list[dict[str, Any]]:
        bundle = build(tmp_path / str(hash(body)), body)
        return [m.obj for m in operator_manifests(bundle, InstallOptions())]

    def mentions(objs: list[dict[str, Any]]) -> bool:
        return "temporarypatches" in json.dumps(objs)

    assert not mentions(manifests(BUNDLE))
    assert mentions(manifests(BUNDLE + POLICY))
