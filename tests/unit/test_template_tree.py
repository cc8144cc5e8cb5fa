"""Inline objects: the skeleton plan (one marshalled copy, templated strings put in place)
renders exactly what the general plan (mapping by mapping) renders, errors included."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.errors import BundleError, ConfigError, SourcePos
from oper8d.template import TemplateEngine
from oper8d.template.compiled import CompiledString

POS = SourcePos("operator.yaml", 1, 1)
CONTEXT = {
    "spec": {"replicas": 3, "labels": {"app": "web"}, "ports": [80, 443]},
    "name": "demo",
}


class LoaderStr(str):
    """A str subclass, as a YAML loader may hand over: normalised before planning."""


_STRINGS = [
    "plain",
    "",
    "{ not a template }",
    "{{ spec.replicas }}",
    "{{ name }}-app",
    "{% if spec.replicas > 1 %}ha{% else %}single{% endif %}",
    "{{ spec.labels }}",
    "{{ spec.ports }}",
    "{% set x = 2 %}{{ x }}",
    "{{ nope }}",  # undefined: fails when rendered
    "{{ spec.ports[5] }}",  # undefined too
    "{{ ",  # a syntax error: fails when compiled
    "{% for %}",  # another
]
_scalars = st.one_of(
    st.sampled_from(_STRINGS),
    st.sampled_from(_STRINGS).map(LoaderStr),
    st.integers(-3, 3),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, width=16),
)
_keys = st.one_of(
    st.sampled_from(["a", "b", "c", "metadata", "{{ name }}"]),
    st.sampled_from(["a", "d"]).map(LoaderStr),
    st.integers(0, 2),
)
_trees = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=25,
)


def _positions(value: Any, path: tuple[Any, ...], out: dict[Any, SourcePos], keep: Any) -> None:
    """A position for some paths of ``value`` (``keep`` decides which), line = order met."""
    if keep(path):
        out[path] = SourcePos("operator.yaml", len(out) + 2, len(path) + 1)
    if isinstance(value, dict | list | tuple):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _positions(item, (*path, key), out, keep)


def _outcome(engine: TemplateEngine, value: Any, positions: Any, general: bool) -> Any:
    """What compiling and rendering ``value`` gives: the object, or the error and where."""
    try:
        tree = engine.tree(value, POS, positions, general=general)
    except BundleError as err:
        return ("compile", [(p.message, p.pos) for p in err.problems])
    shape = (tree.is_static, tree.references)
    try:
        first = tree.render(CONTEXT)
    except ConfigError as err:
        return ("render", shape, str(err), err.pos)
    second = tree.render(CONTEXT)
    assert second == first and (second is not first or not isinstance(first, dict | list))
    return ("ok", shape, _typed(first))


def _typed(value: Any) -> Any:
    """``value`` with the exact type of every key and value (a ``str`` subclass compares
    equal to the ``str`` the object must hold)."""
    if isinstance(value, dict):
        return [(type(k).__name__, k, _typed(v)) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(_trees, st.sets(st.integers(0, 40)))
def test_the_skeleton_plan_renders_what_the_general_plan_renders(
    value: Any, dropped: set[int]
) -> None:
    positions: dict[Any, SourcePos] = {}
    seen: list[int] = []

    def keep(_path: Any) -> bool:
        seen.append(0)
        return len(seen) not in dropped

    _positions(value, (), positions, keep)
    engine = TemplateEngine()
    fast = _outcome(engine, value, positions, general=False)
    assert fast == _outcome(engine, value, positions, general=True)
    assert fast == _outcome(TemplateEngine(), value, positions, general=True)


def test_the_skeleton_keeps_key_order_and_gives_fresh_containers() -> None:
    engine = TemplateEngine()
    source = {"z": "{{ name }}", "a": {"m": [1, {"x": "{{ spec.replicas }}"}]}, "b": [[]]}
    tree = engine.tree(source, POS)
    first, second = tree.render(CONTEXT), tree.render(CONTEXT)
    assert first == {"z": "demo", "a": {"m": [1, {"x": 3}]}, "b": [[]]}
    assert list(first) == ["z", "a", "b"]
    first["a"]["m"][1]["x"] = 0
    first["b"][0].append(1)
    assert second == {"z": "demo", "a": {"m": [1, {"x": 3}]}, "b": [[]]}
    assert source["a"] == {"m": [1, {"x": "{{ spec.replicas }}"}]}


def test_one_object_at_two_places_of_the_source_renders_as_two_objects() -> None:
    """Data handed to ``tree`` through the Python API may share an object between two
    places (the YAML loader never does); each render still gives a copy at each place, as
    the general plan does (found by an outside tester)."""
    engine = TemplateEngine()
    templated, constant = {"x": "{{ name }}"}, {"k": [1]}
    tree = engine.tree({"p": templated, "q": templated, "r": constant, "s": constant}, POS)
    out = tree.render(CONTEXT)
    out["p"]["x"] = "changed"
    out["r"]["k"].append(2)
    assert out == {"p": {"x": "changed"}, "q": {"x": "demo"}, "r": {"k": [1, 2]}, "s": {"k": [1]}}


def test_a_repeated_string_is_the_same_compiled_string_at_its_own_place() -> None:
    engine = TemplateEngine()
    here, there = SourcePos("operator.yaml", 3, 5), SourcePos("operator.yaml", 9, 7)
    first = engine.expression("{{ spec.replicas }}", here).compiled
    again = engine.expression("{{ spec.replicas }}", there).compiled
    assert first is not None and again is not None
    fresh = CompiledString(
        "{{ spec.replicas }}", there, first.references, native=first.native, template=first.template
    )
    assert first.pos == here and again.pos == there
    for field in dataclasses.fields(again):
        assert getattr(again, field.name) == getattr(fresh, field.name), field.name
    assert again.render(dict(CONTEXT)) == 3
