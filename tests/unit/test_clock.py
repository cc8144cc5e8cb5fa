"""The injectable clocks, RFC 3339 timestamps and duration parsing of oper8d.clock."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.clock import Clock, FakeClock, SystemClock, parse_duration, rfc3339

# --- clocks ----------------------------------------------------------------------------------


def test_both_clocks_satisfy_the_clock_protocol() -> None:
    assert isinstance(SystemClock(), Clock)
    assert isinstance(FakeClock(), Clock)


def test_system_clock_gives_aware_utc_time_and_a_monotonic_counter() -> None:
    clock = SystemClock()
    now = clock.now()
    assert now.utcoffset() == timedelta(0)
    first = clock.monotonic()
    assert clock.monotonic() >= first
    clock.sleep(0)


def test_a_fake_clock_starts_at_a_fixed_utc_time_by_default() -> None:
    assert FakeClock().now() == FakeClock().now() == datetime(2026, 1, 1, tzinfo=UTC)
    assert FakeClock().monotonic() == 0.0


def test_a_fake_clock_stands_still_until_advanced() -> None:
    clock = FakeClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert clock.now() == clock.now()
    clock.advance(90)
    assert clock.now() == datetime(2026, 1, 2, 3, 5, 35, tzinfo=UTC)
    assert clock.monotonic() == 90.0


def test_sleeping_on_a_fake_clock_moves_time_at_once_and_is_recorded() -> None:
    clock = FakeClock()
    clock.sleep(10)
    clock.sleep(0.5)
    assert clock.sleeps == [10.0, 0.5]
    assert clock.monotonic() == 10.5
    assert clock.now() == datetime(2026, 1, 1, 0, 0, 10, 500000, tzinfo=UTC)


def test_a_fake_clock_start_in_another_zone_is_converted_to_utc() -> None:
    start = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    now = FakeClock(start).now()
    assert now == start
    assert now.tzinfo == UTC
    assert now.hour == 10


def test_a_fake_clock_refuses_a_naive_start() -> None:
    with pytest.raises(ValueError, match="no timezone"):
        FakeClock(datetime(2026, 1, 1))


@pytest.mark.parametrize("seconds", [-1, math.nan, math.inf])
def test_time_cannot_go_backwards_or_jump_to_infinity(seconds: float) -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="cannot wait"):
        clock.advance(seconds)
    with pytest.raises(ValueError, match="cannot wait"):
        clock.sleep(seconds)
    with pytest.raises(ValueError, match="cannot wait"):
        SystemClock().sleep(seconds)
    assert clock.monotonic() == 0.0
    assert clock.sleeps == []


# --- rfc3339 ---------------------------------------------------------------------------------


def test_rfc3339_writes_utc_at_whole_seconds_with_a_z() -> None:
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)) == "2026-01-02T03:04:05Z"


def test_rfc3339_converts_other_zones_to_utc() -> None:
    dt = datetime(2026, 1, 2, 1, 4, 5, tzinfo=timezone(timedelta(hours=-2)))
    assert rfc3339(dt) == "2026-01-02T03:04:05Z"


def test_rfc3339_refuses_a_naive_datetime() -> None:
    with pytest.raises(ValueError, match="no timezone"):
        rfc3339(datetime(2026, 1, 2))


@given(st.datetimes(timezones=st.just(UTC)))
def test_rfc3339_round_trips_to_the_second(dt: datetime) -> None:
    text = rfc3339(dt)
    assert len(text) == len("2026-01-02T03:04:05Z")
    assert datetime.fromisoformat(text) == dt.replace(microsecond=0)


# --- parse_duration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("1m30s500ms", 90.5),
        ("1.5h", 5400.0),
        (" 10s ", 10.0),
        ("0s", 0.0),
        ("45", 45.0),
        ("2.5", 2.5),
        (30, 30.0),
        (0.25, 0.25),
        (0, 0.0),
    ],
)
def test_durations_are_read_as_seconds(value: str | float, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


def test_no_duration_means_never() -> None:
    assert parse_duration(None) is None


@pytest.mark.parametrize(
    "value",
    ["", "   ", "s", "10x", "5 m", "1h 30m", "-5s", "+5s", "5M", "1d", "ms", "1.2.3s", "30s!"],
)
def test_malformed_durations_are_rejected_with_the_value_and_the_expected_form(value: str) -> None:
    with pytest.raises(ValueError, match=r"invalid duration .*like 30s, 5m, 1h30m") as caught:
        parse_duration(value)
    assert repr(value) in str(caught.value)


@pytest.mark.parametrize("value", [-1, -0.5, math.nan, math.inf, True, [30], {"s": 1}])
def test_negative_non_finite_and_non_numeric_values_are_rejected(value: object) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(value)  # type: ignore[arg-type]


@given(st.integers(0, 100), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999))
def test_a_compound_duration_is_the_sum_of_its_parts(h: int, m: int, s: int, ms: int) -> None:
    seconds = parse_duration(f"{h}h{m}m{s}s{ms}ms")
    assert seconds == pytest.approx(h * 3600 + m * 60 + s + ms / 1000)
