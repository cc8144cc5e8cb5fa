"""The statuses Kubernetes controllers write, built for the readiness simulator.

Used by ``cluster.memory.simulate.DefaultSimulator``. For each built-in kind a builder returns
the status its controller would report, either settled (``ready=True``: what kstatus
judges Current, e.g. a Deployment with every replica available and Progressing reason
NewReplicaSetAvailable) or still rolling out (``ready=False``: what kstatus judges
InProgress). Statuses carry ``observedGeneration`` where the real one does, the counts
the real controllers fill in (zero counts left out, as the API omits them), and
conditions whose ``lastTransitionTime`` only moves when their status changes.

Builders never change the object and never create other objects (no ReplicaSets or
Pods appear for a Deployment).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from oper8d.kinds import group_of
from oper8d.objects import Obj


class ReadCluster(Protocol):
    """The reads a builder may make (DaemonSets count Nodes)."""

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]: ...


@dataclass(frozen=True)
class StatusContext:
    """What a status builder reads besides the object: the time, the cluster, IPs."""

    now: str  # RFC3339, for timestamps
    cluster: ReadCluster
    next_pod_ip: Callable[[], str]
    next_load_balancer_ip: Callable[[], str]


Builder = Callable[[Obj, StatusContext, bool], "Obj | None"]


def _spec(obj: Obj) -> dict[str, Any]:
    return obj.get("spec") or {}


def _prev(obj: Obj) -> dict[str, Any]:
    return obj.get("status") or {}


def _replicas(obj: Obj) -> int:
    replicas = _spec(obj).get("replicas")
    return 1 if replicas is None else int(replicas)


def _nonzero(**counts: int) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


#: ``json.dumps(value, sort_keys=True)`` without building an encoder per call (it costs
#: more than the encoding of a pod template, and every Deployment write hashes one)
_SORTED_JSON = json.JSONEncoder(sort_keys=True).encode
#: the alphabet of apimachinery's random and hashed names (no vowels, no 0/1/3: nothing
#: that reads as a word); also ``Store``'s generateName suffixes
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(obj: Obj) -> str:
    """A stable 10-character hash of the pod template, like a controller revision's."""
    text = _SORTED_JSON(_spec(obj).get("template") or {})
    digest = hashlib.sha256(text.encode()).digest()
    return "".join([SAFE_ALPHABET[b % 27] for b in digest[:10]])


def condition(
    prev: Mapping[str, Any],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    *,
    update_time: bool = False,
) -> Obj:
    """A condition in the Kubernetes convention; ``lastTransitionTime`` (and, for
    Deployments, ``lastUpdateTime``) kept from ``prev`` when nothing moved."""
    old = next((c for c in prev.get("conditions") or [] if c.get("type") == type_), None) or {}
    same_status = old.get("status") == status
    out: Obj = {"type": type_, "status": status}
    if update_time:
        unchanged = same_status and old.get("reason") == reason and old.get("message") == message
        out["lastUpdateTime"] = old.get("lastUpdateTime", now) if unchanged else now
    out["lastTransitionTime"] = old.get("lastTransitionTime", now) if same_status else now
    out["reason"] = reason
    out["message"] = message
    return out


