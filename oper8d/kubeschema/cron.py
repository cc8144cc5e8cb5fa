"""A CronJob's ``schedule`` judged as the API server judges it.

The API server parses the schedule with the standard parser of ``robfig/cron`` (v3):
five fields (minute, hour, day of month, month, day of week) or a descriptor
(``@hourly``, ``@every 5m``...), and refuses any schedule holding ``TZ`` on create
(``TZ=``/``CRON_TZ=`` prefixes: the ``timeZone`` field replaced them). Each field is a
comma-separated list of ``*``/``?``, a number or name, or a range ``a-b``, each optionally
``/step``. The bounds and the error texts below are that parser's.
"""

from __future__ import annotations

import re

__all__ = ["schedule_problem"]

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: (name, low, high, names) of the five fields
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(_DAYS)}),
)

_DESCRIPTORS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)

#: Go's ``time.ParseDuration``: an optional sign, then one or more decimal numbers with units
#: (each number has one way to match, so a long invalid value fails in linear time)
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)")


def schedule_problem(schedule: str) -> str | None:
    """Why the API server refuses ``schedule`` on create, or None."""
    if "TZ" in schedule:
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    fields = schedule.split()
    if not fields:
        return "empty spec string"
    if fields[0].startswith("@"):
        return _descriptor_problem(schedule.strip())
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: {_short(str(fields))}"
    for text, (_name, low, high, names) in zip(fields, _FIELDS, strict=True):
        for part in text.split(","):
            problem = _range_problem(part, low, high, names)
            if problem is not None:
                return problem
    return None


def _descriptor_problem(spec: str) -> str | None:
    if spec in _DESCRIPTORS:
        return None
    every = "@every "
    if spec.startswith(every):
        duration = spec[len(every) :]
        if _GO_DURATION.fullmatch(duration):
            return None
        shown = _short(duration)
        return f"failed to parse duration {_short(spec)}: time: invalid duration {shown!r}"
    return f"unrecognized descriptor: {_short(spec)}"


def _range_problem(expr: str, low: int, high: int, names: dict[str, int]) -> str | None:
    range_and_step = expr.split("/")
    if len(range_and_step) > 2:
        return f"too many slashes: {_short(expr)}"
    low_and_high = range_and_step[0].split("-")
    if len(low_and_high) > 2:
        return f"too many hyphens: {_short(expr)}"
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        try:
            start = _value(low_and_high[0], names)
            end = _value(low_and_high[1], names) if len(low_and_high) == 2 else start
        except ValueError as err:
            return str(err)
    if len(range_and_step) == 2:
        try:
            step = _number(range_and_step[1])
        except ValueError as err:
            return str(err)
        if len(low_and_high) == 1 and low_and_high[0] not in ("*", "?"):
            end = high  # "N/step" is "N-high/step"
        if step == 0:
            return f"step of range should be a positive number: {_short(expr)}"
    if start < low:
        return f"beginning of range ({start}) below minimum ({low}): {_short(expr)}"
    if end > high:
        return f"end of range ({end}) above maximum ({high}): {_short(expr)}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {_short(expr)}"
    return None


def _value(text: str, names: dict[str, int]) -> int:
    named = names.get(text.lower())
    return named if named is not None else _number(text)


def _number(text: str) -> int:
    """Go's ``strconv.Atoi`` of a field, refused when negative, as the parser does."""
    if not re.fullmatch(r"[+-]?\d+", text):
        shown = _short(text)
        raise ValueError(f"failed to parse int from {shown}: strconv.Atoi: parsing {shown!r}")
    if len(text.lstrip("+-").lstrip("0")) > 18:  # past int64 for Go; slow or refused by int()
        shown = _short(text)
        raise ValueError(
            f"failed to parse int from {shown}: strconv.Atoi: parsing {shown!r}: value out of range"
        )
    value = int(text)
    if value < 0:
        raise ValueError(f"negative number ({_short(str(value))}) not allowed: {_short(text)}")
    return value


def _short(text: str, keep: int = 60) -> str:
    """``text`` as a message quotes it: a CR value may be long."""
    return text if len(text) <= keep else text[:keep] + "…"
