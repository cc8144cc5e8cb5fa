"""Pod spec rules the apiserver's Go validation applies beyond the OpenAPI schema.

Used by ``kubeschema.semantic`` for every pod spec of a built-in kind (a Pod's ``spec``, a
workload's ``spec.template.spec``, a CronJob's job template): containers need an image, an
env var takes ``value`` or ``valueFrom`` (not both), a probe or lifecycle handler has
exactly one action and no negative counts, requests stay within limits and are not
negative, user and group ids are 0 to 2^31-1, volume mounts name a declared volume, port
numbers are 1 to 65535, and the restart policy is one the owning kind allows. Messages use
the apiserver's words.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from oper8d.kubeschema.messages import Errors, MapKey, Path, enum_error, show_value
from oper8d.kubeschema.objectmeta import (
    label_problem,
    label_value_problem,
    qualified_name_problem,
    subdomain_problem,
)

if TYPE_CHECKING:
    from fractions import Fraction

_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_ACTIONS = ("exec", "httpGet", "tcpSocket", "grpc")
_HOOK_ACTIONS = ("exec", "httpGet", "tcpSocket", "sleep")
#: a probe's counts and durations, which may not be negative (0 takes the default)
_PROBE_COUNTS = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)
#: user and group ids of a security context: 0 to the largest int32
_IDS = ("runAsUser", "runAsGroup")
_MAX_ID = 2**31 - 1
#: the resources a container may request without a ``domain/`` prefix (and hugepages-*)
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_ENV_SOURCES = frozenset(
    {"fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef"}
)


def quantity_value(value: Any) -> Fraction | None:
    """The exact value of a quantity (``500m`` -> 1/2), or None when it is malformed
    (the schema check reports that)."""
    from fractions import Fraction  # (with decimal: only objects with request and limit)

    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Fraction(value)
    if not isinstance(value, str):
        return None
    match = _QUANTITY.fullmatch(value)
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * Fraction(1024) ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return (
        [(i, v) for i, v in enumerate(value) if isinstance(v, dict)]
        if isinstance(value, list)
        else []
    )


def _one_action(handler: Any, actions: tuple[str, ...], path: Path, errors: Errors) -> None:
    if not isinstance(handler, dict):
        return
    given = [a for a in actions if handler.get(a) is not None]
    if not given:
        errors.append((path, "Required value: must specify a handler type"))
    for extra in given[1:]:
        errors.append(((*path, extra), "Forbidden: may not specify more than 1 handler type"))


def _not_negative(obj: Any, fields: tuple[str, ...], path: Path, errors: Errors) -> None:
    if not isinstance(obj, dict):
        return
    for field in fields:
        value = obj.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            message = "must be greater than or equal to 0"
            errors.append(((*path, field), f"Invalid value: {value}: {message}"))


def _ids(context: Any, path: Path, errors: Errors) -> None:
    if not isinstance(context, dict):
        return
    for field in _IDS:
        value = context.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= _MAX_ID:
            message = f"must be between 0 and {_MAX_ID}, inclusive"
            errors.append(((*path, field), f"Invalid value: {value}: {message}"))


def _env(env: Any, path: Path, errors: Errors) -> None:
    for i, var in _dicts(env):
        name = var.get("name")
        if isinstance(name, str) and "=" in name:
            message = "a valid environment variable name must not contain '='"
            errors.append(((*path, i, "name"), f"Invalid value: {show_value(name)}: {message}"))
        source = var.get("valueFrom")
        if isinstance(source, dict) and not any(
            source[k] is not None for k in source if k in _ENV_SOURCES
        ):
            message = "Invalid value: must specify one of: `fieldRef`, `resourceFieldRef`, "
            errors.append(
                ((*path, i, "valueFrom"), message + "`configMapKeyRef` or `secretKeyRef`")
            )
        if var.get("value") and var.get("valueFrom") is not None:
            where = (*path, i, "valueFrom")
            errors.append(
                (where, 'Invalid value: "": may not be specified when `value` is not empty')
            )


def _resources(resources: Any, path: Path, errors: Errors) -> None:
    if not isinstance(resources, dict):
        return
    requests, limits = resources.get("requests"), resources.get("limits")
    for section, amounts in (("requests", requests), ("limits", limits)):
        for name, amount in amounts.items() if isinstance(amounts, dict) else ():
            if not ("/" in name or name in _CONTAINER_RESOURCES or name.startswith("hugepages-")):
                message = "must be a standard resource for containers"
                where = (*path, section, MapKey(name))
                errors.append((where, f"Invalid value: {show_value(name)}: {message}"))
            # only a minus sign makes a quantity negative: the others are not parsed
            negative = amount.startswith("-") if isinstance(amount, str) else None
            value = quantity_value(amount) if negative is not False else None
            if value is not None and value < 0:
                message = "must be greater than or equal to 0"
                where = (*path, section, MapKey(name))
                errors.append((where, f"Invalid value: {show_value(amount)}: {message}"))
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return
    for name, request in requests.items():
        if name not in limits:
            continue
        low, high = quantity_value(request), quantity_value(limits[name])
        if low is not None and high is not None and low > high:
            limit = limits[name]
            message = f"must be less than or equal to {name} limit of {limit}"
            where = (*path, "requests", MapKey(name))
            errors.append((where, f"Invalid value: {show_value(request)}: {message}"))


def port_number_problem(
    port: dict[str, Any], field: str, path: Path, required: bool, errors: Errors
) -> None:
    """A port number field of ``port``: 1 to 65535 (0 or unset only when not ``required``)."""
    value = port.get(field)
    if not isinstance(value, int) or isinstance(value, bool):
        return
    if value == 0 and required:
        errors.append(((*path, field), "Required value"))
    elif value != 0 and not 1 <= value <= 65535:
        message = "must be between 1 and 65535, inclusive"
        errors.append(((*path, field), f"Invalid value: {value}: {message}"))


def _container(
    ctr: dict[str, Any], path: Path, volumes: set[str] | None, pod: bool, errors: Errors
) -> None:
    name = ctr.get("name")
    if isinstance(name, str) and name:
        problem = label_problem(name)
        if problem is not None:
            errors.append(((*path, "name"), f"Invalid value: {show_value(name)}: {problem}"))
    for i, port in _dicts(ctr.get("ports")):
        port_number_problem(port, "containerPort", (*path, "ports", i), True, errors)
        port_number_problem(port, "hostPort", (*path, "ports", i), False, errors)
    image = ctr.get("image")
    if not image:
        errors.append(((*path, "image"), "Required value"))
    elif pod and isinstance(image, str) and image != image.strip():
        message = "must not have leading or trailing whitespace"
        errors.append(((*path, "image"), f"Invalid value: {show_value(image)}: {message}"))
    _env(ctr.get("env"), (*path, "env"), errors)
    for probe in _PROBES:
        _one_action(ctr.get(probe), _PROBE_ACTIONS, (*path, probe), errors)
        _not_negative(ctr.get(probe), _PROBE_COUNTS, (*path, probe), errors)
    _ids(ctr.get("securityContext"), (*path, "securityContext"), errors)
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            _one_action(lifecycle.get(hook), _HOOK_ACTIONS, (*path, "lifecycle", hook), errors)
    _resources(ctr.get("resources"), (*path, "resources"), errors)
    if volumes is None:
        return
    for i, mount in _dicts(ctr.get("volumeMounts")):
        name = mount.get("name")
        if isinstance(name, str) and name and name not in volumes:
            errors.append(((*path, "volumeMounts", i, "name"), f'Not found: "{name}"'))


def pod_spec_problems(
    spec: Any,
    path: Path,
    restart: tuple[str, ...] | None,
    pod: bool,
    errors: Errors,
    claims: tuple[str, ...] = (),
) -> None:
    """Append the problems of one pod spec at ``path``. ``restart``: the restart policies
    the owning kind allows (None: any the schema allows); ``pod``: a Pod itself, whose
    images must not have surrounding whitespace (templates are not checked for that);
    ``claims``: volume names the owner adds (a StatefulSet's claim templates)."""
    if not isinstance(spec, dict):
        return
    volumes: set[str] | None = set(claims)
    for _, volume in _dicts(spec.get("volumes")):
        name = volume.get("name")
        if isinstance(name, str) and volumes is not None:
            volumes.add(name)
    if spec.get("volumes") is not None and not isinstance(spec.get("volumes"), list):
        volumes = None  # malformed: the schema check reports it
    for field in ("initContainers", "containers"):
        for i, ctr in _dicts(spec.get(field)):
            _container(ctr, (*path, field, i), volumes, pod, errors)
    _ids(spec.get("securityContext"), (*path, "securityContext"), errors)
    _pod_fields(spec, path, errors)
    policy = spec.get("restartPolicy")
    if restart is None:
        return
    if not policy:
        if "Always" not in restart:
            supported = ", ".join(f'"{p}"' for p in restart)
            message = f'Required value: supported values: {supported} (the default "Always" is not)'
            errors.append(((*path, "restartPolicy"), message))
    elif isinstance(policy, str) and policy not in restart:
        errors.append(((*path, "restartPolicy"), enum_error(policy, restart)))


def _pod_fields(spec: dict[str, Any], path: Path, errors: Errors) -> None:
    """The node selector's keys and values are labels', the service account's name a
    subdomain, and a toleration that only needs the key to exist has no value."""
    selector = spec.get("nodeSelector")
    for key, value in selector.items() if isinstance(selector, dict) else ():
        where = (*path, "nodeSelector")
        problem = qualified_name_problem(key)
        if problem is not None:
            errors.append((where, f"Invalid value: {show_value(key)}: {problem}"))
        problem = label_value_problem(value) if isinstance(value, str) else None
        if problem is not None:
            errors.append((where, f"Invalid value: {show_value(value)}: {problem}"))
    account = spec.get("serviceAccountName")
    problem = subdomain_problem(account) if isinstance(account, str) and account else None
    if problem is not None:
        where = (*path, "serviceAccountName")
        errors.append((where, f"Invalid value: {show_value(account)}: {problem}"))
    for i, toleration in _dicts(spec.get("tolerations")):
        if toleration.get("operator") == "Exists" and toleration.get("value"):
            message = "value must be empty when `operator` is 'Exists'"
            where = (*path, "tolerations", i, "operator")
            errors.append((where, f"Invalid value: {show_value(toleration['value'])}: {message}"))