def deployment(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    n, prev = _replicas(obj), _prev(obj)
    rs = f"{obj['metadata']['name']}-{template_hash(obj)}"

    def cond(type_: str, status: str, reason: str, message: str) -> Obj:
        return condition(prev, type_, status, reason, message, ctx.now, update_time=True)

    status: Obj = {"observedGeneration": obj["metadata"].get("generation", 1)}
    if ready:
        status.update(_nonzero(replicas=n, updatedReplicas=n, readyReplicas=n, availableReplicas=n))
        status["conditions"] = [
            cond(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            ),
            cond(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{rs}" has successfully progressed.',
            ),
        ]
    else:
        status.update(_nonzero(replicas=n, updatedReplicas=n, unavailableReplicas=n))
        status["conditions"] = [
            cond(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            ),
            cond("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{rs}" is progressing.'),
        ]
    return status


def statefulset(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    n, prev = _replicas(obj), _prev(obj)
    revision = f"{obj['metadata']['name']}-{template_hash(obj)}"
    status: Obj = {"observedGeneration": obj["metadata"].get("generation", 1), "replicas": n}
    if ready:
        status.update(readyReplicas=n, currentReplicas=n, updatedReplicas=n, availableReplicas=n)
        status.update(currentRevision=revision, updateRevision=revision)
    else:
        status["availableReplicas"] = 0
        status["currentRevision"] = prev.get("currentRevision") or revision
        status["updateRevision"] = revision
    status["collisionCount"] = 0
    return status


def daemonset(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    nodes = len(ctx.cluster.list("v1", "Node")) or 1  # a cluster has at least one node
    status: Obj = {
        "observedGeneration": obj["metadata"].get("generation", 1),
        "desiredNumberScheduled": nodes,
        "currentNumberScheduled": nodes,
        "updatedNumberScheduled": nodes,
        "numberMisscheduled": 0,
        "numberReady": nodes if ready else 0,
    }
    status.update({"numberAvailable": nodes} if ready else {"numberUnavailable": nodes})
    return status


def replicaset(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    n = _replicas(obj)
    status: Obj = {"observedGeneration": obj["metadata"].get("generation", 1), "replicas": n}
    status.update(_nonzero(fullyLabeledReplicas=n))
    if ready:
        status.update(_nonzero(readyReplicas=n, availableReplicas=n))
    return status


def _finished(status: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def job(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    prev = _prev(obj)
    if _finished(prev):
        return prev  # a finished Job stays finished
    spec = _spec(obj)
    completions = 1 if spec.get("completions") is None else int(spec["completions"])
    parallelism = 1 if spec.get("parallelism") is None else int(spec["parallelism"])
    status: Obj = {"startTime": prev.get("startTime", ctx.now)}
    if ready:
        message = "Reached expected number of succeeded pods"
        status.update(completionTime=ctx.now, succeeded=completions)
        status["conditions"] = [
            condition(prev, "SuccessCriteriaMet", "True", "CompletionsReached", message, ctx.now),
            condition(prev, "Complete", "True", "CompletionsReached", message, ctx.now),
        ]
    else:
        status.update(_nonzero(active=min(parallelism, completions)))
    status.update(ready=0, terminating=0, uncountedTerminatedPods={})
    return status


def _qos_class(containers: list[Obj]) -> str:
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        all((r.get("limits") or {}).get(res) for res in ("cpu", "memory"))
        and all(
            (r.get("requests") or {}).get(res, (r.get("limits") or {}).get(res))
            == (r.get("limits") or {}).get(res)
            for res in ("cpu", "memory")
        )
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


def pod(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    prev, spec, meta = _prev(obj), _spec(obj), obj["metadata"]
    ip = prev.get("podIP") or ctx.next_pod_ip()
    started = prev.get("startTime", ctx.now)
    containers = spec.get("containers") or []
    flag = "True" if ready else "False"
    unready = " ".join(c.get("name", "") for c in containers)
    why = "" if ready else "ContainersNotReady"
    message = "" if ready else f"containers with unready status: [{unready}]"

    def cond(type_: str, value: str, reason: str = "", msg: str = "") -> Obj:
        c = condition(prev, type_, value, reason, msg, ctx.now)
        return {k: v for k, v in c.items() if v != ""}

    def container_status(c: Obj) -> Obj:
        state = (
            {"running": {"startedAt": started}}
            if ready
            else {"waiting": {"reason": "ContainerCreating"}}
        )
        digest = hashlib.sha256(f"{meta.get('uid')}/{c.get('name')}".encode()).hexdigest()
        return {
            "name": c.get("name"),
            "image": c.get("image"),
            "imageID": "",
            "containerID": f"containerd://{digest}" if ready else None,
            "ready": ready,
            "started": ready,
            "restartCount": 0,
            "state": state,
        }

    status: Obj = {
        "phase": "Running" if ready else "Pending",
        "conditions": [
            cond("PodReadyToStartContainers", "True"),
            cond("Initialized", "True"),
            cond("Ready", flag, why, message),
            cond("ContainersReady", flag, why, message),
            cond("PodScheduled", "True"),
        ],
        "hostIP": "10.0.0.1",
        "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": started,
        "containerStatuses": [
            {k: v for k, v in container_status(c).items() if v is not None} for c in containers
        ],
        "qosClass": _qos_class(containers),
    }
    if "generation" in meta:
        status["observedGeneration"] = meta["generation"]
    return status


def persistentvolumeclaim(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    if not ready:
        return {"phase": "Pending"}
    spec = _spec(obj)
    status: Obj = {"phase": "Bound", "accessModes": spec.get("accessModes") or ["ReadWriteOnce"]}
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage is not None:
        status["capacity"] = {"storage": storage}
    return status


def _load_balancer(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    # (copies: ``service`` fills in the items, and ``obj`` is never changed)
    previous = [dict(i) for i in (_prev(obj).get("loadBalancer") or {}).get("ingress") or []]
    if not ready:
        return {"loadBalancer": {"ingress": previous}} if previous else {"loadBalancer": {}}
    ip = previous[0].get("ip") if previous else ctx.next_load_balancer_ip()
    return {"loadBalancer": {"ingress": [{"ip": ip}]}}


def service(obj: Obj, ctx: StatusContext, ready: bool) -> Obj | None:
    if _spec(obj).get("type") != "LoadBalancer":
        return None  # only load balancers get a status
    status = _load_balancer(obj, ctx, ready)
    for ingress in status["loadBalancer"].get("ingress", []):
        ingress.setdefault("ipMode", "VIP")
    return status


def ingress(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    return _load_balancer(obj, ctx, ready)


def custom_resource_definition(obj: Obj, ctx: StatusContext, ready: bool) -> Obj:
    spec, prev = _spec(obj), _prev(obj)
    established = (
        condition(
            prev,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            ctx.now,
        )
        if ready
        else condition(
            prev,
            "Established",
            "False",
            "Installing",
            "the initial names have been accepted",
            ctx.now,
        )
    )
    return {
        "acceptedNames": spec.get("names") or {},
        "conditions": [
            condition(prev, "NamesAccepted", "True", "NoConflicts", "no conflicts found", ctx.now),
            established,
        ],
        "storedVersions": [v.get("name") for v in spec.get("versions") or [] if v.get("storage")],
    }


BUILDERS: dict[tuple[str, str], Builder] = {
    ("apps", "Deployment"): deployment,
    ("apps", "StatefulSet"): statefulset,
    ("apps", "DaemonSet"): daemonset,
    ("apps", "ReplicaSet"): replicaset,
    ("batch", "Job"): job,
    ("", "Pod"): pod,
    ("", "PersistentVolumeClaim"): persistentvolumeclaim,
    ("", "Service"): service,
    ("networking.k8s.io", "Ingress"): ingress,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): custom_resource_definition,
}


def builder_for(obj: Obj) -> Builder | None:
    return BUILDERS.get((group_of(str(obj.get("apiVersion", ""))), str(obj.get("kind"))))
