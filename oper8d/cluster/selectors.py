"""Kubernetes label selectors: parse, match and format both forms.

Used by ``MemoryCluster.list(label_selector=...)``, by the in-memory cluster's admission
checks (a workload's ``spec.selector`` must match its pod template) and by anything that
needs to know which objects a Service or Deployment selects.

Two forms, one model (``Selector``, a conjunction of ``Requirement``s):

* the string form of list requests: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
  ``a notin (x)``, ``a`` (exists), ``!a`` (does not exist), ``a>1`` / ``a<1`` (integer
  compare), joined by commas (AND);
* the object form of ``spec.selector`` in Deployments, Jobs, ...:
  ``{matchLabels: {...}, matchExpressions: [{key, operator, values}]}`` with operators
  In, NotIn, Exists, DoesNotExist. (A Service's ``spec.selector`` is a plain map: pass it
  as ``{"matchLabels": selector}``.)

Semantics follow the API server: ``!=`` and ``notin`` also match objects without the
label; ``in`` and ``=`` need it; the empty selector matches everything. Keys and values are
checked as the API server checks labels; an invalid selector raises
``ClusterError(status=400)`` saying what is wrong and where.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oper8d.errors import ClusterError
from oper8d.kinds import is_dns_subdomain

__all__ = [
    "Requirement",
    "Selector",
    "as_selector",
    "format_selector",
    "label_key_problem",
    "label_value_problem",
    "matches",
    "parse_selector",
    "selector_from_dict",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_INTEGER = re.compile(r"[-+]?[0-9]+")
_SPECIAL = "!=,()<>"


@functools.lru_cache(maxsize=4096)  # pure; every write checks the same few keys again
def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``), or None when it is."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return f"label key {key!r} has an empty prefix before '/'"
    if slash and not is_dns_subdomain(prefix):
        return (
            f"label key prefix {prefix!r} must be a DNS subdomain: lower-case letters, digits, "
            "'-' and '.', at most 253 characters"
        )
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        return (
            f"label key name {name!r} must be 1-63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


@functools.lru_cache(maxsize=4096)  # pure; every write checks the same few values again
def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is."""
    if value == "":
        return None
    if len(value) > 63 or not _NAME.fullmatch(value):
        return (
            f"label value {value!r} must be at most 63 characters of letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit (or be empty)"
        )
    return None


