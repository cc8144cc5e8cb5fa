"""Objects the apiserver accepts or rejects, shared by the kubeschema unit tests and the
differential test against a real apiserver (tests/integration/test_kubeschema_real.py).

Each case says whether the apiserver rejects it (create, dry run, strict field
validation) and, for a rejection, the field path the validator must name.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"


@dataclass(frozen=True)
class Case:
    name: str
    obj: dict[str, Any]
    rejected: bool
    path: str | None = None  # for a rejection: where the validator must point


def deployment(**container: Any) -> dict[str, Any]:
    """A small valid Deployment; ``container`` entries replace its container's fields."""
    base = {
        "name": "web",
        "image": "nginx:1.27",
        "ports": [{"containerPort": 8080, "name": "http"}],
        "env": [{"name": "MODE", "value": "prod"}],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
    }
    base.update(container)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [base]},
            },
        },
    }


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with ``value`` at the dotted ``path`` (ints index lists)."""
    out = copy.deepcopy(obj)
    node: Any = out
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    return out


def _secret(data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "default"},
        "data": data,
    }


def _service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}], **spec},
    }


def _ingress(path_type: str) -> dict[str, Any]:
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    path = {"path": "/", "pathType": path_type, "backend": backend}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"rules": [{"http": {"paths": [path]}}]},
    }


_C = "spec.template.spec.containers.0"
_P = "spec.template.spec.containers[0]"
_ENV0 = f"{_P}.env[0].value"

#: the mistakes of issue 9 and their neighbours
CASES: list[Case] = [
    Case("valid deployment", deployment(), False),
    Case("env value int", deployment(env=[{"name": "N", "value": 3}]), True, _ENV0),
    Case("env value bool", deployment(env=[{"name": "N", "value": True}]), True, _ENV0),
    Case("env value list", deployment(env=[{"name": "N", "value": ["a"]}]), True, _ENV0),
    Case("env value null", deployment(env=[{"name": "N", "value": None}]), False),
    Case("env without name", deployment(env=[{"value": "x"}]), True, f"{_P}.env[0].name"),
    Case("env item null", deployment(env=[None]), True, f"{_P}.env[0].name"),
    Case("unknown field null", _with(deployment(), "spec.replica", None), True, "spec.replica"),
    Case(
        "label value null", _with(deployment(), "metadata.labels", {"app": "web", "x": None}), False
    ),
    Case("ingress path type", _ingress("Prefix"), False),
    Case("ingress empty path type", _ingress(""), True, "spec.rules[0].http.paths[0].pathType"),
    Case("replica typo", _with(deployment(), "spec.replica", 3), True, "spec.replica"),
    Case("replicas as string", _with(deployment(), "spec.replicas", "3"), True, "spec.replicas"),
    Case("replicas as float", _with(deployment(), "spec.replicas", 2.5), True, "spec.replicas"),
    Case("replicas over int32", _with(deployment(), "spec.replicas", 2**40), True, "spec.replicas"),
    Case("unknown nested field", _with(deployment(), f"{_C}.imagee", "x"), True, f"{_P}.imagee"),
    Case("metadata typo", _with(deployment(), "metadata.labelz", {}), True, "metadata.labelz"),
    Case("pull policy enum", deployment(imagePullPolicy="always"), True, f"{_P}.imagePullPolicy"),
    Case("pull policy empty", deployment(imagePullPolicy=""), False),
    Case(
        "port as string",
        deployment(ports=[{"containerPort": "80"}]),
        True,
        f"{_P}.ports[0].containerPort",
    ),
    Case(
        "bad quantity",
        deployment(resources={"limits": {"memory": "1Gb"}}),
        True,
        f"{_P}.resources.limits[memory]",
    ),
    Case("numeric quantity", deployment(resources={"limits": {"cpu": 1, "memory": 0.5}}), False),
    Case(
        "no containers",
        _with(deployment(), "spec.template.spec.containers", None),
        True,
        "spec.template.spec.containers",
    ),
    Case("selector missing", _with(deployment(), "spec.selector", None), True, "spec.selector"),
    Case("uppercase name", _with(deployment(), "metadata.name", "Web"), True, "metadata.name"),
    Case(
        "bad label value",
        _with(deployment(), "metadata.labels", {"app": "a b"}),
        True,
        "metadata.labels[app]",
    ),
    Case(
        "bad timestamp",
        _with(deployment(), "metadata.creationTimestamp", "yesterday"),
        True,
        "metadata.creationTimestamp",
    ),
    Case("secret base64", _secret({"password": "aHVudGVyMg=="}), False),
    Case("secret wrapped base64", _secret({"password": "aHVu\ndGVyMg=="}), False),
    Case("secret not base64", _secret({"password": "hunter2!"}), True, "data[password]"),
    Case("secret bad key", _secret({"pass word": "aGk="}), True, "data[pass word]"),
    Case("service named port", _service(), False),
    Case("service int target port", _service(ports=[{"port": 80, "targetPort": 8080}]), False),
    Case(
        "service float target port",
        _service(ports=[{"port": 80, "targetPort": 80.5}]),
        True,
        "spec.ports[0].targetPort",
    ),
    Case("service type enum", _service(type="Public"), True, "spec.type"),
    Case(
        "service digits target port",
        _service(ports=[{"port": 80, "targetPort": "8080"}]),
        True,
        "spec.ports[0].targetPort",
    ),
    Case(
        "service port name",
        _service(ports=[{"port": 80, "name": "Web"}]),
        True,
        "spec.ports[0].name",
    ),
    Case(
        "container port name",
        deployment(ports=[{"containerPort": 80, "name": "web_port"}]),
        True,
        f"{_P}.ports[0].name",
    ),
    Case("service name digit", _with(_service(), "metadata.name", "1web"), True, "metadata.name"),
    Case(
        "extensions ingress",
        {
            "apiVersion": "extensions/v1beta1",
            "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"backend": {"serviceName": "web", "servicePort": 80}},
        },
        True,
        "apiVersion",
    ),
    Case(
        "configmap number value",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "default"},
            "data": {"replicas": 3},
        },
        True,
        "data[replicas]",
    ),
]


def rendered_examples() -> list[tuple[str, dict[str, Any]]]:
    """The objects ``oper8d render`` gives for the example operators (golden files)."""
    out = []
    for path in sorted(GOLDEN.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc:
                out.append((f"{path.relative_to(GOLDEN)} {doc['kind']}", doc))
    return out
