"""Cross-field rules of built-in kinds: what the apiserver's Go validation refuses although
the OpenAPI schema allows it.

``KubeSchemas.validate`` runs ``SemanticChecks.check`` on a built-in object once its
schema check passed. ``RULES`` maps (group, kind) to plain functions
``(obj, errors) -> None``; each names the field as the apiserver does and uses its words
(``Invalid value``, ``Required value``, ``Unsupported value``, ``Forbidden``,
``Not found``). Every rule has a case in ``tests/unit/kubeschema_corpus.py``, which a
differential test sends to a real apiserver. Also here: the labels and annotations of
every ObjectMeta embedded in a built-in kind (pod templates, job templates, volume claim
templates), found once per kind by walking its schema definitions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from oper8d.kubeschema.bounds import bound_problems
from oper8d.kubeschema.cron import schedule_problem
from oper8d.kubeschema.kindrules import KIND_RULES
from oper8d.kubeschema.messages import Errors, Path, show_value
from oper8d.kubeschema.objectmeta import label_annotation_problems, subdomain_problem
from oper8d.kubeschema.podspec import pod_spec_problems, port_number_problem
from oper8d.kubeschema.rbac import RBAC_RULES

Rule = Callable[[dict[str, Any], Errors], None]
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
#: the Service node port range of an apiserver started without --service-node-port-range
NODE_PORTS = (30000, 32767)
#: a list item in an embedded-metadata path pattern
_ITEM = -1

#: definitions whose own ``metadata`` the apiserver checks when they are embedded (a
#: CronJob's ``jobTemplate.metadata`` is not checked: the Jobs it makes fail instead)
_CHECKED_OWNERS = frozenset({"io.k8s.api.core.v1.PodTemplateSpec"})
_WORKLOAD_RESTART = ("Always",)
_JOB_RESTART = ("OnFailure", "Never")


def _at(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _pods(
    path: Path, restart: tuple[str, ...] | None, pod: bool = False, claims: bool = False
) -> Rule:
    """``claims``: the pods may mount the owner's ``spec.volumeClaimTemplates`` by name (a
    StatefulSet's: the API server counts them as the pod's volumes)."""

    def rule(obj: dict[str, Any], errors: Errors) -> None:
        extra = _claim_names(obj) if claims else ()
        pod_spec_problems(_at(obj, *path), path, restart, pod, errors, extra)

    return rule


def _claim_names(obj: dict[str, Any]) -> tuple[str, ...]:
    templates = _at(obj, "spec", "volumeClaimTemplates")
    if not isinstance(templates, list):
        return ()
    names = (_at(claim, "metadata", "name") for claim in templates)
    return tuple(name for name in names if isinstance(name, str))


def _at_least(field: str, low: int) -> Rule:
    def rule(obj: dict[str, Any], errors: Errors) -> None:
        value = _at(obj, "spec", field)
        if isinstance(value, int) and not isinstance(value, bool) and value < low:
            message = f"Invalid value: {value}: must be greater than or equal to {low}"
            errors.append((("spec", field), message))

    return rule


def _selector(word: str) -> Rule:
    def rule(obj: dict[str, Any], errors: Errors) -> None:
        selector = _at(obj, "spec", "selector")
        if isinstance(selector, dict) and not (
            selector.get("matchLabels") or selector.get("matchExpressions")
        ):
            message = f"Invalid value: {show_value(selector)}: empty selector is invalid for {word}"
            errors.append((("spec", "selector"), message))

    return rule


def _hpa(obj: dict[str, Any], errors: Errors) -> None:
    low, high = _at(obj, "spec", "minReplicas"), _at(obj, "spec", "maxReplicas")
    if isinstance(low, int) and not isinstance(low, bool) and low < 1:
        message = f"Invalid value: {low}: must be greater than or equal to 1"
        errors.append((("spec", "minReplicas"), message))
    elif isinstance(high, int) and isinstance(low, int) and high < low:
        message = f"Invalid value: {high}: must be greater than or equal to `minReplicas`"
        errors.append((("spec", "maxReplicas"), message))
    if isinstance(high, int) and not isinstance(high, bool) and high < 1:
        message = f"Invalid value: {high}: must be greater than or equal to 1"
        errors.append((("spec", "maxReplicas"), message))


def host_problem(host: str) -> str | None:
    """An Ingress rule's host: a lowercase DNS name (``*.`` allowed as its first label),
    not an IP address, without a port."""
    name = host[2:] if host.startswith("*.") else host
    if name and all(part.isdigit() for part in name.split(".")) and name.count(".") == 3:
        return "must be a DNS name, not an IP address"
    problem = subdomain_problem(name)
    if problem and host.startswith("*."):
        return (
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
            "subdomain, which must consist of lower case alphanumeric characters, '-' or '.' "
            "and end with an alphanumeric character (e.g. '*.example.com')"
        )
    return problem


def _ingress(obj: dict[str, Any], errors: Errors) -> None:
    rules = _at(obj, "spec", "rules")
    for i, rule in enumerate(rules if isinstance(rules, list) else ()):
        host = rule.get("host") if isinstance(rule, dict) else None
        if isinstance(host, str) and host:
            problem = host_problem(host)
            if problem:
                path = ("spec", "rules", i, "host")
                errors.append((path, f"Invalid value: {show_value(host)}: {problem}"))


def _service(obj: dict[str, Any], errors: Errors) -> None:
    spec = obj.get("spec")
    if spec is None:  # absent or null: the apiserver decodes both as an empty spec
        spec = {}
    if not isinstance(spec, dict):
        return
    ports: list[Any] = spec["ports"] if isinstance(spec.get("ports"), list) else []
    kind = spec.get("type") or "ClusterIP"
    if kind == "ExternalName" and not spec.get("externalName"):
        errors.append((("spec", "externalName"), "Required value"))
    headless = spec.get("clusterIP") == "None"
    if spec.get("ports") in (None, []) and kind != "ExternalName" and not headless:
        errors.append((("spec", "ports"), "Required value"))
    names: set[str] = set()
    low, high = NODE_PORTS
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        name = port.get("name")
        if len(ports) > 1 and not name:
            errors.append((("spec", "ports", i, "name"), "Required value"))
        elif isinstance(name, str) and name in names:
            errors.append((("spec", "ports", i, "name"), f"Duplicate value: {show_value(name)}"))
        if isinstance(name, str):
            names.add(name)
        port_number_problem(port, "port", ("spec", "ports", i), True, errors)
        port_number_problem(port, "targetPort", ("spec", "ports", i), False, errors)
        node_port = port.get("nodePort")
        if not isinstance(node_port, int) or isinstance(node_port, bool) or not node_port:
            continue
        where = ("spec", "ports", i, "nodePort")
        if kind in ("ClusterIP", "ExternalName"):
            errors.append((where, f"Forbidden: may not be used when `type` is '{kind}'"))
        elif not low <= node_port <= high:
            message = f"provided port is not in the valid range ({low}-{high})"
            errors.append((where, f"Invalid value: {node_port}: {message}"))


def _zero(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool) and value == 0) or value in (
        "0",
        "0%",
    )


def _rolling_update(obj: dict[str, Any], errors: Errors) -> None:
    update = _at(obj, "spec", "strategy", "rollingUpdate")
    if not isinstance(update, dict):
        return
    unavailable, surge = update.get("maxUnavailable"), update.get("maxSurge")
    if _zero(unavailable) and _zero(surge):
        path = ("spec", "strategy", "rollingUpdate", "maxUnavailable")
        message = "may not be 0 when `maxSurge` is 0"
        errors.append((path, f"Invalid value: {show_value(unavailable)}: {message}"))


#: what the API server reads as a percentage in an int-or-string field (``IsValidPercent``)
_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _int_or_percent(*paths: Path, at_most_100: tuple[Path, ...] = ()) -> Rule:
    """Int-or-string fields the API server reads as a count or a percentage: a string
    must be a percentage (``"1"`` is refused live, though YAML wrote it quoted), one of
    ``at_most_100`` no more than 100%."""

    def rule(obj: dict[str, Any], errors: Errors) -> None:
        for path in paths:
            value = _at(obj, *path)
            if not isinstance(value, str):
                continue
            if not _PERCENT.fullmatch(value):
                errors.append((path, f"Invalid value: {show_value(value)}: {_PERCENT_MSG}"))
            elif path in at_most_100 and int(value[:-1]) > 100:
                message = "must not be greater than 100%"
                errors.append((path, f"Invalid value: {show_value(value)}: {message}"))

    return rule


def _deployment_strategy(obj: dict[str, Any], errors: Errors) -> None:
    strategy = _at(obj, "spec", "strategy")
    recreate = isinstance(strategy, dict) and strategy.get("type") == "Recreate"
    if recreate and strategy.get("rollingUpdate") is not None:
        message = "Forbidden: may not be specified when strategy `type` is 'Recreate'"
        errors.append((("spec", "strategy", "rollingUpdate"), message))
    ready, deadline = (
        _at(obj, "spec", "minReadySeconds"),
        _at(obj, "spec", "progressDeadlineSeconds"),
    )
    if _count(ready) and _count(deadline) and deadline <= ready:
        message = "must be greater than minReadySeconds"
        errors.append(
            (("spec", "progressDeadlineSeconds"), f"Invalid value: {deadline}: {message}")
        )


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _network_policy(obj: dict[str, Any], errors: Errors) -> None:
    for direction in ("ingress", "egress"):
        rules = _at(obj, "spec", direction)
        for i, rule in enumerate(rules if isinstance(rules, list) else ()):
            ports = rule.get("ports") if isinstance(rule, dict) else None
            for j, port in enumerate(ports if isinstance(ports, list) else ()):
                if not isinstance(port, dict):
                    continue
                low, high = port.get("port"), port.get("endPort")
                if _count(low) and _count(high) and high < low:
                    message = "must be greater than or equal to `port`"
                    path = ("spec", direction, i, "ports", j, "endPort")
                    errors.append((path, f"Invalid value: {high}: {message}"))


def _cron_schedule(obj: dict[str, Any], errors: Errors) -> None:
    schedule = _at(obj, "spec", "schedule")
    if not isinstance(schedule, str):
        return
    problem = schedule_problem(schedule)
    if problem is not None:
        errors.append((("spec", "schedule"), f"Invalid value: {show_value(schedule)}: {problem}"))


def _pdb(obj: dict[str, Any], errors: Errors) -> None:
    spec = obj.get("spec")
    both = isinstance(spec, dict) and None not in (
        spec.get("minAvailable"),
        spec.get("maxUnavailable"),
    )
    if both:
        message = "minAvailable and maxUnavailable cannot be both set"
        errors.append((("spec",), f"Invalid value: object: {message}"))


_TEMPLATE = ("spec", "template", "spec")
_ROLLING = ("maxUnavailable", "maxSurge")
RULES: dict[tuple[str, str], tuple[Rule, ...]] = {
    ("", "Pod"): (_pods(("spec",), None, pod=True),),
    ("", "PodTemplate"): (_pods(("template", "spec"), None),),
    ("", "ReplicationController"): (_pods(_TEMPLATE, _WORKLOAD_RESTART), _at_least("replicas", 0)),
    ("apps", "Deployment"): (
        _pods(_TEMPLATE, _WORKLOAD_RESTART),
        _at_least("replicas", 0),
        _selector("deployment"),
        _rolling_update,
        _deployment_strategy,
        _int_or_percent(
            *(("spec", "strategy", "rollingUpdate", f) for f in _ROLLING),
            at_most_100=(("spec", "strategy", "rollingUpdate", "maxUnavailable"),),
        ),
    ),
    ("apps", "StatefulSet"): (
        _pods(_TEMPLATE, _WORKLOAD_RESTART, claims=True),
        _at_least("replicas", 0),
        _selector("statefulset"),
    ),
    ("apps", "ReplicaSet"): (
        _pods(_TEMPLATE, _WORKLOAD_RESTART),
        _at_least("replicas", 0),
        _selector("replicaset"),
    ),
    ("apps", "DaemonSet"): (_pods(_TEMPLATE, _WORKLOAD_RESTART), _selector("daemonset")),
    ("batch", "Job"): (
        _pods(_TEMPLATE, _JOB_RESTART),
        _at_least("parallelism", 0),
        _at_least("completions", 0),
    ),
    ("batch", "CronJob"): (
        _pods(("spec", "jobTemplate", *_TEMPLATE), _JOB_RESTART),
        _cron_schedule,
    ),
    ("autoscaling", "HorizontalPodAutoscaler"): (_hpa,),
    ("networking.k8s.io", "Ingress"): (_ingress,),
    ("", "Service"): (_service,),
    ("policy", "PodDisruptionBudget"): (
        _pdb,
        _int_or_percent(
            *(_PDB_FIELDS := (("spec", "minAvailable"), ("spec", "maxUnavailable"))),
            at_most_100=_PDB_FIELDS,
        ),
    ),
    ("networking.k8s.io", "NetworkPolicy"): (_network_policy,),
    **{key: (rule,) for key, rule in RBAC_RULES.items()},
}
for _key, _rules in KIND_RULES.items():
    RULES[_key] = (*RULES.get(_key, ()), *_rules)


class SemanticChecks:
    """The rules above plus embedded-metadata checks, for one set of built-in definitions
    (the embedded ObjectMeta positions of each kind are found once and kept)."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs
        self._below: dict[str, tuple[Path, ...]] = {}
        self._positions: dict[str, tuple[Path, ...]] = {}

    def check(
        self, group: str, kind: str, definition: str, obj: dict[str, Any], errors: Errors
    ) -> None:
        for pattern in self.meta_positions(definition):
            for path, meta in _expand(obj, pattern, ()):
                label_annotation_problems(meta, path, errors)
        for rule in RULES.get((group, kind), ()):
            rule(obj, errors)
        bound_problems(group, kind, obj, errors)

    def meta_positions(self, definition: str) -> tuple[Path, ...]:
        """Where ObjectMeta is embedded below a kind's root (``("spec", "template",
        "metadata")``; ``-1`` stands for every item of a list), its own metadata excepted."""
        positions = self._positions.get(definition)
        if positions is None:
            below = self._meta_below(definition, set())
            positions = self._positions[definition] = tuple(p for p in below if p != ("metadata",))
        return positions

    def _meta_below(self, name: str, visiting: set[str]) -> tuple[Path, ...]:
        if name in self._below:
            return self._below[name]
        if name in visiting:  # a recursive definition (JSONSchemaProps): no metadata there
            return ()
        visiting.add(name)
        found = self._walk(self._defs.get(name) or {}, (), visiting, name in _CHECKED_OWNERS)
        visiting.discard(name)
        self._below[name] = found
        return found

    def _walk(
        self, schema: Mapping[str, Any], path: Path, visiting: set[str], checked: bool
    ) -> tuple[Path, ...]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref == OBJECT_META:
                return (path,) if checked else ()
            return tuple((*path, *p) for p in self._meta_below(ref, visiting))
        found: list[Path] = []
        for one in schema.get("allOf") or ():
            found += self._walk(one, path, visiting, checked)
        for key, sub in (schema.get("properties") or {}).items():
            # a leaf (no $ref, allOf, properties or items: most properties) holds nothing:
            # skipped without the call that would find so
            if "$ref" in sub or "properties" in sub or "items" in sub or "allOf" in sub:
                found += self._walk(sub, (*path, key), visiting, checked)
        items = schema.get("items")
        if isinstance(items, Mapping):
            found += self._walk(items, (*path, _ITEM), visiting, checked)
        return tuple(found)


def _expand(value: Any, pattern: Path, path: Path) -> list[tuple[Path, Any]]:
    if not pattern:
        return [(path, value)] if isinstance(value, dict) else []
    head, rest = pattern[0], pattern[1:]
    if head == _ITEM:
        items = value if isinstance(value, list) else []
        return [hit for i, item in enumerate(items) for hit in _expand(item, rest, (*path, i))]
    if not isinstance(value, dict) or head not in value:
        return []
    return _expand(value[head], rest, (*path, head))
