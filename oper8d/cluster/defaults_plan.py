"""The defaulting walk of built-in kinds, worked out once per schema node.

Used by ``cluster.defaults_builtin`` (through ``cluster.defaults``, for the in-memory
cluster's store). Every write of a built-in kind is walked along its schema to call the
defaulting function of each Go type it meets (``defaults_builtin._walk``), resolving
``$ref``s on the way; yet most of an object (its metadata, a ConfigMap's data, a
container's resources) has no defaulting function anywhere below it, and a render writes
hundreds of objects. A ``DefaultPlans`` works out once per schema node the function to
call there and the plans of the fields below that may lead to one, so a write walks only
the parts of an object that can get a default. A property test holds the result to
``defaults_builtin._walk``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Defaulter = Callable[[dict[str, Any]], None]


class _Plan:
    """What the walk does at one schema node: the defaulting function of a map there,
    the plan of each declared field (None: nothing to do below it), the plan of any
    other field (``additionalProperties``) and of a list's items."""

    __slots__ = ("defaulter", "extra", "fields", "items")

    def __init__(self, defaulter: Defaulter | None) -> None:
        self.defaulter = defaulter
        self.fields: dict[str, _Plan | None] = {}
        self.extra: _Plan | None = None
        self.items: _Plan | None = None


_UNDECLARED: Any = object()  # a field the schema node does not declare


class DefaultPlans:
    """The plans of one set of schema definitions, made as writes reach them. Holds the
    schema nodes it planned (a plan is found by the node's ``id``)."""

    def __init__(self, definitions: Mapping[str, Any], defaulters: Mapping[str, Defaulter]):
        self.definitions = definitions
        self._defaulters = defaulters
        # plans by schema node and by definition, with the node (kept alive for its id)
        self._by_node: dict[int, tuple[Mapping[str, Any], _Plan | None]] = {}
        self._by_definition: dict[tuple[str | None, int], tuple[Any, _Plan | None]] = {}

    def walk(self, value: Any, schema: Mapping[str, Any]) -> None:
        """Call the defaulting functions of ``value`` (at ``schema``), parents first."""
        plan = self._plan(schema)
        if plan is not None:
            _run(value, plan)

    def _plan(self, schema: Mapping[str, Any]) -> _Plan | None:
        known = self._by_node.get(id(schema))
        if known is not None:
            return known[1]
        name, resolved = resolve(schema, self.definitions)
        plan = None if resolved is None else self._plan_of(name, resolved)
        self._by_node[id(schema)] = (schema, plan)
        return plan

    def _plan_of(self, name: str | None, resolved: Mapping[str, Any]) -> _Plan | None:
        """The plan of a definition (or an inline schema): None when neither it nor
        anything below it has a defaulting function."""
        key = (name, id(resolved))
        known = self._by_definition.get(key)
        if known is not None:
            return known[1]
        plan = _Plan(self._defaulters.get(name) if name else None)
        # stored before the fields are planned: a $ref that loops back here finds this
        # plan (and walks it, even if it turns out to do nothing: harmless)
        self._by_definition[key] = (resolved, plan)
        props = resolved.get("properties")
        if isinstance(props, Mapping):
            for field, sub in props.items():
                if sub is not None:  # (a null property schema: as if undeclared)
                    plan.fields[field] = self._plan(sub) if isinstance(sub, Mapping) else None
        extra = resolved.get("additionalProperties")
        plan.extra = self._plan(extra) if isinstance(extra, Mapping) else None
        items = resolved.get("items")
        plan.items = self._plan(items) if isinstance(items, Mapping) else None
        if plan.defaulter or plan.extra or plan.items or any(plan.fields.values()):
            return plan
        self._by_definition[key] = (resolved, None)
        return None


def _run(value: Any, plan: _Plan) -> None:
    if type(value) is dict:
        if plan.defaulter is not None:
            plan.defaulter(value)
        fields, extra = plan.fields, plan.extra
        for key, item in value.items():
            if type(item) is dict or type(item) is list:
                sub = fields.get(key, _UNDECLARED)
                if sub is _UNDECLARED:
                    sub = extra
                if sub is not None:
                    _run(item, sub)
    elif type(value) is list and plan.items is not None:
        for item in value:
            if type(item) is dict or type(item) is list:
                _run(item, plan.items)


def resolve(
    schema: Mapping[str, Any], definitions: Mapping[str, Any]
) -> tuple[str | None, Mapping[str, Any] | None]:
    """The definition a schema names (through ``$ref`` or a one-item ``allOf``), with
    its name (None: an inline schema)."""
    name = None
    current: Any = schema
    for _ in range(8):
        if not isinstance(current, Mapping):
            return name, None
        ref = current.get("$ref")
        if isinstance(ref, str):
            name, current = ref, definitions.get(ref)
            continue
        all_of = current.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            current = all_of[0]
            continue
        return name, current
    return name, None
