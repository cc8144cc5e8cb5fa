"""Integer bounds of built-in fields that the apiserver's Go validation enforces and the
OpenAPI schema does not state (``ValidateNonnegativeField`` and its kin): a negative
``minReadySeconds``, a webhook timeout of 31 seconds, a NetworkPolicy port 0.

``BOUNDS`` maps (group, kind) to the fields and their inclusive bounds; a path's ``-1``
stands for every item of a list. Only integers are judged here (a string in an int-or-string
field is the percent rule's, a wrong type the schema's). ``kubeschema.semantic`` runs
``bound_problems`` on every built-in object.
"""

from __future__ import annotations

from typing import Any

from oper8d.kubeschema.messages import Errors, Path

#: a list item in a bound's path
ITEM = -1

Bound = tuple[Path, int, int | None]

_JOB: tuple[Bound, ...] = (
    (("backoffLimit",), 0, None),
    (("ttlSecondsAfterFinished",), 0, None),
)
_WORKLOAD: tuple[Bound, ...] = (
    (("spec", "minReadySeconds"), 0, None),
    (("spec", "revisionHistoryLimit"), 0, None),
)
_WEBHOOK: tuple[Bound, ...] = ((("webhooks", ITEM, "timeoutSeconds"), 1, 30),)
_ADMISSION = "admissionregistration.k8s.io"

BOUNDS: dict[tuple[str, str], tuple[Bound, ...]] = {
    ("apps", "Deployment"): (*_WORKLOAD, (("spec", "progressDeadlineSeconds"), 0, None)),
    # a StatefulSet's negative revisionHistoryLimit is taken (its controller keeps none)
    ("apps", "StatefulSet"): (_WORKLOAD[0],),
    ("apps", "DaemonSet"): _WORKLOAD,
    ("apps", "ReplicaSet"): (_WORKLOAD[0],),
    ("batch", "Job"): tuple((("spec", *p), low, high) for p, low, high in _JOB),
    ("batch", "CronJob"): (
        (("spec", "successfulJobsHistoryLimit"), 0, None),
        (("spec", "failedJobsHistoryLimit"), 0, None),
        (("spec", "startingDeadlineSeconds"), 0, None),
        *((("spec", "jobTemplate", "spec", *p), low, high) for p, low, high in _JOB),
    ),
    ("policy", "PodDisruptionBudget"): (
        (("spec", "minAvailable"), 0, None),
        (("spec", "maxUnavailable"), 0, None),
    ),
    (_ADMISSION, "ValidatingWebhookConfiguration"): _WEBHOOK,
    (_ADMISSION, "MutatingWebhookConfiguration"): _WEBHOOK,
    ("apiregistration.k8s.io", "APIService"): (
        (("spec", "groupPriorityMinimum"), 1, 20000),
        (("spec", "versionPriority"), 1, 1000),
    ),
    ("networking.k8s.io", "NetworkPolicy"): tuple(
        (("spec", direction, ITEM, "ports", ITEM, field), 1, 65535)
        for direction in ("ingress", "egress")
        for field in ("port", "endPort")
    ),
}


def bound_problems(group: str, kind: str, obj: dict[str, Any], errors: Errors) -> None:
    """Append the integers of ``obj`` that are out of their kind's bounds."""
    for path, low, high in BOUNDS.get((group, kind), ()):
        for where, value in _values(obj, path, ()):
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            if high is None and value < low:
                message = f"must be greater than or equal to {low}"
            elif high is not None and not low <= value <= high:
                message = f"must be between {low} and {high}, inclusive"
            else:
                continue
            errors.append((where, f"Invalid value: {value}: {message}"))


def _values(node: Any, pattern: Path, path: Path) -> list[tuple[Path, Any]]:
    if not pattern:
        return [(path, node)]
    head, rest = pattern[0], pattern[1:]
    if head == ITEM:
        items = node if isinstance(node, list) else []
        return [hit for i, item in enumerate(items) for hit in _values(item, rest, (*path, i))]
    if not isinstance(node, dict) or head not in node:
        return []
    return _values(node[head], rest, (*path, head))
