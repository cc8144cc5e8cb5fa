"""``template.construct``'s walk builds exactly what PyYAML's constructor builds from a
rendered text's nodes: the same values, types, shared aliases and errors (and remembering
plain scalars' tags, ``SlotLoader.scalar_tags``, changes none of them)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.limits import LimitExceeded, Limits, check_structure
from oper8d.template.construct import construct
from oper8d.template.documents import check_documents
from oper8d.template.slotloader import SlotLoader
from oper8d.template.slots import Slots

NONCE = "oper8dslot0123456789abn"


def slots_with(*values: Any) -> Slots:
    slots = Slots(NONCE)
    for value in values:
        slots.token(value)
    return slots


def token(index: int) -> str:
    return f"{NONCE}{index}z"


#: plain scalars' tags remembered across the walked parses of this module, as an engine's
#: text templates share them
SCALAR_TAGS: dict[str, str] = {}


def build(text: str, slots: Slots, walk: bool) -> list[tuple[str, Any]]:
    """Each document's (repr, value) or the error (type and text), built either way: the
    walk with remembered scalar tags, the constructor resolving every scalar afresh."""
    loader = SlotLoader(text, slots)
    if walk:
        loader.scalar_tags = SCALAR_TAGS
    out: list[tuple[str, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            value = construct(loader, node) if walk else loader.construct_document(node)
            out.append((repr(value), value))
    except Exception as exc:
        out.append((f"{type(exc).__name__}: {exc}", None))
    finally:
        loader.dispose()
    return out


def assert_same(text: str, slots: Slots) -> list[tuple[str, Any]]:
    walked, constructed = build(text, slots, True), build(text, slots, False)
    assert [r for r, _ in walked] == [r for r, _ in constructed]
    return walked


SAMPLES = [
    "a: 1\nb: [1, 2.5, true, null, ~, 0o17, 017, 0x1F, 1e3, 12:30, 2024-01-01]\n",
    "---\n---\nkind: X\n",
    "1: a\ntrue: b\n",
    "~: a\n",
    "1.5: a\n",
    "a: 1\na: 2\n",
    "base: &b {x: 1, y: [1, 2]}\nother: *b\nlist: [*b, *b]\n",
    "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",
    "r: &r [*r]\n",
    "m: &m {k: *m}\n",
    "a: !!binary aGVsbG8=\n",
    "a: !!set {x}\n",
    "a: !custom x\n",
    "a: !!str 123\nb: !!int '7'\nc: !!float '1'\n",
    "? [a, b]\n: c\n",
    "? {a: 1}\n: c\n",
    "a: =\n",
    "a: [1, 2\n",
    "- a\n- {b: c}\n- [d]\n",
    "s: 'x'\nt: \"y\\n\"\nu: |\n  block\n  text\nv: >\n  folded\n",
    "!!map {a: 1}\n",
    "!!str {a: 1}\n",
    "a: " + "[" * 200 + "]" * 200 + "\n",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_the_walk_builds_what_the_constructor_builds(text: str) -> None:
    assert_same(text, slots_with())


def test_printed_values_are_put_back_as_the_loader_puts_them() -> None:
    slots = slots_with(3, "app", {"k": [1, "v"]}, "line1\n  line2", "true", "01234")
    text = (
        f"replicas: {token(0)}\n"
        f"name: pre-{token(1)}\n"
        f"quoted: '{token(1)}'\n"
        f"data: {token(2)}\n"
        f"block: |\n  {token(3)}\n  tail\n"
        f"{token(1)}-key: {token(4)}\n"
        f"plain: {token(5)}\n"
        f"list: [{token(0)}, {token(4)}]\n"
    )
    [(_, value)] = assert_same(text, slots)
    assert value["replicas"] == 3 and value["plain"] == "01234" and value["app-key"] is True


def test_a_value_that_would_end_its_block_is_the_loaders_error() -> None:
    slots = slots_with("a\nb")
    [(message, _)] = assert_same(f"k: |\n  x\n  {token(0)}\n", slots)
    assert message.startswith("ConstructorError") and "would end the block" in message


@pytest.mark.parametrize("value", ["1", "true", {"a": 1}, [1]], ids=repr)
@pytest.mark.parametrize(
    "text",
    [
        f"x: &a {token(0)}\n*a : 2\n",
        f"v: &a {token(0)}\nm:\n  *a : 1\n",
        f"m:\n  &a {token(0)}: 1\nv: *a\n",
    ],
    ids=["value-then-key", "nested-key", "key-then-value"],
)
def test_a_printed_value_met_as_a_key_and_as_a_value_is_the_loaders(text: str, value: Any) -> None:
    """A key holding a printed value is filled as text (never typed; a list or mapping
    nested there is the loader's error), and so is the same node reached as a value
    through an alias: the walk typed it, or turned a CR's mapping into a key."""
    assert_same(text, slots_with(value))


def test_an_aliased_node_is_one_shared_value() -> None:
    [(_, value)] = assert_same("a: &x {b: 1}\nc: *x\n", slots_with())
    assert value["a"] is value["c"]
    [(_, printed)] = assert_same(f"a: &x {token(0)}\nc: *x\n", slots_with({"k": [1]}))
    assert printed["a"] is printed["c"] and printed["a"] == {"k": [1]}


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from([token(0), token(1), f"x-{token(0)}", "<<", "=", "~", "0o7", "1:2"]),
)
documents = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.one_of(st.text(max_size=6), st.integers(), scalars), children, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(documents, min_size=1, max_size=3), st.sampled_from(["block", "flow"]))
def test_any_rendered_document_is_built_alike(docs: list[Any], style: str) -> None:
    text = yaml.safe_dump_all(docs, default_flow_style=style == "flow", sort_keys=False)
    assert_same(text, slots_with(7, "v: x\n- y"))


# -- the structure check of parsed documents ------------------------------------------


def limited(value: Any, limits: Limits, written: int, check: Any) -> str:
    try:
        check(value, limits, written=written)
    except LimitExceeded as exc:
        return str(exc)
    return "fits"


@st.composite
def structures(draw: st.DrawFn) -> Any:
    """Nested documents, some sharing an object (as an alias makes them) or containing
    themselves."""
    value = draw(documents)
    shared = draw(st.one_of(st.none(), documents))
    if shared is not None and isinstance(value, dict):
        value["a"] = shared
        value["b"] = shared
    if draw(st.booleans()) and isinstance(value, list):
        value.append(value)
    return [value]


@settings(max_examples=300, deadline=None)
@given(structures(), st.integers(1, 8), st.integers(0, 30), st.integers(0, 60))
def test_the_documents_check_is_the_structure_check(
    value: Any, depth: int, aliases: int, written: int
) -> None:
    limits = Limits(nesting_depth=depth, yaml_alias_nodes=aliases)
    assert limited(value, limits, written, check_documents) == limited(
        value, limits, written, check_structure
    )
