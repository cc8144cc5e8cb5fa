"""Time, injected: the ``Clock`` protocol, the real clock and a fake one for tests.

Everything in oper8d that reads the time or waits (status timestamps, requeue
delays, readiness timeouts, the runtime's work queue) takes a ``Clock`` from its
caller, so tests use ``FakeClock`` and never wait in real time. Also here:
``rfc3339`` (the timestamp format Kubernetes writes in conditions) and
``parse_duration`` (the bundle's ``30s`` / ``5m`` / ``1h30m`` durations).
"""

from __future__ import annotations

import math
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "SystemClock", "parse_duration", "rfc3339"]


@runtime_checkable
class Clock(Protocol):
    """Where time comes from."""

    def now(self) -> datetime:
        """The wall-clock time, timezone-aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never goes backwards; for measuring intervals."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


def _check_wait(seconds: float) -> float:
    seconds = float(seconds)
    if not seconds >= 0 or math.isinf(seconds):  # `not >=` also rejects NaN
        raise ValueError(f"cannot wait {seconds!r} seconds; give a finite number >= 0")
    return seconds


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(_check_wait(seconds))


#: FakeClock's default start: fixed, so tests are reproducible.
_FAKE_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """A clock that moves only when told: ``advance(seconds)``, or ``sleep(seconds)``,
    which returns at once and is recorded in ``sleeps``. ``monotonic()`` starts at 0.
    Safe to share between threads."""

    def __init__(self, start: datetime | None = None):
        if start is None:
            start = _FAKE_EPOCH
        elif start.tzinfo is None or start.utcoffset() is None:
            raise ValueError(
                f"FakeClock start {start.isoformat()} has no timezone; pass an aware datetime"
            )
        self._start = start.astimezone(UTC)
        self._elapsed = 0.0
        self._lock = threading.Lock()
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        with self._lock:
            return self._start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        with self._lock:
            return self._elapsed

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (>= 0: time never goes backwards)."""
        seconds = _check_wait(seconds)
        with self._lock:
            self._elapsed += seconds

    def sleep(self, seconds: float) -> None:
        seconds = _check_wait(seconds)
        with self._lock:
            self.sleeps.append(seconds)
            self._elapsed += seconds


def rfc3339(dt: datetime) -> str:
    """``dt`` in UTC at whole seconds, as Kubernetes writes times: ``2026-01-02T03:04:05Z``."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"{dt.isoformat()} has no timezone; use an aware datetime (Clock.now())")
    utc = dt.astimezone(UTC)
    # Not strftime: glibc's %Y drops the zero padding of years before 1000.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"
    )


_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(rf"({_NUMBER})(ms|s|m|h)")  # "ms" before "m": alternation takes the first match
_DURATION = re.compile(rf"(?:{_NUMBER}(?:ms|s|m|h))+")
_SECONDS = re.compile(_NUMBER)


def parse_duration(value: str | int | float | None) -> float | None:
    """Seconds in a duration: ``"30s"``, ``"5m"``, ``"1h30m"``, ``"250ms"``, ``"1.5h"``,
    or a number of seconds (``30``, ``"30"``); ``None`` stays ``None`` ("never").
    Raises ValueError for anything else, including negative durations."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(
            f"invalid duration {value!r} ({type(value).__name__}): "
            "give seconds as a number or a string like 30s, 5m, 1h30m, 250ms"
        )
    if isinstance(value, int | float):
        if not value >= 0 or math.isinf(value):
            raise ValueError(f"invalid duration {value!r}: seconds must be a finite number >= 0")
        return float(value)
    text = value.strip()
    if _SECONDS.fullmatch(text):
        return float(text)
    if not _DURATION.fullmatch(text):
        raise ValueError(
            f"invalid duration {value!r}: expected seconds as a number or a duration like "
            "30s, 5m, 1h30m, 250ms (units h, m, s, ms; no spaces or signs)"
        )
    return sum(float(amount) * _UNIT_SECONDS[unit] for amount, unit in _PART.findall(text))
