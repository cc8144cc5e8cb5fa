"""What a reconcile does with bad or layered input: CR schema violations, config
precedence, templates that fail to render (engine.reconcile against the in-memory cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import Harness, build, condition

SCHEMA = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "minimum": 1},
        "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
    },
}

CONFIG_BUNDLE = """
config:
  logLevel: info
  db: {host: db.local, port: 5432}
  untouched: kept
components:
  - name: config
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('config') }}"}
          data:
            logLevel: "{{ config.logLevel }}"
            host: "{{ config.db.host }}"
            port: "{{ config.db.port | string }}"
            untouched: "{{ config.untouched }}"
            mode: "{{ spec.mode }}"
"""


#: what a CR may override (resource.configSchema)
OVERRIDABLE = {
    "type": "object",
    "properties": {
        "logLevel": {"type": "string"},
        "untouched": {"type": "string"},
        "db": {"type": "object", "properties": {"port": {"type": "integer"}}},
    },
}


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(build(tmp_path, CONFIG_BUNDLE, schema=SCHEMA, config_schema=OVERRIDABLE))


def test_a_cr_violating_the_schema_is_a_config_error_naming_the_field(h: Harness) -> None:
    h.create({"size": 0})
    result = h.reconcile()
    cr = h.cr()
    ready, updating = condition(cr, "Ready"), condition(cr, "Updating")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert "spec.size" in ready["message"]
    assert (updating["status"], updating["reason"]) == ("False", "Errored")
    assert condition(cr, "Stalled")["status"] == "True"
    assert cr["status"]["demoStatus"] == "Failed"
    assert cr["status"]["observedGeneration"] == 1
    assert h.objects() == []  # nothing deployed
    assert result.requeue_after == 60.0


def test_a_cr_missing_a_required_field_names_it(h: Harness) -> None:
    h.create({})
    h.reconcile()
    assert "size" in condition(h.cr(), "Ready")["message"]
    assert h.objects() == []


def test_fixing_the_cr_after_a_config_error_deploys_it(h: Harness) -> None:
    h.create({"size": 0})
    h.reconcile()
    h.set_spec(size=2)
    h.settle()
    assert condition(h.cr(), "Ready")["reason"] == "Stable"
    assert h.names("ConfigMap") == ["demo-config"]


def test_schema_defaults_are_applied_before_rendering(h: Harness) -> None:
    h.create({"size": 1})
    h.settle()
    assert h.get("ConfigMap", "demo-config")["data"]["mode"] == "safe"  # type: ignore[index]


def test_bundle_config_is_overridden_by_the_config_defaults_map_and_then_by_overrides(
    h: Harness,
) -> None:
    h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "site-defaults", "namespace": "default"},
            "data": {"logLevel": "warn", "untouched": "from-map"},
        }
    )
    h.create(
        {"size": 1},
        annotations={"oper8.org/config-defaults": "site-defaults"},
        configOverrides={"untouched": "from-cr", "db": {"port": 6432}},
    )
    h.settle()
    data = h.get("ConfigMap", "demo-config")["data"]  # type: ignore[index]
    assert data["logLevel"] == "warn"  # map beats bundle
    assert data["untouched"] == "from-cr"  # overrides beat the map
    assert data["port"] == "6432"  # dicts merge: the override changes one key ...
    assert data["host"] == "db.local"  # ... and keeps the others


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"mode": "fast"}, "configOverrides.mode: unknown field"),
        ({"db": {"host": "evil"}}, "configOverrides.db.host: unknown field"),
        ({"db": {"port": "6432"}}, "configOverrides.db.port: must be an integer"),
        ({"logLevel": False}, "configOverrides.logLevel: must be a string"),
    ],
)
def test_an_override_the_bundle_does_not_declare_is_a_config_error(
    h: Harness, overrides: dict[str, object], says: str
) -> None:
    h.create({"size": 1}, configOverrides=overrides)
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert says in ready["message"]
    assert h.objects() == []  # nothing deployed


def test_a_config_map_key_the_bundle_does_not_declare_is_a_config_error(h: Harness) -> None:
    h.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "site-defaults", "namespace": "default"},
            "data": {"logLevel": "warn", "enabled": "false"},
        }
    )
    h.create({"size": 1}, annotations={"oper8.org/config-defaults": "site-defaults"})
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert "ConfigMap 'site-defaults': data.enabled: unknown field" in ready["message"]
    assert [o for o in h.objects() if o["kind"] != "ConfigMap"] == []
    assert h.names("ConfigMap") == ["site-defaults"]


def test_without_a_config_schema_a_cr_overrides_nothing(tmp_path: Path) -> None:
    """The secure default: ``enabled: "{{ config.x }}"`` is the bundle author's alone."""
    h = Harness(build(tmp_path, CONFIG_BUNDLE, schema=SCHEMA))
    h.create({"size": 1}, configOverrides={"logLevel": "debug"})
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert "configOverrides: this operator lets a CR override no config" in ready["message"]
    assert h.objects() == []
    fresh = Harness(build(tmp_path / "again", CONFIG_BUNDLE, schema=SCHEMA))
    fresh.create({"size": 1}, configOverrides={})  # empty: nothing overridden, fine
    fresh.settle()
    assert condition(fresh.cr(), "Ready")["reason"] == "Stable"


