"""Label selectors: the string and object forms select what the API server would."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.cluster.selectors import (
    Requirement,
    Selector,
    _Parser,
    format_selector,
    matches,
    parse_selector,
    selector_from_dict,
)
from oper8d.errors import ClusterError

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (db,web)", True),
        ("app in (db)", False),
        ("missing in (x)", False),
        ("app notin (db)", True),
        ("app notin (web, db)", False),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("  app = web ,  ! missing ", True),
        ("version>2", True),
        ("version<3", False),
        ("app>1", False),
        ("example.com/role", False),
    ],
)
def test_string_selectors_match_like_the_api_server(selector: str, expected: bool) -> None:
    assert matches(selector, LABELS) is expected


def test_an_empty_value_selects_labels_with_an_empty_value() -> None:
    assert matches("flag=", {"flag": ""})
    assert not matches("flag=", {"flag": "on"})
    assert not matches("flag=", {})
    assert matches("flag in ()", {"flag": ""})


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({}, True),
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "web", "tier": "back"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}, False),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "gone", "operator": "DoesNotExist"}],
            },
            True,
        ),
    ],
)
def test_object_selectors_match_like_the_api_server(selector: dict, expected: bool) -> None:
    assert matches(selector, LABELS) is expected


@pytest.mark.parametrize(
    "text",
    [
        "app=web,",
        ",app",
        "app in web",
        "app in (web",
        "app notin ()x",
        "app=web=db",
        "app web",
        "-bad=x",
        "app=-bad",
        "a/b/c=x",
        "UPPER.example/x=y",
        "version>x",
        "!",
        "app in (a b)",
    ],
)
def test_invalid_string_selectors_are_refused_with_a_400(text: str) -> None:
    with pytest.raises(ClusterError) as caught:
        parse_selector(text)
    assert caught.value.status == 400
    assert repr(text) in str(caught.value)


@pytest.mark.parametrize(
    "spec",
    [
        {"app": "web"},
        {"matchLabels": {"app": 3}},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"operator": "Exists"}]},
    ],
)
def test_invalid_object_selectors_are_refused_with_a_400(spec: dict) -> None:
    with pytest.raises(ClusterError) as caught:
        selector_from_dict(spec)
    assert caught.value.status == 400


def test_a_plain_label_map_is_refused_with_a_hint_to_use_match_labels() -> None:
    with pytest.raises(ClusterError, match="matchLabels"):
        selector_from_dict({"app": "web"})


def test_the_canonical_string_form_sorts_terms_and_values() -> None:
    selector = parse_selector("z notin (b,a), a in (y,x), !m, k, v!=1, e=2")
    assert format_selector(selector) == "a in (x,y),e=2,k,!m,v!=1,z notin (a,b)"


# -- properties ---------------------------------------------------------------------------
keys = st.sampled_from(["app", "tier", "example.com/role", "x_1"])
values = st.sampled_from(["", "web", "db", "1", "2", "a.b-c"])
label_sets = st.dictionaries(keys, values, max_size=4)


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    key = draw(keys)
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    if operator in ("Exists", "DoesNotExist"):
        return Requirement(key, operator)
    if operator in ("Gt", "Lt"):
        return Requirement(key, operator, (str(draw(st.integers(-3, 3))),))
    chosen = draw(st.lists(values, min_size=1, max_size=3, unique=True))
    return Requirement(key, operator, tuple(chosen))


selectors = st.lists(requirements(), max_size=4).map(lambda rs: Selector(tuple(rs)))


@given(selectors, label_sets)
def test_formatting_and_parsing_back_selects_the_same_labels(
    selector: Selector, labels: dict[str, str]
) -> None:
    assert parse_selector(format_selector(selector)).matches(labels) == selector.matches(labels)


@given(selectors)
def test_the_canonical_form_is_a_fixed_point(selector: Selector) -> None:
    text = format_selector(selector)
    assert format_selector(parse_selector(text)) == text


@given(st.dictionaries(keys, values, min_size=1, max_size=3), label_sets)
def test_equality_terms_match_exactly_the_label_sets_that_contain_them(
    pairs: dict[str, str], labels: dict[str, str]
) -> None:
    text = ",".join(f"{k}={v}" for k, v in pairs.items())
    contains = all(k in labels and labels[k] == v for k, v in pairs.items())
    assert matches(text, labels) == contains
    assert matches({"matchLabels": pairs}, labels) == contains


@given(label_sets, label_sets)
def test_a_selector_from_labels_selects_every_superset(
    pairs: dict[str, str], extra: dict[str, str]
) -> None:
    assert matches({"matchLabels": pairs}, {**extra, **pairs})


@pytest.mark.parametrize(
    "text", ["", "a=b", "a!=b,c in (x,y)", "!legacy", "n>1", "oper8d.io/owner=u1"]
)
def test_a_parsed_selector_is_remembered_and_equals_a_fresh_parse(text: str) -> None:
    # parse_selector is cached (prune lists with the same strings on every reconcile):
    # the cached answer is the one the parser gives, and is shared, so it must be immutable
    fresh = _Parser(text).selector()
    assert parse_selector(text) == fresh
    assert parse_selector(text) is parse_selector(text)
    with pytest.raises(dataclasses.FrozenInstanceError):
        parse_selector(text).requirements = ()  # type: ignore[misc]


def test_an_invalid_selector_fails_every_time_it_is_parsed() -> None:
    for _ in range(2):  # a failure is not cached as an answer
        with pytest.raises(ClusterError):
            parse_selector("a in (")
