"""Before/after comparison of two checkouts on a shared machine:
``python -m benchmarks.compare BEFORE_DIR [--rounds 5]``.

Run from the repository root (the "after" checkout). ``BEFORE_DIR`` is another checkout of
oper8d, e.g. ``git archive <commit> | tar -x -C /tmp/before``, whose ``benchmarks``
package has ``bench_reconcile.Fixture`` and ``bench_render.offline_render`` (commit
``ab09e3d`` and later). Used to record the before/after table in docs/benchmarks.md.

Load on a shared machine drifts by 2x within minutes, so two separate runs of
``benchmarks.run`` compare badly. Here each round runs one child process per checkout, one
after the other, and every child measures the same operations on the same generated
bundles; the table gives, per operation, the median over rounds of each child's median
**CPU time** (``time.process_time``). Each child imports its own checkout's ``oper8d``
and ``benchmarks`` (``PYTHONPATH``), so the code under test is the only difference.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: (key, what the row says, unit): the operations every child measures, in table order
OPERATIONS: tuple[tuple[str, str, str], ...] = (
    ("load", "load + validate + compile, {long} components", "ms"),
    ("tree", "TreeTemplate.render: Deployment", "µs"),
    ("read", "in-memory cluster get of a Deployment (the copy a read returns)", "µs"),
    ("prepare", "DeployManager.prepare of a Deployment", "µs"),
    ("offline", "full offline render, {long} components", "ms"),
    ("first_chain", "first reconcile, chain of {long}, serial", "ms"),
    ("steady_chain", "steady no-op reconcile, chain of {long}, serial", "ms"),
    ("steady_chain_concurrent", "steady no-op reconcile, chain of {short}, 4 workers", "ms"),
    ("steady_independent", "steady no-op reconcile, independent of {short}, serial", "ms"),
)


def write_bundles(root: Path, *, long: int = 50, short: int = 10) -> None:
    """The generated bundles every child measures (written once, read by both checkouts)."""
    from benchmarks.gen import write_bundle

    for shape, size, components in (
        ("chain", "long", long),
        ("chain", "short", short),
        ("independent", "long", long),
        ("independent", "short", short),
    ):
        write_bundle(root / f"{shape}-{size}", components=components, shape=shape)


def measure(bundles: Path, scale: int = 1) -> dict[str, float]:
    """CPU seconds per operation (median of samples) with this process's ``oper8d``, on
    the bundles ``write_bundles`` wrote; ``scale`` divides the sample counts (the smoke
    test passes a large one)."""
    import yaml

    from benchmarks.bench_reconcile import Fixture
    from benchmarks.bench_render import _template_context, offline_render
    from oper8d.bundle import load_bundle
    from oper8d.engine.deploy import DeployManager
    from oper8d.offline import controller_for

    def cr_of(name: str) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load((bundles / name / "cr.yaml").read_text())
        return loaded

    def cpu(operation: Callable[[], object], repeat: int, number: int = 1) -> float:
        """The median CPU time of one call, over ``repeat`` samples of ``number`` calls."""
        number = max(1, number // scale)
        samples = []
        for _ in range(max(1, repeat // scale)):
            start = time.process_time()
            for _ in range(number):
                operation()
            samples.append((time.process_time() - start) / number)
        return statistics.median(samples)

    def reconciles(name: str, workers: int) -> tuple[float, float]:
        """(first, steady) reconcile CPU times of the bundle ``name``."""
        bundle = load_bundle(bundles / name)
        cr = cr_of(name)
        first = []
        fixture: Fixture | None = None
        for _ in range(max(1, 7 // scale)):
            fixture = Fixture(bundle, cr, workers)
            start = time.process_time()
            fixture.reconcile()
            first.append(time.process_time() - start)
        assert fixture is not None
        fixture.reconcile()
        return statistics.median(first), cpu(fixture.reconcile, repeat=15)

    results: dict[str, float] = {}
    results["load"] = cpu(lambda: load_bundle(bundles / "independent-long"), repeat=3)
    bundle = load_bundle(bundles / "independent-long")
    cr = cr_of("independent-long")
    run, _text = offline_render(bundle, cr)
    results["offline"] = cpu(lambda: offline_render(bundle, cr), repeat=10)

    applied = next(o for o in run.applied.values() if o["kind"] == "Deployment")
    meta = applied["metadata"]
    where = ("apps/v1", "Deployment", meta["name"], meta.get("namespace"))
    results["read"] = cpu(lambda: run.cluster.get(*where), repeat=7, number=500)

    context = _template_context(bundle, controller_for(bundle, cr), cr)
    tree = next(
        r.object for r in bundle.controllers[0].components[0].resources if r.name == "deployment"
    )
    assert tree is not None
    results["tree"] = cpu(lambda: tree.render(context), repeat=7, number=500)
    rendered = tree.render(context)
    live_cr = run.cluster.get(cr["apiVersion"], cr["kind"], cr["metadata"]["name"], "default")
    assert live_cr is not None
    deployer = DeployManager(run.cluster, live_cr, field_manager="bench")
    results["prepare"] = cpu(
        lambda: deployer.prepare(rendered, "c000.deployment", "c000"), repeat=7, number=500
    )

    results["first_chain"], results["steady_chain"] = reconciles("chain-long", 1)
    _first, results["steady_chain_concurrent"] = reconciles("chain-short", 4)
    _first, results["steady_independent"] = reconciles("independent-short", 1)
    return results


def run_child(checkout: Path, bundles: Path, scale: int) -> dict[str, float]:
    """One child process measuring ``checkout``'s code."""
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", str(bundles)]
    done = subprocess.run(
        [*command, "--scale", str(scale)],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring {checkout} failed:\n{done.stderr}")
    results: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def compare(
    before: Path, after: Path, *, rounds: int, long: int = 50, short: int = 10, scale: int = 1
) -> str:
    """The markdown table of ``rounds`` alternating child runs of the two checkouts."""
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="oper8d-compare-") as tmp:
        bundles = Path(tmp)
        write_bundles(bundles, long=long, short=short)
        for _ in range(rounds):
            runs["before"].append(run_child(before, bundles, scale))
            runs["after"].append(run_child(after, bundles, scale))
    lines = [
        f"| operation (CPU time, median of {rounds} alternating rounds) | before | after "
        "| after ÷ before |",
        "|---|---:|---:|---:|",
    ]
    for key, label, unit in OPERATIONS:
        was = statistics.median(r[key] for r in runs["before"])
        now = statistics.median(r[key] for r in runs["after"])
        factor = 1e6 if unit == "µs" else 1e3
        ratio = f"{now / was:.2f}" if was > 0 else "-"
        lines.append(
            f"| {label.format(long=long, short=short)} | {was * factor:,.1f} {unit} "
            f"| {now * factor:,.1f} {unit} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, nargs="?", help="the checkout to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--components", type=int, default=50, help="of the larger bundles")
    parser.add_argument("--scale", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args(argv)
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.scale)))
        return 0
    if args.before is None:
        parser.error("give the checkout to compare with")
    after = Path(__file__).resolve().parent.parent
    table = compare(
        args.before.resolve(), after, rounds=args.rounds, long=args.components, scale=args.scale
    )
    print(table)
    return 0


if __name__ == "__main__":
    # run by path in a child: make the checkout under test (PYTHONPATH) win over this file's
    sys.path[:] = [p for p in sys.path if Path(p).resolve() != Path(__file__).resolve().parent]
    raise SystemExit(main())
