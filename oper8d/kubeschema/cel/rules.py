"""``x-kubernetes-validations`` of a structural schema, evaluated over an object.

The one place oper8d evaluates CRD rules: ``KubeSchemas.validate`` (every custom kind:
``render``, ``run --dry-run``, ``diff``, the in-memory cluster) and the bundle's own CR
check (``engine.inputs``: ``validate --cr``, ``render``) call :class:`CelValidator`.

What the apiserver does, and so this does:

- each rule runs at the node that declares it, ``self`` the node's value (typed by
  ``values.typed``); a null or absent node runs none;
- a transition rule (one that names ``oldSelf``) runs only on update, where the node has
  an old value (with ``optionalOldSelf: true`` always, ``oldSelf`` an optional then):
  properties and map values correlate by name, items of a ``map`` list by their keys;
  items of other lists do not correlate, so no transition rule runs there;
- ratcheting: on update, a rule without ``oldSelf`` is not run where the value is
  unchanged from the old object (an object stored before a rule was added stays
  updatable);
- the message: ``messageExpression``'s string when it evaluates to one that is not
  blank, else ``message``, else ``failed rule: RULE``; ``reason`` picks the error kind
  and ``fieldPath`` the field named, below the node.

A rule it cannot evaluate (see ``runtime``) is reported in ``CelReport.unchecked`` with
the field and the reason: never passed in silence, never an error. Every check is bounded:
the CEL core's iteration budget per rule, and at most ``max_evaluations`` rule runs per
object (the rest are reported unchecked).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oper8d.kubeschema.cel.runtime import Runtime, Unchecked
from oper8d.kubeschema.cel.values import typed, unordered_lists, with_defaults
from oper8d.kubeschema.messages import Errors, MapKey, Path, format_path, json_type

_ABSENT: Any = object()
#: the variables an ``optionalOldSelf`` rule's optional ``oldSelf`` is made of
_OLD, _HAS_OLD = "oper8dOldSelf", "oper8dHasOldSelf"
_STRINGS = re.compile(r"""'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*\"""", re.S)
_OLD_SELF = re.compile(r"\boldSelf\b")
_FIELD_STEP = re.compile(r"\.([A-Za-z_$][A-Za-z0-9_$-]*)|\[\s*'((?:\\.|[^'\\])*)'\s*\]")
_REASONS = {
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}


@dataclass(frozen=True)
class CelReport:
    """Rules broken (path, message), and rules not evaluated (one line each, naming the
    field, the rule and why)."""

    errors: tuple[tuple[Path, str], ...] = ()
    unchecked: tuple[str, ...] = ()


def has_rules(schema: Any, depth: int = 0) -> bool:
    """Whether ``schema`` declares any ``x-kubernetes-validations``."""
    if not isinstance(schema, Mapping) or depth > 64:
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    subs = [*(schema.get("properties") or {}).values(), schema.get("items")]
    subs.append(schema.get("additionalProperties"))
    return any(has_rules(s, depth + 1) for s in subs)


def uses_old_self(rule: str) -> bool:
    """Whether ``rule`` names ``oldSelf`` (outside its string literals)."""
    return bool(_OLD_SELF.search(_STRINGS.sub("''", rule)))


class CelValidator:
    """Evaluates the rules of schemas; keeps the compiled rules (one per owner: a
    ``KubeSchemas``, or a caller's). Safe to share between threads."""

    def __init__(self, max_evaluations: int = 100_000) -> None:
        self._runtime = Runtime()
        self._max = max_evaluations
        self._rules: dict[int, tuple[Mapping[str, Any], bool]] = {}

    def has_rules(self, schema: Mapping[str, Any]) -> bool:
        """``has_rules(schema)``, kept per schema object (schemas are not changed)."""
        found = self._rules.get(id(schema))
        if found is None or found[0] is not schema:
            found = (schema, has_rules(schema))
            self._rules[id(schema)] = found
        return found[1]

    def check(
        self,
        schema: Mapping[str, Any],
        new: Any,
        old: Any = _ABSENT,
        *,
        path: Path = (),
        resource: bool = True,
    ) -> CelReport:
        """The rules of ``schema`` over ``new`` (at ``path``); ``old``: the object it
        replaces on update (absent on create). ``resource``: ``new`` is a whole object
        (its ``metadata`` is typed as a rule sees it)."""
        if not self.has_rules(schema):
            return CelReport()
        walk = _Walk(self._runtime, self._max)
        walk.node(schema, new, old, path, resource, False)
        return CelReport(tuple(walk.errors), tuple(walk.unchecked))