@dataclass(frozen=True)
class Requirement:
    """One term of a selector. ``a=b`` is ``In`` with one value, ``a!=b`` ``NotIn``."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        # Gt / Lt: the label must hold an integer
        if not present or not _INTEGER.fullmatch(labels[self.key]):
            return False
        have, bound = int(labels[self.key]), int(self.values[0])
        return have > bound if self.operator == "Gt" else have < bound

    def __str__(self) -> str:
        values = sorted(self.values)
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if self.operator == "Gt":
            return f"{self.key}>{values[0]}"
        if self.operator == "Lt":
            return f"{self.key}<{values[0]}"
        if len(values) == 1:
            return (
                f"{self.key}={values[0]}" if self.operator == "In" else f"{self.key}!={values[0]}"
            )
        word = "in" if self.operator == "In" else "notin"
        return f"{self.key} {word} ({','.join(values)})"


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements; the empty selector matches every label set."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return format_selector(self)


def format_selector(selector: Selector) -> str:
    """The canonical string form (terms sorted by key), which ``parse_selector`` reads back."""
    terms = sorted(selector.requirements, key=lambda r: (r.key, r.operator, sorted(r.values)))
    return ",".join(str(r) for r in terms)


def _invalid(text: str, why: str) -> ClusterError:
    return ClusterError(
        f"invalid label selector {text!r}: {why}. "
        "Write terms like 'app=web', 'tier!=db', 'env in (a,b)', 'env notin (c)', 'app', '!app', "
        "joined by commas",
        status=400,
    )


def _lex(text: str) -> list[tuple[str, int]]:
    """Tokens with their positions: operators and punctuation as themselves, anything else
    (keys, values, the words in/notin) as identifiers."""
    tokens: list[tuple[str, int]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "!=" and text[i + 1 : i + 2] == "=":
            tokens.append((ch + "=", i))
            i += 2
        elif ch in _SPECIAL:
            tokens.append((ch, i))
            i += 1
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            tokens.append((text[start:i], start))
    return tokens


def _is_ident(token: str | None) -> bool:
    return token is not None and token[0] not in _SPECIAL


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.pos += 1
        return token

    def where(self) -> str:
        if self.pos < len(self.tokens):
            return f"at position {self.tokens[self.pos][1]}"
        return "at the end"

    def fail(self, why: str) -> ClusterError:
        return _invalid(self.text, f"{why} {self.where()}")

    def key(self) -> str:
        token = self.peek()
        if not _is_ident(token):
            raise self.fail("expected a label key")
        assert token is not None
        self.pos += 1
        if problem := label_key_problem(token):
            raise _invalid(self.text, problem)
        return token

    def value(self) -> str:
        """A value, or "" when the next token ends it (``a=`` selects the empty value)."""
        token = self.peek()
        if _is_ident(token):
            assert token is not None
            self.pos += 1
            if problem := label_value_problem(token):
                raise _invalid(self.text, problem)
            return token
        if token in (None, ",", ")"):
            return ""
        raise self.fail("expected a value")

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            self.pos -= 1
            raise self.fail("expected '(' after in/notin")
        values: list[str] = []
        while True:
            values.append(self.value())  # "()" is the set {""}, as the API server reads it
            token = self.take()
            if token == ")":
                return tuple(dict.fromkeys(values))
            if token != ",":
                self.pos -= 1
                raise self.fail("expected ',' or ')' in a value list")

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.pos += 1
            return Requirement(self.key(), "DoesNotExist")
        key = self.key()
        token = self.peek()
        if token in (None, ","):
            return Requirement(key, "Exists")
        self.pos += 1
        if token in ("=", "=="):
            return Requirement(key, "In", (self.value(),))
        if token == "!=":
            return Requirement(key, "NotIn", (self.value(),))
        if token in ("in", "notin"):
            return Requirement(key, "In" if token == "in" else "NotIn", self.value_set())
        if token in (">", "<"):
            bound = self.take()
            if bound is None or not _INTEGER.fullmatch(bound):
                self.pos -= 1
                raise self.fail(f"expected an integer after '{token}'")
            return Requirement(key, "Gt" if token == ">" else "Lt", (bound,))
        self.pos -= 1
        raise self.fail("expected an operator (=, ==, !=, in, notin, >, <) or ','")

    def selector(self) -> Selector:
        if not self.tokens:
            return Selector()
        terms = [self.requirement()]
        while self.peek() is not None:
            if self.take() != ",":
                self.pos -= 1
                raise self.fail("expected ',' between terms")
            terms.append(self.requirement())
        return Selector(tuple(terms))


@functools.lru_cache(maxsize=1024)  # pure, and a Selector is immutable: every list of a
# CR's owned objects sends the same few selector strings again
def parse_selector(text: str) -> Selector:
    """Parse the string form (``"app=web,tier in (a,b),!legacy"``); "" selects everything."""
    return _Parser(text).selector()


_DICT_OPERATORS: dict[str, Operator] = {
    "In": "In",
    "NotIn": "NotIn",
    "Exists": "Exists",
    "DoesNotExist": "DoesNotExist",
}


def selector_from_dict(spec: Mapping[str, Any]) -> Selector:
    """Read a ``LabelSelector`` object (``matchLabels`` / ``matchExpressions``)."""

    def fail(why: str) -> ClusterError:  # (the selector shown only in a refusal)
        return ClusterError(f"invalid label selector {dict(spec)!r}: {why}", status=400)

    unknown = set(spec) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise fail(
            f"unknown field(s) {sorted(unknown)}; a selector object has only matchLabels and "
            "matchExpressions (put plain labels under matchLabels)"
        )
    terms: list[Requirement] = []
    match_labels = spec.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise fail("matchLabels must be a map of label keys to values")
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise fail(f"matchLabels[{key!r}] must be a string, got {type(value).__name__}")
        problem = label_key_problem(str(key)) or label_value_problem(value)
        if problem:
            raise fail(problem)
        terms.append(Requirement(str(key), "In", (value,)))
    expressions = spec.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise fail("matchExpressions must be a list")
    for i, expr in enumerate(expressions):
        at = f"matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            raise fail(f"{at} must be a map with key, operator and values")
        key, operator = expr.get("key"), expr.get("operator")
        values = expr.get("values") or []
        if not isinstance(key, str) or (problem := label_key_problem(key)):
            raise fail(f"{at}.key: {problem if isinstance(key, str) else 'required string'}")
        if operator not in _DICT_OPERATORS:
            raise fail(f"{at}.operator {operator!r} is not one of In, NotIn, Exists, DoesNotExist")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise fail(f"{at}.values must be a list of strings")
        if operator in ("In", "NotIn") and not values:
            raise fail(f"{at}.values must not be empty for operator {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            raise fail(f"{at}.values must be empty for operator {operator}")
        for v in values:
            if problem := label_value_problem(v):
                raise fail(f"{at}.values: {problem}")
        terms.append(Requirement(key, _DICT_OPERATORS[operator], tuple(dict.fromkeys(values))))
    return Selector(tuple(terms))


def as_selector(selector: str | Mapping[str, Any] | Selector | None) -> Selector:
    """Any accepted form as a ``Selector``; None selects everything."""
    if selector is None:
        return Selector()
    if isinstance(selector, Selector):
        return selector
    if isinstance(selector, str):
        return parse_selector(selector)
    if isinstance(selector, Mapping):
        return selector_from_dict(selector)
    raise ClusterError(
        f"invalid label selector {selector!r}: give a string like 'app=web' or a "
        "{matchLabels, matchExpressions} map",
        status=400,
    )


def matches(
    selector: str | Mapping[str, Any] | Selector | None, labels: Mapping[str, str] | None
) -> bool:
    """Whether ``labels`` satisfy ``selector`` (any form; None selects everything)."""
    return as_selector(selector).matches(labels)
