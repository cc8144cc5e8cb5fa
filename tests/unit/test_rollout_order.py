"""The deploy graph's order and its waits: dependency order (explicit and inferred from
``live()``), edge conditions, ``require()`` preconditions (engine.rollout through the
reconciler, against the in-memory cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import EventLog, Harness, build, condition

from oper8d.cluster.memory.simulate import DefaultSimulator


def cm(name: str, *, depends: str = "", data: str = "{}") -> str:
    return f"""
  - name: {name}
    {depends}
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: "{{{{ scoped_name('{name}') }}}}"}}
          data: {data}"""


CHAIN = "components:" + "".join(
    [
        cm("db"),
        cm("schema", depends="dependsOn: [db]"),
        # inferred: app reads live('cache.cm') so it must come after cache
        cm(
            "app",
            depends="dependsOn: [schema]",
            data="{cache: \"{{ live('cache.cm').metadata.name }}\"}",
        ),
        cm("cache"),
        cm("web", depends="dependsOn: [app]"),
    ]
)


@pytest.mark.parametrize("workers", [1, 4])
def test_components_deploy_in_dependency_order_including_inferred_edges(
    tmp_path: Path, workers: int
) -> None:
    h = Harness(build(tmp_path, CHAIN), max_workers=workers)
    log = EventLog(h.cluster)
    h.create({})
    h.reconcile()
    order = log.names("ADDED", kind="ConfigMap")
    assert sorted(order) == ["demo-app", "demo-cache", "demo-db", "demo-schema", "demo-web"]
    assert order.index("demo-db") < order.index("demo-schema") < order.index("demo-app")
    assert order.index("demo-cache") < order.index("demo-app") < order.index("demo-web")
    assert h.get("ConfigMap", "demo-app")["data"] == {"cache": "demo-cache"}  # type: ignore[index]
    assert condition(h.cr(), "Ready")["reason"] == "Stable"


GATED = """
components:
  - name: db
    resources:
      - name: sts
        object:
          apiVersion: apps/v1
          kind: StatefulSet
          metadata: {name: "{{ scoped_name('db') }}"}
          spec:
            replicas: 1
            serviceName: db
            selector: {matchLabels: {app: db}}
            template:
              metadata: {labels: {app: db}}
              spec: {containers: [{name: db, image: postgres}]}
  - name: app
    dependsOn:
      - component: db
        when: "live('db.sts').status.readyReplicas >= 1"
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('app') }}"}}
  - name: web
    dependsOn: [app]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('web') }}"}}
  - name: side
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('side') }}"}}
"""


def test_an_edge_condition_that_does_not_hold_makes_the_downstream_wait(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, GATED), simulator=DefaultSimulator(delay_writes=2))
    h.create({})
    result = h.reconcile()
    cr = h.cr()
    updating = condition(cr, "Updating")
    assert (updating["status"], updating["reason"]) == ("True", "PreconditionWait")
    assert "waiting for db" in updating["message"]
    assert condition(cr, "Ready")["reason"] == "Initializing"  # waiting, not failed
    # what kstatus readers (kubectl wait, Argo CD, Flux) see
    assert (condition(cr, "Reconciling")["status"], condition(cr, "Stalled")["status"]) == (
        "True",
        "False",
    )
    status = cr["status"]["componentStatus"]
    assert status["failedComponents"] == []
    assert status["unstartedComponents"] == ["web"]
    assert "app" in status["unverifiedComponents"]
    assert {
        "component": "app",
        "reason": "waiting for db: live('db.sts').status.readyReplicas >= 1",
    } in status["waiting"]
    # the independent branch deployed
    assert h.names("ConfigMap") == ["demo-side"]
    assert result.requeue_after == 10.0
    assert result.error is not None and not result.error.fatal


def test_the_downstream_deploys_once_the_edge_condition_holds(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, GATED), simulator=DefaultSimulator(delay_writes=2))
    h.create({})
    h.settle()
    assert h.names("ConfigMap") == ["demo-app", "demo-side", "demo-web"]
    assert condition(h.cr(), "Ready")["reason"] == "Stable"
    assert condition(h.cr(), "Reconciling")["status"] == "False"


READY_EDGE = GATED.replace(
    "      - component: db\n        when: \"live('db.sts').status.readyReplicas >= 1\"",
    "      - {component: db, ready: true}",
)


def test_a_ready_dependency_waits_until_the_upstream_is_verified(tmp_path: Path) -> None:
    assert "ready: true" in READY_EDGE
    h = Harness(build(tmp_path, READY_EDGE), simulator=DefaultSimulator(delay_writes=2))
    h.create({})
    result = h.reconcile()
    status = h.cr()["status"]["componentStatus"]
    (waiting,) = [w for w in status["waiting"] if w["component"] == "app"]
    # the upstream's own readiness verdict says what is missing
    assert waiting["reason"].startswith("waiting for db to be ready: StatefulSet default/demo-db")
    assert h.names("ConfigMap") == ["demo-side"]
    assert result.error is not None and not result.error.fatal
    h.settle()
    assert h.names("ConfigMap") == ["demo-app", "demo-side", "demo-web"]
    assert condition(h.cr(), "Ready")["reason"] == "Stable"


def test_a_ready_dependency_on_a_disabled_component_does_not_wait(tmp_path: Path) -> None:
    disabled = READY_EDGE.replace("  - name: db\n", "  - name: db\n    enabled: false\n", 1)
    assert "enabled: false" in disabled
    h = Harness(build(tmp_path, disabled), simulator=DefaultSimulator(delay_writes=2))
    h.create({})
    h.reconcile()
    assert h.names("ConfigMap") == ["demo-app", "demo-side", "demo-web"]
    assert h.objects("StatefulSet") == []


REQUIRE = """
components:
  - name: app
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('app') }}"}
          data: {db: "{{ require(spec.dbHost is defined, 'spec.dbHost is not set yet') }}x"}
  - name: web
    dependsOn: [app]
    resources:
      - name: cm
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ scoped_name('web') }}"}}
"""


def test_a_failed_require_leaves_the_component_unverified_not_verified(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, REQUIRE))
    h.create({})
    result = h.reconcile()
    cr = h.cr()
    status = cr["status"]["componentStatus"]
    assert "app" not in status["verifiedComponents"]  # oper8 reported it verified
    assert "app" in status["unverifiedComponents"]
    assert status["failedComponents"] == []
    assert status["unstartedComponents"] == ["web"]
    assert {"component": "app", "reason": "spec.dbHost is not set yet"} in status["waiting"]
    updating = condition(cr, "Updating")
    assert updating["reason"] == "PreconditionWait"
    assert "spec.dbHost is not set yet" in updating["message"]
    assert condition(cr, "Ready")["status"] == "False"
    assert "versions" not in cr["status"]
    assert h.objects() == []
    assert result.requeue_after == 10.0


def test_a_require_that_later_holds_deploys_the_component(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, REQUIRE))
    h.create({})
    h.reconcile()
    h.set_spec(dbHost="db")
    h.settle()
    assert h.names("ConfigMap") == ["demo-app", "demo-web"]
    assert condition(h.cr(), "Ready")["reason"] == "Stable"
