"""ObjectMeta rules the apiserver's validation code applies beyond the schema.

Used by ``kubeschema.catalog`` for every object, by embedded resources and (labels and
annotations only) by ``kubeschema.semantic`` for pod templates: a name (or
generateName) is required and must have the form its kind demands, namespaces are DNS
labels, label keys and values and annotation keys are qualified names, annotations stay
under 256 KiB, finalizers are qualified names (and, on a built-in kind, a standard name or
one with a ``domain/`` prefix; never both ``orphan`` and ``foregroundDeletion``),
ConfigMap/Secret keys are valid config keys, and a workload's selector selects its own
pod template. Messages are apimachinery's, so an author who has seen the apiserver's error
recognises ours.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from oper8d.kubeschema.messages import Errors, MapKey, Path, show_value

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_TOTAL_ANNOTATIONS = 256 * 1024
#: finalizer names a built-in kind takes without a ``domain/`` prefix
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_ORPHAN, _FOREGROUND = "orphan", "foregroundDeletion"

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name')"
)
_QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName', 'my.name' or '123-abc')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name', or 'KEY_NAME', or 'key-name')"
)


@lru_cache(maxsize=4096)  # pure; the same names and keys recur on every render
def subdomain_problem(name: str) -> str | None:
    if len(name) > 253:
        return "must be no more than 253 characters"
    return None if _DNS1123_SUBDOMAIN.fullmatch(name) else _SUBDOMAIN_MSG


@lru_cache(maxsize=4096)  # pure; the same names and keys recur on every render
def label_problem(name: str) -> str | None:
    if len(name) > 63:
        return "must be no more than 63 characters"
    return None if _DNS1123_LABEL.fullmatch(name) else _LABEL_MSG


@lru_cache(maxsize=4096)  # pure; the same names and keys recur on every render
def dns1035_problem(name: str) -> str | None:
    if len(name) > 63:
        return "must be no more than 63 characters"
    return None if _DNS1035_LABEL.fullmatch(name) else _DNS1035_MSG


def path_segment_problem(name: str) -> str | None:
    if name in (".", ".."):
        return f'may not be "{name}"'
    for bad in ("/", "%"):
        if bad in name:
            return f"may not contain '{bad}'"
    return None


#: kind -> how its name is checked (default: DNS-1123 subdomain); a kind whose Go validation
#: leaves its ObjectMeta to the generic check has a path segment name (any length, case)
NAME_RULES: dict[tuple[str, str], Callable[[str], str | None]] = {
    ("policy", "PodDisruptionBudget"): path_segment_problem,
    ("", "Service"): dns1035_problem,
    ("", "Namespace"): label_problem,
    ("rbac.authorization.k8s.io", "Role"): path_segment_problem,
    ("rbac.authorization.k8s.io", "ClusterRole"): path_segment_problem,
    ("rbac.authorization.k8s.io", "RoleBinding"): path_segment_problem,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): path_segment_problem,
}


#: review kinds (TokenReview, SubjectAccessReview, ...) are answered, not stored: no name
NAMELESS_GROUPS = frozenset({"authentication.k8s.io", "authorization.k8s.io"})


@lru_cache(maxsize=4096)  # pure; the same names and keys recur on every render
def qualified_name_problem(key: str) -> str | None:
    """A label or annotation key: ``[prefix/]name``."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if slash:
        problem = subdomain_problem(prefix)
        if problem:
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    return None if _QUALIFIED.fullmatch(name) else _QUALIFIED_MSG


def meta_problems(
    group: str, kind: str, meta: Any, path: Path, errors: Errors, builtin: bool = True
) -> None:
    """Append the ObjectMeta problems of one object's ``metadata`` (at ``path``);
    ``builtin``: a built-in kind, whose finalizers follow the stricter rule."""
    if not isinstance(meta, dict):
        meta = {}
    name, generate = meta.get("name"), meta.get("generateName")
    rule = NAME_RULES.get((group, kind), subdomain_problem)
    if not name and not generate and group not in NAMELESS_GROUPS:
        errors.append(((*path, "name"), "Required value: name or generateName is required"))
    elif isinstance(name, str) and name:
        problem = rule(name)
        if problem:
            errors.append(((*path, "name"), f'Invalid value: "{name}": {problem}'))
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        problem = label_problem(namespace)
        if problem:
            errors.append(((*path, "namespace"), f'Invalid value: "{namespace}": {problem}'))
    label_annotation_problems(meta, path, errors)
    finalizer_problems(meta.get("finalizers"), (*path, "finalizers"), builtin, errors)


