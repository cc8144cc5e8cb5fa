"""Updates of built-in kinds, allowed and refused, for the immutable-field rules.

Each case creates ``old`` (then, when given, writes ``status`` through the status
subresource) and sends an update: ``change(body, stored)`` edits ``body`` in place (the
object as a client applies it, or the stored object for a PUT; ``stored`` is the stored
object, for values the server chose, such as a cluster IP). ``refused`` is the verdict the
API server gives (``tests/integration/test_immutable_differential.py`` holds the in-memory
cluster and this corpus to a real one; ``tests/unit/test_immutable_fields.py`` the
in-memory cluster to this corpus).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
NS = "default"
Change = Callable[[Obj, Obj], None]


@dataclass(frozen=True)
class Case:
    name: str
    old: Obj
    change: Change
    refused: bool
    #: written through the status subresource after the create
    status: Obj | None = None
    #: the fields a refusal names (the server's causes), when refused
    fields: tuple[str, ...] = ()
    extra: tuple[Obj, ...] = field(default=())


def _pod(image: str = "busybox:1.36", **more: Any) -> Obj:
    return {"containers": [{"name": "app", "image": image}], **more}


def _template(labels: Obj, **spec: Any) -> Obj:
    return {"metadata": {"labels": labels}, "spec": _pod(**spec)}


def workload(kind: str, name: str, **spec: Any) -> Obj:
    body: Obj = {
        "selector": {"matchLabels": {"app": name}},
        "template": _template({"app": name}),
        **spec,
    }
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta(name), "spec": body}


def meta(name: str, **more: Any) -> Obj:
    return {"name": name, "namespace": NS, **more}


def statefulset(name: str) -> Obj:
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    return workload("StatefulSet", name, serviceName=name, volumeClaimTemplates=[claim])


def job(name: str, **spec: Any) -> Obj:
    body = {"template": {"spec": _pod(restartPolicy="Never")}, **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name), "spec": body}


def service(name: str, **spec: Any) -> Obj:
    body = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name), "spec": body}


def claim(name: str, **spec: Any) -> Obj:
    body = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        **spec,
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta(name),
        "spec": body,
    }


def data_object(kind: str, name: str, **more: Any) -> Obj:
    return {"apiVersion": "v1", "kind": kind, "metadata": meta(name), **more}


def binding(kind: str, name: str, role: str = "view") -> Obj:
    body: Obj = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta(name) if kind == "RoleBinding" else {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}],
    }
    return body


def setting(*path: str, value: Any) -> Change:
    """A change that sets the field at ``path`` (map keys; an int indexes a list)."""

    def change(body: Obj, _stored: Obj) -> None:
        target: Any = body
        for key in path[:-1]:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        if isinstance(target, list):
            target[int(path[-1])] = value
        else:
            target[path[-1]] = value

    return change


def both(*changes: Change) -> Change:
    def change(body: Obj, stored: Obj) -> None:
        for one in changes:
            one(body, stored)

    return change


def _relabel(name: str) -> Change:
    """Selector and pod labels moved together (so only the immutability refuses it)."""
    labels = {"app": name, "track": "new"}
    return both(
        setting("spec", "selector", "matchLabels", value=labels),
        setting("spec", "template", "metadata", "labels", value=labels),
    )


def _next_ip(body: Obj, stored: Obj) -> None:
    ip = stored["spec"]["clusterIP"]
    head, _, last = ip.rpartition(".")
    moved = f"{head}.{(int(last) + 7) % 250 + 1}"
    body["spec"]["clusterIP"] = moved
    body["spec"]["clusterIPs"] = [moved]


def _without_cluster_ip(body: Obj, _stored: Obj) -> None:
    body["spec"].pop("clusterIP", None)
    body["spec"].pop("clusterIPs", None)


def _bound(size: str = "1Gi") -> Obj:
    return {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}}


def cases() -> list[Case]:
    """Every case, with fresh objects (callers may change them)."""
    return copy.deepcopy(_CASES)


_CASES: list[Case] = [
    # Deployment, ReplicaSet, DaemonSet: the selector
    Case(
        "deployment-selector",
        workload("Deployment", "dep-a"),
        _relabel("dep-a"),
        True,
        fields=("spec.selector",),
    ),
    Case(
        "deployment-replicas",
        workload("Deployment", "dep-b"),
        setting("spec", "replicas", value=3),
        False,
    ),
    Case(
        "deployment-image",
        workload("Deployment", "dep-c"),
        setting("spec", "template", "spec", "containers", "0", "image", value="busybox:1.37"),
        False,
    ),
    Case(
        "deployment-pod-label-added",
        workload("Deployment", "dep-d"),
        setting("spec", "template", "metadata", "labels", "extra", value="yes"),
        False,
    ),
    Case(
        "replicaset-selector",
        workload("ReplicaSet", "rs-a"),
        _relabel("rs-a"),
        True,
        fields=("spec.selector",),
    ),
    Case(
        "replicaset-replicas",
        workload("ReplicaSet", "rs-b"),
        setting("spec", "replicas", value=0),
        False,
    ),
    Case(
        "daemonset-selector",
        workload("DaemonSet", "ds-a"),
        _relabel("ds-a"),
        True,
        fields=("spec.selector",),
    ),
    Case(
        "daemonset-image",
        workload("DaemonSet", "ds-b"),
        setting("spec", "template", "spec", "containers", "0", "image", value="busybox:1.37"),
        False,
    ),
    # StatefulSet: only replicas, ordinals, template, updateStrategy, ... may change
    Case(
        "statefulset-claim-size",
        statefulset("sts-a"),
        setting(
            "spec",
            "volumeClaimTemplates",
            "0",
            "spec",
            "resources",
            "requests",
            "storage",
            value="2Gi",
        ),
        True,
        fields=("spec",),
    ),
    Case(
        "statefulset-service-name",
        statefulset("sts-b"),
        setting("spec", "serviceName", value="other"),
        True,
        fields=("spec",),
    ),
    Case(
        "statefulset-pod-management",
        statefulset("sts-c"),
        setting("spec", "podManagementPolicy", value="Parallel"),
        True,
        fields=("spec",),
    ),
    Case("statefulset-selector", statefulset("sts-d"), _relabel("sts-d"), True, fields=("spec",)),
    Case("statefulset-replicas", statefulset("sts-e"), setting("spec", "replicas", value=2), False),
    Case(
        "statefulset-template",
        statefulset("sts-f"),
        setting("spec", "template", "spec", "containers", "0", "image", value="busybox:1.37"),
        False,
    ),
    Case(
        "statefulset-update-strategy",
        statefulset("sts-g"),
        setting(
            "spec",
            "updateStrategy",
            value={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
        ),
        False,
    ),
    Case(
        "statefulset-min-ready",
        statefulset("sts-h"),
        setting("spec", "minReadySeconds", value=5),
        False,
    ),
    Case(
        "statefulset-history",
        statefulset("sts-i"),
        setting("spec", "revisionHistoryLimit", value=3),
        False,
    ),
    Case(
        "statefulset-retention",
        statefulset("sts-j"),
        setting(
            "spec",
            "persistentVolumeClaimRetentionPolicy",
            value={"whenDeleted": "Delete", "whenScaled": "Retain"},
        ),
        False,
    ),
    Case(
        "statefulset-ordinals",
        statefulset("sts-k"),
        setting("spec", "ordinals", value={"start": 2}),
        False,
    ),
    # Job: the pod template, completions and the failure policies
    Case(
        "job-image",
        job("job-a"),
        setting("spec", "template", "spec", "containers", "0", "image", value="busybox:1.37"),
        True,
        fields=("spec.template",),
    ),
    Case(
        "job-completions",
        job("job-b", completions=2),
        setting("spec", "completions", value=3),
        True,
        fields=("spec.completions",),
    ),
    Case(
        "job-parallelism",
        job("job-c", completions=4),
        setting("spec", "parallelism", value=2),
        False,
    ),
    Case("job-deadline", job("job-d"), setting("spec", "activeDeadlineSeconds", value=600), False),
    Case("job-backoff", job("job-e"), setting("spec", "backoffLimit", value=2), False),
    Case(
        "job-suspended-node-selector",
        job("job-f", suspend=True),
        setting("spec", "template", "spec", "nodeSelector", value={"disk": "ssd"}),
        False,
    ),
    Case(
        "job-suspended-resources",
        job("job-g", suspend=True),
        setting(
            "spec",
            "template",
            "spec",
            "containers",
            "0",
            "resources",
            value={"requests": {"cpu": "100m"}},
        ),
        False,
    ),
    Case(
        "job-suspended-image",
        job("job-h", suspend=True),
        setting("spec", "template", "spec", "containers", "0", "image", value="busybox:1.37"),
        True,
        fields=("spec.template.spec",),
    ),
    Case(
        "job-indexed-in-tandem",
        job("job-i", completionMode="Indexed", completions=2, parallelism=2),
        both(setting("spec", "completions", value=4), setting("spec", "parallelism", value=4)),
        False,
    ),
    Case(
        "job-indexed-alone",
        job("job-j", completionMode="Indexed", completions=2, parallelism=2),
        setting("spec", "completions", value=4),
        True,
        fields=("spec.completions",),
    ),
    # Service: the cluster IPs
    Case("service-cluster-ip", service("svc-a"), _next_ip, True, fields=("spec.clusterIPs[0]",)),
    Case(
        "service-headless",
        service("svc-b"),
        both(_without_cluster_ip, setting("spec", "clusterIP", value="None")),
        True,
    ),
    Case(
        "service-ip-kept",
        service("svc-c"),
        both(_without_cluster_ip, setting("spec", "ports", value=[{"port": 81}])),
        False,
    ),
    Case(
        "service-ports", service("svc-d"), setting("spec", "ports", value=[{"port": 8080}]), False
    ),
    # PersistentVolumeClaim: the spec, but a bound claim's size and class
    Case(
        "claim-unbound-size",
        claim("pvc-a"),
        setting("spec", "resources", "requests", "storage", value="2Gi"),
        True,
        fields=("spec",),
    ),
    Case(
        "claim-access-modes",
        claim("pvc-b"),
        setting("spec", "accessModes", value=["ReadWriteMany"]),
        True,
        fields=("spec",),
    ),
    Case(
        "claim-class-set-once",
        claim("pvc-c"),
        setting("spec", "storageClassName", value="expandable"),
        False,
    ),
    Case(
        "claim-class-changed",
        claim("pvc-d", storageClassName="expandable"),
        setting("spec", "storageClassName", value="other"),
        True,
        fields=("spec",),
    ),
    Case("claim-labels", claim("pvc-e"), setting("metadata", "labels", value={"a": "b"}), False),
    # ConfigMap and Secret: immutable: true keeps the data; a Secret's type
    Case(
        "configmap-immutable-data",
        data_object("ConfigMap", "cm-a", immutable=True, data={"a": "1"}),
        setting("data", "a", value="2"),
        True,
        fields=("data",),
    ),
    Case(
        "configmap-immutable-unset",
        data_object("ConfigMap", "cm-b", immutable=True, data={"a": "1"}),
        setting("immutable", value=False),
        True,
        fields=("immutable",),
    ),
    Case(
        "configmap-immutable-labels",
        data_object("ConfigMap", "cm-c", immutable=True, data={"a": "1"}),
        setting("metadata", "labels", value={"a": "b"}),
        False,
    ),
    Case(
        "configmap-data",
        data_object("ConfigMap", "cm-d", data={"a": "1"}),
        setting("data", "a", value="2"),
        False,
    ),
    Case(
        "configmap-made-immutable",
        data_object("ConfigMap", "cm-e", data={"a": "1"}),
        setting("immutable", value=True),
        False,
    ),
    Case(
        "secret-immutable-data",
        data_object("Secret", "sec-a", immutable=True, data={"a": "MQ=="}),
        setting("data", "a", value="Mg=="),
        True,
        fields=("data",),
    ),
    Case(
        "secret-type",
        data_object("Secret", "sec-b", data={"a": "MQ=="}),
        setting("type", value="example.com/x"),
        True,
        fields=("type",),
    ),
    Case(
        "secret-data",
        data_object("Secret", "sec-c", data={"a": "MQ=="}),
        setting("data", "a", value="Mg=="),
        False,
    ),
    # role bindings: the role
    Case(
        "rolebinding-role",
        binding("RoleBinding", "rb-a"),
        setting("roleRef", "name", value="edit"),
        True,
        fields=("roleRef",),
    ),
    Case(
        "rolebinding-subjects",
        binding("RoleBinding", "rb-b"),
        setting("subjects", value=[{"kind": "ServiceAccount", "name": "other", "namespace": NS}]),
        False,
    ),
    Case(
        "clusterrolebinding-role",
        binding("ClusterRoleBinding", "oper8d-immutable-crb-a"),
        setting("roleRef", "name", value="edit"),
        True,
        fields=("roleRef",),
    ),
]

#: a bound claim (status written by the test): its size may grow, not shrink below the
#: capacity; the rest of its spec stays
BOUND_CASES: list[Case] = [
    Case(
        "claim-bound-grow",
        claim("pvc-f", storageClassName="expandable"),
        setting("spec", "resources", "requests", "storage", value="2Gi"),
        False,
        status=_bound(),
    ),
    Case(
        "claim-bound-shrink",
        claim("pvc-g", storageClassName="expandable"),
        setting("spec", "resources", "requests", "storage", value="512Mi"),
        True,
        status=_bound(),
        fields=("spec.resources.requests.storage",),
    ),
    Case(
        "claim-bound-access-modes",
        claim("pvc-h", storageClassName="expandable"),
        setting("spec", "accessModes", value=["ReadWriteMany"]),
        True,
        status=_bound(),
        fields=("spec",),
    ),
]
_CASES += BOUND_CASES


# -- bundles ---------------------------------------------------------------------------
#: a Deployment whose selector follows ``spec.track``; ``{policy}``: its onImmutableChange
BUNDLE = """
components:
  - name: app
    resources:
      - name: deployment
        {policy}
        object:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {{name: "{{{{ scoped_name('web') }}}}"}}
          spec:
            selector: {{matchLabels: {{app: web, track: "{{{{ spec.track }}}}"}}}}
            template:
              metadata: {{labels: {{app: web, track: "{{{{ spec.track }}}}"}}}}
              spec: {{containers: [{{name: web, image: "web:1"}}]}}
  - name: after
    dependsOn: [app]
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: "{{{{ scoped_name('after') }}}}"}}
"""

#: a StatefulSet that recreates itself when its claim size (``spec.size``) changes
STATEFUL = """
components:
  - name: db
    resources:
      - name: sts
        onImmutableChange: recreate
        object:
          apiVersion: apps/v1
          kind: StatefulSet
          metadata: {name: "{{ scoped_name('db') }}"}
          spec:
            serviceName: db
            selector: {matchLabels: {app: db}}
            template:
              metadata: {labels: {app: db}}
              spec: {containers: [{name: db, image: "db:1"}]}
            volumeClaimTemplates:
              - metadata: {name: data}
                spec:
                  accessModes: [ReadWriteOnce]
                  resources: {requests: {storage: "{{ spec.size }}"}}
