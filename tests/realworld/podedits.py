"""Edits of the pod spec of a workload (``POD_EDITS``): container names, images, ports,
resources, probes, env vars, volumes, pod-level fields, as authors get them wrong."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tests.realworld.editing import Obj

#: where each workload kind keeps its pod spec
POD_SPEC = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _container(index: int, change: Callable[[Obj, Obj], bool]) -> Callable[[Obj, Obj], bool]:
    def edit(obj: Obj, pod: Obj) -> bool:
        containers = pod.get("containers")
        if not isinstance(containers, list) or not containers:
            return False
        return change(pod, containers[index])

    return edit


def _cset(key: str, value: Any, present: bool = False) -> Callable[[Obj, Obj], bool]:
    def change(pod: Obj, c: Obj) -> bool:
        if present and key not in c:
            return False
        c[key] = copy.deepcopy(value)
        return True

    return _container(0, change)


def _cname(change: Callable[[str], str]) -> Callable[[Obj, Obj], bool]:
    def edit(pod: Obj, c: Obj) -> bool:
        c["name"] = change(c["name"])
        return True

    return _container(0, edit)


def _port(key: str, value: Any) -> Callable[[Obj, Obj], bool]:
    def change(pod: Obj, c: Obj) -> bool:
        ports = c.get("ports")
        if not isinstance(ports, list) or not ports:
            return False
        ports[0][key] = value
        return True

    return _container(0, change)


def _resource(section: str, name: str, value: Any) -> Callable[[Obj, Obj], bool]:
    def change(pod: Obj, c: Obj) -> bool:
        c.setdefault("resources", {}).setdefault(section, {})[name] = value
        return True

    return _container(0, change)


def _limit_below_request(pod: Obj, c: Obj) -> bool:
    resources = c.setdefault("resources", {})
    resources.setdefault("requests", {})["memory"] = "2Gi"
    resources.setdefault("limits", {})["memory"] = "1Gi"
    return True


def _duplicate_container(pod: Obj, c: Obj) -> bool:
    pod["containers"].append(copy.deepcopy(c))
    return True


def _duplicate_port(pod: Obj, c: Obj) -> bool:
    ports = c.get("ports")
    if not isinstance(ports, list) or not ports:
        return False
    ports.append(copy.deepcopy(ports[0]))
    return True


def _same_port_other_name(pod: Obj, c: Obj) -> bool:
    ports = c.get("ports")
    if not isinstance(ports, list) or not ports or "name" not in ports[0]:
        return False
    ports.append({**ports[0], "name": "other"})
    return True


def _mount_missing_volume(pod: Obj, c: Obj) -> bool:
    c.setdefault("volumeMounts", []).append({"name": "not-a-volume", "mountPath": "/nowhere"})
    return True


def _duplicate_volume(pod: Obj, c: Obj) -> bool:
    volumes = pod.get("volumes")
    if not isinstance(volumes, list) or not volumes:
        return False
    volumes.append(copy.deepcopy(volumes[0]))
    return True


def _probe(change: Callable[[Obj], None]) -> Callable[[Obj, Obj], bool]:
    def edit(pod: Obj, c: Obj) -> bool:
        probe = c.get("readinessProbe") or c.get("livenessProbe")
        if not isinstance(probe, dict):
            return False
        change(probe)
        return True

    return _container(0, edit)


def _env(entry: Obj) -> Callable[[Obj, Obj], bool]:
    def change(pod: Obj, c: Obj) -> bool:
        c.setdefault("env", []).append(copy.deepcopy(entry))
        return True

    return _container(0, change)


def _pod_set(key: str, value: Any) -> Callable[[Obj, Obj], bool]:
    def edit(pod: Obj, c: Obj) -> bool:
        pod[key] = copy.deepcopy(value)
        return True

    return _container(0, edit)


POD_EDITS: dict[str, Callable[[Obj, Obj], bool]] = {
    "container name upper case": _cname(lambda n: n.upper()),
    "container name with underscore": _cname(lambda n: n + "_x"),
    "container name of 64 characters": _cname(lambda n: (n + "-" + "c" * 64)[:64]),
    "duplicate container": _container(0, _duplicate_container),
    "container without image": _container(0, lambda p, c: c.pop("image", None) is not None),
    "imagePullPolicy lower case": _cset("imagePullPolicy", "always"),
    "containerPort 0": _port("containerPort", 0),
    "containerPort 65536": _port("containerPort", 65536),
    "containerPort quoted": _port("containerPort", "8080"),
    "port name of 16 characters": _port("name", "metrics-endpoint"),
    "port name of 15 characters (valid)": _port("name", "metrics-endpoin"),
    "port name upper case": _port("name", "Metrics"),
    "port name only digits": _port("name", "8080"),
    "port protocol lower case": _port("protocol", "tcp"),
    "hostPort 70000": _port("hostPort", 70000),
    "duplicate container port": _container(0, _duplicate_port),
    "same port under another name": _container(0, _same_port_other_name),
    "cpu request 1Gb": _resource("requests", "cpu", "1Gb"),
    "memory request 100mi": _resource("requests", "memory", "100mi"),
    "memory limit negative": _resource("limits", "memory", "-1Gi"),
    "cpu request 0.5 (valid)": _resource("requests", "cpu", "0.5"),
    "memory request 1e3 (valid)": _resource("requests", "memory", "1e3"),
    "memory request 1.5Gi (valid)": _resource("requests", "memory", "1.5Gi"),
    "cpu request as a number (valid)": _resource("requests", "cpu", 2),
    "cpu request 1.2.3": _resource("requests", "cpu", "1.2.3"),
    "unknown resource name": _resource("requests", "gpu", "1"),
    "memory limit below request": _container(0, _limit_below_request),
    "volumeMount of a missing volume": _container(0, _mount_missing_volume),
    "duplicate volume": _container(0, _duplicate_volume),
    "probe periodSeconds -1": _probe(lambda p: p.__setitem__("periodSeconds", -1)),
    "probe with two handlers": _probe(lambda p: p.__setitem__("exec", {"command": ["true"]})),
    "probe without handler": _probe(
        lambda p: [p.pop(k, None) for k in ("httpGet", "tcpSocket", "exec", "grpc")] and None
    ),
    "env name with =": _env({"name": "A=B", "value": "x"}),
    "env name starting with a digit": _env({"name": "1ABC", "value": "x"}),
    "env value and valueFrom": _env(
        {"name": "POD", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    ),
    "env fieldPath unknown": _env({"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}),
    "restartPolicy Sometimes": _pod_set("restartPolicy", "Sometimes"),
    "restartPolicy Never": _pod_set("restartPolicy", "Never"),
    "dnsPolicy lower case": _pod_set("dnsPolicy", "clusterFirst"),
    "terminationGracePeriodSeconds -1": _pod_set("terminationGracePeriodSeconds", -1),
    "serviceAccountName upper case": _pod_set("serviceAccountName", "Default"),
    "nodeSelector key with a space": _pod_set("nodeSelector", {"bad key": "x"}),
    "runAsUser -1": _pod_set("securityContext", {"runAsUser": -1}),
    "toleration Exists with a value": _pod_set(
        "tolerations", [{"key": "k", "operator": "Exists", "value": "v"}]
    ),
}
