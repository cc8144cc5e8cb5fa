"""Timing helpers shared by the benchmarks: repeated wall-clock samples, median and p90.

Every benchmark module measures with :func:`sample` (or :func:`sample_per_op` for
operations too short to time one at a time) and returns :class:`Row`s that
``benchmarks.run`` prints as a markdown table. Wall time comes from
``time.perf_counter``; nothing here asserts on a timing.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Samples:
    """Wall-clock samples of one operation, in seconds, and the process CPU time of each
    (all threads; on a busy machine it moves less than wall time)."""

    seconds: tuple[float, ...]
    cpu_seconds: tuple[float, ...] = ()

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def p90(self) -> float:
        """The nearest-rank 90th percentile (the maximum when there are under 10 samples)."""
        ordered = sorted(self.seconds)
        return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu_seconds) if self.cpu_seconds else None

    def __len__(self) -> int:
        return len(self.seconds)


@dataclass(frozen=True)
class Row:
    """One line of a result table. ``unit`` is how ``median``/``p90`` are shown."""

    name: str
    samples: Samples
    unit: str = "ms"  # "ms" or "µs"
    #: extra columns: objects/s, request counts, ...
    extra: dict[str, str] = field(default_factory=dict)


def sample(
    operation: Callable[[], object],
    *,
    repeat: int,
    setup: Callable[[], object] | None = None,
    warmup: int = 0,
) -> Samples:
    """Time ``operation`` ``repeat`` times; ``setup`` runs untimed before each call."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    for _ in range(warmup):
        if setup is not None:
            setup()
        operation()
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        cpu_start, start = time.process_time(), time.perf_counter()
        operation()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return Samples(tuple(wall), tuple(cpu))


def sample_per_op(
    operation: Callable[[], object], *, number: int, repeat: int, warmup: int = 1
) -> Samples:
    """Time ``number`` calls ``repeat`` times; each sample is the mean time of one call."""
    if number < 1 or repeat < 1:
        raise ValueError(f"number and repeat must be >= 1, got {number} and {repeat}")
    for _ in range(warmup):
        operation()
    out: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            operation()
        out.append((time.perf_counter() - start) / number)
    return Samples(tuple(out))


def fmt_time(seconds: float, unit: str) -> str:
    if unit == "µs":
        return f"{seconds * 1e6:,.1f}"
    if unit == "s":
        return f"{seconds:,.3f}"
    return f"{seconds * 1e3:,.2f}"