class _Walk:
    def __init__(self, runtime: Runtime, budget: int) -> None:
        self.runtime = runtime
        self.budget = budget
        self.errors: Errors = []
        self.unchecked: list[str] = []

    def node(
        self, schema: Any, value: Any, old: Any, path: Path, resource: bool, same: bool
    ) -> None:
        if value is None or not isinstance(schema, Mapping):
            return
        if isinstance(value, dict):
            value = with_defaults(schema, value)
        if old is not _ABSENT and not same:
            same = value == old
        rules = schema.get("x-kubernetes-validations")
        if isinstance(rules, list) and rules:
            self.rules(rules, schema, value, old, path, resource, same)
        if isinstance(value, dict):
            self.children(schema, value, old, path, same)
        elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            items = schema["items"]
            olds = _correlated_items(schema, old) if old is not _ABSENT else {}
            keys = schema.get("x-kubernetes-list-map-keys") or ()
            for i, item in enumerate(value):
                prior = olds.get(_key(item, keys), _ABSENT) if olds else _ABSENT
                self.node(items, item, prior, (*path, i), False, same and prior is not _ABSENT)

    def children(
        self, schema: Mapping[str, Any], value: dict[str, Any], old: Any, path: Path, same: bool
    ) -> None:
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        olds = old if isinstance(old, dict) else {}
        for key, item in value.items():
            sub = props.get(key)
            step: Any = key
            if sub is None and isinstance(extra, Mapping):
                sub, step = extra, MapKey(key)
            if sub is None:
                continue
            self.node(sub, item, olds.get(key, _ABSENT), (*path, step), False, same)

    def rules(
        self,
        rules: list[Any],
        schema: Mapping[str, Any],
        value: Any,
        old: Any,
        path: Path,
        resource: bool,
        same: bool,
    ) -> None:
        data: dict[str, Any] | None = None
        times: set[str] = set()  # date and duration fields the typed values hold as strings
        for rule in rules:
            if not isinstance(rule, Mapping) or not isinstance(rule.get("rule"), str):
                continue
            text = rule["rule"]
            transition = uses_old_self(text)
            optional = transition and rule.get("optionalOldSelf") is True
            if transition and old is _ABSENT and not optional:
                continue  # the apiserver runs transition rules on update only
            if same and not transition:
                continue  # ratcheting: an unchanged value keeps passing
            if self.budget <= 0:
                self.skip(path, text, "more rule evaluations than one object may take")
                continue
            self.budget -= 1
            try:
                self.runtime.compiled(_optional_old(text) if optional else text)
                _order_free(text, schema, transition)
                if data is None or (transition and _HAS_OLD not in data):
                    times = set()
                    data = {"self": typed(schema, value, times, resource=resource)}
                    if transition:
                        data[_HAS_OLD] = old is not _ABSENT
                        if old is not _ABSENT:
                            data["oldSelf"] = typed(schema, old, times, resource=resource)
                        data[_OLD] = data.get("oldSelf")
                _time_free(text, times, transition)
                verdict = self.runtime.verdict(_optional_old(text) if optional else text, data)
            except Unchecked as e:
                self.skip(path, text, str(e))
                continue
            if not verdict.ok:
                self.fail(rule, text, value, path, data, verdict.error, optional)

    def fail(
        self,
        rule: Mapping[str, Any],
        text: str,
        value: Any,
        path: Path,
        data: dict[str, Any],
        error: str | None,
        optional: bool,
    ) -> None:
        message = _message(self.runtime, rule, data, optional) if error is None else None
        if message is None:
            plain = rule.get("message")
            message = plain if isinstance(plain, str) and plain.strip() else f"failed rule: {text}"
            if error is not None:
                message = f"{message} (error evaluating the rule: {error})"
        at = (*path, *_field_path(rule.get("fieldPath")))
        reason = _REASONS.get(str(rule.get("reason")))
        if reason is None:
            self.errors.append((at, f'Invalid value: "{json_type(value)}": {message}'))
        else:
            self.errors.append((at, f"{reason}: {message}"))

    def skip(self, path: Path, rule: str, why: str) -> None:
        where = format_path(path) or "<root>"
        self.unchecked.append(f"{where}: rule {rule!r} not checked: {why}")


def _order_free(rule: str, schema: Mapping[str, Any], transition: bool) -> None:
    """Unchecked when ``rule`` may compare a ``set`` or ``map`` list (equal in any order
    to the apiserver, not here): it compares, and names such a list or compares whole
    values (``self == oldSelf``)."""
    if "==" not in rule and "!=" not in rule:
        return
    lists = unordered_lists(schema)
    named = sorted(name for name in lists if name == "self" or name in rule)
    if lists and (named or transition):
        fields = ", ".join(named or sorted(lists))
        raise Unchecked(f"may compare a set or map list ({fields}), equal in any order there")


def _time_free(rule: str, times: set[str], transition: bool) -> None:
    """Unchecked when ``rule`` may read a time held as a string: it names the field, or
    compares whole values (``self == oldSelf``), or the node itself is one."""
    named = sorted(name for name in times if name == "self" or name in rule)
    if times and (named or transition):
        fields = ", ".join(named or sorted(times))
        raise Unchecked(f"may read a date or duration field ({fields}), times to the apiserver")


def _optional_old(rule: str) -> str:
    """``rule`` with ``oldSelf`` an optional (``optionalOldSelf: true``): none on create."""
    return f"cel.bind(oldSelf, {_HAS_OLD} ? optional.of({_OLD}) : optional.none(), ({rule}))"


def _message(
    runtime: Runtime, rule: Mapping[str, Any], data: dict[str, Any], optional: bool
) -> str | None:
    expression = rule.get("messageExpression")
    if not isinstance(expression, str):
        return None
    if optional and uses_old_self(expression):
        expression = _optional_old(expression)
    try:
        value = runtime.evaluate(expression, data)
    except Exception:  # any failure falls back to the plain message, as the apiserver does
        return None
    return value if isinstance(value, str) and value.strip() else None


def _field_path(text: Any) -> Path:
    """``.spec.replicas`` or ``['a.b'].c`` as path steps; nothing when unreadable."""
    if not isinstance(text, str) or not text:
        return ()
    steps: list[Any] = []
    at = 0
    while at < len(text):
        m = _FIELD_STEP.match(text, at)
        if m is None:
            return ()
        steps.append(m.group(1) if m.group(1) is not None else m.group(2))
        at = m.end()
    return tuple(steps)


def _key(item: Any, keys: Any) -> Any:
    if not isinstance(item, dict):
        return _ABSENT
    return tuple(repr(item.get(k)) for k in keys)


def _correlated_items(schema: Mapping[str, Any], old: Any) -> dict[Any, Any]:
    """The old items of a ``map`` list by their keys (other lists do not correlate)."""
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return {}
    return {_key(item, keys): item for item in old if isinstance(item, dict)}
