"""Evaluate the assertions of bundle test cases against rendered objects and finished runs.

Used by ``bundletest.runner``. Each function returns the failures it found as
``Problem``s placed at the assertion that failed (an empty list: everything holds), with
messages that show what was expected and what was there, so a failing case can be fixed
from its output alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from oper8d.bundletest.model import (
    COMPONENT_STATES,
    ComponentsCheck,
    ConditionCheck,
    CountCheck,
    FieldCheck,
    ObjectCheck,
    Selector,
)
from oper8d.bundletest.values import contains, format_path, same
from oper8d.errors import Problem
from oper8d.objects import ObjView
from oper8d.redaction import is_secret, mask_secret

__all__ = [
    "INTERNAL_NAME_ANNOTATION",
    "Named",
    "check_components",
    "check_conditions",
    "check_counts",
    "check_created",
    "check_fields",
    "check_not_created",
    "check_objects",
    "component_states",
    "describe",
    "internal_name_of",
    "matching",
    "select_one",
    "show",
]

INTERNAL_NAME_ANNOTATION = "oper8.org/internal-name"

#: an object and its internal name (None for objects oper8d does not manage, e.g. the CR)
Named = tuple[str | None, ObjView]

_SHOW_LIMIT = 160


def show(value: Any) -> str:
    """A value on one line, as JSON (YAML's flow style reads the same), shortened."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."


def describe(obj: ObjView) -> str:
    """``Deployment hello-app``."""
    return f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}"


def _with_namespace(obj: ObjView) -> str:
    """``Deployment default/hello-app`` (cluster-scoped objects: no namespace)."""
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


def internal_name_of(obj: ObjView) -> str | None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    name = annotations.get(INTERNAL_NAME_ANNOTATION)
    return name if isinstance(name, str) else None


def matching(selector: Selector, objects: Iterable[Named]) -> list[Named]:
    """The objects ``selector`` picks."""
    found: list[Named] = []
    for internal, obj in objects:
        meta = obj.get("metadata") or {}
        if selector.kind is not None and obj.get("kind") != selector.kind:
            continue
        if selector.name is not None and meta.get("name") != selector.name:
            continue
        if selector.namespace is not None and meta.get("namespace") != selector.namespace:
            continue
        if selector.internal_name is not None and internal != selector.internal_name:
            continue
        found.append((internal, obj))
    return found


def _listing(objects: Sequence[Named], kind: str | None) -> str:
    """What there is instead: the objects of ``kind``, else every object."""
    same_kind = [o for _i, o in objects if kind is None or o.get("kind") == kind]
    if kind is not None and not same_kind:
        pool = [describe(o) for _i, o in objects]
        return f"no {kind} at all; there are: {', '.join(pool) or 'no objects'}"
    names = [
        f"{describe(o)} ({internal})" if internal else describe(o)
        for internal, o in objects
        if kind is None or o.get("kind") == kind
    ]
    return f"there are: {', '.join(names)}"


def select_one(
    selector: Selector, objects: Sequence[Named], *, what: str
) -> tuple[ObjView | None, Problem | None]:
    """The one object ``selector`` picks, or the problem saying why there is none."""
    found = matching(selector, objects)
    if len(found) == 1:
        return found[0][1], None
    if not found:
        message = f"no {what} {selector.describe()} ({_listing(objects, selector.kind)})"
        return None, Problem(message, selector.pos)
    where = ", ".join(
        f"{describe(o)} in {(o.get('metadata') or {}).get('namespace')}" for _i, o in found
    )
    return None, Problem(
        f"{len(found)} objects match {selector.describe()} ({where}): add namespace: or "
        "select by internalName:",
        selector.pos,
    )


def check_fields(obj: ObjView, checks: Iterable[FieldCheck], *, subject: str) -> list[Problem]:
    """Failures of ``checks`` on ``obj``; ``subject`` names the object in messages. A
    Secret's values are compared but shown as ``***``, as everywhere oper8d prints objects
    (a test log is a CI log)."""
    failures: list[Problem] = []
    shown = mask_secret(obj) if is_secret(obj) else obj
    for check in checks:
        message = _field_failure(obj, shown, check)
        if message is not None:
            failures.append(Problem(f"{subject}: {check.path}: {message}", check.pos))
    return failures


def _field_failure(obj: ObjView, shown: ObjView, check: FieldCheck) -> str | None:
    found, value, missing = _walk(obj, check.parts)
    if check.op == "absent":
        return None if not found else f"expected no value here, found {_got(shown, check)}"
    if not found:
        return f"expected {_expectation(check)}, but {missing}"
    if check.op == "equals":
        if same(value, check.value):
            return None
        return f"expected {show(check.value)}, got {_got(shown, check)}"
    if contains(value, check.value):
        return None
    return f"expected a value containing {show(check.value)}, got {_got(shown, check)}"


def _got(shown: ObjView, check: FieldCheck) -> str:
    return show(_walk(shown, check.parts)[1])


def _expectation(check: FieldCheck) -> str:
    return show(check.value) if check.op == "equals" else f"a value containing {show(check.value)}"


