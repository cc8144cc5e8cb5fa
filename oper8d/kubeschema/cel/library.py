"""The Kubernetes CEL library functions that the CEL runtime lacks, as custom functions.

The runtime (cel-expr-python, Google's CEL C++ core) brings the standard library, the
strings extension (``lowerAscii``, ``split``, ``format``, ...) and optionals (``self.?x``).
Kubernetes adds its own libraries; those defined here are the ones a CRD rule uses most:

- lists: ``isSorted``, ``sum``, ``min``, ``max``;
- regex: ``find``, ``findAll`` (RE2, the engine of Go's ``regexp``);
- quantity: ``isQuantity``, ``quantity`` and its methods (``compareTo``, ``isGreaterThan``,
  ``add``, ``asInteger``, ...), exact as ``resource.Quantity`` compares;
- url: ``isURL``, ``url`` and its getters, for the URLs whose reading is certain.

Anything else Kubernetes offers (``ip``, ``cidr``, ``format.*``, ``authz``, list
``indexOf``, semver, ...) is not declared: a rule that calls it does not compile, and the
caller reports that rule as unchecked. Where a function meets an input whose Go reading
this module does not reproduce (an unusual URL), it raises :class:`Unsure`, which the
caller turns into "unchecked" too: a guess could be a false alarm.

The runtime cannot return opaque values from Python, so a Quantity or URL is a map with
one key (``QUANTITY_KEY`` or ``URL_KEY``) holding a canonical text: two equal quantities
are equal maps (``quantity('1') == quantity('1000m')``), as Kubernetes compares them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any
from urllib.parse import parse_qs, urlsplit

#: the marker in an error that says "this library cannot tell"
UNSURE_MARK = "oper8d-cel-unsure:"
QUANTITY_KEY = "kubernetes.Quantity"
URL_KEY = "kubernetes.URL"
_INT64 = (-(2**63), 2**63 - 1)


class Unsure(ValueError):
    """The function cannot give the answer Kubernetes would: the rule goes unchecked."""

    def __init__(self, why: str) -> None:
        super().__init__(f"{UNSURE_MARK} {why}")


# ------------------------------------------------------------------ quantity

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)


def parse_quantity(text: str) -> Fraction | None:
    """The exact value of a Kubernetes quantity (``1Gi``, ``500m``, ``1e3``), or None."""
    m = _QUANTITY.fullmatch(text)
    if m is None:
        return None
    number, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > 1000:  # far beyond what resource.Quantity holds
        return None
    return number * Fraction(10) ** exponent


def _q(value: Fraction) -> dict[str, str]:
    return {QUANTITY_KEY: f"{value.numerator}/{value.denominator}"}


def _qv(q: Any) -> Fraction:
    if not isinstance(q, dict) or QUANTITY_KEY not in q:
        raise Unsure("not a quantity")
    return Fraction(q[QUANTITY_KEY])


def _quantity(text: str) -> dict[str, str]:
    value = parse_quantity(text)
    if value is None:
        raise ValueError(f"quantities must match the regular expression, got {text!r}")
    return _q(value)


def _is_integer(q: Any) -> bool:
    v = _qv(q)
    return v.denominator == 1 and _INT64[0] <= v <= _INT64[1]


def _as_integer(q: Any) -> int:
    if not _is_integer(q):
        raise ValueError("cannot convert value to integer")
    return int(_qv(q))


def _sign(q: Any) -> int:
    v = _qv(q)
    return (v > 0) - (v < 0)


def _compare(a: Any, b: Any) -> int:
    va, vb = _qv(a), _qv(b)
    return (va > vb) - (va < vb)


# ---------------------------------------------------------------------- lists


def _comparable(items: Sequence[Any]) -> list[Any]:
    kinds = {type(i) for i in items}
    numbers = kinds <= {int, float}
    if not (numbers or len(kinds) <= 1) or (bool in kinds and len(kinds) > 1):
        raise ValueError("no such overload")
    if any(isinstance(i, dict | list) for i in items):
        raise Unsure("comparing lists or maps")
    return list(items)


def _is_sorted(items: Sequence[Any]) -> bool:
    values = _comparable(items)
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def _sum(items: Sequence[Any]) -> Any:
    values = _comparable(items)
    if not values:
        return 0
    if all(isinstance(v, int) for v in values):
        total = sum(values)
        if not _INT64[0] <= total <= _INT64[1]:
            raise ValueError("integer overflow")
        return total
    if not all(isinstance(v, int | float) for v in values):
        raise Unsure("a sum of other than numbers")
    return float(sum(values))


def _extreme(pick: Callable[[list[Any]], Any]) -> Callable[[Sequence[Any]], Any]:
    def run(items: Sequence[Any]) -> Any:
        values = _comparable(items)
        if not values:
            raise ValueError("min/max of an empty list")
        return pick(values)

    return run


# ---------------------------------------------------------------------- regex


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error:
        raise ValueError(f"invalid regular expression {pattern!r}") from None


def _find(text: str, pattern: str) -> str:
    m = _regex(pattern).search(text)
    return "" if m is None else str(m.group(0))


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found: list[str] = []
    for m in _regex(pattern).finditer(text):
        if 0 <= limit <= len(found):
            break
        found.append(str(m.group(0)))
    return found


# ------------------------------------------------------------------------ url

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_PLAIN_URL = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=:@/?-]*")


def _plain_url(text: str) -> Any:
    """``text`` read as Go's ``url.ParseRequestURI`` does, for the common forms only: an
    absolute path, or ``scheme://host[:port]/path?query``; Unsure for anything else."""
    if not _PLAIN_URL.fullmatch(text) or "%" in text:
        raise Unsure(f"URL {text!r} is not of a form read here")
    if text.startswith("/"):
        return urlsplit(text)
    scheme, sep, _ = text.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        raise Unsure(f"URL {text!r} is not of a form read here")
    parts = urlsplit(text)
    port = parts.netloc.rpartition(":")[2] if ":" in parts.netloc else ""
    if "@" in parts.netloc or "[" in parts.netloc or (not port.isdigit() and port):
        raise Unsure(f"URL {text!r} is not of a form read here")
    return parts