def test_a_missing_config_defaults_map_is_a_config_error(h: Harness) -> None:
    h.create({"size": 1}, annotations={"oper8.org/config-defaults": "nope"})
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert ready["reason"] == "ConfigError"
    assert "nope" in ready["message"]
    assert [o for o in h.objects() if o["metadata"]["name"] != "nope"] == []


RENDER_ERROR_BUNDLE = """
components:
  - name: good
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('good') }}"}
          data: {a: "1"}
  - name: broken
    resources:
      - name: first
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('broken-first') }}"}
      - name: second
        template: templates/second.yaml
  - name: after
    dependsOn: [broken]
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ scoped_name('after') }}"}
"""

SECOND = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ scoped_name('broken-second') }}
data:
  value: {{ spec.nothing.here }}
"""


def test_an_undefined_variable_is_a_config_error_with_file_and_line(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, RENDER_ERROR_BUNDLE, files={"templates/second.yaml": SECOND}))
    h.create({})
    result = h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ConfigError")
    assert "templates/second.yaml:6" in ready["message"]
    assert result.requeue_after == 60.0
    # nothing of the broken component was applied (its first object renders fine), its
    # downstream never started, and the independent component was deployed
    assert h.names("ConfigMap") == ["demo-good"]
    status = h.cr()["status"]["componentStatus"]
    assert status["failedComponents"] == ["broken"]
    assert status["unstartedComponents"] == ["after"]
    assert "good" in status["deployedComponents"]


def test_an_inline_object_render_error_names_the_bundle_file_and_line(tmp_path: Path) -> None:
    bundle = """
    components:
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('x') }}"}
              data: {a: "{{ spec.missing }}"}
    """
    h = Harness(build(tmp_path, bundle))
    h.create({})
    h.reconcile()
    message = condition(h.cr(), "Ready")["message"]
    assert "operator.yaml:" in message
    line = int(message.split("operator.yaml:")[1].split(":")[0])
    text = (tmp_path / "operator.yaml").read_text().splitlines()
    assert "spec.missing" in text[line - 1]


def test_config_error_from_a_template_fails_the_rollout(tmp_path: Path) -> None:
    bundle = """
    components:
      - name: app
        resources:
          - name: cm
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('x') }}"}
              data: {a: "{{ config_error('size must be even') if spec.size % 2 else 'ok' }}"}
    """
    h = Harness(build(tmp_path, bundle))
    h.create({"size": 3})
    h.reconcile()
    ready = condition(h.cr(), "Ready")
    assert (ready["reason"], ready["status"]) == ("ConfigError", "False")
    assert "size must be even" in ready["message"]
    assert h.objects() == []


def test_lookup_of_a_cluster_scoped_kind_ignores_the_crs_namespace(tmp_path: Path) -> None:
    from oper8d.cluster.memory import MemoryCluster
    from oper8d.engine.session import SeededRandoms, Session

    cluster = MemoryCluster()
    cluster.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        field_manager="t",
    )
    # a cluster-scoped kind is readable once declared (docs/security.md)
    bundle = build(tmp_path, "components: []\nreads: [{apiVersion: v1, kind: Namespace}]")
    session = Session(
        bundle=bundle,
        controller=bundle.controllers[0],
        cr={"metadata": {"name": "x", "namespace": "default"}},
        config={},
        cluster=cluster,
        randoms=SeededRandoms("s"),
    )
    assert session.lookup("v1", "Namespace", "team-a")["metadata"]["name"] == "team-a"
    assert session.lookup("v1", "ConfigMap", "missing") is None
