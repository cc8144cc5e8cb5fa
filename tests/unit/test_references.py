"""References that cannot resolve inside the objects rendered for one CR are warnings (issue
18): an HPA's ``scaleTargetRef``, a Service's named ``targetPort``, an Ingress backend's
Service and port name (``engine.references``). The API server takes each object alone, so
nothing else says so; and a warning is never a failure. False warnings are worse than
none: a numeric targetPort, a selector that matches no rendered pod template, a target
rendered by another component of the same CR say nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bundles import Harness, build, write_bundle
from click.testing import CliRunner

from oper8d.cli.main import main
from oper8d.engine.references import Rendered, reference_warnings
from oper8d.errors import SourcePos

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"


def deployment(name: str = "web", ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "web", "image": "nginx"}
    if ports is not None:
        container["ports"] = ports
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "tier": "front"}},
                "spec": {"containers": [container]},
            },
        },
    }


def service(target: object, selector: dict[str, str] | None = None, **port: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "selector": {"app": "web"} if selector is None else selector,
            "ports": [{"name": "http", "port": 80, "targetPort": target, **port}],
        },
    }


def hpa(kind: str = "Deployment", name: str = "web", api: str = "apps/v1") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "scaleTargetRef": {"apiVersion": api, "kind": kind, "name": name},
            "minReplicas": 1,
            "maxReplicas": 3,
        },
    }


def ingress(service_name: str = "web", port: dict[str, Any] | None = None) -> dict[str, Any]:
    backend = {"service": {"name": service_name, "port": port or {"name": "http"}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "rules": [
                {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}
            ]
        },
    }


HTTP = [{"name": "http", "containerPort": 8080}]


def warnings(*objs: dict[str, Any]) -> list[str]:
    rendered = [
        Rendered(f"c.r{i}", obj, SourcePos("operator.yaml", i + 1, 9)) for i, obj in enumerate(objs)
    ]
    return [str(w) for w in reference_warnings(rendered, "ns")]


# -- HPA --------------------------------------------------------------------------------


def test_an_hpa_to_a_rendered_target_says_nothing() -> None:
    assert warnings(deployment(), hpa()) == []


def test_an_hpa_to_a_name_not_rendered_warns_with_did_you_mean() -> None:
    (warning,) = warnings(deployment(), hpa(name="wbe"))
    assert warning == (
        "operator.yaml:2:9: resource 'c.r1' renders HorizontalPodAutoscaler ns/web, whose "
        "spec.scaleTargetRef names apps/v1 Deployment 'wbe', which is not among the objects "
        "rendered for this CR (did you mean 'web'?): the autoscaler has nothing to scale"
    )


def test_an_hpa_to_a_kind_not_rendered_names_what_is() -> None:
    (warning,) = warnings(deployment(), hpa(kind="StatefulSet"))
    assert "apps/v1 StatefulSet 'web', which is not among" in warning
    assert "(it renders Deployment 'web')" in warning


def test_an_hpa_to_another_group_of_the_kind_warns() -> None:
    (warning,) = warnings(deployment(), hpa(api="example.com/v1"))
    assert "example.com/v1 Deployment 'web'" in warning


def test_an_hpa_to_another_namespace_warns() -> None:
    other = deployment()
    other["metadata"]["namespace"] = "elsewhere"
    assert len(warnings(other, hpa())) == 1


# -- Service ----------------------------------------------------------------------------


def test_a_named_target_port_a_selected_container_declares_says_nothing() -> None:
    assert warnings(deployment(ports=HTTP), service("http")) == []


def test_a_named_target_port_no_selected_container_declares_warns() -> None:
    (warning,) = warnings(deployment(ports=HTTP), service("htp"))
    assert warning == (
        "operator.yaml:2:9: resource 'c.r1' renders Service ns/web, whose "
        "spec.ports[0].targetPort 'htp' names a port no container of the pods it selects "
        "(Deployment ns/web) declares (did you mean 'http'?): the Service has no endpoints "
        "for it"
    )


def test_a_named_port_of_another_protocol_warns() -> None:
    (warning,) = warnings(deployment(ports=HTTP), service("http", protocol="UDP"))
    assert "is a UDP port, but the containers of the pods it selects" in warning
    assert "declare 'http' as TCP" in warning


def test_a_numeric_target_port_says_nothing() -> None:
    assert warnings(deployment(ports=HTTP), service(8080)) == []
    assert warnings(deployment(), service(9999)) == []


def test_a_selector_that_matches_no_rendered_pods_says_nothing() -> None:
    # its pods come from elsewhere: nothing here can tell what they declare
    assert warnings(deployment(ports=HTTP), service("metrics", selector={"app": "other"})) == []
    assert warnings(service("metrics")) == []


def test_a_service_without_selector_says_nothing() -> None:
    assert warnings(deployment(ports=HTTP), service("metrics", selector={})) == []


def test_any_selected_pod_declaring_the_name_is_enough() -> None:
    a = deployment("a", ports=HTTP)
    b = deployment("b")
    for d in (a, b):
        d["spec"]["template"]["metadata"]["labels"]["app"] = "web"
    assert warnings(a, b, service("http")) == []


def test_a_sidecar_init_container_port_counts() -> None:
    d = deployment()
    d["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always", "ports": HTTP}
    ]
    assert warnings(d, service("http")) == []


def test_a_cronjob_pod_template_is_read() -> None:
    job_template = deployment(ports=HTTP)["spec"]["template"]
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": job_template}}},
    }
    assert warnings(cronjob, service("http")) == []
    assert len(warnings(cronjob, service("admin"))) == 1


# -- Ingress ----------------------------------------------------------------------------


def test_an_ingress_to_a_rendered_service_port_says_nothing() -> None:
    assert warnings(service(8080), ingress()) == []
    assert warnings(service(8080), ingress(port={"number": 80})) == []


def test_an_ingress_port_name_the_service_lacks_warns() -> None:
    (warning,) = warnings(service(8080), ingress(port={"name": "htp"}))
    assert warning.endswith(
        "whose spec.rules[0].http.paths[0].backend.service.port.name 'htp' is not a port of "
        "Service 'web' (did you mean 'http'?)"
    )


def test_an_ingress_to_a_service_not_rendered_warns() -> None:
    (warning,) = warnings(service(8080), ingress(service_name="wbe"))
    assert (
        "backend.service.name names Service 'wbe', which is not among the objects rendered "
        "for this CR (did you mean 'web'?)"
    ) in warning


def test_a_default_backend_is_checked_too() -> None:
    ing = ingress()
    ing["spec"] = {"defaultBackend": {"service": {"name": "web", "port": {"name": "admin"}}}}
    (warning,) = warnings(service(8080), ing)
    assert "spec.defaultBackend.service.port.name 'admin'" in warning


# -- the whole CR's rendered set, through the reconciler and the CLI ---------------------

SCHEMA = {"type": "object", "properties": {"target": {"type": "string", "default": "web"}}}

TWO_COMPONENTS = """\
components:
  - name: scaling
    resources:
      - name: hpa
        object:
          apiVersion: autoscaling/v2
          kind: HorizontalPodAutoscaler
          metadata: {name: web}
          spec:
            scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: "{{ spec.target }}"}
            minReplicas: 1
            maxReplicas: 3
  - name: app
    dependsOn: [scaling]
    resources:
      - name: deployment
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: web}
          spec:
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec:
                containers:
                  - name: web
                    image: nginx
                    ports: [{name: http, containerPort: 8080}]
      - name: service
        object:
          apiVersion: v1
          kind: Service
          metadata: {name: web}
          spec:
            selector: {app: web}
            ports: [{name: http, port: 80, targetPort: "{{ spec.port | default('http') }}"}]
