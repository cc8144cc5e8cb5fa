"""The defaulting walk of built-in kinds, worked out once per schema node.

Used by ``cluster.memory.defaults_builtin`` (through ``cluster.memory.defaults``, for the in-memory
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
    """What the walk does at one schema node that has a defaulting function in it or
    below it: the function to call on a map there, and the plans of its fields (None:
    nothing to do below) and of a list's items, each worked out when the walk first
    meets it."""

    __slots__ = ("defaulter", "extra", "fields", "items", "schema")

    def __init__(self, defaulter: Defaulter | None, schema: Mapping[str, Any]) -> None:
        self.defaulter = defaulter
        self.schema = schema  # (resolved)
        #: declared fields' plans; any other key has the one plan of the map's values
        #: (``extra``), so a map's keys (a user's names) never grow the table
        self.fields: dict[str, _Plan | None] = {}
        self.extra: _Plan | None = _UNPLANNED
        self.items: _Plan | None = _UNPLANNED


_UNPLANNED: Any = object()  # a plan not worked out yet


class DefaultPlans:
    """The plans of one set of schema definitions, made as writes reach them. Holds the
    schema nodes it planned (they are found by ``id``)."""

    def __init__(self, definitions: Mapping[str, Any], defaulters: Mapping[str, Defaulter]):
        self.definitions = definitions
        self._defaulters = defaulters
        # plans by schema node, and whether a definition (or inline schema) has a
        # defaulting function in or below it; each with its node, kept alive for its id
        self._by_node: dict[int, tuple[Mapping[str, Any], _Plan | None]] = {}
        self._reaches: dict[tuple[str | None, int], tuple[Any, bool]] = {}

    def walk(self, value: Any, schema: Mapping[str, Any]) -> None:
        """Call the defaulting functions of ``value`` (at ``schema``), parents first."""
        plan = self._plan(schema)
        if plan is not None:
            self._run(value, plan)

    def _run(self, value: Any, plan: _Plan) -> None:
        if type(value) is dict:
            if plan.defaulter is not None:
                plan.defaulter(value)
            fields = plan.fields
            for key, item in value.items():
                if type(item) is dict or type(item) is list:
                    sub = fields.get(key, _UNPLANNED)
                    if sub is _UNPLANNED:
                        sub = self._field(plan, key)
                    if sub is not None:
                        self._run(item, sub)
        elif type(value) is list:
            items = plan.items
            if items is _UNPLANNED:
                below = plan.schema.get("items")
                items = plan.items = self._plan(below) if isinstance(below, Mapping) else None
            if items is not None:
                for item in value:
                    if type(item) is dict or type(item) is list:
                        self._run(item, items)

    def _field(self, plan: _Plan, key: str) -> _Plan | None:
        """The plan of field ``key`` of a map at ``plan`` (declared, or any other), kept."""
        props = plan.schema.get("properties")
        sub = props.get(key) if isinstance(props, Mapping) else None
        if sub is not None:
            found = plan.fields[key] = self._plan(sub) if isinstance(sub, Mapping) else None
            return found
        if plan.extra is _UNPLANNED:
            extra = plan.schema.get("additionalProperties")
            plan.extra = self._plan(extra) if isinstance(extra, Mapping) else None
        return plan.extra

    def _plan(self, schema: Mapping[str, Any]) -> _Plan | None:
        known = self._by_node.get(id(schema))
        if known is not None:
            return known[1]
        name, resolved = resolve(schema, self.definitions)
        plan = None
        if resolved is not None and self._below(name, resolved):
            plan = _Plan(self._defaulters.get(name) if name else None, resolved)
        self._by_node[id(schema)] = (schema, plan)
        return plan

    def _below(self, name: str | None, resolved: Mapping[str, Any]) -> bool:
        """Whether the definition ``name`` (or an inline schema) has a defaulting
        function in it or anywhere the walk can go below it. It may say yes wrongly (a
        loop of definitions counts as yes), which only walks more; never no wrongly."""
        key = (name, id(resolved))
        known = self._reaches.get(key)
        if known is not None:
            return bool(known[1])
        self._reaches[key] = (resolved, True)  # (while worked out: a loop back says yes)
        if name is not None and name in self._defaulters:
            return True
        props = resolved.get("properties")
        below = [*props.values()] if isinstance(props, Mapping) else []
        below += [resolved.get("additionalProperties"), resolved.get("items")]
        found = False
        for sub in below:
            if isinstance(sub, Mapping):
                sub_name, sub_resolved = resolve(sub, self.definitions)
                if sub_resolved is not None and self._below(sub_name, sub_resolved):
                    found = True
                    break
        self._reaches[key] = (resolved, found)
        return found


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
