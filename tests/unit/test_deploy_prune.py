"""Objects that must go: disabled components, removed forEach items, components removed
from the bundle, and everything on CR deletion with finalize (engine.deploy, engine.rollout
and engine.reconcile against the in-memory cluster)."""

from __future__ import annotations

from pathlib import Path

from bundles import EventLog, Harness, build, condition

TOGGLED = """
components:
  - name: base
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('base') }}"}}
  - name: ingress
    enabled: "spec.ingress | default(false)"
    dependsOn: [base]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('ingress') }}"}}
      - name: secret
        object:
          apiVersion: v1
          kind: Secret
          metadata: {name: "{{ scoped_name('tls') }}"}
          stringData: {key: value}
"""


def test_a_disabled_component_has_its_objects_deleted_once(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, TOGGLED))
    h.create({"ingress": True})
    h.settle()
    assert h.names("ConfigMap") == ["demo-base", "demo-ingress"]
    assert h.names("Secret") == ["demo-tls"]
    h.set_spec(ingress=False)
    h.cluster.reset_requests()
    result = h.settle()
    assert h.cluster.requests["delete"] == 2, h.cluster.requests
    assert h.names("ConfigMap") == ["demo-base"]
    assert h.names("Secret") == []
    assert condition(h.cr(), "Ready")["reason"] == "Stable"
    assert result.rollout is not None and result.rollout.components["ingress"].disabled
    h.cluster.reset_requests()
    h.reconcile()
    assert h.cluster.requests["delete"] == 0
    assert h.cluster.writes == 0


def test_a_disabled_component_counts_as_deployed_and_verified(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, TOGGLED))
    h.create({})
    h.settle()
    status = h.cr()["status"]["componentStatus"]
    assert status["verified"] == "2/2"
    assert h.names("ConfigMap") == ["demo-base"]


def test_an_object_with_a_finalizer_of_its_own_is_asked_to_delete_only_once(
    tmp_path: Path,
) -> None:
    h = Harness(build(tmp_path, TOGGLED))
    h.create({"ingress": True})
    h.settle()
    cm = h.get("ConfigMap", "demo-ingress")
    assert cm is not None
    cm["metadata"]["finalizers"] = ["example.com/hold"]
    h.cluster.update(cm, field_manager="someone")
    h.set_spec(ingress=False)
    h.reconcile()
    terminating = h.get("ConfigMap", "demo-ingress")
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
    h.cluster.reset_requests()
    h.reconcile()
    h.reconcile()
    assert h.cluster.requests["delete"] == 0


FANOUT = """
components:
  - name: worker
    forEach:
      items: spec.workers
      as: w
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('worker-' ~ w.name) }}"}
          data: {size: "{{ w.size }}"}
"""


def test_removing_a_for_each_item_prunes_that_instances_objects(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, FANOUT))
    h.create({"workers": [{"name": "a", "size": "s"}, {"name": "b", "size": "m"}]})
    h.settle()
    assert h.names("ConfigMap") == ["demo-worker-a", "demo-worker-b"]
    annotations = h.get("ConfigMap", "demo-worker-b")["metadata"]["annotations"]  # type: ignore[index]
    assert annotations["oper8.org/internal-name"] == "worker-b.cm"
    h.set_spec(workers=[{"name": "a", "size": "s"}])
    h.cluster.reset_requests()
    h.settle()
    assert h.names("ConfigMap") == ["demo-worker-a"]
    assert h.cluster.requests["delete"] == 1
    assert h.cluster.requests["apply"] == 0  # the kept instance is unchanged


def test_a_component_removed_from_the_bundle_is_pruned(tmp_path: Path) -> None:
    two = TOGGLED.replace('enabled: "spec.ingress | default(false)"', "")
    h = Harness(build(tmp_path / "v1", two))
    h.create({})
    h.settle()
    assert h.names("ConfigMap") == ["demo-base", "demo-ingress"]
    one = two.split("  - name: ingress")[0]
    h.reconciler = h.new_reconciler(build(tmp_path / "v2", one))
    h.settle()
    assert h.names("ConfigMap") == ["demo-base"]
    assert h.names("Secret") == []
    assert h.cr()["status"]["componentStatus"]["allComponents"] == ["base"]