def _is_url(text: str) -> bool:
    if text == "" or " " in text:
        return False  # ParseRequestURI refuses both
    _plain_url(text)
    return True


def _is_quantity(text: str) -> bool:
    return parse_quantity(text) is not None


def _as_float(q: Any) -> float:
    return float(_qv(q))


def _greater(a: Any, b: Any) -> bool:
    return _compare(a, b) > 0


def _less(a: Any, b: Any) -> bool:
    return _compare(a, b) < 0


def _url_path(u: Any) -> str:
    return str(_url_part(u).path)


def _url(text: str) -> dict[str, str]:
    if not _is_url(text):
        raise ValueError(f"URL {text!r} is not a valid URL")
    return {URL_KEY: text}


def _url_part(q: Any) -> Any:
    if not isinstance(q, dict) or URL_KEY not in q:
        raise Unsure("not a URL")
    return _plain_url(q[URL_KEY])


def _url_host(u: Any) -> str:
    return str(_url_part(u).netloc)


def _url_hostname(u: Any) -> str:
    return _url_host(u).partition(":")[0]


def _url_port(u: Any) -> str:
    host = _url_host(u)
    return host.partition(":")[2]


def _url_query(u: Any) -> dict[str, list[str]]:
    return {k: list(v) for k, v in parse_qs(_url_part(u).query, keep_blank_values=True).items()}


# ----------------------------------------------------------------- declarations


def declarations(cel: Any) -> list[Any]:
    """The ``FunctionDecl``s of this library for the runtime module ``cel``."""
    t = cel.Type
    dyn_list, q_type = t.List(t.DYN), t.Map(t.STRING, t.STRING)
    string, boolean, integer = t.STRING, t.BOOL, t.INT

    def fn(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any]]) -> Any:
        return cel.FunctionDecl(
            name,
            [
                cel.Overload(oid, ret, params, is_member=member, impl=impl)
                for oid, ret, params, member, impl in overloads
            ],
        )

    def q_binary(op: Callable[[Fraction, Fraction], Fraction]) -> list[Any]:
        return [
            ("q_q", q_type, [q_type, q_type], True, lambda a, b: _q(op(_qv(a), _qv(b)))),
            ("q_i", q_type, [q_type, integer], True, lambda a, b: _q(op(_qv(a), Fraction(b)))),
        ]

    add, sub = q_binary(lambda a, b: a + b), q_binary(lambda a, b: a - b)
    return [
        fn("isSorted", ("list_is_sorted", boolean, [dyn_list], True, _is_sorted)),
        fn("sum", ("list_sum", t.DYN, [dyn_list], True, _sum)),
        fn("min", ("list_min", t.DYN, [dyn_list], True, _extreme(min))),
        fn("max", ("list_max", t.DYN, [dyn_list], True, _extreme(max))),
        fn("find", ("string_find", string, [string, string], True, _find)),
        fn(
            "findAll",
            ("string_find_all", t.List(string), [string, string], True, _find_all),
            ("string_find_all_n", t.List(string), [string, string, integer], True, _find_all),
        ),
        fn("isQuantity", ("is_quantity", boolean, [string], False, _is_quantity)),
        fn("quantity", ("string_to_quantity", q_type, [string], False, _quantity)),
        fn("sign", ("quantity_sign", integer, [q_type], True, _sign)),
        fn("isInteger", ("quantity_is_integer", boolean, [q_type], True, _is_integer)),
        fn("asInteger", ("quantity_as_integer", integer, [q_type], True, _as_integer)),
        fn("asApproximateFloat", ("quantity_as_float", t.DOUBLE, [q_type], True, _as_float)),
        fn("add", *[(f"quantity_add_{o}", r, p, m, i) for o, r, p, m, i in add]),
        fn("sub", *[(f"quantity_sub_{o}", r, p, m, i) for o, r, p, m, i in sub]),
        fn("compareTo", ("quantity_compare", integer, [q_type, q_type], True, _compare)),
        fn("isGreaterThan", ("quantity_gt", boolean, [q_type, q_type], True, _greater)),
        fn("isLessThan", ("quantity_lt", boolean, [q_type, q_type], True, _less)),
        fn("isURL", ("is_url", boolean, [string], False, _is_url)),
        fn("url", ("string_to_url", q_type, [string], False, _url)),
        fn("getScheme", ("url_scheme", string, [q_type], True, lambda u: str(_url_part(u).scheme))),
        fn("getHost", ("url_host", string, [q_type], True, _url_host)),
        fn("getHostname", ("url_hostname", string, [q_type], True, _url_hostname)),
        fn("getPort", ("url_port", string, [q_type], True, _url_port)),
        fn("getEscapedPath", ("url_path", string, [q_type], True, _url_path)),
        fn("getQuery", ("url_query", t.Map(string, t.List(string)), [q_type], True, _url_query)),
    ]
