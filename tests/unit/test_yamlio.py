"""``yamlio`` writes the bytes PyYAML writes, whichever path a document takes.

Rendered output is committed and diffed in CI, so the direct writer for simple documents
must never change a byte: it is held to PyYAML's own dump on generated documents (simple
ones, and ones with every kind of value that sends a document to PyYAML)."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from oper8d import yamlio


def pyyaml(obj: Any) -> str:
    return yamlio._pyyaml_dump(obj)


words = st.sampled_from(
    ["a", "app", "x.y/z", "1.0.0", "2", "0o7", "1:20", "yes", "null", "true", "on", "~", "-a",
     "a-", "a b", "a  b", "a:b", "a:", "a: b", "a #b", "a#b", " a", "a ", "'a'", "é", "",
     "...", "---", "@a", "a@b", "=", "<<", "2001-12-14", "1e3", ".5", "0x1F", "1_000",
     "ghcr.io/example/app:1.0.0", "a\nb", "a\n", "\ta", "k" * 120, "Null", "NO", "y"]
)  # fmt: skip
text = st.one_of(words, st.text(max_size=6))
scalars = st.one_of(
    text, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False), st.just({}),
    st.just([]),
)  # fmt: skip


def documents(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=4)
        ),
        max_leaves=12,
    )


@given(st.dictionaries(text, documents(text), min_size=1, max_size=4))
def test_a_document_is_written_as_pyyaml_writes_it(doc: dict[str, Any]) -> None:
    assert yamlio.dump(doc) == pyyaml(doc)


@given(st.lists(st.one_of(documents(words), st.dictionaries(words, documents(words))), max_size=4))
def test_a_stream_is_written_as_pyyaml_writes_it(docs: list[Any]) -> None:
    assert yamlio.dump_all(docs) == "---\n".join(pyyaml(d) for d in docs)


def test_an_object_met_twice_keeps_its_anchor() -> None:
    shared: dict[str, Any] = {"app": "web"}
    empty: dict[str, Any] = {}
    for doc in ({"a": shared, "b": shared}, {"a": empty, "b": [empty]}):
        out = yamlio.dump(doc)
        assert out == pyyaml(doc) and "&id001" in out
        assert yaml.safe_load(out) == doc


def test_what_it_writes_reads_back_as_the_same_data() -> None:
    doc = {"data": {"REPLICAS": "2", "on": "yes", "v": "1.0.0", "n": 2, "t": True, "e": ""}}
    assert yaml.safe_load(yamlio.dump(doc)) == doc
    assert yamlio.dump(doc) == pyyaml(doc)
