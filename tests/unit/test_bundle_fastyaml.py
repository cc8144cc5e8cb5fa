"""bundle.fastyaml: the libyaml fast path reads every document exactly as the ruamel loader
does (data, value positions, key positions), and is the path a typical bundle takes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.gen import write_bundle
from oper8d.bundle import fastyaml
from oper8d.bundle.loader import load_yaml_text, load_yaml_text_ruamel
from oper8d.errors import BundleError, SourcePos
from oper8d.limits import Limits

pytestmark = pytest.mark.skipif(not fastyaml.available(), reason="PyYAML without libyaml")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TRICKY = [
    "a: yes\nb: on\nc: 0.1.0\nd: 1e3\ne: 0x1F\nf: 2024-01-01\ng: ~\nh: 012\ni: -3\nj: 1.5\n",
    "k: .inf\nl: '5'\nm: \"true\"\nn: TRUE\no: Null\np: 1_000\nq: +7\nr: -0.5e-3\ns: 0o17\n",
    "- 1\n- [a, {b: c}]\n-   x: 1\n    y: |\n      text\n    z: >-\n      folded\n      more\n",
    "a:\n  - b\n  -\n  - c: \n",
    "k: &a [1]\nl: *a\n",
    "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",
    "a: !!str 1\nb: !secret x\n",
    "1: a\ntrue: b\n~: c\n",
    "? [a]\n: b\n",
    "a: 1\na: 2\n",
    "a: 1\n---\nb: 2\n",
    "",
    "null\n",
    "just text\n",
    "# only a comment\n",
    "a: [1, 2\n",
    "a:\n\tb: 1\n",
    "%YAML 1.2\n---\na: 1\n",
    "%YAML 1.1\n---\na: yes\nb: 0o17\n",
    "a: ! x\nb: ! 'y'\n",
    "a: 'it''s'\nb: \"\\u00e9\\n\"\nc: é ü 日本\n",
    "'quoted key': 1\n\"k2\": {x: [ ]}\n",
    "a: 1\r\nb:\r\n  - c\r\n",
    "a: 1\rb: 2\n",
    "a: x\x85y\nb: \u2028\n",
]


def _ruamel(text: str) -> object:
    try:
        doc = load_yaml_text_ruamel(text, "f.yaml", Limits())
    except BundleError as err:
        return ("error", str(err))
    return (doc.data, dict(doc.positions), dict(doc.key_positions))


def _fast(text: str) -> object:
    try:
        doc = load_yaml_text(text, "f.yaml")
    except BundleError as err:
        return ("error", str(err))
    return (doc.data, dict(doc.positions), dict(doc.key_positions))


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_documents_load_as_the_ruamel_loader_reads_them(text: str) -> None:
    assert _fast(text) == _ruamel(text)


def test_every_example_file_loads_as_the_ruamel_loader_reads_it() -> None:
    files = sorted(EXAMPLES.rglob("*.yaml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        assert _fast(text) == _ruamel(text), path


def test_a_generated_bundle_takes_the_fast_path(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path, components=4)
    text = (bundle.path / "operator.yaml").read_text(encoding="utf-8")
    built = fastyaml.fast_load(text, "f.yaml", Limits().nesting_depth)
    assert built is not None
    assert (built[0], built[1], built[2]) == _ruamel(text)


def test_documents_nesting_near_the_limit_are_left_to_ruamel_and_its_error() -> None:
    deep = "[" * 12 + "]" * 12 + "\n"
    assert fastyaml.fast_load(deep, "f.yaml", 10) is None
    with pytest.raises(BundleError, match="nests more than 10 levels"):
        load_yaml_text(deep, "f.yaml", Limits(nesting_depth=10))


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["yes", "on", "0.1.0", "1e3", "0x1F", "2024-01-01", "012", "1_0", "~", "<<"]),
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(values, st.sampled_from([False, True]))
def test_dumped_yaml_loads_as_the_ruamel_loader_reads_it(value: object, flow: bool) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True, sort_keys=False)
    assert _fast(text) == _ruamel(text)


def test_positions_made_on_demand_are_the_positions_of_the_document(tmp_path: Path) -> None:
    """``SourcePositions`` answers as the plain mapping of ``SourcePos`` it stands for, and
    so does the view of the positions below a prefix that inline objects get."""
    from oper8d.bundle.nodes import _Below

    bundle = write_bundle(tmp_path, components=3)
    text = (bundle.path / "operator.yaml").read_text(encoding="utf-8")
    doc = load_yaml_text(text, "operator.yaml")
    assert isinstance(doc.positions, fastyaml.SourcePositions)
    plain = {path: SourcePos("operator.yaml", *at) for path, at in doc.positions.raw.items()}
    assert dict(doc.positions) == plain and len(doc.positions) == len(plain)
    assert doc.positions.get(("no", "such")) is None
    with pytest.raises(KeyError):
        doc.positions[("no", "such")]
    some = next(iter(plain))
    assert doc.positions[some] is doc.positions.get(some)  # made once
    for prefix in {p[:n] for p in plain for n in range(len(p) + 1)} | {("no", "such")}:
        n = len(prefix)
        expected = {p[n:]: at for p, at in plain.items() if p[:n] == prefix}
        below = _Below(doc.positions, prefix)
        assert dict(below) == expected and len(below) == len(expected), prefix
        for path, at in expected.items():
            assert below.get(path) == at and below[path] == at
        assert below.get(("no", "such")) is None
