"""Where a reconcile's CPU goes, by phase: a sampling profile of the operation, each
sample charged to the phase of the innermost oper8d module on the stack.

On each ``SIGPROF`` (asked for every millisecond of CPU time; the kernel sends at most one
per tick, 4 ms at HZ=250), the handler looks at the running Python stack
and charges the sample to the first oper8d frame it finds from the top: time spent outside
oper8d (``copy.deepcopy``, Jinja, ``json``, libyaml...) counts for the oper8d code that
called it, so "status" includes the copies status code asked for. Sampling costs little
and does not inflate small, often-called functions as ``cProfile`` does (by 2-5x here), so
the shares are those of an unprofiled run. It samples the main thread: profile the serial
runner. POSIX only.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

#: (phase, path prefixes under oper8d/) in the order of a reconcile; first match wins
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("inputs", ("engine/inputs.py", "engine/config.py", "engine/temporary_patches.py")),
    ("render", ("template/", "engine/render.py")),
    ("YAML output (yamlio)", ("yamlio.py", "render_output.py")),
    ("patch", ("engine/patch/",)),
    (
        "declaration + schema checks",
        ("engine/declared.py", "engine/kubecheck.py", "kubeschema/", "fieldpaths.py"),
    ),
    (
        "in-memory API server (writes, copies of reads)",
        ("cluster/memory/", "cluster/listtypes.py", "cluster/fields.py", "cluster/copies.py"),
    ),
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

#: seconds of CPU time between samples
INTERVAL = 0.001


@dataclass(frozen=True)
class PhaseRow:
    phase: str
    ms: float  # CPU per operation: the measured total times the phase's share of samples
    share: float  # of the samples


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


def _phase_of_stack(frame: FrameType | None) -> str:
    while frame is not None:
        phase = phase_of(frame.f_code.co_filename)
        if phase is not None:
            return phase
        frame = frame.f_back
    return "outside oper8d (benchmark harness)"


def breakdown(operation: Callable[[], object], *, repeat: int) -> list[PhaseRow]:
    """Sample ``repeat`` calls of ``operation``; CPU per phase per call, largest first."""
    samples: Counter[str] = Counter()

    def on_sample(_signum: int, frame: FrameType | None) -> None:
        samples[_phase_of_stack(frame)] += 1

    previous = signal.signal(signal.SIGPROF, on_sample)
    signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
    start = time.process_time()
    try:
        for _ in range(repeat):
            operation()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        cpu = time.process_time() - start
        signal.signal(signal.SIGPROF, previous)
    # the kernel delivers at most one SIGPROF per tick (4 ms at HZ=250): the samples give
    # the shares, the measured CPU time the total
    total = sum(samples.values()) or 1
    rows = [
        PhaseRow(phase, cpu * 1e3 / repeat * count / total, count / total)
        for phase, count in samples.items()
    ]
    return sorted(rows, key=lambda r: -r.ms)


def markdown(title: str, rows: list[PhaseRow]) -> str:
    total = sum(r.ms for r in rows)
    lines = [
        f"#### {title} (sampled: {total:,.1f} ms of CPU per operation)\n",
        "| phase | ms/op | share |",
        "|---|---:|---:|",
    ]
    lines += [f"| {r.phase} | {r.ms:,.2f} | {100 * r.share:.0f}% |" for r in rows]
    return "\n".join(lines) + "\n"
