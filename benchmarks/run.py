"""Run every benchmark and print the results as markdown: ``python -m benchmarks.run``.

Run from the repository root. Sections: the machine, render throughput, raw template
cost per object, in-memory reconciles (with oper8's measured anchor), a fleet of CRs in
one in-memory cluster (no-op CPU and requests per CR, bytes per cached object), start-up
cost.
``--quick`` uses tiny iteration counts and small bundles (the smoke test runs it: the
numbers are meaningless, the code paths are the real ones); ``--profile`` appends cProfile
hot spots; ``--only`` picks sections; ``--cluster`` (opt-in: needs the built test
environment and takes minutes) appends ``benchmarks.bench_cluster`` with 200 WebApps (3 with
``--quick``). docs/benchmarks.md holds a recorded run.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks import bench_fleet, bench_import, bench_reconcile, bench_render, hotspots
from benchmarks.bench_reconcile import SCENARIOS, Scenario
from benchmarks.timing import Row, fmt_time

SECTIONS = ("render", "templates", "reconcile", "fleet", "startup")


@dataclass(frozen=True)
class Settings:
    """Iteration counts and sizes of one run."""

    render_repeat: int = 20
    generated_components: int = 50
    generated_repeat: int = 10
    template_number: int = 500
    template_repeat: int = 7
    scenarios: tuple[Scenario, ...] = SCENARIOS
    reconcile_first: int = 7
    reconcile_steady: int = 15
    dag_repeat: int = 20
    command_repeat: int = 10
    profile_components: int = 50
    profile_repeat: int = 10
    #: CRs in one in-memory cluster (``python -m benchmarks.bench_fleet 10000`` for more)
    fleet_sizes: tuple[int, ...] = (100, 1000)


QUICK = Settings(
    render_repeat=2,
    generated_components=4,
    generated_repeat=1,
    template_number=3,
    template_repeat=2,
    scenarios=(("chain", 3, None), ("independent", 2, None)),
    reconcile_first=1,
    reconcile_steady=2,
    dag_repeat=1,
    command_repeat=1,
    profile_components=3,
    profile_repeat=1,
    fleet_sizes=(3,),
)


def machine() -> list[tuple[str, str]]:
    """What the numbers were measured on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    facts = [
        ("CPUs available (nproc)", str(cpus)),
        ("CPU", _cpu_model()),
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("OS", f"{platform.system()} {platform.release()} ({platform.machine()})"),
    ]
    if hasattr(os, "getloadavg"):
        facts.append(
            ("load average at start (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        )
    facts.append(("YAML libraries", _yaml_libraries()))
    facts.append(("hyperfine", "installed" if shutil.which("hyperfine") else "not installed"))
    commit = _git_commit()
    if commit:
        facts.append(("commit", commit))
    return facts


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _yaml_libraries() -> str:
    import ruamel.yaml
    import yaml

    libyaml = "with libyaml" if hasattr(yaml, "CSafeLoader") else "without libyaml"
    try:
        import _ruamel_yaml  # noqa: F401  (ruamel.yaml.clib's C extension)

        clib = "with ruamel.yaml.clib"
    except ImportError:
        clib = "without ruamel.yaml.clib"
    return f"PyYAML {yaml.__version__} {libyaml}; ruamel.yaml {ruamel.yaml.__version__} {clib}"


def _git_commit() -> str | None:
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=bench_import.REPO_ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
    except OSError:
        return None
    dirty = " (with uncommitted changes)" if _git_dirty() else ""
    return proc.stdout.strip() + dirty if proc.returncode == 0 else None


def _git_dirty() -> bool:
    proc = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=bench_import.REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return bool(proc.stdout.strip())


def table(rows: Sequence[Row]) -> str:
    """A markdown table: name, median, p90, samples, CPU median, then every extra column."""
    extras: list[str] = []
    for row in rows:
        extras += [k for k in row.extra if k not in extras]
    has_cpu = any(row.samples.cpu_seconds for row in rows)
    head = ["benchmark", "median", "p90", "n", *(["CPU median"] if has_cpu else []), *extras]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for row in rows:
        s = row.samples
        cells = [row.name, _t(s.median, row.unit), _t(s.p90, row.unit), str(len(s))]
        if has_cpu:
            cpu = s.cpu_median
            cells.append("" if cpu is None else _t(cpu, row.unit))
        cells += [row.extra.get(k, "") for k in extras]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _t(seconds: float, unit: str) -> str:
    return f"{fmt_time(seconds, unit)} {unit}"


def report(settings: Settings, sections: Sequence[str], profile: bool) -> str:
    """Run the chosen sections and return the markdown."""
    out: list[str] = ["## Machine\n"]
    out += [f"- {k}: {v}" for k, v in machine()]
    out.append("")
    steps: dict[str, Callable[[], list[str]]] = {
        "render": lambda: _render(settings),
        "templates": lambda: _templates(settings),
        "reconcile": lambda: _reconcile(settings),
        "fleet": lambda: _fleet(settings),
        "startup": lambda: _startup(settings),
    }
    for name in sections:
        start = time.perf_counter()
        out += steps[name]()
        out.append(f"_section took {time.perf_counter() - start:.1f} s_\n")
    if profile:
        profiles = hotspots.default_profiles(
            components=settings.profile_components, repeat=settings.profile_repeat
        )
        out += ["## Hot spots (cProfile)\n", hotspots.markdown(profiles)]
    return "\n".join(out)


def _render(s: Settings) -> list[str]:
    rows = bench_render.bench_example(repeat=s.render_repeat)
    rows += bench_render.bench_generated(
        components=s.generated_components, repeat=s.generated_repeat
    )
    return ["## 1. Render throughput\n", table(rows)]


def _templates(s: Settings) -> list[str]:
    rows = bench_render.bench_templates(number=s.template_number, repeat=s.template_repeat)
    return ["### Template render cost per object\n", table(rows)]


def _reconcile(s: Settings) -> list[str]:
    repeats = {"repeat_first": s.reconcile_first, "repeat_steady": s.reconcile_steady}
    rows = bench_reconcile.bench_reconcile(scenarios=s.scenarios, **repeats)
    rows += bench_reconcile.bench_example(
        bench_render.EXAMPLE_BUNDLE, bench_render.EXAMPLE_CR, **repeats
    )
    dag = bench_reconcile.bench_dag(repeat=s.dag_repeat)
    return ["## 2. In-memory reconcile (3 objects per component)\n", table(rows), table(dag)]


def _fleet(s: Settings) -> list[str]:
    results = [bench_fleet.run_fleet(n) for n in s.fleet_sizes]
    title = "## 2b. A fleet of WebApps in one in-memory cluster (benchmarks.bench_fleet)\n"
    return [title, *bench_fleet.table(results), ""]


def _startup(s: Settings) -> list[str]:
    out = ["## 3. Start-up\n"]
    out.append("Imports (`python -X importtime -c CODE`; interpreter start-up imports excluded):\n")
    out.append("| running | imports | heaviest direct dependencies of oper8d modules |")
    out.append("|---|---:|---|")
    for label, code in bench_import.PROFILED_CODE.items():
        profile = bench_import.import_profile(code)
        heaviest = ", ".join(
            f"{e.module} {e.cumulative_us / 1e3:,.1f} ms" for e in profile.direct_dependencies()[:5]
        )
        out.append(f"| `{label}` | {profile.total_us / 1e3:,.1f} ms | {heaviest} |")
    out.append("")
    out.append("`kubernetes` imported:\n")
    for stage, imported in bench_import.kubernetes_imported().items():
        out.append(f"- after {stage}: {'**yes**' if imported else 'no'}")
    out.append("")
    out.append("Whole commands, each a fresh process:\n")
    commands = bench_import.bench_commands(
        repeat=s.command_repeat, render_components=s.generated_components
    )
    out.append(table(commands))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny counts (smoke test)")
    parser.add_argument("--profile", action="store_true", help="append cProfile hot spots")
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections of {SECTIONS}"
    )
    parser.add_argument(
        "--cluster", action="store_true", help="also 200 CRs on a real control plane (minutes)"
    )
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    start = time.perf_counter()
    text = report(QUICK if args.quick else Settings(), sections, args.profile)
    if args.cluster:
        from benchmarks import bench_cluster  # only when asked: it loads the kubernetes client

        text += "\n" + "\n".join(bench_cluster.section(3 if args.quick else 200, workers=(4,)))
    print(text)
    print(f"_whole run: {time.perf_counter() - start:.1f} s; command: python -m benchmarks.run "
          f"{' '.join(argv if argv is not None else sys.argv[1:])}_")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
