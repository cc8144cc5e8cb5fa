"""Differential test: the in-memory cluster fills in the defaults the real apiserver does.

Every object the example operators render (golden files, without their owner references)
and a corpus of our own (each defaulted built-in kind an operator renders, in the shapes
that take different defaults, and a CRD whose schema has nested defaults, with a custom
resource of it) is created with ``dryRun=All`` on the real apiserver and with
``MemoryCluster.create``: the two returned objects must be equal, whole, after removing
what the server allocates (uid, and the uid wherever the server copies it, such as a
Job's selector; resourceVersion, creationTimestamp, generation, managedFields and the
values of clusterIP/clusterIPs).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from apiserver import ApiServer, collection
from harness import wait_for

from oper8d.cluster.memory import MemoryCluster
from oper8d.kubeschema import KubeSchemas
from tests.unit.kubeschema_corpus import rendered_examples

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
_SERVER_META = ("resourceVersion", "creationTimestamp", "generation", "managedFields")
NS = "default"


def _meta(name: str, **more: Any) -> Obj:
    return {"name": name, "namespace": NS, **more}


def _pod(**more: Any) -> Obj:
    container: Obj = {
        "name": "app",
        "image": "registry.example/app:1.2",
        "ports": [{"containerPort": 8080}, {"containerPort": 53, "protocol": "UDP"}],
        "env": [
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
        ],
        "readinessProbe": {"httpGet": {"port": 8080}},
        "livenessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5},
        "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30},
        "lifecycle": {"preStop": {"httpGet": {"path": "/stop", "port": 8080}}},
        "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}],
    }
    pod: Obj = {
        "containers": [
            container,
            {"name": "latest", "image": "busybox"},
            {"name": "pinned", "image": "busybox:latest"},
            {"name": "digest", "image": "busybox@sha256:" + "a" * 64},
            {"name": "policy", "image": "busybox", "imagePullPolicy": "Never"},
        ],
        "initContainers": [{"name": "init", "image": "busybox:1.36", "command": ["true"]}],
        "volumes": [
            {"name": "cfg", "configMap": {"name": "cfg"}},
            {"name": "sec", "secret": {"secretName": "sec", "items": [{"key": "a", "path": "a"}]}},
            {"name": "tmp", "emptyDir": {}},
            {"name": "host", "hostPath": {"path": "/var/log"}},
            {"name": "down", "downwardAPI": {"items": [_downward()]}},
            {
                "name": "proj",
                "projected": {
                    "sources": [
                        {"configMap": {"name": "cfg"}},
                        {"serviceAccountToken": {"path": "token"}},
                        {"downwardAPI": {"items": [_downward()]}},
                    ]
                },
            },
            {"name": "claim", "persistentVolumeClaim": {"claimName": "data"}},
        ],
    }
    pod.update(more)
    return pod


def _downward() -> Obj:
    return {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}


def _template(app: str, **pod: Any) -> Obj:
    return {"metadata": {"labels": {"app": app}}, "spec": _pod(**pod)}


def _selector(app: str) -> Obj:
    return {"matchLabels": {"app": app}}


def _workload(kind: str, name: str, **spec: Any) -> Obj:
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": _meta(name), "spec": spec}


def _service(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name), "spec": spec}


def _hpa(name: str, **spec: Any) -> Obj:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _meta(name),
        "spec": {"scaleTargetRef": target, "maxReplicas": 5, **spec},
    }


def _job_spec(**spec: Any) -> Obj:
    return {"template": _template("job", restartPolicy="Never"), **spec}


def own_objects() -> list[tuple[str, Obj]]:
    """Objects of each defaulted built-in kind, in the shapes that default differently."""
    pvc_spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return [
        (
            "deployment",
            _workload("Deployment", "web", selector=_selector("web"), template=_template("web")),
        ),
        (
            "deployment recreate",
            _workload(
                "Deployment",
                "recreate",
                replicas=0,
                strategy={"type": "Recreate"},
                selector=_selector("r"),
                template=_template("r", restartPolicy="Always", dnsPolicy="Default"),
            ),
        ),
        (
            "deployment partial rolling update",
            _workload(
                "Deployment",
                "partial",
                strategy={"rollingUpdate": {"maxSurge": 2}},
                selector=_selector("p"),
                template=_template("p", securityContext={"runAsUser": 1000}),
            ),
        ),
        (
            "deployment host network",
            _workload(
                "Deployment",
                "hostnet",
                selector=_selector("h"),
                template={
                    "metadata": {"labels": {"app": "h"}},
                    "spec": {
                        "hostNetwork": True,
                        "containers": [
                            {
                                "name": "agent",
                                "image": "agent:3",
                                "ports": [{"containerPort": 9100, "name": "metrics"}],
                                "readinessProbe": {"grpc": {"port": 9000}},
                                "livenessProbe": {"httpGet": {"path": "/h", "port": 1}},
                                "securityContext": {"privileged": True},
                            }
                        ],
                        "volumes": [{"name": "scratch"}],
                        "topologySpreadConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "zone",
                                "whenUnsatisfiable": "DoNotSchedule",
                            }
                        ],
                        "tolerations": [{"key": "k", "operator": "Exists"}],
                    },
                },
            ),
        ),
        (
            "statefulset",
            _workload(
                "StatefulSet",
                "db",
                serviceName="db",
                selector=_selector("db"),
                template=_template("db"),
                volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": pvc_spec}],
            ),
        ),
        (
            "statefulset on delete",
            _workload(
                "StatefulSet",
                "ondelete",
                selector=_selector("od"),
                template=_template("od"),
                updateStrategy={"type": "OnDelete"},
                podManagementPolicy="Parallel",
            ),
        ),
        (
            "statefulset partial policies",
            _workload(
                "StatefulSet",
                "partial",
                selector=_selector("sp"),
                template=_template("sp"),
                updateStrategy={"rollingUpdate": {"partition": 2}},
                persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"},
            ),
        ),
        (
            "daemonset",
            _workload("DaemonSet", "agent", selector=_selector("a"), template=_template("a")),
        ),
        (
            "daemonset on delete",
            _workload(
                "DaemonSet",
                "agent2",
                selector=_selector("a2"),
                template=_template("a2"),
                updateStrategy={"type": "OnDelete"},
            ),
        ),
        (
            "replicaset",
            _workload("ReplicaSet", "rs", selector=_selector("rs"), template=_template("rs")),
        ),
        ("job", _workload("Job", "migrate", **_job_spec())),
        (
            "job with labels and completions",
            {
                **_workload("Job", "batch", **_job_spec(completions=3, completionMode="Indexed")),
                "metadata": _meta("batch", labels={"team": "a"}),
            },
        ),
        (
            "job with a backoff limit per index",
            _workload(
                "Job",
                "perindex",
                **_job_spec(completions=2, completionMode="Indexed", backoffLimitPerIndex=1),
            ),
        ),
        ("job with parallelism", _workload("Job", "par", **_job_spec(parallelism=2))),
        (
            "job with pod failure policy",
            _workload(
                "Job",
                "pfp",
                **_job_spec(
                    podFailurePolicy={
                        "rules": [
                            {
                                "action": "Ignore",
                                "onPodConditions": [{"type": "DisruptionTarget"}],
                            }
                        ]
                    }
                ),
            ),
        ),
        (
            "cronjob",
            _workload(
                "CronJob",
                "nightly",
                schedule="0 3 * * *",
                jobTemplate={"spec": _job_spec()},
            ),
        ),
        ("service", _service("web", selector={"app": "web"}, ports=[{"port": 80}])),
        (
            "service named ports",
            _service(
                "multi",
                selector={"app": "web"},
                ports=[
                    {"name": "http", "port": 80, "targetPort": "http"},
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                ],
                sessionAffinity="ClientIP",
            ),
        ),
        ("headless service", _service("db", clusterIP="None", ports=[{"port": 5432}])),
        ("external name", _service("ext", type="ExternalName", externalName="example.com")),
        (
            "secret",
            {"apiVersion": "v1", "kind": "Secret", "metadata": _meta("s"), "data": {"a": "Yg=="}},
        ),
        (
            "secret string data",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": _meta("s2"),
                "stringData": {"a": "b"},
            },
        ),
        (
            "configmap",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("c"), "data": {"a": "b"}},
        ),
        (
            "pvc",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": _meta("data"),
                # named: without one, the DefaultStorageClass admission plugin fills in the
                # cluster's default class (the test environment has one), which is cluster
                # state, not a schema default; the in-memory cluster has no StorageClasses
                "spec": {**pvc_spec, "storageClassName": "standard"},
            },
        ),
        (
            "service account",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("sa")},
        ),
        (
            "ingress",
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": _meta("web"),
                "spec": {
                    "rules": [
                        {
                            "host": "example.com",
                            "http": {
                                "paths": [
                                    {
                                        "path": "/",
                                        "pathType": "Prefix",
                                        "backend": {
                                            "service": {"name": "web", "port": {"number": 80}}
                                        },
                                    }
                                ]
                            },
                        }
                    ]
                },
            },
        ),
        ("hpa", _hpa("plain")),
        (
            "hpa with behavior",
            _hpa(
                "behave",
                minReplicas=2,
                metrics=[
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "memory",
                            "target": {"type": "Utilization", "averageUtilization": 70},
                        },
                    }
                ],
                behavior={"scaleDown": {"stabilizationWindowSeconds": 60}},
            ),
        ),
        (
            "hpa v1",
            {
                "apiVersion": "autoscaling/v1",
                "kind": "HorizontalPodAutoscaler",
                "metadata": _meta("v1"),
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"},
                    "maxReplicas": 3,
                },
            },
        ),
        (
            "pdb",
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": _meta("pdb"),
                "spec": {"minAvailable": 1, "selector": _selector("web")},
            },
        ),
        (
            "network policy",
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": _meta("np"),
                "spec": {
                    "podSelector": {},
                    "ingress": [{"ports": [{"port": 80}]}],
                },
            },
        ),
        (
            "network policy egress",
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": _meta("np2"),
                "spec": {"podSelector": {}, "egress": [{}]},
            },
        ),
        (
            "role binding",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": _meta("rb"),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [
                    {"kind": "ServiceAccount", "name": "sa", "namespace": NS},
                    {"kind": "User", "name": "alice"},
                    {"kind": "Group", "name": "devs"},
                ],
            },
        ),
        ("namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}),
    ]


# -- a CRD with nested defaults -----------------------------------------------------------------

GROUP = "defaults.oper8d.test"


def gizmo_crd() -> Obj:
    item = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "weight": {"type": "integer", "default": 1},
            "opts": {
                "type": "object",
                "default": {},
                "properties": {"retries": {"type": "integer", "default": 3}},
            },
        },
    }
    spec = {
        "type": "object",
        "properties": {
            "size": {"type": "integer", "default": 2},
            "mode": {"type": "string", "default": "safe"},
            "flags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
            "items": {"type": "array", "items": item},
            "tuning": {
                "type": "object",
                "default": {"level": 1},
                "properties": {
                    "level": {"type": "integer"},
                    "burst": {"type": "boolean", "default": False},
                    "deep": {
                        "type": "object",
                        "properties": {"x": {"type": "string", "default": "y"}},
                    },
                },
            },
            "labels": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"v": {"type": "string", "default": "none"}},
                },
            },
            "nullable": {"type": "string", "nullable": True, "default": "n"},
            "notNullable": {"type": "string", "default": "d"},
            "noDefault": {"type": "string"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {**spec, "default": {}},
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string", "default": "New"}},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gizmos.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": "Gizmo", "plural": "gizmos", "singular": "gizmo"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def _gizmo(name: str, spec: Any = None, **top: Any) -> Obj:
    obj: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": _meta(name), **top}
    if spec is not None:
        obj["spec"] = spec
    return obj


GIZMOS = [
    ("gizmo without spec", _gizmo("g1")),
    ("gizmo empty spec", _gizmo("g2", {})),
    (
        "gizmo nested",
        _gizmo(
            "g3",
            {
                "size": 5,
                "items": [{"name": "a"}, {"name": "b", "weight": 4, "opts": {"retries": 0}}],
                "tuning": {"deep": {}},
                "labels": {"k": {}, "j": {"v": "set"}},
                "nullable": None,
                "notNullable": None,
                "noDefault": None,
                "free": {"any": {"weight": None}},
                "unknown": 1,
            },
        ),
    ),
    ("gizmo status", _gizmo("g4", {"mode": "fast"}, status={})),
]


# -- comparing ----------------------------------------------------------------------------------


def _normalised(obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    uid = obj["metadata"].pop("uid", None)
    for key in _SERVER_META:
        obj["metadata"].pop(key, None)
    spec = obj.get("spec")
    if obj["kind"] == "Service" and isinstance(spec, dict):
        for key in ("clusterIP", "clusterIPs"):
            if key in spec and spec[key] != "None":
                spec[key] = "<allocated>"
    text = json.dumps(obj, sort_keys=True)
    if uid:  # copied by the server, as a Job's selector and pod labels
        text = text.replace(uid, "<uid>")
    out: Obj = json.loads(text)
    return out


def _real(api: ApiServer, schemas: KubeSchemas, obj: Obj) -> Obj:
    status, text = api.send("POST", collection(obj, schemas), obj, "?dryRun=All")
    assert status == 201, f"the apiserver refused it: {status} {text[:600]}"
    out: Obj = json.loads(text)
    return out


def _memory(schemas: KubeSchemas, obj: Obj, crds: tuple[Obj, ...] = ()) -> Obj:
    cluster = MemoryCluster(schemas=schemas)
    for crd in crds:
        cluster.create(copy.deepcopy(crd))
    return cluster.create(copy.deepcopy(obj))


def _differences(real: Any, ours: Any, at: str = "") -> list[str]:
    if isinstance(real, dict) and isinstance(ours, dict):
        out = []
        for key in sorted(set(real) | set(ours)):
            here = f"{at}.{key}"
            if key not in ours:
                out.append(f"{here}: apiserver {json.dumps(real[key])}, in-memory absent")
            elif key not in real:
                out.append(f"{here}: in-memory {json.dumps(ours[key])}, apiserver absent")
            else:
                out += _differences(real[key], ours[key], here)
        return out
    if isinstance(real, list) and isinstance(ours, list) and len(real) == len(ours):
        return [
            d
            for i, (r, o) in enumerate(zip(real, ours, strict=True))
            for d in _differences(r, o, f"{at}[{i}]")
        ]
    if real != ours:
        return [f"{at}: apiserver {json.dumps(real)}, in-memory {json.dumps(ours)}"]
    return []


def _assert_alike(real: Obj, ours: Obj) -> None:
    problems = _differences(_normalised(real), _normalised(ours))
    assert not problems, "\n".join(problems)
    assert list(_normalised(real)) == list(_normalised(ours)), "top-level fields in another order"


@pytest.fixture(scope="module")
def schemas() -> KubeSchemas:
    return KubeSchemas.builtin()


def _examples() -> list[tuple[str, Obj]]:
    out = []
    for index, (name, obj) in enumerate(rendered_examples()):
        obj = copy.deepcopy(obj)
        obj["metadata"].pop("ownerReferences", None)  # the owner CR does not exist here
        obj["metadata"]["namespace"] = NS
        out.append((f"{name} {index}", obj))
    return out


CASES = _examples() + own_objects()


@pytest.mark.parametrize("obj", [o for _, o in CASES], ids=[n for n, _ in CASES])
def test_a_created_object_is_defaulted_as_by_the_apiserver(
    apiserver: ApiServer, schemas: KubeSchemas, obj: Obj
) -> None:
    _assert_alike(_real(apiserver, schemas, obj), _memory(schemas, obj))


@pytest.fixture(scope="module")
def gizmo_crd_installed(apiserver: ApiServer) -> Obj:
    crd = gizmo_crd()
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, text = apiserver.send("POST", crds, crd)
    assert status in (201, 409), text
    gizmos = f"/apis/{GROUP}/v1/namespaces/{NS}/gizmos"

    def served() -> bool:
        return apiserver.send("POST", gizmos, _gizmo("probe"), "?dryRun=All")[0] == 201

    wait_for("the Gizmo CRD to be served", served, timeout=30)
    return crd


@pytest.mark.parametrize("obj", [o for _, o in GIZMOS], ids=[n for n, _ in GIZMOS])
def test_a_custom_resource_gets_its_schema_defaults_as_from_the_apiserver(
    apiserver: ApiServer, schemas: KubeSchemas, gizmo_crd_installed: Obj, obj: Obj
) -> None:
    custom = schemas.with_crds([gizmo_crd_installed])
    real = _real(apiserver, custom, obj)
    _assert_alike(real, _memory(schemas, obj, crds=(gizmo_crd_installed,)))
