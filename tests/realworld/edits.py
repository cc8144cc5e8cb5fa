"""Semantic edits of real objects: the values authors get wrong and the fields operators
template (names, ports, labels, quantities, int-or-string, enums, schedules, selectors,
duplicates, missing fields), each a function that changes a copy of an object in place
(``editing``; pod specs in ``podedits``, workloads in ``workloadedits``, other kinds in
``kindedits``).

``edited(obj)`` gives every edit that applies to ``obj`` as ``(label, object)``; the label
is "Kind: edit", the same for every object of a kind, so the differential test can list
the edits where the offline check knowingly says less than the apiserver. A few edits are
valid on purpose (a percent, a descriptor schedule, a 63-character label): a false alarm
shows on them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from tests.realworld.editing import Edit, Obj, at, rename
from tests.realworld.kindedits import (
    APISERVICE_EDITS,
    BINDING_EDITS,
    CONFIG_EDITS,
    CONFIGMAP_EDITS,
    INGRESSCLASS_EDITS,
    NETWORKPOLICY_EDITS,
    PDB_EDITS,
    ROLE_EDITS,
    SECRET_EDITS,
    SERVICE_EDITS,
    WEBHOOK_EDITS,
)
from tests.realworld.podedits import POD_EDITS, POD_SPEC
from tests.realworld.workloadedits import (
    CRONJOB_EDITS,
    DAEMONSET_EDITS,
    DEPLOYMENT_EDITS,
    JOB_EDITS,
    STATEFULSET_EDITS,
    WORKLOAD_EDITS,
    cronjob_of,
)

__all__ = ["META_EDITS", "cronjob_of", "edited", "edits_for"]


def _label(key: str, value: str, where: tuple[str, ...] = ("metadata",)) -> Edit:
    def edit(obj: Obj) -> bool:
        meta = at(obj, *where)
        if not isinstance(meta, dict):
            return False
        meta.setdefault("labels", {})[key] = value
        return True

    return edit


def _annotation(key: str, value: str) -> Edit:
    def edit(obj: Obj) -> bool:
        obj["metadata"].setdefault("annotations", {})[key] = value
        return True

    return edit


META_EDITS: dict[str, Edit] = {
    "name upper case": rename(lambda n: n.upper()),
    "name with underscore": rename(lambda n: n.replace("-", "_") + "_x"),
    "name of 64 characters": rename(lambda n: (n + "-" + "x" * 64)[:63] + "x"),
    "name of 254 characters": rename(lambda n: (n + "." + "x" * 254)[:253] + "x"),
    "name ends with a dash": rename(lambda n: n + "-"),
    "name with a dot": rename(lambda n: n + ".v2"),
    "label value of 63 characters (valid)": _label("example.com/long", "v" * 63),
    "label value of 64 characters": _label("example.com/long", "v" * 64),
    "label value with a slash": _label("team", "a/b"),
    "label value with a space": _label("team", "a b"),
    "label value starting with a dash": _label("team", "-a"),
    "label empty value (valid)": _label("team", ""),
    "label key with a space": _label("bad key", "x"),
    "label key with two slashes": _label("a/b/c", "x"),
    "label key name of 64 characters": _label("k" * 64, "x"),
    "label key upper-case prefix": _label("Example.com/team", "x"),
    "label key valid prefix (valid)": _label("example.com/Team_1.x", "x"),
    "annotation key with a space": _annotation("bad key", "x"),
    "annotation key valid (valid)": _annotation("example.com/note", "any text: at all"),
}


KIND_EDITS: dict[str, dict[str, Edit]] = {
    "Deployment": {**WORKLOAD_EDITS, **DEPLOYMENT_EDITS},
    "StatefulSet": {**WORKLOAD_EDITS, **STATEFULSET_EDITS},
    "DaemonSet": {**WORKLOAD_EDITS, **DAEMONSET_EDITS},
    "Job": JOB_EDITS,
    "CronJob": CRONJOB_EDITS,
    "Service": SERVICE_EDITS,
    "PodDisruptionBudget": PDB_EDITS,
    "NetworkPolicy": NETWORKPOLICY_EDITS,
    "Role": ROLE_EDITS,
    "ClusterRole": ROLE_EDITS,
    "RoleBinding": BINDING_EDITS,
    "ClusterRoleBinding": BINDING_EDITS,
    "ConfigMap": {**CONFIG_EDITS, **CONFIGMAP_EDITS},
    "Secret": {**CONFIG_EDITS, **SECRET_EDITS},
    "ValidatingWebhookConfiguration": WEBHOOK_EDITS,
    "APIService": APISERVICE_EDITS,
    "IngressClass": INGRESSCLASS_EDITS,
}


def _pod_edit(path: tuple[str, ...], change: Callable[[Obj, Obj], bool]) -> Edit:
    def edit(obj: Obj) -> bool:
        pod = at(obj, *path)
        return isinstance(pod, dict) and change(obj, pod)

    return edit


def edits_for(kind: str) -> dict[str, Edit]:
    """Every edit of objects of ``kind`` (none for a CRD: its own rules are beyond the
    offline check, see docs/kubernetes-schemas.md)."""
    if kind == "CustomResourceDefinition":
        return {}
    out = dict(META_EDITS)
    if kind in POD_SPEC:
        out.update({k: _pod_edit(POD_SPEC[kind], e) for k, e in POD_EDITS.items()})
    out.update(KIND_EDITS.get(kind, {}))
    return out


def edited(obj: Obj, wanted: Callable[[str], bool] = lambda label: True) -> list[tuple[str, Obj]]:
    """``obj`` changed by each edit that applies to it and whose label is ``wanted``,
    labelled "Kind: edit"."""
    out = []
    for name, edit in edits_for(obj["kind"]).items():
        label = f"{obj['kind']}: {name}"
        if not wanted(label):
            continue
        changed = copy.deepcopy(obj)
        if edit(changed) and changed != obj:
            out.append((label, changed))
    return out