"""


# -- running a case ---------------------------------------------------------------------
#: what a PUT does not send back: the server's own metadata and the status
_SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
Verb = str  # "apply" (server-side apply of the client's object) or "replace" (a PUT)
VERBS: tuple[Verb, ...] = ("apply", "replace")


def update_body(case: Case, stored: Obj, verb: Verb) -> Obj:
    """What the update of ``case`` sends: the client's object changed (apply), or the
    stored object changed (a PUT, without the server's metadata)."""
    if verb == "apply":
        body = copy.deepcopy(case.old)
    else:
        body = {k: copy.deepcopy(v) for k, v in stored.items() if k != "status"}
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in _SERVER_META}
    case.change(body, stored)
    return body


def causes_fields(causes: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    return tuple(sorted({f for f, _ in causes}))


def memory_verdict(case: Case, verb: Verb) -> tuple[bool, tuple[str, ...], str]:
    """(refused, the fields the refusal names, its message) of ``case`` on a fresh
    in-memory cluster."""
    from oper8d.cluster.memory import MemoryCluster
    from oper8d.errors import ClusterError

    cluster = MemoryCluster()
    old = copy.deepcopy(case.old)
    cluster.apply(old, field_manager="test")
    api_version, kind, name = old["apiVersion"], old["kind"], old["metadata"]["name"]
    ns = old["metadata"].get("namespace")
    stored = cluster.get(api_version, kind, name, ns)
    assert stored is not None
    if case.status is not None:
        cluster.update_status({**stored, "status": copy.deepcopy(case.status)})
        stored = cluster.get(api_version, kind, name, ns)
        assert stored is not None
    body = update_body(case, stored, verb)
    try:
        cluster.apply(body, field_manager="test", method=verb)  # type: ignore[arg-type]
    except ClusterError as err:
        return True, causes_fields(err.causes), err.message
    return False, (), ""
