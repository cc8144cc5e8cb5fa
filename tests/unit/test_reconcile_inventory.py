"""The CR's inventory (annotation oper8d.io/inventory: the kinds it has deployed) is what
pruning and finalization list, so it must name a kind before the first object of that kind
exists, whenever the operator is killed. The reconciler writes it, and every other CR
write, on its own thread between the steps of a reconcile, never from the rollout's
workers (engine.reconcile, engine.deploy_phase against the in-memory cluster)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bundles import API_VERSION, KIND, Harness, build

from oper8d.cluster.base import Obj
from oper8d.engine.deploy import COMPONENT_ANNOTATION, inventory_of, kind_key

BUNDLE = """
components:
  - name: config
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}"}
  - name: creds
    resources:
      - name: secret
        object:
          apiVersion: v1
          kind: Secret
          metadata: {name: "{{ scoped_name('creds') }}"}
          stringData: {password: "{{ random_string('password') }}"}
  - name: web
    dependsOn: [config]
    resources:
      - name: service
        object:
          apiVersion: v1
          kind: Service
          metadata: {name: "{{ scoped_name('web') }}"}
          spec: {ports: [{port: 80}]}
  - name: computed
    resources:
      - name: thing
        kinds: [{apiVersion: v1, kind: PersistentVolumeClaim}]
        object:
          apiVersion: "{{ spec.api }}"
          kind: "{{ spec.kind }}"
          metadata: {name: "{{ scoped_name(spec.suffix) }}"}
hooks:
  afterDeploy:
    - name: after
      resources:
        - name: marker
          object:
            apiVersion: v1
            kind: ServiceAccount
            metadata: {name: "{{ scoped_name('marker') }}"}
"""

SPEC = {"api": "v1", "kind": "PersistentVolumeClaim", "suffix": "data"}


@dataclass
class Watch:
    """Owned objects written while the CR's inventory did not name their kind, and the
    threads that wrote the CR."""

    violations: list[str] = field(default_factory=list)
    cr_writers: list[str] = field(default_factory=list)


def watched(h: Harness) -> Watch:
    """Make ``h``'s cluster check, at every write of an object the CR owns, that the live
    CR's inventory already names its kind, and note the threads that write the CR."""
    watch = Watch()
    violations, cr_writers = watch.violations, watch.cr_writers
    cluster = h.cluster
    apply, update, update_status = cluster.apply, cluster.update, cluster.update_status

    def check(obj: Obj) -> None:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if COMPONENT_ANNOTATION not in annotations:
            return  # not the rollout's (the generated-randoms Secret)
        live = cluster.get(API_VERSION, KIND, "demo", "default") or {}
        if kind_key(obj) not in inventory_of(live):
            violations.append(f"{kind_key(obj)} {obj['metadata']['name']}")

    def checked_apply(obj: Obj, **kw: Any) -> Obj:
        check(obj)
        return apply(obj, **kw)

    def noted_update(obj: Obj, **kw: Any) -> Obj:
        if obj["kind"] == KIND:
            cr_writers.append(threading.current_thread().name)
        return update(obj, **kw)

    def noted_update_status(obj: Obj, **kw: Any) -> Obj:
        cr_writers.append(threading.current_thread().name)
        return update_status(obj, **kw)

    cluster.apply = checked_apply  # type: ignore[method-assign]
    cluster.update = noted_update  # type: ignore[method-assign]
    cluster.update_status = noted_update_status  # type: ignore[method-assign]
    return watch


def test_no_object_exists_before_its_kind_is_in_the_crs_inventory(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE), max_workers=4)
    watch = watched(h)
    h.create(SPEC)
    h.settle()
    assert watch.violations == []
    assert h.names("PersistentVolumeClaim") == ["demo-data"]
    assert "v1/PersistentVolumeClaim" in inventory_of(h.cr())


def test_the_cr_is_written_only_on_the_reconciling_thread(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE), max_workers=4)
    writers = watched(h).cr_writers
    h.create(SPEC)
    h.settle()
    assert writers, "the reconciles wrote the CR's inventory and status"
    assert set(writers) == {threading.current_thread().name}


def test_a_first_reconcile_records_the_bundles_kinds_in_one_write(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    h.create(SPEC)
    h.cluster.reset_requests()
    h.reconcile()
    assert inventory_of(h.cr()) == [
        "v1/ConfigMap",
        "v1/PersistentVolumeClaim",
        "v1/Secret",
        "v1/Service",
        "v1/ServiceAccount",
    ]
    assert h.cluster.requests["update"] == 1, h.cluster.requests  # the inventory, once


def test_a_templated_kind_is_declared_so_it_is_recorded_before_its_first_object(
    tmp_path: Path,
) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    watch = watched(h)
    h.create(SPEC)
    h.reconcile()
    assert "v1/PersistentVolumeClaim" in inventory_of(h.cr())
    assert h.names("PersistentVolumeClaim") == ["demo-data"]
    assert watch.violations == []


def test_an_object_of_a_templated_kind_is_pruned_when_its_name_changes(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, BUNDLE))
    h.create(SPEC)
    h.settle()
    h.set_spec(suffix="renamed")
    h.settle()
    assert h.names("PersistentVolumeClaim") == ["demo-renamed"]