def test_objects_of_a_waiting_component_are_not_pruned(tmp_path: Path) -> None:
    bundle = """
    components:
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('app') }}"}
              data: {x: "{{ require(not spec.hold | default(false), 'on hold') }}"}
    """
    h = Harness(build(tmp_path, bundle))
    h.create({})
    h.settle()
    h.set_spec(hold=True)
    h.reconcile()
    assert h.names("ConfigMap") == ["demo-app"]


FINALIZED = """
components:
  - name: db
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('db') }}"}}
  - name: app
    dependsOn: [db]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('app') }}"}}
      - name: secret
        object:
          apiVersion: v1
          kind: Secret
          metadata: {name: "{{ scoped_name('app') }}"}
          stringData: {a: b}
  - name: web
    dependsOn: [app]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('web') }}"}}
finalize:
  enabled: true
"""


def test_finalize_deletes_components_in_reverse_dependency_order_then_the_cr(
    tmp_path: Path,
) -> None:
    h = Harness(build(tmp_path, FINALIZED))
    h.create({})
    h.settle()
    assert h.cr()["metadata"]["finalizers"] == ["finalizers.demo.demo.oper8d.io"]
    log = EventLog(h.cluster)
    h.cluster.delete("demo.oper8d.io/v1alpha1", "Demo", "demo", "default")
    assert h.cr()["metadata"].get("deletionTimestamp")  # held by our finalizer
    result = h.reconcile()
    assert result.finalized
    assert result.requeue_after is None
    deleted = log.names("DELETED")
    assert deleted.index("demo-web") < deleted.index("demo-app") < deleted.index("demo-db")
    assert deleted[-1] == "demo"  # the CR went once its finalizer was removed
    assert h.cluster.get("demo.oper8d.io/v1alpha1", "Demo", "demo", "default") is None
    assert h.objects() == []


def test_a_cr_without_our_finalizer_is_left_to_garbage_collection(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, FINALIZED))
    h.create({})
    h.settle()
    h.edit_cr(lambda cr: cr["metadata"].update(finalizers=["someone.else/keep"]))
    h.cluster.delete("demo.oper8d.io/v1alpha1", "Demo", "demo", "default")
    h.cluster.reset_requests()
    result = h.reconcile()
    assert result.finalized
    assert h.cluster.writes == 0


def test_finalize_waits_for_a_downstream_object_with_its_own_finalizer(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, FINALIZED))
    h.create({})
    h.settle()
    web = h.get("ConfigMap", "demo-web")
    assert web is not None
    web["metadata"]["finalizers"] = ["example.com/flush"]
    h.cluster.update(web, field_manager="someone")
    h.cluster.delete("demo.oper8d.io/v1alpha1", "Demo", "demo", "default")
    result = h.reconcile()
    assert not result.finalized
    assert result.requeue_after is not None
    assert h.names("ConfigMap") == ["demo-app", "demo-db", "demo-web"]  # upstream kept
    h.cluster.reset_requests()
    h.reconcile()
    assert h.cluster.requests["delete"] == 0  # asked once; waiting is not asking again
    web = h.get("ConfigMap", "demo-web")
    assert web is not None
    web["metadata"]["finalizers"] = []
    h.cluster.update(web, field_manager="someone")
    assert h.reconcile().finalized
    assert h.cluster.get("demo.oper8d.io/v1alpha1", "Demo", "demo", "default") is None
    assert h.objects() == []


def test_an_object_whose_name_changed_is_replaced_not_kept_beside_the_new_one(
    tmp_path: Path,
) -> None:
    bundle = """
    components:
      - name: migrate
        resources:
          - name: job
            object:
              apiVersion: batch/v1
              kind: Job
              metadata: {name: "{{ scoped_name('migrate-' ~ spec.version) }}"}
              spec:
                template:
                  spec:
                    restartPolicy: Never
                    containers: [{name: main, image: busybox}]
    """
    h = Harness(build(tmp_path, bundle))
    h.create({"version": "1"})
    h.settle()
    h.set_spec(version="2")
    h.settle()
    assert h.names("Job") == ["demo-migrate-2"]
