"""RBAC rules of the apiserver's Go validation that the OpenAPI schema leaves out: a rule
grants at least one verb, on resources of named API groups (a Role's rules cannot name
non-resource URLs); a binding refers to a Role or ClusterRole of rbac.authorization.k8s.io
and to subjects of a known kind.

Values the apiserver fills in before validating are taken as it fills them: a binding's
empty ``roleRef.apiGroup`` and a subject's empty ``apiGroup`` are defaulted, so only a
wrong non-empty one is refused. ``kubeschema.semantic`` registers the rules by kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oper8d.kubeschema.messages import Errors, enum_error, show_value
from oper8d.kubeschema.objectmeta import subdomain_problem

Rule = Callable[[dict[str, Any], Errors], None]
GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def _rules(namespaced: bool) -> Rule:
    def rule(obj: dict[str, Any], errors: Errors) -> None:
        for i, policy in _items(obj.get("rules")):
            path = ("rules", i)
            if isinstance(policy.get("verbs"), list) and not policy["verbs"]:
                message = "Required value: verbs must contain at least one value"
                errors.append(((*path, "verbs"), message))
            urls = policy.get("nonResourceURLs")
            if urls:
                if namespaced:
                    message = "namespaced rules cannot apply to non-resource URLs"
                    where = (*path, "nonResourceURLs")
                    errors.append((where, f"Invalid value: {show_value(urls)}: {message}"))
                continue
            if not policy.get("apiGroups"):
                message = "Required value: resource rules must supply at least one api group"
                errors.append(((*path, "apiGroups"), message))
            if not policy.get("resources"):
                message = "Required value: resource rules must supply at least one resource"
                errors.append(((*path, "resources"), message))

    return rule


def _binding(namespaced: bool) -> Rule:
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)

    def rule(obj: dict[str, Any], errors: Errors) -> None:
        ref = obj.get("roleRef")
        if isinstance(ref, dict):
            group, kind = ref.get("apiGroup"), ref.get("kind")
            if isinstance(group, str) and group and group != GROUP:
                errors.append((("roleRef", "apiGroup"), enum_error(group, (GROUP,))))
            if isinstance(kind, str) and kind not in kinds:
                errors.append((("roleRef", "kind"), enum_error(kind, kinds)))
        for i, subject in _items(obj.get("subjects")):
            _subject(subject, ("subjects", i), namespaced, errors)

    return rule


def _subject(
    subject: dict[str, Any], path: tuple[Any, ...], namespaced: bool, errors: Errors
) -> None:
    kind, group, name = subject.get("kind"), subject.get("apiGroup"), subject.get("name")
    if not isinstance(kind, str):
        return
    if kind not in _SUBJECT_KINDS:
        errors.append(((*path, "kind"), enum_error(kind, _SUBJECT_KINDS)))
        return
    wanted = "" if kind == "ServiceAccount" else GROUP
    if isinstance(group, str) and group and group != wanted:
        errors.append(((*path, "apiGroup"), enum_error(group, (wanted,))))
    if kind != "ServiceAccount":
        return
    if isinstance(name, str) and name:
        problem = subdomain_problem(name)
        if problem is not None:
            errors.append(((*path, "name"), f"Invalid value: {show_value(name)}: {problem}"))
    if not namespaced and not subject.get("namespace"):
        errors.append(((*path, "namespace"), "Required value"))


RBAC_RULES: dict[tuple[str, str], Rule] = {
    (GROUP, "Role"): _rules(namespaced=True),
    (GROUP, "ClusterRole"): _rules(namespaced=False),
    (GROUP, "RoleBinding"): _binding(namespaced=True),
    (GROUP, "ClusterRoleBinding"): _binding(namespaced=False),
}
