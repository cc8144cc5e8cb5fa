"""The fields of built-in kinds that an update may not change: the one table of them.

The API server's update validation (Kubernetes 1.36: ``ValidateDeploymentUpdate``,
``ValidateStatefulSetUpdate``, ``ValidateJobSpecUpdate``, ``ValidateServiceUpdate``,
``ValidatePersistentVolumeClaimUpdate``, the ConfigMap, Secret and role binding updates)
refuses these changes with a 422 whatever the client: the only way to make them is to
delete the object and create it again. The in-memory cluster refuses them from this table
(``cluster.memory.admission``), the engine and ``oper8d diff`` recognise the refusal and
name the field from it, and a differential test holds the table to the real apiserver.

``immutable_changes(old, new)`` compares two objects as the server holds them (both with
their defaults: a stored object and the object an update would store). The comparison is
the server's semantic equality: an absent map or list is the same as an empty one.
Messages use the apiserver's words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from oper8d.kubeschema.podspec import quantity_value

__all__ = [
    "IMMUTABLE",
    "ImmutableChange",
    "immutable_changes",
    "is_immutable_message",
    "kinds_with_immutable_fields",
]

#: what ``ValidateImmutableField`` says (Deployment selector, Job template, Secret type...)
IMMUTABLE = "field is immutable"
_STATEFULSET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_STATEFULSET = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden"
)
_PVC = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)
_PVC_SHRINK = "field can not be less than status.capacity"
_WHEN_IMMUTABLE = "field is immutable when `immutable` is set"
_ONCE_SET = "may not change once set"
_ROLE_REF = "cannot change roleRef"
_IN_TANDEM = "can only be modified in tandem with spec.parallelism"
#: the words of every refusal above: how a refusal from a real server is recognised
_MESSAGES = (
    IMMUTABLE,
    _STATEFULSET,
    _PVC,
    _PVC_SHRINK,
    _WHEN_IMMUTABLE,
    _ONCE_SET,
    _ROLE_REF,
    _IN_TANDEM,
)
#: pod template fields a suspended Job that has not started (or is suspended again, with
#: no active pods) may change: its scheduling directives and container resources
_SUSPENDED_JOB_MUTABLE_META = ("labels", "annotations")
_SUSPENDED_JOB_MUTABLE_SPEC = ("nodeSelector", "tolerations", "schedulingGates")


@dataclass(frozen=True)
class ImmutableChange:
    """One refused change: ``field`` is what the update changed (``spec.volumeClaimTemplates``),
    ``reported`` the field the API server names in its refusal (``spec`` for a StatefulSet),
    ``message`` its words; ``forbidden``: reported as ``Forbidden``, else ``Invalid value``."""

    field: str
    reported: str
    message: str
    forbidden: bool = False

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


Rule = Callable[[Mapping[str, Any], Mapping[str, Any]], list[ImmutableChange]]


def immutable_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
    """The changes from ``old`` to ``new`` (the same object, stored and as an update would
    store it) that the API server refuses. Empty for kinds without immutable fields."""
    rule = _RULES.get((_group(old), str(old.get("kind"))))
    if rule is None or _group(new) != _group(old) or new.get("kind") != old.get("kind"):
        return []
    return rule(old, new)


def kinds_with_immutable_fields() -> frozenset[tuple[str, str]]:
    """The (API group, kind) pairs the table has rules for."""
    return frozenset(_RULES)


def is_immutable_message(message: str) -> bool:
    """Whether an API server's refusal (a 422's message or one of its causes) is one of
    the immutable-field refusals of the table."""
    return any(words in message for words in _MESSAGES)


# -- comparison -------------------------------------------------------------------------
def _group(obj: Mapping[str, Any]) -> str:
    api_version = str(obj.get("apiVersion") or "")
    return api_version.rpartition("/")[0]


def _plain(value: Any) -> Any:
    """``value`` as the server's semantic equality sees it: null, empty maps and empty
    lists are absent."""
    if isinstance(value, Mapping):
        out = {k: _plain(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def same(a: Any, b: Any) -> bool:
    """The server's semantic equality of two field values."""
    return bool(_plain(a) == _plain(b))


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _at(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _fixed(*fields: str, message: str = IMMUTABLE) -> Rule:
    """Each of ``spec.<field>`` is immutable."""

    def rule(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
        before, after = _spec(old), _spec(new)
        return [
            ImmutableChange(f"spec.{f}", f"spec.{f}", message)
            for f in fields
            if not same(before.get(f), after.get(f))
        ]

    return rule


def _changed_keys(before: Mapping[str, Any], after: Mapping[str, Any], at: str) -> list[str]:
    return [
        f"{at}.{k}"
        for k in sorted(set(before) | set(after), key=str)
        if not same(before.get(k), after.get(k))
    ]


# -- the kinds --------------------------------------------------------------------------
def _statefulset(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
    before = {k: v for k, v in _spec(old).items() if k not in _STATEFULSET_MUTABLE}
    after = {k: v for k, v in _spec(new).items() if k not in _STATEFULSET_MUTABLE}
    return [
        ImmutableChange(path, "spec", _STATEFULSET, forbidden=True)
        for path in _changed_keys(before, after, "spec")
    ]


def _job(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
    before, after = _spec(old), _spec(new)
    out = _fixed(
        "selector",
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    )(old, new)
    if not same(before.get("completions"), after.get("completions")):
        if after.get("completionMode") != "Indexed":
            out.append(ImmutableChange("spec.completions", "spec.completions", IMMUTABLE))
        elif after.get("completions") is not None and after.get("completions") != after.get(
            "parallelism"
        ):
            out.append(ImmutableChange("spec.completions", "spec.completions", _IN_TANDEM))
    template, old_template = after.get("template"), before.get("template")
    if _pod_template_may_change(old):
        # (then only the pod spec is compared, once the directives and resources are out)
        template = _without_mutable_directives(template, old_template)
        old_template = _without_mutable_directives(old_template, old_template)
        if not same(_at(old_template, "spec"), _at(template, "spec")):
            path = "spec.template.spec"
            out.append(ImmutableChange(path, path, IMMUTABLE))
    elif not same(old_template, template):
        out.append(ImmutableChange("spec.template", "spec.template", IMMUTABLE))
    return out


def _pod_template_may_change(job: Mapping[str, Any]) -> bool:
    """A suspended Job that has not started (or was suspended again and has no active
    pods) may change its pods' scheduling directives and container resources."""
    status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    suspended_again = any(
        isinstance(c, Mapping) and c.get("type") == "Suspended" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return (
        _at(job, "spec", "suspend") is True
        and (status.get("startTime") is None or suspended_again)
        and not status.get("active")
    )


def _without_mutable_directives(template: Any, old_template: Any) -> Any:
    """A Job's pod template without the fields a suspended Job may change."""
    if not isinstance(template, Mapping):
        return template
    meta = {
        k: v
        for k, v in (template.get("metadata") or {}).items()
        if k not in _SUSPENDED_JOB_MUTABLE_META
    }
    spec = dict(template.get("spec") or {})
    for field in _SUSPENDED_JOB_MUTABLE_SPEC:
        spec.pop(field, None)
    affinity = spec.get("affinity")
    if isinstance(affinity, Mapping):
        spec["affinity"] = {k: v for k, v in affinity.items() if k != "nodeAffinity"}
    old_spec = _at(old_template, "spec") or {}
    for field in ("containers", "initContainers"):
        spec[field] = _without_resources(spec.get(field), old_spec.get(field))
    return {**template, "metadata": meta, "spec": spec}


def _without_resources(containers: Any, old_containers: Any) -> Any:
    """``containers`` without the ``resources`` of those in the same place and of the same
    name as before (the server allows only those to change)."""
    if not isinstance(containers, list) or not isinstance(old_containers, list):
        return containers
    if len(containers) != len(old_containers):
        return containers
    return [
        {k: v for k, v in c.items() if k != "resources"}
        if isinstance(c, Mapping) and isinstance(o, Mapping) and c.get("name") == o.get("name")
        else c
        for c, o in zip(containers, old_containers, strict=True)
    ]


def _service(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
    before, after = _spec(old), _spec(new)
    if "ExternalName" in (before.get("type"), after.get("type")):
        return []
    out: list[ImmutableChange] = []
    old_ips, new_ips = _cluster_ips(before), _cluster_ips(after)
    old_headless, new_headless = old_ips == ["None"], new_ips == ["None"]
    if not (old_headless and new_headless) and _ips_changed(old_ips, new_ips):
        moved = not same(before.get("clusterIP"), after.get("clusterIP"))
        field = "spec.clusterIP" if moved else "spec.clusterIPs"
        message = _ONCE_SET if new_ips else "primary clusterIP can not be unset"
        out.append(ImmutableChange(field, "spec.clusterIPs[0]", message))
    if old_headless == new_headless and not new_headless:
        families, old_families = after.get("ipFamilies") or [], before.get("ipFamilies") or []
        if families and old_families and families[0] != old_families[0]:
            out.append(ImmutableChange("spec.ipFamilies", "spec.ipFamilies[0]", _ONCE_SET))
    if before.get("type") == after.get("type") == "LoadBalancer" and before.get(
        "loadBalancerClass"
    ) != after.get("loadBalancerClass"):
        out.append(ImmutableChange("spec.loadBalancerClass", "spec.loadBalancerClass", _ONCE_SET))
    return out


def _ips_changed(old_ips: list[Any], new_ips: list[Any]) -> bool:
    """Any IP of a list as long as before, or the primary one, changed or went."""
    if len(old_ips) == len(new_ips):
        return old_ips != new_ips
    if not old_ips:
        return False
    return not new_ips or new_ips[0] != old_ips[0]


def _cluster_ips(spec: Mapping[str, Any]) -> list[Any]:
    """The cluster IPs an update stores: ``clusterIPs``, led by ``clusterIP`` when only
    that was changed (the server moves the list with it)."""
    ips = list(spec.get("clusterIPs") or [])
    primary = spec.get("clusterIP")
    if primary and (not ips or ips[0] != primary):
        ips = [primary, *ips[1:]]
    return ips


def _pvc(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
    before, after = dict(_spec(old)), dict(_spec(new))
    bound = _at(old, "status", "phase") == "Bound"
    if not before.get("volumeName"):  # binding sets it once
        before.pop("volumeName", None)
        after.pop("volumeName", None)
    storage_class_annotation = _at(old, "metadata", "annotations") or {}
    beta = storage_class_annotation.get("volume.beta.kubernetes.io/storage-class")
    if before.get("storageClassName") is None and (
        after.get("storageClassName") is not None
        and (beta is None or after.get("storageClassName") == beta)
    ):
        after.pop("storageClassName", None)  # set once, where there was none
    old_size = _at(before, "resources", "requests", "storage")
    new_size = _at(after, "resources", "requests", "storage")
    if bound:
        before.pop("volumeAttributesClassName", None)
        after.pop("volumeAttributesClassName", None)
        for spec in (before, after):
            requests = dict(_at(spec, "resources", "requests") or {})
            requests.pop("storage", None)
            spec["resources"] = {**(spec.get("resources") or {}), "requests": requests}
    out = [
        ImmutableChange(path, "spec", _PVC, forbidden=True)
        for path in _changed_keys(_flat_resources(before), _flat_resources(after), "spec")
    ]
    old_value, new_value = quantity_value(old_size), quantity_value(new_size)
    capacity = quantity_value(_at(old, "status", "capacity", "storage")) or 0
    shrunk = old_value is not None and new_value is not None and new_value < old_value
    if bound and shrunk and new_value is not None and new_value <= capacity:
        path = "spec.resources.requests.storage"
        out.append(ImmutableChange(path, path, _PVC_SHRINK, forbidden=True))
    return out


def _flat_resources(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A claim's spec with ``resources.requests`` and ``resources.limits`` as dotted keys,
    so that a change names the quantity that changed."""
    out = {k: v for k, v in spec.items() if k != "resources"}
    resources = spec.get("resources")
    if isinstance(resources, Mapping):
        for part, values in resources.items():
            if isinstance(values, Mapping):
                out.update({f"resources.{part}.{k}": v for k, v in values.items()})
            else:
                out[f"resources.{part}"] = values
    return out


def _data(fields: tuple[str, ...]) -> Rule:
    """A ConfigMap or Secret marked ``immutable: true`` keeps its data and the mark."""

    def rule(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
        out: list[ImmutableChange] = []
        if old.get("kind") == "Secret" and not same(old.get("type"), new.get("type")):
            out.append(ImmutableChange("type", "type", IMMUTABLE))
        if old.get("immutable") is not True:
            return out
        if new.get("immutable") is not True:
            out.append(ImmutableChange("immutable", "immutable", _WHEN_IMMUTABLE, forbidden=True))
        for field in fields:
            if not same(old.get(field), new.get(field)):
                out.append(ImmutableChange(field, field, _WHEN_IMMUTABLE, forbidden=True))
        return out

    return rule


def _role_ref(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ImmutableChange]:
    if same(old.get("roleRef"), new.get("roleRef")):
        return []
    return [ImmutableChange("roleRef", "roleRef", _ROLE_REF)]


_SELECTOR = _fixed("selector")
_RULES: dict[tuple[str, str], Rule] = {
    ("apps", "Deployment"): _SELECTOR,
    ("apps", "ReplicaSet"): _SELECTOR,
    ("apps", "DaemonSet"): _SELECTOR,
    ("apps", "StatefulSet"): _statefulset,
    ("batch", "Job"): _job,
    ("", "Service"): _service,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "ConfigMap"): _data(("data", "binaryData")),
    ("", "Secret"): _data(("data",)),
    ("rbac.authorization.k8s.io", "RoleBinding"): _role_ref,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _role_ref,
}
