"""A change of the config a CR names (its ``oper8.org/config-defaults`` ConfigMap) is acted
on although the CR itself did not change: the skip of unchanged CRs (engine.fingerprint)
counts the ConfigMap as read, so its watch event forgets the record."""

from __future__ import annotations

import copy
from pathlib import Path

from bundles import NAMESPACE, Harness, build

from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions

BUNDLE = """
config:
  logLevel: info
components:
  - name: web
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('web') }}"}
          data:
            logLevel: "{{ config.logLevel }}"
"""


def test_an_edited_config_map_is_rolled_out_to_the_cr_naming_it(tmp_path: Path) -> None:
    overridable = {"type": "object", "properties": {"logLevel": {"type": "string"}}}
    h = Harness(build(tmp_path / "b", BUNDLE, config_schema=overridable))
    h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "site", "namespace": NAMESPACE},
            "data": {"logLevel": "warn"},
        }
    )
    tracker = ChangeTracker(clock=h.clock, sees_everything=True)
    h.cluster.watch(tracker.observe)
    options = ReconcilerOptions(field_manager="demo", clock=h.clock, max_workers=1)
    options.changes = tracker
    reconciler = Reconciler(h.bundle, h.bundle.controllers[0], h.cluster, options)
    h.create({}, annotations={"oper8.org/config-defaults": "site"})
    for _ in range(5):
        if reconciler.reconcile_object(h.cr()).stable:
            break
    assert reconciler.reconcile_object(h.cr()).skipped

    site = copy.deepcopy(h.get("ConfigMap", "site"))
    assert site is not None
    site["data"]["logLevel"] = "debug"
    h.cluster.update(site)

    assert not reconciler.reconcile_object(h.cr()).skipped
    web = h.get("ConfigMap", "demo-web")
    assert web is not None and web["data"]["logLevel"] == "debug"
