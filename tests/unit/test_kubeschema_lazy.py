"""A built-in definition's properties compile when an object first reaches them
(``ObjectNode.defer``): the trees built that way are the trees compiled all at once, and
checks give the same findings whichever parts were compiled first."""

from __future__ import annotations

import threading
from typing import Any

from oper8d.kubeschema import KubeSchemas
from oper8d.kubeschema.compile import Compiler
from oper8d.kubeschema.nodes import Node, ObjectNode

#: node attributes compared as values (functions by name and captured values)
_PLAIN = ("null_ok", "fmt", "bits", "low", "high", "whole_floats", "name_problem", "parse")
_FLAGS = ("required", "preserve", "strict", "objects_only", "nulls_refused", "null_items_empty")


def _function(f: Any) -> Any:
    if not callable(f):
        return f
    cells = tuple(c.cell_contents for c in (getattr(f, "__closure__", None) or ()))
    return (getattr(f, "__qualname__", repr(f)), tuple(x for x in cells if not callable(x)))


def same_tree(a: Node, b: Node, seen: set[tuple[int, int]]) -> None:
    if (id(a), id(b)) in seen:
        return
    seen.add((id(a), id(b)))
    assert type(a) is type(b)
    for name in _PLAIN:
        if hasattr(a, name):
            assert _function(getattr(a, name)) == _function(getattr(b, name)), name
    assert [_function(f) for f in a.extra] == [_function(f) for f in b.extra]
    assert a.fast_types() == b.fast_types()
    for name in _FLAGS:
        if hasattr(a, name):
            assert getattr(a, name) == getattr(b, name), name
    if isinstance(a, ObjectNode):
        assert isinstance(b, ObjectNode)
        assert list(a.props) == list(b.props)
        for key in a.props:
            same_tree(a.props[key], b.props[key], seen)
        assert (a.additional is None) == (b.additional is None)
        if a.additional is not None and b.additional is not None:
            same_tree(a.additional, b.additional, seen)
    items = getattr(a, "items", None)
    if isinstance(items, Node):
        same_tree(items, b.items, seen)  # type: ignore[attr-defined]


def test_deferred_definitions_compile_to_the_eager_trees() -> None:
    defs = KubeSchemas.builtin().definitions
    lazy = Compiler(defs, builtin=True)
    eager = Compiler(defs, builtin=True, lazy=False)
    names = sorted(defs)
    # built in an order unlike the eager one: the last definitions first
    for name in reversed(names):
        lazy.definition(name)
    for name in names:
        same_tree(lazy.definition(name), eager.definition(name), set())


def test_a_definition_is_compiled_only_when_reached() -> None:
    defs = KubeSchemas.builtin().definitions
    compiler = Compiler(defs, builtin=True)
    root = compiler.definition("io.k8s.api.apps.v1.Deployment")
    assert isinstance(root, ObjectNode) and root.deferred
    spec = root.props["spec"]
    assert not root.deferred
    assert isinstance(spec, ObjectNode) and spec.deferred


def test_checks_agree_whatever_was_compiled_first() -> None:
    bad = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": 3}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "x", "ports": [{"containerPort": "http"}]}
                    ],
                    "volumes": [{"name": "v", "secret": {"secretName": 5}}],
                    "unknownField": 1,
                },
            },
        },
    }
    fresh = KubeSchemas.builtin()
    first = fresh.validate(bad)
    warmed = KubeSchemas.builtin()
    warmed.precompile()
    for kind in ("Deployment", "StatefulSet", "Pod"):
        warmed.validate({"apiVersion": "apps/v1" if kind != "Pod" else "v1", "kind": kind})
    assert [str(f) for f in warmed.validate(bad).errors] == [str(f) for f in first.errors]
    assert len(first.errors) >= 4


def test_threads_share_one_deferred_tree() -> None:
    defs = KubeSchemas.builtin().definitions
    compiler = Compiler(defs, builtin=True)
    root = compiler.definition("io.k8s.api.core.v1.PodSpec")
    assert isinstance(root, ObjectNode)
    found: list[dict[str, Node]] = []
    threads = [threading.Thread(target=lambda: found.append(root.props)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(props is found[0] for props in found)
    assert "containers" in found[0]


def test_precompile_builds_every_definition_a_kind_reaches() -> None:
    schemas = KubeSchemas.builtin()
    schemas.precompile()
    seen: set[int] = set()
    stack: list[Node | None] = [schemas._root(av, k) for av, k in schemas.served_kinds()]
    deferred = 0
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ObjectNode):
            deferred += node.deferred
            stack += node.props.values()
            stack.append(node.additional)
        stack.append(getattr(node, "items", None))
    assert deferred == 0
    assert len(seen) > 1000  # (every kind's tree, not just the roots)
