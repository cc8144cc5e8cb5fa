"""Where the time goes: cProfile of the benchmark scenarios, as markdown tables.

Used by ``python -m benchmarks.run --profile`` (and the smoke test) to find engine hot
spots without editing the engine. Each scenario is prepared untimed, then profiled over
several repetitions; the tables show the functions with the most time of their own and
the oper8d functions with the most cumulative time, per operation. cProfile slows
Python code down (about 2x here), so read the shares, not the absolute times.
"""

from __future__ import annotations

import cProfile
import pstats
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.bench_reconcile import Fixture
from benchmarks.bench_render import offline_render
from benchmarks.gen import Shape, write_bundle
from oper8d.bundle import load_bundle

#: oper8d functions with more of the total than this are entry points, not hot spots
WRAPPER_SHARE = 0.8


@dataclass(frozen=True)
class Hotspot:
    function: str  # "oper8d/engine/deploy.py:68 prepare"
    calls: int  # primitive calls per operation
    own_ms: float  # time in the function itself, per operation
    cumulative_ms: float  # with everything it called, per operation


@dataclass(frozen=True)
class Profile:
    scenario: str
    total_ms: float  # profiled time per operation
    by_own_time: tuple[Hotspot, ...]
    by_cumulative: tuple[Hotspot, ...]  # oper8d functions below WRAPPER_SHARE only


def profile(
    scenario: str, operation: Callable[[], object], *, repeat: int, limit: int = 12
) -> Profile:
    """Profile ``repeat`` calls of ``operation``."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeat):
        operation()
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows: list[Hotspot] = []
    entries = stats.stats.items()  # type: ignore[attr-defined]
    for (file, line, func), (prim, _total, own, cumulative, _callers) in entries:
        rows.append(
            Hotspot(
                function=f"{_short(file)}:{line} {func}",
                calls=round(prim / repeat),
                own_ms=own * 1e3 / repeat,
                cumulative_ms=cumulative * 1e3 / repeat,
            )
        )
    total = stats.total_tt * 1e3 / repeat  # type: ignore[attr-defined]
    by_own = sorted(rows, key=lambda h: -h.own_ms)[:limit]
    # the entry points every operation runs through (> 80%) say nothing: leave them out
    ours = [
        h
        for h in rows
        if h.function.startswith("oper8d/") and h.cumulative_ms <= WRAPPER_SHARE * total
    ]
    by_cumulative = sorted(ours, key=lambda h: -h.cumulative_ms)[:limit]
    return Profile(scenario, total, tuple(by_own), tuple(by_cumulative))


def _short(file: str) -> str:
    """A path from the package down (``oper8d/...``, ``jinja2/...``) or a builtin's name."""
    parts = Path(file).parts
    for anchor in ("oper8d", "site-packages", "python3.11"):
        if anchor in parts:
            index = parts.index(anchor)
            start = index if anchor == "oper8d" else index + 1
            return "/".join(parts[start:])
    return file


def default_profiles(*, components: int = 50, repeat: int = 10) -> list[Profile]:
    """Steady and first reconcile of a chain, offline render and load of a bundle."""
    out: list[Profile] = []
    shape: Shape = "chain"
    with tempfile.TemporaryDirectory(prefix="oper8d-bench-") as tmp:
        generated = write_bundle(Path(tmp), components=components, shape=shape)
        out.append(
            profile(
                f"load + compile, {components} components",
                lambda: load_bundle(generated.path),
                repeat=max(1, repeat // 5),
            )
        )
        bundle = load_bundle(generated.path)
    steady = Fixture(bundle, generated.cr, max_workers=1)
    steady.reconcile()
    steady.reconcile()
    out.append(
        profile(f"steady reconcile, chain of {components}, serial", steady.reconcile, repeat=repeat)
    )
    fresh = [Fixture(bundle, generated.cr, max_workers=1) for _ in range(repeat)]
    pending = iter(fresh)
    out.append(
        profile(
            f"first reconcile, chain of {components}, serial",
            lambda: next(pending).reconcile(),
            repeat=repeat,
        )
    )
    out.append(
        profile(
            f"full offline render, {components} components",
            lambda: offline_render(bundle, generated.cr),
            repeat=max(1, repeat // 2),
        )
    )
    return out


def markdown(profiles: list[Profile]) -> str:
    lines: list[str] = []
    for p in profiles:
        lines.append(f"#### {p.scenario} (profiled: {p.total_ms:,.1f} ms per operation)\n")
        for title, hotspots in (
            ("most own time", p.by_own_time),
            ("oper8d functions, most cumulative time (entry points left out)", p.by_cumulative),
        ):
            lines.append(f"{title}:\n")
            lines.append("| function | calls/op | own ms/op | cumulative ms/op | share |")
            lines.append("|---|---:|---:|---:|---:|")
            for h in hotspots:
                value = h.own_ms if title.startswith("most own") else h.cumulative_ms
                share = 100 * value / p.total_ms if p.total_ms else 0.0
                lines.append(
                    f"| `{h.function}` | {h.calls:,} | {h.own_ms:,.2f} | "
                    f"{h.cumulative_ms:,.2f} | {share:.0f}% |"
                )
            lines.append("")
    return "\n".join(lines)
