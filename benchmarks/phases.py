"""Where a reconcile's CPU goes, by phase: a cProfile of the operation, each function's own
time charged to the phase of the oper8d module it is in.

Time spent outside oper8d (``copy.deepcopy``, Jinja, ``json``, libyaml...) is charged to the
oper8d functions that called it, in proportion to the time each caller spent in it
(cProfile's caller table), climbing until an oper8d function is reached. So "status" counts
the deep copies status code asked for, not a separate "copy" row. cProfile slows Python
code down (about 2x), so read the shares, not the absolute times.
"""

from __future__ import annotations

import cProfile
import pstats
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

#: (phase, path prefixes under oper8d/) in the order of a reconcile; first match wins
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("inputs", ("engine/inputs.py", "engine/config.py", "engine/temporary_patches.py")),
    ("render", ("template/", "engine/render.py", "yamlio.py")),
    ("patch", ("engine/patch/",)),
    (
        "declaration + schema checks",
        ("engine/declared.py", "engine/kubecheck.py", "kubeschema/", "fieldpaths.py"),
    ),
    ("apply (in-memory server)", ("cluster/memory/", "cluster/listtypes.py", "cluster/fields.py")),
    ("apply (client side)", ("engine/deploy.py", "engine/deploy_phase.py", "engine/missing.py")),
    ("prune + ownership", ("engine/prune.py", "engine/ownership.py", "cluster/selectors.py")),
    ("readiness + verify", ("engine/readiness", "engine/verify", "engine/progress.py")),
    (
        "status",
        ("engine/status.py", "engine/conditions.py", "engine/cr_writes.py", "engine/outcome.py"),
    ),
    ("DAG runner", ("dag.py",)),
)
OTHER = "other oper8d (session, copies, reconcile loop)"

Key = tuple[str, int, str]


@dataclass(frozen=True)
class PhaseRow:
    phase: str
    ms: float  # CPU per operation (profiled)
    share: float  # of the profiled total


def phase_of(file: str) -> str | None:
    """The phase of a source file, or None outside oper8d."""
    marker = "/oper8d/"
    index = file.rfind(marker)
    if index < 0:
        return None
    rel = file[index + len(marker) :]
    for phase, prefixes in PHASES:
        if rel.startswith(prefixes):
            return phase
    return OTHER


def breakdown(operation: Callable[[], object], *, repeat: int) -> list[PhaseRow]:
    """Profile ``repeat`` calls of ``operation``; CPU per phase per call, largest first."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeat):
        operation()
    profiler.disable()
    stats: dict[Key, tuple[int, int, float, float, dict[Key, tuple[int, int, float, float]]]]
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    shares: dict[Key, dict[str, float]] = {}

    def phases_of(key: Key, depth: int = 0) -> dict[str, float]:
        """How a unit of ``key``'s own time splits over phases."""
        if key in shares:
            return shares[key]
        own_phase = phase_of(key[0])
        if own_phase is not None:
            shares[key] = {own_phase: 1.0}
            return shares[key]
        shares[key] = {OTHER: 1.0}  # a cycle or an unreachable caller: provisional
        callers = stats[key][4] if key in stats else {}
        total = sum(c[3] for c in callers.values())
        if not callers or total <= 0 or depth > 50:
            return shares[key]
        out: dict[str, float] = defaultdict(float)
        for caller, (_n, _p, _own, cumulative) in callers.items():
            for phase, part in phases_of(caller, depth + 1).items():
                out[phase] += part * cumulative / total
        shares[key] = dict(out)
        return shares[key]

    per_phase: dict[str, float] = defaultdict(float)
    for key, (_n, _p, own, _cum, _callers) in stats.items():
        for phase, part in phases_of(key).items():
            per_phase[phase] += own * part
    total = sum(per_phase.values()) or 1.0
    rows = [PhaseRow(p, s * 1e3 / repeat, s / total) for p, s in per_phase.items() if s > 0]
    return sorted(rows, key=lambda r: -r.ms)


def markdown(title: str, rows: list[PhaseRow]) -> str:
    total = sum(r.ms for r in rows)
    lines = [
        f"#### {title} (profiled: {total:,.1f} ms per operation)\n",
        "| phase | ms/op | share |",
        "|---|---:|---:|",
    ]
    lines += [f"| {r.phase} | {r.ms:,.2f} | {100 * r.share:.0f}% |" for r in rows]
    return "\n".join(lines) + "\n"
