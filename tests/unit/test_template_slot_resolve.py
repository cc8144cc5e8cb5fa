"""``SlotLoader.resolve`` answers every node's tag without PyYAML's general resolver where
it can (quoted scalars, lists, mappings, remembered plain scalars), and its path-resolver
hooks are C no-ops: the tags of composed nodes must stay exactly what the loader it
derives from (``KubernetesLoader``, PyYAML's resolver rules) gives."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.kubeyaml import KubernetesLoader
from oper8d.template.slotloader import SlotLoader
from oper8d.template.slots import Slots

NONCE = "oper8dslot0123456789abn"

#: YAML 1.1's implicit forms and their near misses: every resolver's first characters
EDGE_SCALARS = [
    "",
    "~",
    "null",
    "Null",
    "NULL",
    "nulL",
    "true",
    "True",
    "TRUE",
    "tRue",
    "false",
    "yes",
    "Yes",
    "no",
    "NO",
    "on",
    "Off",
    "y",
    "n",
    "Y",
    "0",
    "-0",
    "+1",
    "017",
    "08",
    "0o17",
    "0O7",
    "0x1F",
    "0b101",
    "1_000",
    "1:30",
    "12:30:00",
    "190:20:30.15",
    "1.5",
    ".5",
    "-.5",
    "1e3",
    "1E-3",
    "6.8523015e+5",
    ".inf",
    "-.Inf",
    ".NaN",
    ".nan",
    "2024-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "<<",
    "=",
    "a",
    "app",
    "-",
    "+",
    ".",
    "1.2.3",
    "0x",
    "1e",
    "v1",
    f"{NONCE}0z",
]

scalar_text = st.one_of(
    st.sampled_from(EDGE_SCALARS),
    st.text(alphabet="0123456789+-._:eExXoObBaAtTfFyYnNlLuU~<=", max_size=8),
    st.text(max_size=6),
)


def reference_tag(kind: Any, value: Any, implicit: tuple[bool, bool]) -> str:
    return str(KubernetesLoader("").resolve(kind, value, implicit))


@settings(max_examples=400, deadline=None)
@given(scalar_text, st.booleans(), st.booleans(), st.booleans())
def test_resolve_matches_pyyaml(value: str, plain: bool, quoted: bool, remember: bool) -> None:
    loader = SlotLoader("", Slots(NONCE))
    if remember:
        loader.scalar_tags = {}
    implicit = (plain, quoted)
    for _ in range(2):  # the second answer may come from the remembered tags
        assert loader.resolve(yaml.ScalarNode, value, implicit) == reference_tag(
            yaml.ScalarNode, value, implicit
        )
    for kind in (yaml.MappingNode, yaml.SequenceNode):
        assert loader.resolve(kind, None, (True, False)) == reference_tag(kind, None, (True, False))
        assert loader.resolve(kind, None, (False, False)) == reference_tag(
            kind, None, (False, False)
        )


def test_no_path_resolvers() -> None:
    # the no-op descend/ascend hooks are exact only while no path resolver exists
    assert not SlotLoader.yaml_path_resolvers
    assert not KubernetesLoader.yaml_path_resolvers


def test_edge_scalars_resolve_as_pyyaml() -> None:
    # every edge case, plain and quoted, against the reference (not left to sampling)
    loader = SlotLoader("", Slots(NONCE))
    loader.scalar_tags = {}
    for value in EDGE_SCALARS:
        for implicit in ((True, False), (False, True), (False, False)):
            got = loader.resolve(yaml.ScalarNode, value, implicit)
            assert got == reference_tag(yaml.ScalarNode, value, implicit), (value, implicit)


def tree(node: Any) -> Any:
    """A composed node as plain data: kind, tag, style and value, recursively."""
    if isinstance(node, yaml.ScalarNode):
        return ("scalar", node.tag, node.style, node.value)
    if isinstance(node, yaml.SequenceNode):
        return ("seq", node.tag, node.flow_style, [tree(item) for item in node.value])
    return ("map", node.tag, node.flow_style, [(tree(k), tree(v)) for k, v in node.value])


def composed(loader_type: type, text: str) -> list[Any]:
    loader = loader_type(text, Slots(NONCE)) if loader_type is SlotLoader else loader_type(text)
    if loader_type is SlotLoader:
        loader.scalar_tags = {}
    try:
        out = []
        while loader.check_node():
            out.append(tree(loader.get_node()))
        return out
    except yaml.YAMLError as exc:
        return [f"{type(exc).__name__}: {exc}"]
    finally:
        loader.dispose()


def yaml_text(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=None, sort_keys=False)


json_like = st.recursive(
    st.one_of(scalar_text, st.integers(), st.booleans(), st.none(), st.floats()),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(scalar_text, children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_like)
def test_composed_tags_match_pyyaml(value: Any) -> None:
    text = yaml_text(value)
    assert composed(SlotLoader, text) == composed(KubernetesLoader, text)


@settings(max_examples=200, deadline=None)
@given(st.lists(scalar_text, min_size=1, max_size=8))
def test_plain_scalars_compose_as_pyyaml(words: list[str]) -> None:
    # scalars written unquoted (plain), so the implicit resolvers decide their tags
    text = "".join(f"k{i}: {w}\n" for i, w in enumerate(words) if w.strip() == w and w)
    text += "list: [" + ", ".join(w for w in words if w.isalnum()) + "]\n"
    assert composed(SlotLoader, text) == composed(KubernetesLoader, text)


def test_samples_compose_as_pyyaml() -> None:
    texts = [
        "a: 1\nb: [1, 2.5, true, null, ~, 0o17, 017, 0x1F, 1e3, 12:30, 2024-01-01]\n",
        "base: &b {x: 1, y: [1, 2]}\nother: *b\n",
        "a: !!str 123\nb: !custom x\nc: 'yes'\nd: \"1\"\ne: |\n  text\n",
        "---\n---\nkind: X\n? [a, b]\n: c\n",
        "a: =\nb: <<\n",
    ]
    for text in texts:
        assert composed(SlotLoader, text) == composed(KubernetesLoader, text)
