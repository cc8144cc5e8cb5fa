"""oper8d against oper8 0.1.40, paired on the same shapes: ``python -m benchmarks.vs_oper8``.

oper8 is never a dependency of oper8d: the first run creates a scratch virtual environment
outside the repository (``~/.cache/oper8d-bench/oper8-0.1.40``, or ``--oper8-venv``) and
``pip install oper8==0.1.40`` into it (``--wheel`` installs a downloaded wheel instead).

Each round runs, one after the other, a child process of oper8 (``oper8_child.py`` with the
scratch venv's Python: oper8's ``ReconcileManager`` against its ``DryRunDeployManager``)
and a child process of oper8d (this file with ``--measure-oper8d``: ``Reconciler`` against
the in-memory cluster, as ``bench_reconcile``), on the shapes of ``benchmarks.gen``: a chain
of 10 components, a chain of 50, 50 independent components, 3 objects each. Every child
measures **CPU time** (``time.process_time``, all threads) of first reconciles (a fresh
cluster holding only the CR) and of steady no-op reconciles. The table gives the median over
rounds of each child's median, and oper8d ÷ oper8, for oper8d's concurrent runner (4
workers, as ``oper8d run``) and its serial one. Alternating the two sides round by round
keeps a shared machine's load drift out of the ratio.

Then, in this process: oper8d's in-process render throughput (``oper8d render`` minus the
bundle load: reconcile offline, would-delete preview, YAML output) and the per-phase CPU
breakdown of a first and a steady reconcile (``benchmarks.phases``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OPER8_VERSION = "0.1.40"
DEFAULT_VENV = Path.home() / ".cache" / "oper8d-bench" / f"oper8-{OPER8_VERSION}"
#: (shape, components)
SHAPES: tuple[tuple[str, int], ...] = (("chain", 10), ("chain", 50), ("independent", 50))
#: the issue's goals: first reconcile CPU ≤ 1/3 of oper8's, steady ≥ 10x cheaper
GOAL_FIRST = 1 / 3
GOAL_STEADY = 1 / 10
GOAL_RENDER = 5000.0  # objects/s
HERE = Path(__file__).resolve().parent


def ensure_oper8(venv: Path, wheel: Path | None) -> Path:
    """The Python of a scratch venv with oper8 installed (created on first use)."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import oper8, sys; sys.exit(0)"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    target = str(wheel) if wheel is not None else f"oper8=={OPER8_VERSION}"
    subprocess.run([str(python), "-m", "pip", "install", "-q", target], check=True)
    return python


