"""The fields the API server's storage layer sets on a write, after defaulting.

Used by ``cluster.memory.store`` on every create and update of the in-memory cluster. Unlike
the defaults of ``cluster.memory.defaults_builtin`` (filled in when the server decodes a write,
and owned by the manager of a create or update), these are set by the registry of each
kind once the write is decoded, so no field manager owns them:

* the status a new object starts with (a Deployment's ``{}``, a StatefulSet's
  ``replicas: 0``, a Service's ``loadBalancer: {}``, a PersistentVolumeClaim's
  ``phase: Pending``...), as the registry empties the status on create;
* a Job's selector and pod labels naming its uid (unless ``manualSelector``);
* a DaemonSet's ``deprecated.daemonset.template.generation`` annotation, which moves
  when its pod template changes;
* a Service's ``ipFamilies``/``ipFamilyPolicy`` (a single-stack IPv4 cluster, like the
  test apiserver: a headless Service without a selector takes both families);
* a Namespace's ``kubernetes.io/metadata.name`` label and ``spec.finalizers``, and a
  PersistentVolumeClaim's protection finalizer.

It also refuses (422) a Deployment or StatefulSet whose strategy is not RollingUpdate but
that still has a ``rollingUpdate``, as the apiserver does: with defaults stored, that is
what switching a server-side applied workload to ``Recreate``/``OnDelete`` leaves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oper8d.cluster.memory.admission import describe
from oper8d.errors import ClusterError
from oper8d.objects import Obj

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
_JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
_JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")

#: the status of a new object, by (apiVersion, kind)
_INITIAL_STATUS: Mapping[tuple[str, str], Mapping[str, Any]] = {
    ("apps/v1", "Deployment"): {},
    ("apps/v1", "StatefulSet"): {"replicas": 0, "availableReplicas": 0},
    ("apps/v1", "DaemonSet"): {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
    ("apps/v1", "ReplicaSet"): {"replicas": 0},
    ("batch/v1", "Job"): {},
    ("batch/v1", "CronJob"): {},
    ("v1", "Service"): {"loadBalancer": {}},
    ("v1", "PersistentVolumeClaim"): {"phase": "Pending"},
    ("v1", "Namespace"): {"phase": "Active"},
    ("networking.k8s.io/v1", "Ingress"): {"loadBalancer": {}},
    ("autoscaling/v2", "HorizontalPodAutoscaler"): {"desiredReplicas": 0, "currentMetrics": None},
    ("autoscaling/v1", "HorizontalPodAutoscaler"): {"currentReplicas": 0, "desiredReplicas": 0},
    ("policy/v1", "PodDisruptionBudget"): {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
}


#: where a workload's ``rollingUpdate`` goes, and the type it is allowed with
_ROLLING_ONLY: Mapping[tuple[str, str], tuple[str, str]] = {
    ("apps/v1", "Deployment"): ("strategy", "RollingUpdate"),
    ("apps/v1", "StatefulSet"): ("updateStrategy", "RollingUpdate"),
}


def initial_status(api_version: str, kind: str) -> dict[str, Any] | None:
    """The status a newly created object of a built-in kind has, or None (none)."""
    status = _INITIAL_STATUS.get((api_version, kind))
    return None if status is None else _copy(status)


def on_write(new: Obj, old: Obj | None, uid: str) -> None:
    """Set, in place, what the registry of ``new``'s kind sets on a create (``old`` is
    None) or an update; ``uid`` is the object's (new or kept)."""
    api_version, kind = str(new.get("apiVersion")), str(new.get("kind"))
    meta = new.get("metadata")
    if type(meta) is not dict:
        return
    if (api_version, kind) == ("v1", "Namespace"):
        _namespace(new, meta, old)
        return
    spec = new.get("spec")
    if type(spec) is not dict:
        return
    if (api_version, kind) == ("batch/v1", "Job") and old is None:
        _job_selector(spec, meta, uid)
    elif (api_version, kind) in _ROLLING_ONLY:
        _refuse_rolling_update(new, spec, *_ROLLING_ONLY[(api_version, kind)])
    elif (api_version, kind) == ("apps/v1", "DaemonSet"):
        _template_generation(new, old)
    elif (api_version, kind) == ("v1", "Service"):
        _ip_families(spec, (old or {}).get("spec"))
    elif (api_version, kind) == ("v1", "PersistentVolumeClaim") and old is None:
        finalizers = meta.setdefault("finalizers", [])
        if type(finalizers) is list and PVC_PROTECTION not in finalizers:
            finalizers.append(PVC_PROTECTION)