def _walk(tree: Any, parts: Sequence[str | int]) -> tuple[bool, Any, str]:
    """Like ``values.lookup``, and when a step is missing, a sentence saying which."""
    node = tree
    for depth, part in enumerate(parts):
        at = format_path(parts[:depth]) or "the object"
        if isinstance(node, Mapping):
            if str(part) not in node:
                keys = ", ".join(map(str, node)) or "none"
                return False, None, f"{at} has no key {str(part)!r} (its keys: {keys})"
            node = node[str(part)]
        elif isinstance(node, list):
            if not isinstance(part, int):
                return False, None, f"{at} is a list: index it as [0], [1], ..."
            if part >= len(node):
                return False, None, f"{at} has {len(node)} item{'s' if len(node) != 1 else ''}"
            node = node[part]
        else:
            return False, None, f"{at} is {show(node)}, not a mapping or list"
    return True, node, ""


def check_objects(objects: Sequence[Named], checks: Iterable[ObjectCheck]) -> list[Problem]:
    """``render.expect``: each selected object exists (once) and its fields hold."""
    failures: list[Problem] = []
    for check in checks:
        obj, problem = select_one(check.selector, objects, what="rendered object")
        if problem is not None:
            failures.append(problem)
        elif obj is not None:
            failures += check_fields(obj, check.fields, subject=describe(obj))
    return failures


def check_counts(objects: Sequence[Named], counts: Iterable[CountCheck]) -> list[Problem]:
    """``render.count``: exactly that many rendered objects of each kind."""
    failures: list[Problem] = []
    for check in counts:
        of_kind = [describe(o) for _i, o in objects if o.get("kind") == check.kind]
        if len(of_kind) != check.count:
            rendered = f": {', '.join(of_kind)}" if of_kind else ""
            failures.append(
                Problem(
                    f"expected {check.count} {check.kind} object{'s' if check.count != 1 else ''}"
                    f", rendered {len(of_kind)}{rendered}",
                    check.pos,
                )
            )
    return failures


def check_conditions(cr: ObjView, checks: Iterable[ConditionCheck]) -> list[Problem]:
    """``rollout.condition``: the final CR has each condition with the given values."""
    conditions = {c.get("type"): c for c in ((cr.get("status") or {}).get("conditions") or []) if c}
    failures: list[Problem] = []
    for check in checks:
        cond = conditions.get(check.type)
        if cond is None:
            have = ", ".join(str(t) for t in conditions) or "none"
            failures.append(
                Problem(f"the CR has no {check.type} condition (it has: {have})", check.pos)
            )
            continue
        wrong = [
            f"{key} {show(want)}, got {show(cond.get(key))}"
            for key, want in (("status", check.status), ("reason", check.reason))
            if want is not None and cond.get(key) != want
        ]
        message = str(cond.get("message") or "")
        if check.message_contains is not None and check.message_contains not in message:
            wrong.append(f"a message containing {show(check.message_contains)}")
        if wrong:
            actual = f"{cond.get('status')} {cond.get('reason')}" + (
                f": {message}" if message else ""
            )
            failures.append(
                Problem(
                    f"condition {check.type}: expected {'; '.join(wrong)} (it is {actual})",
                    check.pos,
                )
            )
    return failures


def component_states(cr: ObjView) -> dict[str, set[str]]:
    """status.componentStatus as ``state -> component names`` (see COMPONENT_STATES)."""
    status = (cr.get("status") or {}).get("componentStatus") or {}
    out: dict[str, set[str]] = {}
    for state, key in COMPONENT_STATES.items():
        items = status.get(key) or []
        if state == "waiting":
            out[state] = {str(w.get("component")) for w in items if isinstance(w, Mapping)}
        else:
            out[state] = {str(n) for n in items}
    return out


def check_components(cr: ObjView, checks: Iterable[ComponentsCheck]) -> list[Problem]:
    """``rollout.components``: exactly these components are in each state given."""
    states = component_states(cr)
    failures: list[Problem] = []
    for check in checks:
        actual = states.get(check.state, set())
        if actual == check.names:
            continue
        details = []
        if check.names - actual:
            details.append(f"not {check.state}: {', '.join(sorted(check.names - actual))}")
        if actual - check.names:
            details.append(f"also {check.state}: {', '.join(sorted(actual - check.names))}")
        failures.append(
            Problem(
                f"{check.state} components: expected [{', '.join(sorted(check.names))}], "
                f"got [{', '.join(sorted(actual))}] ({'; '.join(details)})",
                check.pos,
            )
        )
    return failures


def check_created(
    selectors: Iterable[Selector], existing: Sequence[Named], ever: Sequence[Named]
) -> list[Problem]:
    """``rollout.created``: each selected object exists when the run ends (``existing``);
    ``ever`` (every object written) tells "never created" from "deleted again"."""
    failures: list[Problem] = []
    for selector in selectors:
        if matching(selector, existing):
            continue
        if matching(selector, ever):
            message = f"{selector.describe()} was created but no longer exists when the run ended"
        else:
            made = sorted({_with_namespace(o) for _i, o in existing})
            message = (
                f"{selector.describe()} was never created (the cluster holds: "
                f"{', '.join(made) or 'nothing'})"
            )
        failures.append(Problem(message, selector.pos))
    return failures


def check_not_created(selectors: Iterable[Selector], ever: Sequence[Named]) -> list[Problem]:
    """``rollout.notCreated``: no selected object was written at any time of the run."""
    failures: list[Problem] = []
    for selector in selectors:
        found = matching(selector, ever)
        if found:
            failures.append(
                Problem(
                    f"{describe(found[0][1])} was created during the run (expected it never to "
                    "exist)",
                    selector.pos,
                )
            )
    return failures