"""


def test_a_target_rendered_by_another_component_of_the_cr_resolves(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, TWO_COMPONENTS, schema=SCHEMA))
    h.create({})
    results = [h.reconcile() for _ in range(4)]
    judged = [r.warnings for r in results if r.warnings is not None]
    assert judged and all(w == () for w in judged)


def test_the_reconcile_reports_a_target_the_cr_does_not_render(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, TWO_COMPONENTS, schema=SCHEMA))
    h.create({"target": "wbe"})
    results = [h.reconcile() for _ in range(4)]
    (warning,) = next(r.warnings for r in reversed(results) if r.warnings is not None)
    assert warning.pos is not None and warning.pos.file == "operator.yaml"
    assert "spec.scaleTargetRef names apps/v1 Deployment 'wbe'" in warning.message


CR = """\
apiVersion: demo.oper8d.io/v1alpha1
kind: Demo
metadata: {name: demo, namespace: default}
spec: {spec}
"""


def render(tmp_path: Path, spec: str) -> Any:
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "port": {"type": "string"}}}  # type: ignore[dict-item]
    bundle = write_bundle(tmp_path / "b", TWO_COMPONENTS, schema=schema)
    cr = tmp_path / "cr.yaml"
    cr.write_text(CR.replace("{spec}", spec))
    return bundle, CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr)])


def test_render_prints_each_warning_on_stderr_and_exits_0(tmp_path: Path) -> None:
    bundle, result = render(tmp_path, "{target: wbe, port: htp}")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    hpa_at = _line_of(bundle / "operator.yaml", "- name: hpa")
    service_at = _line_of(bundle / "operator.yaml", "- name: service")
    assert lines[0].startswith(f"warning: {bundle}/operator.yaml:{hpa_at}:")
    assert "resource 'scaling.hpa' renders HorizontalPodAutoscaler default/web" in lines[0]
    assert lines[1].startswith(f"warning: {bundle}/operator.yaml:{service_at}:")
    assert "spec.ports[0].targetPort 'htp'" in lines[1]
    assert "kind: HorizontalPodAutoscaler" in result.stdout  # the stream is whole


def test_render_of_resolving_references_prints_nothing_on_stderr(tmp_path: Path) -> None:
    _bundle, result = render(tmp_path, "{}")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def _line_of(path: Path, needle: str) -> int:
    return next(n for n, t in enumerate(path.read_text().splitlines(), 1) if needle in t)


def test_oper8d_test_shows_a_warning_under_its_case_and_passes(tmp_path: Path) -> None:
    bundle = tmp_path / "webapp"
    shutil.copytree(EXAMPLES / "webapp", bundle)
    for suite in ("render.yaml", "errors.yaml"):  # their goldens hold the HPA as it was
        (bundle / "tests" / suite).unlink()
    operator = bundle / "operator.yaml"
    text = operator.read_text()
    target = "name: \"{{ scoped_name('app') }}\"\n                minReplicas"
    assert text.count(target) == 1
    operator.write_text(text.replace(target, target.replace("'app'", "'ap'")))
    result = CliRunner().invoke(main, ["test", str(bundle)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "2 passed, 0 failed"
    (warning,) = result.stderr.splitlines()
    assert warning.lstrip().startswith(f"warning: {bundle}/operator.yaml:")
    assert "resource 'autoscaler.hpa' renders HorizontalPodAutoscaler default/hello-app" in warning
    assert "names apps/v1 Deployment 'hello-ap'" in warning
    assert "(did you mean 'hello-app'?)" in warning


def test_run_dry_run_prints_the_warnings_after_its_summary(tmp_path: Path) -> None:
    bundle, _ = render(tmp_path, "{target: wbe}")
    result = CliRunner().invoke(
        main, ["run", str(bundle), "--dry-run", "--cr", str(tmp_path / "cr.yaml")]
    )
    assert result.exit_code == 0, result.output
    (warning,) = result.stderr.splitlines()
    assert warning.startswith(f"warning: {bundle}/operator.yaml:")
    assert "spec.scaleTargetRef names apps/v1 Deployment 'wbe'" in warning