def _namespace(new: Obj, meta: dict[str, Any], old: Obj | None) -> None:
    labels = meta.get("labels")
    if labels is None:
        labels = meta["labels"] = {}
    if type(labels) is dict and isinstance(meta.get("name"), str):
        labels["kubernetes.io/metadata.name"] = meta["name"]
    if old is None:
        spec = new.get("spec")
        if spec is None:
            spec = new["spec"] = {}
        if type(spec) is dict and spec.get("finalizers") is None:
            spec["finalizers"] = ["kubernetes"]


def _job_selector(spec: dict[str, Any], meta: dict[str, Any], uid: str) -> None:
    if spec.get("manualSelector") is True:
        return
    template = spec.get("template")
    if type(template) is not dict:
        return
    template_meta = template.setdefault("metadata", {})
    if type(template_meta) is not dict:
        return
    shares_labels = meta.get("labels") == template_meta.get("labels")
    labels = template_meta.setdefault("labels", {})
    if type(labels) is not dict:
        return
    name = str(meta.get("name", ""))
    for key in _JOB_NAME_LABELS:
        labels.setdefault(key, name)
    for key in _JOB_UID_LABELS:
        labels.setdefault(key, uid)
    if shares_labels:  # a Job that took its pods' labels shares that map with them
        meta["labels"] = dict(labels)
    selector = spec.get("selector")
    if selector is None:
        selector = spec["selector"] = {}
    if type(selector) is dict:
        match = selector.setdefault("matchLabels", {})
        if type(match) is dict:
            match.setdefault(_JOB_UID_LABELS[0], uid)
    spec["manualSelector"] = False


def _refuse_rolling_update(new: Obj, spec: dict[str, Any], field: str, allowed: str) -> None:
    """A Deployment or StatefulSet whose strategy type is not RollingUpdate may not keep
    ``rollingUpdate`` (422), even the one the server defaulted, which nobody owns: a
    server-side apply switching to ``Recreate``/``OnDelete`` fails (even with
    ``rollingUpdate: null``) until a patch or update removes it, as on the apiserver."""
    strategy = spec.get(field)
    if type(strategy) is not dict or strategy.get("rollingUpdate") is None:
        return
    kind = strategy.get("type")
    if kind != allowed:
        raise ClusterError(
            f"{describe(new)} is invalid: spec.{field}.rollingUpdate: Forbidden: may not be "
            f"specified when strategy `type` is {kind!r} (the server's default stays after "
            f"a server-side apply: remove it with a merge patch setting it to null)",
            status=422,
        )


def _template_generation(new: Obj, old: Obj | None) -> None:
    annotations = new["metadata"].get("annotations")
    if annotations is None:
        annotations = new["metadata"]["annotations"] = {}
    if type(annotations) is not dict:
        return
    if old is None:
        annotations.setdefault(TEMPLATE_GENERATION, "1")
        return
    before = (old["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION, "1")
    generation = int(before) if str(before).isdigit() else 1
    if (new["spec"].get("template")) != (old.get("spec") or {}).get("template"):
        generation += 1
    annotations[TEMPLATE_GENERATION] = str(generation)


def _ip_families(spec: dict[str, Any], old: Any) -> None:
    if spec.get("type") == "ExternalName":
        return
    kept = old if type(old) is dict else {}
    for key in ("ipFamilies", "ipFamilyPolicy"):
        if spec.get(key) is None and kept.get(key) is not None:
            spec[key] = _copy(kept[key])
    open_headless = spec.get("clusterIP") == "None" and not spec.get("selector")
    if spec.get("ipFamilyPolicy") is None:
        spec["ipFamilyPolicy"] = "RequireDualStack" if open_headless else "SingleStack"
    if spec.get("ipFamilies") in (None, []):
        families = ["IPv4"]
        if open_headless and spec["ipFamilyPolicy"] != "SingleStack":
            families.append("IPv6")
        spec["ipFamilies"] = families


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
