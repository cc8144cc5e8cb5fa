"""Edits of Services, PodDisruptionBudgets, NetworkPolicies, RBAC, ConfigMaps, Secrets,
webhooks, APIServices and IngressClasses."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tests.realworld.editing import Edit, Obj, at, drop, rename, set_at


def _sport(key: str, value: Any) -> Edit:
    return set_at(("spec", "ports", 0, key), value, False)


def _service_dup(change: Callable[[Obj], Obj]) -> Edit:
    def edit(obj: Obj) -> bool:
        ports = at(obj, "spec", "ports")
        if not isinstance(ports, list) or not ports:
            return False
        ports.append(change(copy.deepcopy(ports[0])))
        return True

    return edit


def _service_type(kind: str, **extra: Any) -> Edit:
    def edit(obj: Obj) -> bool:
        if obj["spec"].get("clusterIP") == "None" and kind != "ClusterIP":
            return False
        obj["spec"]["type"] = kind
        for key, value in extra.items():
            if key == "nodePort":
                obj["spec"]["ports"][0]["nodePort"] = value
            else:
                obj["spec"][key] = value
        return True

    return edit


SERVICE_EDITS: dict[str, Edit] = {
    "port 0": _sport("port", 0),
    "port 65536": _sport("port", 65536),
    "port quoted": _sport("port", "8080"),
    "targetPort quoted number": _sport("targetPort", "8080"),
    "targetPort 0": _sport("targetPort", 0),
    "targetPort name of 16 characters": _sport("targetPort", "metrics-endpoint"),
    "targetPort name upper case": _sport("targetPort", "Metrics"),
    "port name upper case": _sport("name", "Http"),
    "protocol lower case": _sport("protocol", "tcp"),
    "duplicate port": _service_dup(lambda p: p),
    "duplicate port name": _service_dup(lambda p: {**p, "port": p.get("port", 1) + 1000}),
    "second port without name": _service_dup(
        lambda p: {k: v for k, v in p.items() if k != "name"} | {"port": 1}
    ),
    "type lower case": set_at(("spec", "type"), "loadBalancer", False),
    "NodePort with nodePort 80": _service_type("NodePort", nodePort=80),
    "NodePort with nodePort 30080 (valid)": _service_type("NodePort", nodePort=30080),
    "headless NodePort": lambda o: (
        _service_type("NodePort")(o) and set_at(("spec", "clusterIP"), "None", False)(o)
    ),
    "ClusterIP with externalTrafficPolicy Local": _service_type(
        "ClusterIP", externalTrafficPolicy="Local"
    ),
    "without ports": drop("spec", "ports"),
    "sessionAffinity lower case": set_at(("spec", "sessionAffinity"), "clientIP", False),
    "selector value with a space": set_at(("spec", "selector"), {"app": "a b"}, False),
    "clusterIP not an address": set_at(("spec", "clusterIP"), "10.0.0.300", False),
}


def _pdb(key: str, value: Any) -> Edit:
    def edit(obj: Obj) -> bool:
        for other in ("minAvailable", "maxUnavailable"):
            obj["spec"].pop(other, None)
        obj["spec"][key] = value
        return True

    return edit


PDB_EDITS: dict[str, Edit] = {
    "maxUnavailable quoted number": _pdb("maxUnavailable", "1"),
    "minAvailable quoted number": _pdb("minAvailable", "1"),
    "minAvailable 50% (valid)": _pdb("minAvailable", "50%"),
    "maxUnavailable 150%": _pdb("maxUnavailable", "150%"),
    "minAvailable -1": _pdb("minAvailable", -1),
    "minAvailable and maxUnavailable": lambda o: (
        _pdb("minAvailable", 1)(o) and set_at(("spec", "maxUnavailable"), 1, False)(o)
    ),
    "unhealthyPodEvictionPolicy lower case": set_at(
        ("spec", "unhealthyPodEvictionPolicy"), "alwaysAllow", False
    ),
}


def _np_port(key: str, value: Any) -> Edit:
    def edit(obj: Obj) -> bool:
        for direction in ("ingress", "egress"):
            for rule in at(obj, "spec", direction) or []:
                for port in rule.get("ports") or []:
                    port[key] = value
                    return True
        return False

    return edit


def _np_peer(peer: Obj) -> Edit:
    def edit(obj: Obj) -> bool:
        obj["spec"].setdefault("ingress", []).append({"from": [peer]})
        return True

    return edit


NETWORKPOLICY_EDITS: dict[str, Edit] = {
    "policyTypes lower case": set_at(("spec", "policyTypes"), ["ingress"]),
    "port 0": _np_port("port", 0),
    "port quoted number": _np_port("port", "8080"),
    "port name of 16 characters": _np_port("port", "metrics-endpoint"),
    "endPort below port": lambda o: _np_port("port", 9000)(o) and _np_port("endPort", 8000)(o),
    "protocol lower case": _np_port("protocol", "tcp"),
    "ipBlock cidr /33": _np_peer({"ipBlock": {"cidr": "10.0.0.0/33"}}),
    "ipBlock except outside cidr": _np_peer(
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}
    ),
    "ipBlock and podSelector": _np_peer({"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}),
    "without podSelector": drop("spec", "podSelector"),
    "matchExpressions operator lower case": set_at(
        ("spec", "podSelector"), {"matchExpressions": [{"key": "a", "operator": "in"}]}
    ),
}


def _rule_edit(change: Callable[[Obj], bool]) -> Edit:
    def edit(obj: Obj) -> bool:
        rules = obj.get("rules")
        if not isinstance(rules, list) or not rules:
            return False
        return change(rules[0])

    return edit


ROLE_EDITS: dict[str, Edit] = {
    "rule without verbs": _rule_edit(lambda r: r.pop("verbs", None) is not None),
    "rule with empty verbs": _rule_edit(lambda r: r.__setitem__("verbs", []) or True),
    "rule without apiGroups": _rule_edit(
        lambda r: "resources" in r and r.pop("apiGroups", None) is not None
    ),
    "rule verb upper case (valid)": _rule_edit(lambda r: r.__setitem__("verbs", ["GET"]) or True),
    "nonResourceURLs rule": lambda o: (
        o.setdefault("rules", []).append({"nonResourceURLs": ["/metrics"], "verbs": ["get"]})
        is None
    ),
}

BINDING_EDITS: dict[str, Edit] = {
    "roleRef kind misspelt": set_at(("roleRef", "kind"), "Rol"),
    "roleRef apiGroup wrong": set_at(("roleRef", "apiGroup"), "rbac"),
    "roleRef without name": drop("roleRef", "name"),
    "without roleRef": drop("roleRef"),
    "subject kind lower case": set_at(("subjects", 0, "kind"), "serviceAccount"),
    "ServiceAccount subject without namespace": drop("subjects", 0, "namespace"),
    "ServiceAccount subject with apiGroup": set_at(
        ("subjects", 0, "apiGroup"), "rbac.authorization.k8s.io", False
    ),
    "subject name with a slash": set_at(("subjects", 0, "name"), "a/b"),
}


def _data_key(key: str, value: str = "x", section: str = "data") -> Edit:
    def edit(obj: Obj) -> bool:
        if not isinstance(obj.get(section), dict):
            obj[section] = {}
        obj[section][key] = value
        return True

    return edit


CONFIG_EDITS: dict[str, Edit] = {
    "data key with a space": _data_key("bad key"),
    "data key ..": _data_key(".."),
    "data key with a slash": _data_key("a/b"),
    "data key .dotfile (valid)": _data_key(".env"),
    "data key of 254 characters": _data_key("k" * 254),
}

CONFIGMAP_EDITS: dict[str, Edit] = {
    "binaryData not base64": _data_key("blob", "not base64!", "binaryData"),
    "key in data and binaryData": lambda o: (
        _data_key("same", "x")(o) and _data_key("same", "eA==", "binaryData")(o)
    ),
}

SECRET_EDITS: dict[str, Edit] = {
    "data not base64": _data_key("token", "not base64!"),
    "stringData value (valid)": _data_key("token", "any text", "stringData"),
    "type tls without tls.crt": set_at(("type",), "kubernetes.io/tls", False),
}


def _webhook(key: str, value: Any, present: bool = False) -> Edit:
    return set_at(("webhooks", 0, key), value, present)


WEBHOOK_EDITS: dict[str, Edit] = {
    "webhook name without a dot": _webhook("name", "validate", True),
    "sideEffects Some": _webhook("sideEffects", "Some"),
    "failurePolicy lower case": _webhook("failurePolicy", "fail"),
    "timeoutSeconds 31": _webhook("timeoutSeconds", 31),
    "admissionReviewVersions empty": _webhook("admissionReviewVersions", [], True),
    "without sideEffects": drop("webhooks", 0, "sideEffects"),
    "rule operation lower case": set_at(("webhooks", 0, "rules", 0, "operations"), ["create"]),
    "clientConfig url and service": set_at(
        ("webhooks", 0, "clientConfig", "url"), "https://example.com/x", False
    ),
}

APISERVICE_EDITS: dict[str, Edit] = {
    "groupPriorityMinimum 0": set_at(("spec", "groupPriorityMinimum"), 0),
    "versionPriority 0": set_at(("spec", "versionPriority"), 0),
    "name not version.group": rename(lambda n: "v9." + n.split(".", 1)[1]),
    "insecureSkipTLSVerify and caBundle": set_at(("spec", "caBundle"), "eA==", False),
}

INGRESSCLASS_EDITS: dict[str, Edit] = {
    "controller without a domain": set_at(("spec", "controller"), "nginx"),
    "controller upper case": set_at(("spec", "controller"), "K8S.io/ingress-nginx"),
}

#: the edits of each kind, beside ``META_EDITS`` (every kind) and ``POD_EDITS`` (workloads)
