"""Objects the apiserver accepts or rejects, shared by the kubeschema unit tests and the
differential test against a real apiserver (tests/integration/test_kubeschema_real.py).

Each case says whether the apiserver rejects it (create, dry run, strict field
validation; or a server-side apply for ``apply`` cases) and, for a rejection, the field
path the validator must name.
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
    #: the verdict is server-side apply's (what oper8d sends), which refuses more than a POST
    apply: bool = False
    #: judged by a real create (deleted again): a dry run does not allocate node ports
    real: bool = False


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


def _pod_template(**pod: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "main", "image": "busybox:1.36"}], **pod}
    return {"metadata": {"labels": {"app": "web"}}, "spec": spec}


def _workload(kind: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}}
    body["template"] = _pod_template()
    if kind == "StatefulSet":
        body["serviceName"] = "web"
    body.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "web", "namespace": "default"},
        "spec": body,
    }


def _job(**pod: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "default"},
        "spec": {"template": _pod_template(**pod)},
    }


def _cronjob(**pod: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"template": _pod_template(**pod)},
            },
        },
    }


def _pod(**container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", **container}]},
    }


def _hpa(**spec: Any) -> dict[str, Any]:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"scaleTargetRef": target, "maxReplicas": 4, **spec},
    }


def _host(host: str) -> dict[str, Any]:
    return _with(_ingress("Prefix"), "spec.rules.0.host", host)


def _pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def _two_containers(name: str) -> dict[str, Any]:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"].append({"name": name, "image": "busybox"})
    return obj


_T = "spec.template"
_TS = "spec.template.spec"
_PROBE = {"httpGet": {"path": "/", "port": 8080}}
_FROM = {"fieldRef": {"fieldPath": "metadata.name"}}

#: the outsider's objects that passed offline but the apiserver refused, and neighbours
SEMANTIC_CASES: list[Case] = [
    # ObjectMeta embedded in built-in kinds: labels and annotations as the root's
    Case("template label ok", _with(deployment(), f"{_T}.metadata.labels.team", "payments"), False),
    Case(
        "template label key with space",
        _with(deployment(), f"{_T}.metadata.labels.bad key!", "x"),
        True,
        f"{_T}.metadata.labels[bad key!]",
    ),
    Case(
        "template label key with dots in prefix",
        _with(deployment(), f"{_T}.metadata.labels", {"app": "web", "Tier/../x": "web"}),
        True,
        f"{_T}.metadata.labels[Tier/../x]",
    ),
    Case(
        "template label bad value",
        _with(deployment(), f"{_T}.metadata.labels.team", "a b"),
        True,
        f"{_T}.metadata.labels[team]",
    ),
    Case(
        "template annotation bad key",
        _with(deployment(), f"{_T}.metadata.annotations", {"a b": "x"}),
        True,
        f"{_T}.metadata.annotations[a b]",
    ),
    # not checked by the apiserver (the Jobs the CronJob makes are refused instead)
    Case(
        "cronjob job template label",
        _with(_cronjob(restartPolicy="Never"), "spec.jobTemplate.metadata.labels", {"a b": "x"}),
        False,
    ),
    Case(
        "cronjob pod template label",
        _with(
            _cronjob(restartPolicy="Never"),
            "spec.jobTemplate.spec.template.metadata.labels",
            {"a/b/c": "x"},
        ),
        True,
        "spec.jobTemplate.spec.template.metadata.labels[a/b/c]",
    ),
    Case(
        "volume claim template label",
        _workload(
            "StatefulSet",
            volumeClaimTemplates=[
                {
                    "metadata": {"name": "data", "labels": {"bad key!": "x"}},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        ),
        False,  # not checked by the apiserver either
    ),
    # associative lists: keys unique (server-side apply refuses duplicates)
    Case(
        "duplicate container name",
        _two_containers("web"),
        True,
        f"{_TS}.containers[1]",
    ),
    Case(
        "duplicate container name applied",
        _two_containers("web"),
        True,
        f"{_TS}.containers[1]",
        apply=True,
    ),
    Case(
        "duplicate env name applied",
        deployment(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
        True,
        f"{_P}.env[1]",
        apply=True,
    ),
    Case(
        "distinct env names applied",
        deployment(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
        False,
        apply=True,
    ),
    Case(
        "duplicate container port applied",
        deployment(
            ports=[
                {"containerPort": 80, "protocol": "TCP"},
                {"containerPort": 80, "protocol": "TCP"},
            ]
        ),
        True,
        f"{_P}.ports[1]",
        apply=True,
    ),
    Case(
        "duplicate container port with the default protocol applied",
        deployment(ports=[{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]),
        True,
        f"{_P}.ports[1]",
        apply=True,
    ),
    Case(
        "same port two protocols applied",
        deployment(
            ports=[
                {"containerPort": 53, "protocol": "TCP"},
                {"containerPort": 53, "protocol": "UDP"},
            ]
        ),
        False,
        apply=True,
    ),
    Case("valid deployment applied", deployment(), False, apply=True),
    # restart policies
    Case("job restart never", _job(restartPolicy="Never"), False),
    Case("job restart on failure", _job(restartPolicy="OnFailure"), False),
    Case("job without restart policy", _job(), True, f"{_TS}.restartPolicy"),
    Case("job restart always", _job(restartPolicy="Always"), True, f"{_TS}.restartPolicy"),
    Case("cronjob restart on failure", _cronjob(restartPolicy="OnFailure"), False),
    Case(
        "cronjob without restart policy",
        _cronjob(),
        True,
        "spec.jobTemplate.spec.template.spec.restartPolicy",
    ),
    Case(
        "statefulset restart never",
        _with(_workload("StatefulSet"), f"{_TS}.restartPolicy", "Never"),
        True,
        f"{_TS}.restartPolicy",
    ),
    Case("statefulset", _workload("StatefulSet"), False),
    Case(
        "deployment restart on failure",
        _with(deployment(), f"{_TS}.restartPolicy", "OnFailure"),
        True,
        f"{_TS}.restartPolicy",
    ),
    Case("deployment restart always", _with(deployment(), f"{_TS}.restartPolicy", "Always"), False),
    Case(
        "daemonset restart never",
        _with(_workload("DaemonSet"), f"{_TS}.restartPolicy", "Never"),
        True,
        f"{_TS}.restartPolicy",
    ),
    Case("daemonset", _workload("DaemonSet"), False),
    Case("replicaset", _workload("ReplicaSet"), False),
    # counts and selectors
    Case("replicas zero", _with(deployment(), "spec.replicas", 0), False),
    Case("replicas negative", _with(deployment(), "spec.replicas", -1), True, "spec.replicas"),
    Case(
        "statefulset replicas negative",
        _workload("StatefulSet", replicas=-2),
        True,
        "spec.replicas",
    ),
    Case("replicas whole float", _with(deployment(), "spec.replicas", 3.0), True, "spec.replicas"),
    Case("empty selector", _with(deployment(), "spec.selector", {}), True, "spec.selector"),
    Case(
        "empty selector daemonset",
        _workload("DaemonSet", selector={"matchLabels": {}}),
        True,
        "spec.selector",
    ),
    Case(
        "job parallelism negative",
        _with(_job(restartPolicy="Never"), "spec.parallelism", -1),
        True,
        "spec.parallelism",
    ),
    Case("hpa", _hpa(minReplicas=2), False),
    Case("hpa without min", _hpa(), False),
    Case("hpa min zero", _hpa(minReplicas=0), True, "spec.minReplicas"),
    Case("hpa min over max", _hpa(minReplicas=8), True, "spec.maxReplicas"),
    Case("hpa max zero", _hpa(maxReplicas=0), True, "spec.maxReplicas"),
    Case("pdb min available", _pdb(minAvailable=1), False),
    Case("pdb max unavailable percent", _pdb(maxUnavailable="25%"), False),
    # refused only live before (issue 18): a number written as a string is no percent
    Case("pdb max unavailable quoted", _pdb(maxUnavailable="1"), True, "spec.maxUnavailable"),
    Case("pdb min available quoted", _pdb(minAvailable="one"), True, "spec.minAvailable"),
    Case(
        "deployment max surge quoted",
        _with(deployment(), "spec.strategy", {"rollingUpdate": {"maxSurge": "2"}}),
        True,
        "spec.strategy.rollingUpdate.maxSurge",
    ),
    Case(
        "deployment max surge percent",
        _with(deployment(), "spec.strategy", {"rollingUpdate": {"maxSurge": "30%"}}),
        False,
    ),
    Case(
        "container name upper case",
        deployment(name="Web"),
        True,
        f"{_P}.name",
    ),
    Case(
        "init container name upper case",
        _with(deployment(), f"{_TS}.initContainers", [{"name": "Init", "image": "busybox"}]),
        True,
        f"{_TS}.initContainers[0].name",
    ),
    Case(
        "cronjob schedule of four fields",
        _with(_cronjob(restartPolicy="Never"), "spec.schedule", "0 3 * *"),
        True,
        "spec.schedule",
    ),
    Case(
        "cronjob schedule of six fields",
        _with(_cronjob(restartPolicy="Never"), "spec.schedule", "0 0 3 * * *"),
        True,
        "spec.schedule",
    ),
    Case(
        "cronjob schedule descriptor",
        _with(_cronjob(restartPolicy="Never"), "spec.schedule", "@daily"),
        False,
    ),
    Case(
        "cronjob schedule with names",
        _with(_cronjob(restartPolicy="Never"), "spec.schedule", "*/5 1-3 * JAN-MAR MON,FRI"),
        False,
    ),
    Case("pdb both", _pdb(minAvailable=1, maxUnavailable=1), True, "spec"),
    # Ingress hosts
    Case("ingress host", _host("shop.acme.test"), False),
    Case("ingress wildcard host", _host("*.acme.test"), False),
    Case("ingress host uppercase", _host("Shop.Acme.Test"), True, "spec.rules[0].host"),
    Case("ingress host with port", _host("acme.test:8080"), True, "spec.rules[0].host"),
    Case("ingress host ip", _host("10.1.2.3"), True, "spec.rules[0].host"),
    Case("ingress wildcard in the middle", _host("shop.*.test"), True, "spec.rules[0].host"),
    Case("ingress bare wildcard", _host("*"), True, "spec.rules[0].host"),
    # containers
    Case("image empty", deployment(image=""), True, f"{_P}.image"),
    Case("image missing", deployment(image=None), True, f"{_P}.image"),
    Case("template image trailing space", deployment(image="nginx:1.27 "), False),
    Case("pod", _pod(), False),
    Case("pod image trailing space", _pod(image="busybox:1.36 "), True, "spec.containers[0].image"),
    Case(
        "env value and value from",
        deployment(env=[{"name": "A", "value": "x", "valueFrom": _FROM}]),
        True,
        f"{_P}.env[0].valueFrom",
    ),
    Case(
        "env empty value and value from",
        deployment(env=[{"name": "A", "value": "", "valueFrom": _FROM}]),
        False,
    ),
    Case("env value from", deployment(env=[{"name": "A", "valueFrom": _FROM}]), False),
    Case("probe", deployment(livenessProbe=_PROBE), False),
    Case(
        "probe two handlers",
        deployment(livenessProbe={**_PROBE, "exec": {"command": ["true"]}}),
        True,
        f"{_P}.livenessProbe.httpGet",
    ),
    Case(
        "probe no handler",
        deployment(readinessProbe={"periodSeconds": 5}),
        True,
        f"{_P}.readinessProbe",
    ),
    Case(
        "prestop two handlers",
        deployment(lifecycle={"preStop": {"sleep": {"seconds": 1}, "exec": {"command": ["true"]}}}),
        True,
        f"{_P}.lifecycle.preStop.sleep",
    ),
    Case("prestop sleep", deployment(lifecycle={"preStop": {"sleep": {"seconds": 1}}}), False),
    Case(
        "request over limit",
        deployment(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        True,
        f"{_P}.resources.requests[cpu]",
    ),
    Case(
        "request over limit in other units",
        deployment(resources={"requests": {"memory": "1Gi"}, "limits": {"memory": "1000Mi"}}),
        True,
        f"{_P}.resources.requests[memory]",
    ),
    Case(
        "request equal to limit in other units",
        deployment(
            resources={
                "requests": {"memory": "1Gi", "cpu": "500m"},
                "limits": {"memory": "1024Mi", "cpu": 0.5},
            }
        ),
        False,
    ),
    Case(
        "mount without volume",
        deployment(volumeMounts=[{"name": "cache", "mountPath": "/cache"}]),
        True,
        f"{_P}.volumeMounts[0].name",
    ),
    Case(
        "mount with volume",
        _with(
            deployment(volumeMounts=[{"name": "cache", "mountPath": "/cache"}]),
            f"{_TS}.volumes",
            [{"name": "cache", "emptyDir": {}}],
        ),
        False,
    ),
    # the canonical StatefulSet: its container mounts its own claim template (every
    # database operator is written this way)
    Case(
        "statefulset mounts its claim template",
        _with(
            _with(
                _workload("StatefulSet"),
                f"{_TS}.containers.0.volumeMounts",
                [{"name": "data", "mountPath": "/var/lib/data"}],
            ),
            "spec.volumeClaimTemplates",
            [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        ),
        False,
    ),
    Case(
        "statefulset mounts a claim it does not template",
        _with(
            _workload("StatefulSet"),
            f"{_TS}.containers.0.volumeMounts",
            [{"name": "data", "mountPath": "/var/lib/data"}],
        ),
        True,
        f"{_TS}.containers[0].volumeMounts[0].name",
    ),
    Case(
        "init container mount without volume",
        _with(
            deployment(),
            f"{_TS}.initContainers",
            [
                {
                    "name": "init",
                    "image": "busybox",
                    "volumeMounts": [{"name": "x", "mountPath": "/x"}],
                }
            ],
        ),
        True,
        f"{_TS}.initContainers[0].volumeMounts[0].name",
    ),
    # Services
    Case(
        "service node port",
        _service(type="NodePort", ports=[{"port": 80, "nodePort": 30080}]),
        False,
        real=True,
    ),
    Case(
        "service node port out of range",
        _service(type="NodePort", ports=[{"port": 80, "nodePort": 80}]),
        True,
        "spec.ports[0].nodePort",
        real=True,
    ),
    Case(
        "service node port on cluster ip",
        _service(ports=[{"port": 80, "nodePort": 30081}]),
        True,
        "spec.ports[0].nodePort",
    ),
    Case(
        "service two ports without names",
        _service(ports=[{"port": 80}, {"port": 443}]),
        True,
        "spec.ports[0].name",
    ),
    Case(
        "service two named ports",
        _service(ports=[{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]),
        False,
    ),
    Case("service port zero", _service(ports=[{"port": 0}]), True, "spec.ports[0].port"),
    Case("service port too big", _service(ports=[{"port": 70000}]), True, "spec.ports[0].port"),
    Case(
        "service target port too big",
        _service(ports=[{"port": 80, "targetPort": 70000}]),
        True,
        "spec.ports[0].targetPort",
    ),
    Case(
        "container port too big",
        deployment(ports=[{"containerPort": 70000}]),
        True,
        f"{_P}.ports[0].containerPort",
    ),
    Case(
        "container port zero",
        deployment(ports=[{"containerPort": 0}]),
        True,
        f"{_P}.ports[0].containerPort",
    ),
    Case(
        "host port too big",
        deployment(ports=[{"containerPort": 80, "hostPort": 70000}]),
        True,
        f"{_P}.ports[0].hostPort",
    ),
    Case(
        "external name service",
        _service(type="ExternalName", externalName="db.example.com", ports=[], selector=None),
        False,
    ),
    Case(
        "external name service without name",
        _service(type="ExternalName", ports=[], selector=None),
        True,
        "spec.externalName",
    ),
    Case(
        "rolling update both zero",
        _with(
            deployment(),
            "spec.strategy",
            {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}},
        ),
        True,
        "spec.strategy.rollingUpdate.maxUnavailable",
    ),
    Case(
        "rolling update no surge",
        _with(
            deployment(), "spec.strategy", {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
        ),
        False,
    ),
    Case(
        "service duplicate port names",
        _service(ports=[{"port": 80, "name": "web"}, {"port": 443, "name": "web"}]),
        True,
        "spec.ports[1].name",
    ),
]


def _configmap(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "conf", "namespace": "default", **meta},
    }


def _bare_service(spec: Any) -> dict[str, Any]:
    """A Service with exactly ``spec`` (``...``: no spec at all)."""
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
    }
    if spec is not ...:
        obj["spec"] = spec
    return obj


_FINALIZERS = "metadata.finalizers"
#: what a real apiserver (1.34) answered, probed for the tester's report: Service ports,
#: finalizer names (built-in kind), annotation key case, a null selector value
FIDELITY_CASES: list[Case] = [
    Case("service without spec", _bare_service(...), True, "spec.ports"),
    Case("service null spec", _bare_service(None), True, "spec.ports"),
    Case("service empty spec", _bare_service({}), True, "spec.ports"),
    Case("service without ports", _service(ports=[]), True, "spec.ports"),
    Case("service null ports", _service(ports=None), True, "spec.ports"),
    Case(
        "node port service without ports", _service(type="NodePort", ports=[]), True, "spec.ports"
    ),
    Case(
        "load balancer service without ports",
        _bare_service({"type": "LoadBalancer"}),
        True,
        "spec.ports",
    ),
    Case("headless service without ports", _bare_service({"clusterIP": "None"}), False),
    Case(
        "headless service with selector without ports",
        _service(clusterIP="None", ports=[]),
        False,
    ),
    Case(
        "external name service without ports",
        _bare_service({"type": "ExternalName", "externalName": "db.example.com"}),
        False,
    ),
    Case("annotation key upper-case prefix", _configmap(annotations={"A/b": "x"}), False),
    Case(
        "annotation key upper-case domain",
        _configmap(annotations={"Example.COM/Key": "x"}),
        False,
    ),
    Case(
        "annotation key bad prefix",
        _configmap(annotations={"A_/b": "x"}),
        True,
        "metadata.annotations[A_/b]",
    ),
    Case(
        "label key upper-case prefix",
        _configmap(labels={"A/b": "x"}),
        True,
        "metadata.labels[A/b]",
    ),
    Case("finalizer unqualified", _configmap(finalizers=["foo"]), True, f"{_FINALIZERS}[0]"),
    Case(
        "finalizer domain without path",
        _configmap(finalizers=["example.com"]),
        True,
        f"{_FINALIZERS}[0]",
    ),
    Case(
        "finalizer upper-case prefix",
        _configmap(finalizers=["example.com/a", "Example.com/x"]),
        True,
        f"{_FINALIZERS}[1]",
    ),
    Case("finalizer two slashes", _configmap(finalizers=["a/b/c"]), True, f"{_FINALIZERS}[0]"),
    Case("finalizer empty", _configmap(finalizers=[""]), True, f"{_FINALIZERS}[0]"),
    Case("finalizer null", _configmap(finalizers=[None]), True, f"{_FINALIZERS}[0]"),
    Case("finalizer qualified", _configmap(finalizers=["example.com/x"]), False),
    Case("finalizer kubernetes.io", _configmap(finalizers=["kubernetes.io/pv-protection"]), False),
    Case("finalizer kubernetes", _configmap(finalizers=["kubernetes"]), False),
    Case("finalizer orphan", _configmap(finalizers=["orphan"]), False),
    Case("finalizer foreground", _configmap(finalizers=["foregroundDeletion"]), False),
    Case(
        "finalizers orphan and foreground",
        _configmap(finalizers=["orphan", "foregroundDeletion"]),
        True,
        _FINALIZERS,
    ),
    Case(
        "duplicate finalizers applied",
        _configmap(finalizers=["example.com/a", "example.com/a"]),
        True,
        f"{_FINALIZERS}[1]",
        apply=True,
    ),
    Case(
        "duplicate standard finalizers applied",
        _configmap(finalizers=["orphan", "orphan"]),
        True,
        f"{_FINALIZERS}[1]",
        apply=True,
    ),
    Case(
        "duplicate set item applied",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": "csi.example.com"},
            "spec": {"volumeLifecycleModes": ["Persistent", "Persistent"]},
        },
        True,
        "spec.volumeLifecycleModes[1]",
        apply=True,
    ),
    Case(
        "selector null value the template lacks",
        _with(deployment(), "spec.selector.matchLabels", {"app": "web", "x": None}),
        True,
        "spec.template.metadata.labels",
    ),
]


def _binding(**role_ref: Any) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "view-all"},
        "roleRef": {"kind": "ClusterRole", "name": "view", **role_ref},
        "subjects": [{"kind": "ServiceAccount", "name": "web", "namespace": "default"}],
    }


def _role(**rule: Any) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], **rule}],
    }


def _webhook(**hook: Any) -> dict[str, Any]:
    service = {"name": "hook", "namespace": "default", "path": "/v"}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "hook"},
        "webhooks": [
            {
                "name": "validate.example.com",
                "clientConfig": {"service": service},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                **hook,
            }
        ],
    }


def _api_service(name: str, **spec: Any) -> dict[str, Any]:
    service = {"name": "metrics", "namespace": "default"}
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name},
        "spec": {
            "group": "metrics.example.com",
            "version": "v1",
            "service": service,
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
            **spec,
        },
    }


def _rc(labeled: bool = True, **spec: Any) -> dict[str, Any]:
    """A ReplicationController whose template is ``labeled`` ``app: a`` (or has no labels)."""
    meta = {"labels": {"app": "a"}} if labeled else {}
    pod = {"containers": [{"name": "c", "image": "busybox"}]}
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc", "namespace": "default"},
        "spec": {"replicas": 1, "template": {"metadata": meta, "spec": pod}, **spec},
    }


_POD = "spec.template.spec"
#: the false alarms the real-world corpus found (tests/integration/test_corpus_differential.py)
#: and the apiserver's rules it showed missing offline, with valid neighbours
CORPUS_CASES: list[Case] = [
    Case("pdb name upper case", _with(_pdb(minAvailable=1), "metadata.name", "Web_1"), False),
    Case(
        "pdb name with slash",
        _with(_pdb(minAvailable=1), "metadata.name", "a/b"),
        True,
        "metadata.name",
    ),
    Case("roleRef without apiGroup", _binding(), False),
    Case("roleRef apiGroup wrong", _binding(apiGroup="rbac"), True, "roleRef.apiGroup"),
    Case("roleRef kind Role in a cluster binding", _binding(kind="Role"), True, "roleRef.kind"),
    Case("role rule with no verb", _role(verbs=[]), True, "rules[0].verbs"),
    Case("role rule with no api group", _role(apiGroups=[]), True, "rules[0].apiGroups"),
    Case(
        "role rule on urls",
        _role(nonResourceURLs=["/metrics"], apiGroups=[], resources=[]),
        True,
        "rules[0].nonResourceURLs",
    ),
    Case(
        "minReadySeconds -1",
        _with(deployment(), "spec.minReadySeconds", -1),
        True,
        "spec.minReadySeconds",
    ),
    Case("minReadySeconds 0", _with(deployment(), "spec.minReadySeconds", 0), False),
    Case(
        "statefulset revisionHistoryLimit -1",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {**deployment()["spec"], "revisionHistoryLimit": -1},
        },
        False,
    ),
    Case(
        "maxUnavailable 150%",
        _with(deployment(), "spec.strategy", {"rollingUpdate": {"maxUnavailable": "150%"}}),
        True,
        "spec.strategy.rollingUpdate.maxUnavailable",
    ),
    Case(
        "maxSurge 150%",
        _with(deployment(), "spec.strategy", {"rollingUpdate": {"maxSurge": "150%"}}),
        False,
    ),
    Case(
        "probe period -1",
        deployment(readinessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": -1}),
        True,
        f"{_POD}.containers[0].readinessProbe.periodSeconds",
    ),
    Case(
        "negative memory",
        deployment(resources={"limits": {"memory": "-1Gi"}}),
        True,
        f"{_POD}.containers[0].resources.limits[memory]",
    ),
    Case(
        "gpu resource without domain",
        deployment(resources={"limits": {"gpu": "1"}}),
        True,
        f"{_POD}.containers[0].resources.limits[gpu]",
    ),
    Case("extended resource", deployment(resources={"limits": {"example.com/gpu": "1"}}), False),
    Case(
        "env name with =",
        deployment(env=[{"name": "A=B", "value": "x"}]),
        True,
        f"{_POD}.containers[0].env[0].name",
    ),
    Case(
        "runAsUser -1",
        _with(deployment(), f"{_POD}.securityContext", {"runAsUser": -1}),
        True,
        f"{_POD}.securityContext.runAsUser",
    ),
    Case(
        "nodeSelector key with space",
        _with(deployment(), f"{_POD}.nodeSelector", {"bad key": "x"}),
        True,
        f"{_POD}.nodeSelector",
    ),
    Case(
        "service account upper case",
        _with(deployment(), f"{_POD}.serviceAccountName", "Web"),
        True,
        f"{_POD}.serviceAccountName",
    ),
    Case(
        "toleration Exists with value",
        _with(
            deployment(), f"{_POD}.tolerations", [{"key": "k", "operator": "Exists", "value": "v"}]
        ),
        True,
        f"{_POD}.tolerations[0].operator",
    ),
    Case(
        "template without labels",
        _with(deployment(), "spec.template.metadata", {}),
        True,
        "spec.template.metadata.labels",
    ),
    Case("webhook timeout 31", _webhook(timeoutSeconds=31), True, "webhooks[0].timeoutSeconds"),
    Case("webhook timeout 30", _webhook(timeoutSeconds=30), False),
    Case(
        "webhook side effects Some", _webhook(sideEffects="Some"), True, "webhooks[0].sideEffects"
    ),
    Case("webhook name of two segments", _webhook(name="example.com"), True, "webhooks[0].name"),
    Case("api service", _api_service("v1.metrics.example.com"), False),
    Case(
        "api service named otherwise", _api_service("v2.metrics.example.com"), True, "metadata.name"
    ),
    Case(
        "api service priority 0",
        _api_service("v1.metrics.example.com", versionPriority=0),
        True,
        "spec.versionPriority",
    ),
    Case(
        "tls secret without key",
        {**_secret({"tls.crt": "eA=="}), "type": "kubernetes.io/tls"},
        True,
        "data[tls.key]",
    ),
    Case(
        "cluster ip service with traffic policy",
        _service(externalTrafficPolicy="Local"),
        True,
        "spec.externalTrafficPolicy",
    ),
    Case(
        "service selector value with space",
        _service(selector={"app": "a b"}),
        True,
        "spec.selector",
    ),
    Case("rc without selector", _rc(), False),
    Case("rc with empty selector", _rc(selector={}), False),
    Case("rc without selector or labels", _rc(labeled=False), True, "spec.selector"),
    Case("rc selector mismatch", _rc(selector={"app": "b"}), True, "spec.template.metadata.labels"),
]
SEMANTIC_CASES += FIDELITY_CASES + CORPUS_CASES
CASES += SEMANTIC_CASES


def rendered_examples() -> list[tuple[str, dict[str, Any]]]:
    """The objects ``oper8d render`` gives for the example operators (golden files)."""
    out = []
    for path in sorted(GOLDEN.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc:
                out.append((f"{path.relative_to(GOLDEN)} {doc['kind']}", doc))
    return out
