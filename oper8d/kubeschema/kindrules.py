"""More cross-field rules of built-in kinds from the apiserver's Go validation, each one
the real-world corpus showed the offline check missing (tests/integration/
test_corpus_differential.py): webhooks, APIServices, IngressClasses, typed Secrets,
Services, NetworkPolicy peers, ConfigMap keys, DaemonSet updates, Job and CronJob names.

Only rules that hold on every Kubernetes version the schemas ship for, and that judge
values as the apiserver has them after its defaulting; ``kubeschema.semantic`` registers
``KIND_RULES`` beside its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oper8d.kubeschema.messages import Errors, MapKey, enum_error, show_value
from oper8d.kubeschema.objectmeta import label_value_problem, subdomain_problem

Rule = Callable[[dict[str, Any], Errors], None]
_ADMISSION = "admissionregistration.k8s.io"


def _field(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """``obj[name]`` when it is an object, else an empty one (the schema check reports a
    value of another type)."""
    value = obj.get(name)
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(value, list):
        return []
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)]


def _webhooks(side_effects: tuple[str, ...]) -> Rule:
    def rule(obj: dict[str, Any], errors: Errors) -> None:
        for i, hook in _dicts(obj.get("webhooks")):
            path = ("webhooks", i)
            name = hook.get("name")
            if isinstance(name, str) and name and len(name.split(".")) < 3:
                message = "should be a domain with at least three segments separated by dots"
                errors.append(((*path, "name"), f"Invalid value: {show_value(name)}: {message}"))
            effects = hook.get("sideEffects")
            if isinstance(effects, str) and effects not in side_effects:
                errors.append(((*path, "sideEffects"), enum_error(effects, side_effects)))
            versions = hook.get("admissionReviewVersions")
            if isinstance(versions, list) and not versions:
                message = "Required value: must specify one of v1, v1beta1"
                errors.append(((*path, "admissionReviewVersions"), message))
            config = hook.get("clientConfig")
            if isinstance(config, dict) and config.get("url") and config.get("service"):
                message = "Required value: exactly one of url or service is required"
                errors.append(((*path, "clientConfig"), message))

    return rule


def _api_service(obj: dict[str, Any], errors: Errors) -> None:
    spec, name = obj.get("spec"), _field(obj, "metadata").get("name")
    if not isinstance(spec, dict):
        return
    version, group = spec.get("version"), spec.get("group")
    if isinstance(name, str) and isinstance(version, str) and isinstance(group, str):
        wanted = f"{version}.{group}" if group else version
        if name != wanted:
            message = f'must be `spec.version+"."+spec.group`: "{wanted}"'
            errors.append((("metadata", "name"), f"Invalid value: {show_value(name)}: {message}"))
    if spec.get("insecureSkipTLSVerify") and spec.get("caBundle"):
        message = "may not be true if caBundle is present"
        errors.append((("spec", "insecureSkipTLSVerify"), f"Invalid value: true: {message}"))


def _ingress_class(obj: dict[str, Any], errors: Errors) -> None:
    spec = obj.get("spec")
    controller = spec.get("controller") if isinstance(spec, dict) else None
    if isinstance(spec, dict) and not controller:
        errors.append((("spec", "controller"), "Required value"))
    if not isinstance(controller, str) or not controller:
        return
    host, slash, rest = controller.partition("/")
    problem = None
    if not slash or not rest:
        problem = 'must be a domain-prefixed path (such as "acme.io/foo")'
    elif subdomain_problem(host):
        problem = subdomain_problem(host)
    if problem is not None:
        where = ("spec", "controller")
        errors.append((where, f"Invalid value: {show_value(controller)}: {problem}"))


#: the keys a Secret of a type must hold (in ``data`` or ``stringData``)
_SECRET_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


def _secret(obj: dict[str, Any], errors: Errors) -> None:
    wanted = _SECRET_KEYS.get(str(obj.get("type")), ())
    held: set[str] = set()
    for field in ("data", "stringData"):
        values = obj.get(field)
        if isinstance(values, dict):
            held.update(str(k) for k in values)
    for key in wanted:
        if key not in held:
            errors.append((("data", MapKey(key)), "Required value"))


def _config_map(obj: dict[str, Any], errors: Errors) -> None:
    data, binary = obj.get("data"), obj.get("binaryData")
    if isinstance(data, dict) and isinstance(binary, dict):
        for key in data:
            if key in binary:
                message = "duplicate of key present in binaryData"
                errors.append(
                    (("data", MapKey(key)), f"Invalid value: {show_value(key)}: {message}")
                )


def _service(obj: dict[str, Any], errors: Errors) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    kind = spec.get("type") or "ClusterIP"
    policy = spec.get("externalTrafficPolicy")
    if kind == "ClusterIP" and policy:
        message = "may only be set for externally-accessible services"
        where = ("spec", "externalTrafficPolicy")
        errors.append((where, f"Invalid value: {show_value(policy)}: {message}"))
    if spec.get("clusterIP") == "None" and kind in ("NodePort", "LoadBalancer"):
        message = f"may not be set to 'None' for {kind} services"
        errors.append((("spec", "clusterIP"), f'Invalid value: "None": {message}'))
    selector = spec.get("selector")
    for value in selector.values() if isinstance(selector, dict) else ():
        problem = label_value_problem(value) if isinstance(value, str) else None
        if problem is not None:
            errors.append((("spec", "selector"), f"Invalid value: {show_value(value)}: {problem}"))


def _network_peers(obj: dict[str, Any], errors: Errors) -> None:
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        rules = _field(obj, "spec").get(direction)
        for i, rule in _dicts(rules):
            for j, peer in _dicts(rule.get(peers)):
                selectors = peer.get("podSelector") is not None
                if peer.get("ipBlock") is not None and (
                    selectors or peer.get("namespaceSelector") is not None
                ):
                    message = "Forbidden: may not specify both ipBlock and another peer"
                    errors.append((("spec", direction, i, peers, j), message))


def _zero(value: Any) -> bool:
    return value in (0, "0%") and not isinstance(value, bool)


def _daemon_set(obj: dict[str, Any], errors: Errors) -> None:
    strategy = _field(obj, "spec").get("updateStrategy")
    update = strategy.get("rollingUpdate") if isinstance(strategy, dict) else None
    if not isinstance(update, dict) or "maxUnavailable" not in update:
        return
    if _zero(update.get("maxUnavailable")) and _zero(update.get("maxSurge", 0)):
        path = ("spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
        errors.append((path, "Required value: cannot be 0 when maxSurge is 0"))


def _replication_controller(obj: dict[str, Any], errors: Errors) -> None:
    """The selector, a plain map, is defaulted to the template's labels: the pair must
    give a non-empty selector that selects the template."""
    spec = _field(obj, "spec")
    template = spec.get("template")
    if not isinstance(template, dict):
        errors.append((("spec", "template"), "Required value"))
        return
    labels = _field(template, "metadata").get("labels")
    labels = labels if isinstance(labels, dict) else {}
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not selector:
        selector = labels
    if not selector:
        errors.append((("spec", "selector"), "Required value"))
    elif any(labels.get(k) != v for k, v in selector.items()):
        message = "Invalid value: `selector` does not match template `labels`"
        errors.append((("spec", "template", "metadata", "labels"), message))


def _longest_name(length: int, why: str) -> Rule:
    def rule(obj: dict[str, Any], errors: Errors) -> None:
        name = _field(obj, "metadata").get("name")
        if isinstance(name, str) and len(name) > length:
            message = f"must be no more than {length} characters{why}"
            errors.append((("metadata", "name"), f"Invalid value: {show_value(name)}: {message}"))

    return rule


KIND_RULES: dict[tuple[str, str], tuple[Rule, ...]] = {
    (_ADMISSION, "ValidatingWebhookConfiguration"): (_webhooks(("None", "NoneOnDryRun")),),
    (_ADMISSION, "MutatingWebhookConfiguration"): (_webhooks(("None", "NoneOnDryRun")),),
    ("apiregistration.k8s.io", "APIService"): (_api_service,),
    ("networking.k8s.io", "IngressClass"): (_ingress_class,),
    ("networking.k8s.io", "NetworkPolicy"): (_network_peers,),
    ("", "Secret"): (_secret,),
    ("", "ConfigMap"): (_config_map,),
    ("", "Service"): (_service,),
    ("apps", "DaemonSet"): (_daemon_set,),
    ("", "ReplicationController"): (_replication_controller,),
    # a Job's name is its pods' job-name label value
    ("batch", "Job"): (_longest_name(63, " (it is a label value of its pods)"),),
    # the CronJob controller appends an 11-character suffix to make its Jobs' names
    ("batch", "CronJob"): (_longest_name(52, ""),),
}
