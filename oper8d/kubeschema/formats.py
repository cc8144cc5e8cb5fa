"""String formats the apiserver checks, as small functions: value -> problem or None.

Used by ``kubeschema.nodes``. Built-in kinds are decoded into Go types, so their formats
are the Go parsers': ``byte`` (base64, ``[]byte``), ``date-time`` (``metav1.Time``, RFC
3339), ``quantity`` (``resource.Quantity``) and the integer ranges of ``int32``/``int64``.
Custom resources are checked by kube-openapi's format registry; this module covers the
formats a CRD commonly uses (``date``, ``uuid``, ``ipv4``, ``ipv6``, ``cidr``, ``mac``,
``hostname``, ``email``); a format it does not know is not checked, as the apiserver does
with formats outside its registry.
"""

from __future__ import annotations

import binascii
import datetime
import ipaddress
import re
from collections.abc import Callable

Check = Callable[[str], "str | None"]

_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_QUANTITY_RE = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_QUANTITY_MSG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_DATE_TIME_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
)
_MAC_RE = re.compile(r"[0-9a-fA-F]{2}(?:([:-])[0-9a-fA-F]{2})(?:\1[0-9a-fA-F]{2}){4}")
_HOSTNAME_RE = re.compile(
    r"(?=.{1,255}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)
_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+")

_PORT_NAME = re.compile(r"[-a-z0-9]+")


def port_name_problem(value: str) -> str | None:
    """An IANA service name, as a named port must be (``http``, ``metrics-2``)."""
    if len(value) > 15:
        return "must be no more than 15 characters"
    if not _PORT_NAME.fullmatch(value):
        return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
    if not any("a" <= c <= "z" for c in value):
        return "must contain at least one letter (a-z)"
    if "--" in value:
        return "must not contain consecutive hyphens"
    if value.startswith("-") or value.endswith("-"):
        return "must not begin or end with a hyphen"
    return None


INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def base64_problem(value: str) -> str | None:
    """Go's ``base64.StdEncoding`` (line breaks ignored, padding required)."""
    data = value.replace("\r", "").replace("\n", "")
    try:
        binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return f"illegal base64 data at input byte {_first_bad_byte(data)}"
    return None


def _first_bad_byte(data: str) -> int:
    body = data.rstrip("=")
    for i, c in enumerate(body):
        if c not in _B64:
            return i
    return len(data) - len(data) % 4 if len(data) % 4 else len(body)


def quantity_problem(value: str) -> str | None:
    return None if _QUANTITY_RE.fullmatch(value) else _QUANTITY_MSG


def date_time_problem(value: str) -> str | None:
    if _DATE_TIME_RE.fullmatch(value) and _valid_date(value[:10]):
        return None
    return f'parsing time "{value}" as RFC 3339 ("2006-01-02T15:04:05Z07:00") failed'


def _valid_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def date_problem(value: str) -> str | None:
    ok = len(value) == 10 and _valid_date(value)
    return None if ok else "must be a date in the format YYYY-MM-DD"


def _matches(regex: re.Pattern[str], what: str) -> Check:
    def check(value: str) -> str | None:
        return None if regex.fullmatch(value) else f"must be {what}"

    return check


def _ip(kind: type, what: str) -> Check:
    def check(value: str) -> str | None:
        try:
            kind(value)
        except ValueError:
            return f"must be {what}"
        return None

    return check


def _cidr(value: str) -> str | None:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return "must be a CIDR (e.g. 10.0.0.0/8)"
    return None if "/" in value else "must be a CIDR (e.g. 10.0.0.0/8)"


#: format -> check, for custom resources (built-in kinds use ``builtin_format``)
CRD_FORMATS: dict[str, Check] = {
    "byte": base64_problem,
    "date-time": date_time_problem,
    "datetime": date_time_problem,
    "date": date_problem,
    "uuid": _matches(_UUID_RE, "a UUID"),
    "uuid3": _matches(_UUID_RE, "a UUID"),
    "uuid4": _matches(_UUID_RE, "a UUID"),
    "uuid5": _matches(_UUID_RE, "a UUID"),
    "ipv4": _ip(ipaddress.IPv4Address, "an IPv4 address"),
    "ipv6": _ip(ipaddress.IPv6Address, "an IPv6 address"),
    "cidr": _cidr,
    "mac": _matches(_MAC_RE, "a MAC address"),
    "hostname": _matches(_HOSTNAME_RE, "a valid hostname"),
    "email": _matches(_EMAIL_RE, "an email address"),
}

#: format -> check, for built-in kinds (their Go types' parsers)
BUILTIN_FORMATS: dict[str, Check] = {
    "byte": base64_problem,
    "date-time": date_time_problem,
}