def finalizer_problems(finalizers: Any, path: Path, builtin: bool, errors: Errors) -> None:
    """Append the problems of an ObjectMeta's ``finalizers`` (at ``path``): each a
    qualified name (a null item counts as ``""``, as the apiserver decodes it); on a
    built-in kind a name without ``/`` must be a standard one (a custom resource's only
    draws a warning on the apiserver); ``orphan`` and ``foregroundDeletion`` exclude each
    other. Duplicates are the schema check's (server-side apply refuses a set's)."""
    if not isinstance(finalizers, list):
        return  # absent, or of the wrong type: the schema check reports that
    for i, name in enumerate(finalizers):
        if name is None:
            name = ""
        if not isinstance(name, str):
            continue
        problem = qualified_name_problem(name)
        if problem:
            errors.append(((*path, i), f"Invalid value: {show_value(name)}: {problem}"))
        elif builtin and "/" not in name and name not in STANDARD_FINALIZERS:
            message = "name is neither a standard finalizer name nor is it fully qualified"
            errors.append(((*path, i), f"Invalid value: {show_value(name)}: {message}"))
    if _ORPHAN in finalizers and _FOREGROUND in finalizers:
        shown = json.dumps(finalizers, separators=(",", ":"), default=str)
        message = f"finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set"
        errors.append((path, f"Invalid value: {shown}: {message}"))


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    return None if _LABEL_VALUE.fullmatch(value) else _LABEL_VALUE_MSG


def label_annotation_problems(meta: dict[str, Any], path: Path, errors: Errors) -> None:
    """Append the problems of the labels and annotations of an ObjectMeta at ``path``
    (an object's own metadata, or one embedded in it such as a pod template's)."""
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for key, value in labels.items():
            problem = qualified_name_problem(str(key))
            if problem:
                where = (*path, "labels", MapKey(key))
                errors.append((where, f'Invalid value: "{key}": {problem}'))
            problem = label_value_problem(value) if isinstance(value, str) else None
            if problem:
                where = (*path, "labels", MapKey(key))
                errors.append((where, f'Invalid value: "{value}": {problem}'))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        total = 0
        for key, value in annotations.items():
            problem = qualified_name_problem(str(key).lower())
            if problem:
                where = (*path, "annotations", MapKey(key))
                errors.append((where, f'Invalid value: "{key}": {problem}'))
            total += len(str(key)) + (len(value) if isinstance(value, str) else 0)
        if total > _TOTAL_ANNOTATIONS:
            errors.append(
                ((*path, "annotations"), f"Too long: must have at most {_TOTAL_ANNOTATIONS} bytes")
            )


def config_key_problems(obj: dict[str, Any], fields: tuple[str, ...], errors: Errors) -> None:
    """ConfigMap ``data``/``binaryData`` and Secret ``data``/``stringData`` keys."""
    for field in fields:
        values = obj.get(field)
        if not isinstance(values, dict):
            continue
        for key in values:
            if not isinstance(key, str) or len(key) > 253 or not _CONFIG_KEY.fullmatch(key):
                errors.append(((field, MapKey(key)), f'Invalid value: "{key}": {_CONFIG_KEY_MSG}'))
            elif key == "..":
                errors.append(((field, MapKey(key)), "Invalid value: \"..\": must not be '..'"))


#: (group, kind) whose ``spec.selector`` must select ``spec.template.metadata.labels``
SELECTING_KINDS = frozenset(
    {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet")}
)


def selector_problems(obj: dict[str, Any], errors: Errors) -> None:
    """A workload whose selector does not match its own pod template's labels."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    selector, template = spec.get("selector"), spec.get("template")
    if not isinstance(template, dict):
        return
    meta = template.get("metadata")
    # a template without labels has none: a non-empty selector cannot select it
    labels = (meta.get("labels") if isinstance(meta, dict) else None) or {}
    if not isinstance(selector, dict) or not isinstance(labels, dict):
        return
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return
    if _selects(selector, labels) is False:
        path = ("spec", "template", "metadata", "labels")
        errors.append((path, "Invalid value: `selector` does not match template `labels`"))


def _selects(selector: dict[str, Any], labels: dict[str, Any]) -> bool | None:
    """Whether a LabelSelector selects ``labels``; None when it is malformed (reported by
    the schema check instead)."""
    match = selector.get("matchLabels") or {}
    if not isinstance(match, dict):
        return None
    if any(k not in labels or _text(labels[k]) != _text(v) for k, v in match.items()):
        return False
    for expr in selector.get("matchExpressions") or ():
        if not isinstance(expr, dict):
            return None
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        label = labels.get(key) if isinstance(key, str) else None
        if op == "In" and label not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _text(value: Any) -> Any:
    """A label value as the apiserver decodes it: null is ``""``."""
    return "" if value is None else value
