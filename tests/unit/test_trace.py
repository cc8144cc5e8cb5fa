"""``oper8d trace`` on the in-memory cluster: the tree a user sees for a CR that is ready,
waiting, failed, being deleted, with a disabled component or a missing object; and that
tracing only reads."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle
from oper8d.cluster.memory import MemoryCluster
from oper8d.objects import Obj
from oper8d.offline import EPOCH
from oper8d.testing import run_offline
from oper8d.trace import Trace, UnknownKind, find_controller, trace_cr
from oper8d.trace.model import ComponentTrace
from oper8d.trace.reading import managers_of

ROOT = Path(__file__).resolve().parents[2]
WEBAPP = ROOT / "examples/operators/webapp"
STATEFUL = ROOT / "examples/operators/stateful"
NOW = EPOCH + timedelta(minutes=5)
SCHEMA = json.loads((ROOT / "schemas/trace.schema.json").read_text())


@pytest.fixture(scope="module")
def webapp() -> Bundle:
    return load_bundle(WEBAPP)


@pytest.fixture(scope="module")
def stateful() -> Bundle:
    return load_bundle(STATEFUL)


class Recording:
    """A reader over ``cluster`` that notes each call's method."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.calls: list[str] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        self.calls.append("get")
        return self.cluster.get(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        self.calls.append("list")
        return self.cluster.list(api_version, kind, namespace, label_selector)


def traced(bundle: Bundle, cluster: Any, name: str = "hello", kind: str = "webapp") -> Trace:
    controller = find_controller(bundle, kind)
    result = trace_cr(bundle, controller, cluster, name, "default", now=NOW)
    assert result is not None
    jsonschema.validate(result.to_data(), SCHEMA)  # the documented structure, every time
    return result


def component(trace: Trace, name: str) -> ComponentTrace:
    return next(c for c in trace.components if c.name == name)


def states(trace: Trace) -> dict[str, str]:
    return {c.name: c.state for c in trace.components}


def test_a_ready_cr_shows_every_component_ready_in_dependency_order(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    trace = traced(webapp, run.cluster)
    assert [c.name for c in trace.components] == [
        "config",
        "app",
        "service",
        "ingress",
        "autoscaler",
    ]
    assert set(states(trace).values()) == {"ready"}
    app = component(trace, "app")
    assert app.reported is not None and app.reported.state == "verified"
    [deployment] = app.objects
    assert (deployment.kind, deployment.name, deployment.internal_name) == (
        "Deployment",
        "hello-app",
        "app.deployment",
    )
    assert deployment.exists and deployment.rendered and deployment.uid
    assert deployment.readiness is not None
    assert deployment.readiness.message == "Deployment default/hello-app: 3 of 3 replicas available"
    ready = trace.resource.condition("Ready")
    assert ready is not None and (ready.status, ready.reason) == ("True", "Stable")
    assert trace.resource.last_error is None and trace.blockers == ()


def test_a_deployment_short_of_replicas_waits_with_the_engines_reason(webapp: Bundle) -> None:
    short = {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 1, "availableReplicas": 1}
    run = run_offline(
        webapp,
        WEBAPP / "samples/webapp.yaml",
        statuses={("Deployment", "hello-app"): {**short, "observedGeneration": 1}},
    )
    trace = traced(webapp, run.cluster)
    app = component(trace, "app")
    assert (app.state, app.reason) == ("waiting", "ReplicasNotAvailable")
    assert app.objects[0].readiness is not None
    assert "1 of 3 replicas available" in app.objects[0].readiness.message
    # what the operator last reported agrees
    assert app.reported is not None and app.reported.state == "waiting"


def test_a_failed_job_fails_its_component_and_the_app_is_missing(stateful: Bundle) -> None:
    run = run_offline(
        stateful,
        STATEFUL / "samples/notes.yaml",
        statuses={
            ("Job", "notes-migrate-2-1-0"): {"conditions": [{"type": "Failed", "status": "True"}]}
        },
    )
    trace = traced(stateful, run.cluster, "notes", "NotesApp")
    migrate = component(trace, "migrate")
    assert migrate.state == "failed"
    assert migrate.objects[0].readiness is not None
    assert migrate.objects[0].readiness.state == "failed"
    app = component(trace, "app")
    [deployment] = app.objects
    assert not deployment.exists and deployment.rendered
    assert deployment.readiness is not None and deployment.readiness.reason == "NotFound"
    assert trace.resource.last_error  # the operator's error, from the CR's status


def test_a_deleted_object_is_shown_missing(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    run.cluster.delete("v1", "Service", "hello-web", "default")
    trace = traced(webapp, run.cluster)
    service = component(trace, "service")
    assert (service.state, service.reason) == ("waiting", "NotFound")
    [obj] = service.objects
    assert (obj.exists, obj.rendered, obj.uid) == (False, True, None)


def test_a_disabled_component_lists_what_is_left_of_it(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    cr = run.cluster.get("demo.oper8d.io/v1alpha1", "WebApp", "hello", "default")
    assert cr is not None
    cr["spec"]["ingress"]["enabled"] = False  # the operator has not reconciled it yet
    run.cluster.update(cr)
    trace = traced(webapp, run.cluster)
    ingress = component(trace, "ingress")
    assert (ingress.state, ingress.enabled, ingress.reason) == ("disabled", False, "Disabled")
    [left] = ingress.objects
    assert (left.kind, left.exists, left.rendered, left.readiness) == (
        "Ingress",
        True,
        False,
        None,
    )
    assert "the operator deletes what is left" in ingress.message


def test_a_deleting_cr_shows_what_holds_it(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    cluster = run.cluster
    cm = cluster.get("v1", "ConfigMap", "hello-config", "default")
    assert cm is not None
    cm["metadata"]["finalizers"] = ["example.com/hold"]
    cluster.update(cm)
    cluster.delete("v1", "ConfigMap", "hello-config", "default")
    cluster.delete("demo.oper8d.io/v1alpha1", "WebApp", "hello", "default")
    trace = traced(webapp, cluster)
    assert trace.deleting
    assert set(states(trace).values()) == {"deleting"}
    # downstream first: the ingress goes now, the config last
    assert component(trace, "ingress").reason == "Deleting"
    assert component(trace, "config").reason == "WaitingToDelete"
    first, *rest = trace.blockers
    assert first.startswith("finalizer finalizers.webapp.demo.oper8d.io on the WebApp:")
    assert "(now: ingress)" in first
    assert rest[0] == "Ingress default/hello-web: the operator deletes it now (component ingress)"
    assert rest[-1].startswith("ConfigMap default/hello-config: being deleted since ")
    assert rest[-1].endswith("held by finalizers example.com/hold")
    [cm_trace] = component(trace, "config").objects
    assert cm_trace.finalizers == ("example.com/hold",) and cm_trace.deletion_timestamp


def test_a_deleting_cr_with_nothing_left_waits_for_the_operator(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    cluster = run.cluster
    cr = cluster.get("demo.oper8d.io/v1alpha1", "WebApp", "hello", "default")
    assert cr is not None
    cr["metadata"]["finalizers"] += ["example.com/other"]
    cluster.update(cr)
    for kind, api, name in [
        ("Ingress", "networking.k8s.io/v1", "hello-web"),
        ("HorizontalPodAutoscaler", "autoscaling/v2", "hello-app"),
        ("Service", "v1", "hello-web"),
        ("Deployment", "apps/v1", "hello-app"),
        ("ConfigMap", "v1", "hello-config"),
    ]:
        cluster.delete(api, kind, name, "default")
    cluster.delete("demo.oper8d.io/v1alpha1", "WebApp", "hello", "default")
    trace = traced(webapp, cluster)
    assert trace.blockers == (
        "finalizer finalizers.webapp.demo.oper8d.io on the WebApp: nothing is left to "
        "delete; the operator removes it at its next reconcile (is it running?)",
        "finalizer example.com/other on the WebApp: not oper8d's; the controller that set "
        "it must remove it",
    )


def test_a_cr_the_operator_cannot_render_says_why(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    cr = run.cluster.get("demo.oper8d.io/v1alpha1", "WebApp", "hello", "default")
    assert cr is not None
    cr["spec"]["configOverrides"] = {"logLevel": "loud"}
    cr["spec"].pop("image")
    run.cluster.update(cr)
    trace = traced(webapp, run.cluster)
    assert set(states(trace).values()) == {"error"}
    assert trace.warnings and trace.warnings[0].startswith("the CR cannot be rendered: ")
    assert "image" in trace.warnings[0]
    # what exists is still listed
    assert [o.kind for o in component(trace, "app").objects] == ["Deployment"]


def test_tracing_only_reads(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    before = {
        (o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
        for kind in (("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("v1", "Service"))
        for o in run.cluster.list(*kind, "default")
    }
    reader = Recording(run.cluster)
    traced(webapp, reader)
    assert set(reader.calls) == {"get", "list"}
    after = {
        (o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
        for kind in (("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("v1", "Service"))
        for o in run.cluster.list(*kind, "default")
    }
    assert after == before


def test_a_cr_that_does_not_exist_is_none(webapp: Bundle) -> None:
    run = run_offline(webapp, WEBAPP / "samples/webapp.yaml")
    controller = find_controller(webapp, "WebApp")
    assert trace_cr(webapp, controller, run.cluster, "nope", "default", now=NOW) is None


@pytest.mark.parametrize(
    "text", ["WebApp", "webapp", "webapps", "WA", "webapps.demo.oper8d.io", "WebApp.demo.oper8d.io"]
)
def test_a_kind_is_named_as_kubectl_names_it(webapp: Bundle, text: str) -> None:
    assert find_controller(webapp, text).resource.kind == "WebApp"


def test_an_unknown_kind_names_the_bundles_kinds(webapp: Bundle) -> None:
    with pytest.raises(UnknownKind) as err:
        find_controller(webapp, "deployment")
    assert str(err.value) == (
        "bundle 'webapp' has no kind 'deployment': its kinds are WebApp (webapps, wa)"
    )


def test_field_managers_come_from_managed_fields() -> None:
    obj = {
        "metadata": {
            "managedFields": [
                {"manager": "webapp", "operation": "Apply", "time": "2026-01-01T00:00:00Z"},
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "subresource": "status",
                },
            ]
        }
    }
    managers = managers_of(copy.deepcopy(obj))
    assert [(m.manager, m.operation, m.subresource) for m in managers] == [
        ("webapp", "Apply", None),
        ("kube-controller-manager", "Update", "status"),
    ]
