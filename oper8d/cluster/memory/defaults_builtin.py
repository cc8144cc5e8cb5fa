"""The defaults the API server fills into built-in kinds when it decodes a write.

Used by ``cluster.memory.defaults``. The apiserver runs a defaulting function for each Go type
of an object it decodes, parent before children: a Deployment's (replicas, strategy,
revisionHistoryLimit...), then its pod template's PodSpec (restartPolicy, dnsPolicy...),
then each Container's (imagePullPolicy, terminationMessagePath...), and so on down. This
module does the same over plain dicts: ``default_builtin`` walks an object along its
kind's schema (``oper8d.kubeschema`` definitions) and calls the function registered for
each definition it meets. Only what Kubernetes' own defaulting functions set is listed
(plus the empty structs Go always writes, such as a container's ``resources: {}``), and a
differential test holds the result to a real apiserver's dry-run creates.

Values of the wrong JSON type are left alone (the schema check refuses them afterwards);
``null`` counts as absent, as for a Go pointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oper8d.cluster.memory.defaults_plan import Defaulter, DefaultPlans, resolve

_CORE = "io.k8s.api.core.v1."
_RBAC = "io.k8s.api.rbac.v1."
_NET = "io.k8s.api.networking.v1."
RBAC_GROUP = "rbac.authorization.k8s.io"
#: a ConfigMap, Secret, downward API or projected volume's file mode (0644)
DEFAULT_MODE = 420
MAX_INT32 = 2**31 - 1


def _set(obj: dict[str, Any], key: str, value: Any) -> None:
    """``obj[key] = value`` when the key is absent, null or ``""`` (Go's zero string)."""
    current = obj.get(key)
    if current is None or (type(current) is str and not current):
        obj[key] = value


def _empty(value: Any, kind: type = str) -> bool:
    """Absent as Go sees it: null, or the empty value of the field's ``kind`` (a value of
    another JSON type is left for the schema check to refuse)."""
    return value is None or (type(value) is kind and not value)


def _map(obj: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``obj[key]``, created empty when absent or null; None when it is not a map."""
    if obj.get(key) is None:
        obj[key] = {}
    value = obj[key]
    return value if type(value) is dict else None


# -- core/v1 -------------------------------------------------------------------------------


def _pod_spec(spec: dict[str, Any]) -> None:
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "restartPolicy", "Always")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "securityContext", {})
    _set(spec, "schedulerName", "default-scheduler")
    # (a pod template's host-network ports get no hostPort: only a Pod's do, since 1.28)


def _container(container: dict[str, Any]) -> None:
    _set(container, "terminationMessagePath", "/dev/termination-log")
    _set(container, "terminationMessagePolicy", "File")
    image = container.get("image")
    if container.get("imagePullPolicy") is None and isinstance(image, str):
        container["imagePullPolicy"] = pull_policy(image)
    _set(container, "resources", {})  # a Go struct: always written


def pull_policy(image: str) -> str:
    """``Always`` for an image without a tag or tagged ``latest``, else ``IfNotPresent``
    (an image named by digest is ``IfNotPresent``)."""
    if "@" in image:
        return "IfNotPresent"
    name = image.rsplit("/", 1)[-1]
    tag = name.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _probe(probe: dict[str, Any]) -> None:
    _set(probe, "timeoutSeconds", 1)
    _set(probe, "periodSeconds", 10)
    _set(probe, "successThreshold", 1)
    _set(probe, "failureThreshold", 3)


def _http_get(action: dict[str, Any]) -> None:
    if _empty(action.get("path")):
        action["path"] = "/"
    _set(action, "scheme", "HTTP")


def _volume(volume: dict[str, Any]) -> None:
    if not any(v is not None for k, v in volume.items() if k != "name"):
        volume["emptyDir"] = {}  # a volume without a source is an emptyDir


def _with_mode(source: dict[str, Any]) -> None:
    _set(source, "defaultMode", DEFAULT_MODE)


def _protocol(port: dict[str, Any]) -> None:
    _set(port, "protocol", "TCP")


def _service_spec(spec: dict[str, Any]) -> None:
    _set(spec, "sessionAffinity", "None")
    _set(spec, "type", "ClusterIP")
    kind = spec["type"]
    for port in _dicts(spec.get("ports")):
        _set(port, "protocol", "TCP")
        target = port.get("targetPort")
        if _empty(target) or (type(target) is int and target == 0):
            port["targetPort"] = port.get("port")
    if kind in ("NodePort", "LoadBalancer"):
        _set(spec, "externalTrafficPolicy", "Cluster")
    if kind != "ExternalName":
        _set(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _set(spec, "allocateLoadBalancerNodePorts", True)
    if spec.get("sessionAffinity") == "None":  # the config of no affinity is dropped
        spec.pop("sessionAffinityConfig", None)
    if spec.get("sessionAffinity") == "ClientIP":
        config = _map(spec, "sessionAffinityConfig")
        client = _map(config, "clientIP") if config is not None else None
        if client is not None:
            _set(client, "timeoutSeconds", 10800)


def _pvc(claim: dict[str, Any]) -> None:
    status = _map(claim, "status")
    if status is not None:
        _set(status, "phase", "Pending")


def _pvc_spec(spec: dict[str, Any]) -> None:
    _set(spec, "volumeMode", "Filesystem")


def _secret(secret: dict[str, Any]) -> None:
    if _empty(secret.get("type")):
        secret["type"] = "Opaque"


# -- apps/v1 -------------------------------------------------------------------------------


def _deployment(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is None:
        return
    _set(spec, "replicas", 1)
    _rolling_update(spec, "strategy", maxUnavailable="25%", maxSurge="25%")
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "progressDeadlineSeconds", 600)
    _template_metadata(spec)


def _stateful_set(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is None:
        return
    _set(spec, "podManagementPolicy", "OrderedReady")
    _rolling_update(spec, "updateStrategy", partition=0)
    _set(spec, "replicas", 1)
    _set(spec, "revisionHistoryLimit", 10)
    retention = _map(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _set(retention, "whenDeleted", "Retain")
        _set(retention, "whenScaled", "Retain")
    _set(spec, "serviceName", "")  # a plain Go string: always written
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        _set(claim, "apiVersion", "v1")
        _set(claim, "kind", "PersistentVolumeClaim")
    _template_metadata(spec)


def _daemon_set(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is None:
        return
    _rolling_update(spec, "updateStrategy", maxUnavailable=1, maxSurge=0)
    _set(spec, "revisionHistoryLimit", 10)
    _template_metadata(spec)


def _replica_set(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is not None:
        _set(spec, "replicas", 1)
        _template_metadata(spec)


def _rolling_update(spec: dict[str, Any], key: str, **rolling_defaults: Any) -> None:
    """A workload's update strategy: type RollingUpdate, and for that type the defaults
    of its ``rollingUpdate``."""
    strategy = _map(spec, key)
    if strategy is None:
        return
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _map(strategy, "rollingUpdate")
        if rolling is not None:
            for name, value in rolling_defaults.items():
                _set(rolling, name, value)


def _template_metadata(spec: dict[str, Any]) -> None:
    template = spec.get("template")
    if type(template) is dict:
        _set(template, "metadata", {})  # a Go struct: always written


# -- batch/v1 ------------------------------------------------------------------------------


def _job(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _set(spec, "parallelism", 1)
    _set(spec, "backoffLimit", 6 if spec.get("backoffLimitPerIndex") is None else MAX_INT32)
    _set(spec, "completionMode", "NonIndexed")
    _set(spec, "suspend", False)
    failure = spec.get("podFailurePolicy")
    _set(spec, "podReplacementPolicy", "TerminatingOrFailed" if failure is None else "Failed")
    if type(failure) is dict:
        for rule in _dicts(failure.get("rules")):
            for condition in _dicts(rule.get("onPodConditions")):
                _set(condition, "status", "True")
    _template_metadata(spec)
    template = spec.get("template")
    template_meta = template.get("metadata") if type(template) is dict else None
    labels = template_meta.get("labels") if type(template_meta) is dict else None
    meta = _map(obj, "metadata") if type(labels) is dict and labels else None
    # a Job without labels takes its pods'
    if meta is not None and _empty(meta.get("labels"), dict):
        meta["labels"] = dict(labels or {})


def _cron_job(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is None:
        return
    _set(spec, "concurrencyPolicy", "Allow")
    _set(spec, "suspend", False)
    _set(spec, "successfulJobsHistoryLimit", 3)
    _set(spec, "failedJobsHistoryLimit", 1)
    job = spec.get("jobTemplate")
    if type(job) is dict:
        _set(job, "metadata", {})
        if type(job.get("spec")) is dict:
            _template_metadata(job["spec"])


# -- autoscaling/v2, networking/v1, rbac/v1 -----------------------------------------------


def _hpa(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is None:
        return
    _set(spec, "minReplicas", 1)
    if _empty(spec.get("metrics"), list):
        cpu = {"type": "Utilization", "averageUtilization": 80}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": cpu}}]
    behavior = spec.get("behavior")
    if type(behavior) is dict:  # only a given behavior is filled in
        up = [{"type": "Pods", "value": 4, "periodSeconds": 15}]
        up.append({"type": "Percent", "value": 100, "periodSeconds": 15})
        _scaling_rules(behavior, "scaleUp", 0, up)
        down = [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        _scaling_rules(behavior, "scaleDown", 300, down)


def _hpa_v1(obj: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    if spec is not None:
        _set(spec, "minReplicas", 1)
        _set(spec, "targetCPUUtilizationPercentage", 80)  # (v2's default metric, converted)


def _scaling_rules(
    behavior: dict[str, Any], key: str, window: int, policies: list[dict[str, Any]]
) -> None:
    rules = _map(behavior, key)
    if rules is None:
        return
    _set(rules, "stabilizationWindowSeconds", window)
    _set(rules, "selectPolicy", "Max")
    _set(rules, "policies", policies)


def _network_policy(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if type(spec) is not dict or not _empty(spec.get("policyTypes"), list):
        return
    types = ["Ingress"]
    if spec.get("egress"):
        types.append("Egress")
    spec["policyTypes"] = types


def _subject(subject: dict[str, Any]) -> None:
    if _empty(subject.get("apiGroup")) and subject.get("kind") in ("User", "Group"):
        subject["apiGroup"] = RBAC_GROUP


def _role_ref(ref: dict[str, Any]) -> None:
    if _empty(ref.get("apiGroup")):
        ref["apiGroup"] = RBAC_GROUP


#: defaulting functions of kinds, by (apiVersion, kind), run before the walk below them
KIND_DEFAULTERS: Mapping[tuple[str, str], Defaulter] = {
    ("apps/v1", "Deployment"): _deployment,
    ("apps/v1", "StatefulSet"): _stateful_set,
    ("apps/v1", "DaemonSet"): _daemon_set,
    ("apps/v1", "ReplicaSet"): _replica_set,
    ("batch/v1", "Job"): _job,
    ("batch/v1", "CronJob"): _cron_job,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): _hpa,
    ("autoscaling/v1", "HorizontalPodAutoscaler"): _hpa_v1,
    ("networking.k8s.io/v1", "NetworkPolicy"): _network_policy,
    ("v1", "Secret"): _secret,
}

#: defaulting functions of nested types, by schema definition name
TYPE_DEFAULTERS: Mapping[str, Defaulter] = {
    _CORE + "PodSpec": _pod_spec,
    _CORE + "Container": _container,
    _CORE + "EphemeralContainer": _container,
    _CORE + "ContainerPort": _protocol,
    _CORE + "ServicePort": _protocol,
    _CORE + "EndpointPort": _protocol,
    _NET + "NetworkPolicyPort": _protocol,
    _CORE + "Probe": _probe,
    _CORE + "HTTPGetAction": _http_get,
    _CORE + "GRPCAction": lambda g: _set(g, "service", ""),
    _CORE + "Volume": _volume,
    _CORE + "ConfigMapVolumeSource": _with_mode,
    _CORE + "SecretVolumeSource": _with_mode,
    _CORE + "DownwardAPIVolumeSource": _with_mode,
    _CORE + "ProjectedVolumeSource": _with_mode,
    _CORE + "ServiceAccountTokenProjection": lambda p: _set(p, "expirationSeconds", 3600),
    _CORE + "HostPathVolumeSource": lambda h: _set(h, "type", ""),
    _CORE + "ObjectFieldSelector": lambda f: _set(f, "apiVersion", "v1"),
    _CORE + "ResourceFieldSelector": lambda f: _set(f, "divisor", "0"),
    _CORE + "ServiceSpec": _service_spec,
    _CORE + "PersistentVolumeClaim": _pvc,
    _CORE + "PersistentVolumeClaimSpec": _pvc_spec,
    _RBAC + "Subject": _subject,
    _RBAC + "RoleRef": _role_ref,
}


def default_builtin(
    obj: dict[str, Any],
    api_version: str,
    kind: str,
    schema: Mapping[str, Any],
    definitions: Mapping[str, Any],
    plans: DefaultPlans | None = None,
) -> None:
    """Fill in, in place, the defaults of a built-in kind's object (a write's content:
    without apiVersion, kind and status). ``plans`` (of ``definitions``) walks only
    where a default can be; without it the whole object is walked (``_walk``)."""
    kind_defaulter = KIND_DEFAULTERS.get((api_version, kind))
    if kind_defaulter is not None:
        kind_defaulter(obj)
    if plans is not None and plans.definitions is definitions:
        plans.walk(obj, schema)
    else:
        _walk(obj, schema, definitions)


def default_plans(definitions: Mapping[str, Any]) -> DefaultPlans:
    """The plans of built-in defaulting over ``definitions``, for ``default_builtin``."""
    return DefaultPlans(definitions, TYPE_DEFAULTERS)


def _walk(value: Any, schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> None:
    """The general walk: the defaulting function of each definition ``value`` meets."""
    name, resolved = resolve(schema, definitions)
    if resolved is None:
        return
    if type(value) is dict:
        defaulter = TYPE_DEFAULTERS.get(name) if name else None
        if defaulter is not None:
            defaulter(value)
        props = resolved.get("properties")
        extra = resolved.get("additionalProperties")
        for key, item in value.items():
            if type(item) not in (dict, list):
                continue
            sub = props.get(key) if isinstance(props, Mapping) else None
            if sub is None and isinstance(extra, Mapping):
                sub = extra
            if isinstance(sub, Mapping):
                _walk(item, sub, definitions)
    elif type(value) is list:
        items = resolved.get("items")
        if isinstance(items, Mapping):
            for item in value:
                if type(item) in (dict, list):
                    _walk(item, items, definitions)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if type(v) is dict] if type(value) is list else []