def run_json(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def oper8_child(python: Path, shape: str, n: int, first: int, steady: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="oper8-bench-") as tmp:  # oper8 writes nothing
        env = {**os.environ, "LOG_LEVEL": "off"}
        env.pop("PYTHONPATH", None)
        command = [str(python), str(HERE / "oper8_child.py"), shape, str(n), str(first)]
        result: dict[str, Any] = run_json([*command, str(steady)], Path(tmp), env)
    if result["ready"] != "True" or result["objects"] != 3 * n:
        raise RuntimeError(f"oper8 did not deploy {shape} of {n}: {result}")
    return result


def oper8d_child(bundle: Path, first: int, steady: int) -> dict[str, Any]:
    root = HERE.parent
    command = [sys.executable, "-m", "benchmarks.vs_oper8", "--measure-oper8d", str(bundle)]
    result: dict[str, Any] = run_json([*command, str(first), str(steady)], root)
    return result


def measure_oper8d(bundle_dir: Path, first_n: int, steady_n: int) -> dict[str, Any]:
    """Child mode: CPU of first and steady reconciles of the bundle with the concurrent
    runner of 4 workers (what ``oper8d run`` uses: against a real API server the workers
    overlap network waits) and with the serial runner (``first_serial``, ...)."""
    import yaml

    from benchmarks.bench_reconcile import Fixture, is_ready
    from oper8d.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    cr = yaml.safe_load((bundle_dir / "cr.yaml").read_text(encoding="utf-8"))
    out: dict[str, Any] = {"ready": True}
    for workers, suffix in ((4, ""), (1, "_serial")):
        first: list[float] = []
        fixture = Fixture(bundle, cr, workers)
        fixture.reconcile()  # warms caches up, untimed
        for _ in range(first_n):
            fixture = Fixture(bundle, cr, workers)
            start = time.process_time()
            result = fixture.reconcile()
            first.append(time.process_time() - start)
            out["ready"] = out["ready"] and is_ready(result)
        fixture.reconcile()
        steady: list[float] = []
        for _ in range(steady_n):
            start = time.process_time()
            fixture.reconcile()
            steady.append(time.process_time() - start)
        out["first" + suffix], out["steady" + suffix] = first, steady
    return out


def render_throughput(bundle_dir: Path, repeat: int) -> tuple[float, int]:
    """(objects/s, objects) of the full offline render of a bundle, CPU time."""
    import yaml

    from benchmarks.bench_render import offline_render
    from oper8d.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    cr = yaml.safe_load((bundle_dir / "cr.yaml").read_text(encoding="utf-8"))
    run, _text = offline_render(bundle, cr)
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        offline_render(bundle, cr)
        samples.append(time.process_time() - start)
    objects = len(run.applied)
    return objects / statistics.median(samples), objects


def phase_tables(bundle_dir: Path, repeat: int) -> str:
    import yaml

    from benchmarks.bench_reconcile import Fixture
    from benchmarks.bench_render import offline_render
    from benchmarks.phases import breakdown, markdown
    from oper8d.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    cr = yaml.safe_load((bundle_dir / "cr.yaml").read_text(encoding="utf-8"))
    fresh = [Fixture(bundle, cr, 1) for _ in range(repeat + 1)]
    fresh.pop().reconcile()  # warm
    pending = iter(fresh)
    first = breakdown(lambda: next(pending).reconcile(), repeat=repeat)
    steady_fixture = Fixture(bundle, cr, 1)
    steady_fixture.reconcile()
    steady_fixture.reconcile()
    steady = breakdown(steady_fixture.reconcile, repeat=repeat * 2)
    offline = breakdown(lambda: offline_render(bundle, cr), repeat=max(1, repeat // 2))
    name = bundle_dir.name
    return "\n".join(
        [
            markdown(f"first reconcile, {name}, serial", first),
            markdown(f"steady no-op reconcile, {name}, serial", steady),
            markdown(f"full offline render, {name}", offline),
        ]
    )


def paired_table(
    python: Path, bundles: Path, *, rounds: int, first: int, steady: int, shapes: Any = SHAPES
) -> tuple[str, list[str]]:
    runs: dict[tuple[str, int, str, str], list[float]] = {}
    for _ in range(rounds):
        for shape, n in shapes:
            theirs = oper8_child(python, shape, n, first, steady)
            ours = oper8d_child(bundles / f"{shape}-{n}", first, steady)
            if not ours["ready"]:
                raise RuntimeError(f"oper8d did not verify {shape} of {n}")
            for side, result in (("oper8", theirs), ("oper8d", ours)):
                for what in ("first", "steady", "first_serial", "steady_serial"):
                    if what in result:
                        key = (shape, n, what, side)
                        runs.setdefault(key, []).append(statistics.median(result[what]))
    lines = [
        "| shape | reconcile | oper8 | oper8d, 4 workers | ÷ oper8 | oper8d, serial | ÷ oper8 "
        "| goal (4 workers) |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    verdicts: list[str] = []
    for shape, n in shapes:
        for what, goal in (("first", GOAL_FIRST), ("steady", GOAL_STEADY)):
            theirs_s = statistics.median(runs[(shape, n, what, "oper8")])
            ours_s = statistics.median(runs[(shape, n, what, "oper8d")])
            serial_s = statistics.median(runs[(shape, n, what + "_serial", "oper8d")])
            ratio, serial_ratio = ours_s / theirs_s, serial_s / theirs_s
            met = "met" if ratio <= goal else "not met"
            label = "first" if what == "first" else "steady no-op"
            lines.append(
                f"| {shape} of {n} | {label} | {theirs_s * 1e3:,.1f} ms "
                f"| {ours_s * 1e3:,.1f} ms | {ratio:.2f} | {serial_s * 1e3:,.1f} ms "
                f"| {serial_ratio:.2f} | ≤ {goal:.2f}: {met} |"
            )
            verdicts.append(f"{shape} of {n}, {label}: {ratio:.2f} ({met})")
    return "\n".join(lines), verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--first", type=int, default=3, help="first reconciles per child")
    parser.add_argument("--steady", type=int, default=5, help="steady reconciles per child")
    parser.add_argument("--oper8-venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--wheel", type=Path, help="install oper8 from this wheel")
    parser.add_argument("--no-phases", action="store_true", help="skip the phase breakdown")
    parser.add_argument(
        "--only-phases", action="store_true", help="only the phase breakdown (no oper8)"
    )
    parser.add_argument("--quick", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure-oper8d", nargs=3, help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args(argv)
    if args.measure_oper8d is not None:
        bundle, first, steady = args.measure_oper8d
        print(json.dumps(measure_oper8d(Path(bundle), int(first), int(steady))))
        return 0
    from benchmarks.gen import write_bundle

    shapes = (("chain", 3), ("independent", 3)) if args.quick else SHAPES
    with tempfile.TemporaryDirectory(prefix="oper8d-vs-oper8-") as tmp:
        bundles = Path(tmp)
        for shape, n in shapes:
            write_bundle(bundles / f"{shape}-{n}", components=n, shape=shape)  # type: ignore[arg-type]
        big = bundles / f"independent-{shapes[-1][1]}"
        if args.only_phases:
            print(phase_tables(big, repeat=2 if args.quick else 20))
            return 0
        python = ensure_oper8(args.oper8_venv, args.wheel)
        table, verdicts = paired_table(
            python, bundles, rounds=args.rounds, first=args.first, steady=args.steady, shapes=shapes
        )
        print(
            f"CPU time per reconcile (time.process_time, all threads): median of {args.rounds} "
            "alternating rounds of each child's median\n"
        )
        print(table)
        print()
        rate, objects = render_throughput(big, repeat=3 if args.quick else 10)
        met = "met" if rate >= GOAL_RENDER else "not met"
        print(
            f"In-process render (full offline render of {big.name}, {objects} objects, CPU): "
            f"{rate:,.0f} objects/s (goal ≥ {GOAL_RENDER:,.0f}: {met})"
        )
        print()
        for verdict in verdicts:
            print(f"- {verdict}")
        if not args.no_phases:
            print()
            repeat = 2 if args.quick else 20  # a sample per 4 ms tick: enough of them
            print(phase_tables(bundles / f"chain-{shapes[0][1]}", repeat=repeat))
            print(phase_tables(big, repeat=repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
