"""Edits of workloads beyond their pod spec: replicas, selectors, rollout strategies,
claim templates, Job counts, and CronJobs (made of the corpus's Jobs: it has none) with
valid and invalid schedules."""

from __future__ import annotations

import copy
from typing import Any

from tests.realworld.editing import Edit, Obj, at, drop, rename, set_at
from tests.realworld.podedits import POD_SPEC


def _template_labels_mismatch(obj: Obj) -> bool:
    labels = at(obj, "spec", "template", "metadata", "labels")
    selected = at(obj, "spec", "selector", "matchLabels")
    if not isinstance(labels, dict) or not isinstance(selected, dict) or not selected:
        return False
    key = next(iter(selected))
    labels[key] = str(labels.get(key, "")) + "-other"
    return True


def _mount_claim_template(obj: Obj) -> bool:
    """The canonical StatefulSet: a container mounts its own claim template."""
    pod = at(obj, *POD_SPEC["StatefulSet"])
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    obj["spec"].setdefault("volumeClaimTemplates", []).append(claim)
    pod["containers"][0].setdefault("volumeMounts", []).append(
        {"name": "data", "mountPath": "/data"}
    )
    return True


def _claim_storage(value: str) -> Edit:
    def edit(obj: Obj) -> bool:
        if not _mount_claim_template(obj):
            return False
        obj["spec"]["volumeClaimTemplates"][-1]["spec"]["resources"]["requests"]["storage"] = value
        return True

    return edit


def _rolling(key: str, value: Any) -> Edit:
    def edit(obj: Obj) -> bool:
        strategy = obj["spec"].setdefault("strategy", {})
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return False
        strategy.setdefault("rollingUpdate", {})[key] = value
        return True

    return edit


WORKLOAD_EDITS: dict[str, Edit] = {
    "replicas -1": set_at(("spec", "replicas"), -1, only_if_present=False),
    "replicas 0 (valid)": set_at(("spec", "replicas"), 0, only_if_present=False),
    "selector does not match the template": _template_labels_mismatch,
    "without selector": drop("spec", "selector"),
    "empty selector": set_at(("spec", "selector"), {}),
    "without template labels": drop("spec", "template", "metadata", "labels"),
    "minReadySeconds -1": set_at(("spec", "minReadySeconds"), -1, only_if_present=False),
    "revisionHistoryLimit -1": set_at(("spec", "revisionHistoryLimit"), -1, only_if_present=False),
}

DEPLOYMENT_EDITS: dict[str, Edit] = {
    "strategy type Rolling": set_at(("spec", "strategy"), {"type": "Rolling"}, False),
    "maxUnavailable quoted number": _rolling("maxUnavailable", "1"),
    "maxUnavailable 25% (valid)": _rolling("maxUnavailable", "25%"),
    "maxUnavailable 150%": _rolling("maxUnavailable", "150%"),
    "maxSurge word": _rolling("maxSurge", "one"),
    "maxSurge and maxUnavailable 0": lambda o: (
        _rolling("maxSurge", 0)(o) and _rolling("maxUnavailable", 0)(o)
    ),
    "Recreate with rollingUpdate": set_at(
        ("spec", "strategy"), {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}, False
    ),
    "progressDeadlineSeconds below minReadySeconds": lambda o: (
        set_at(("spec", "minReadySeconds"), 600, False)(o)
        and set_at(("spec", "progressDeadlineSeconds"), 60, False)(o)
    ),
}

STATEFULSET_EDITS: dict[str, Edit] = {
    "container mounts its claim template (valid)": _mount_claim_template,
    "claim template storage 1Gb": _claim_storage("1Gb"),
    "podManagementPolicy lower case": set_at(("spec", "podManagementPolicy"), "parallel", False),
    "updateStrategy type lower case": set_at(
        ("spec", "updateStrategy"), {"type": "rolling"}, False
    ),
}

DAEMONSET_EDITS: dict[str, Edit] = {
    "updateStrategy maxUnavailable 0": set_at(
        ("spec", "updateStrategy"),
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}},
        False,
    ),
}

JOB_EDITS: dict[str, Edit] = {
    "backoffLimit -1": set_at(("spec", "backoffLimit"), -1, False),
    "completions -1": set_at(("spec", "completions"), -1, False),
    "parallelism -1": set_at(("spec", "parallelism"), -1, False),
    "activeDeadlineSeconds 0": set_at(("spec", "activeDeadlineSeconds"), 0, False),
    "ttlSecondsAfterFinished -1": set_at(("spec", "ttlSecondsAfterFinished"), -1, False),
    "completionMode lower case": set_at(("spec", "completionMode"), "indexed", False),
}

#: (schedule, valid) of a CronJob made of each corpus Job
SCHEDULES = [
    ("*/5 * * * *", True),
    ("0 0 * * 0", True),
    ("@hourly", True),
    ("@every 5m", True),
    ("0 0 1 jan mon", True),
    ("0 0 * * *  ", True),
    ("CRON_TZ=UTC 0 * * * *", False),
    ("TZ=UTC 0 * * * *", False),
    ("0 0 * * * *", False),
    ("* * *", False),
    ("61 * * * *", False),
    ("0 25 * * *", False),
    ("0 0 32 * *", False),
    ("*/0 * * * *", False),
    ("@fortnightly", False),
    ("", False),
    ("every five minutes", False),
]


def cronjob_of(job: Obj) -> Obj:
    """A CronJob running ``job`` every five minutes (the corpus has no CronJob)."""
    meta = {k: v for k, v in job["metadata"].items() if k in ("name", "namespace", "labels")}
    meta["name"] = meta["name"][:40]
    template = {"spec": copy.deepcopy(job["spec"])}
    template["spec"].pop("selector", None)
    template["spec"].get("template", {}).get("metadata", {}).get("labels", {}).pop(
        "batch.kubernetes.io/controller-uid", None
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta,
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": template},
    }


CRONJOB_EDITS: dict[str, Edit] = {
    **{f"schedule {s!r}": set_at(("spec", "schedule"), s) for s, _ in SCHEDULES},
    "timeZone Mars/Olympus": set_at(("spec", "timeZone"), "Mars/Olympus", False),
    "timeZone Europe/Paris (valid)": set_at(("spec", "timeZone"), "Europe/Paris", False),
    "concurrencyPolicy lower case": set_at(("spec", "concurrencyPolicy"), "allow", False),
    "successfulJobsHistoryLimit -1": set_at(("spec", "successfulJobsHistoryLimit"), -1, False),
    "name of 53 characters": rename(lambda n: (n + "-" + "x" * 53)[:53]),
    "name of 52 characters (valid)": rename(lambda n: (n + "-" + "x" * 52)[:52]),
}
