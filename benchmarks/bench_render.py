"""Render benchmarks: full offline renders and the raw per-object template cost.

Used by ``benchmarks.run`` and the smoke test. Three measurements:

* :func:`bench_example` - ``oper8d render`` of a bundle and CR after loading: the real
  reconciler against the in-memory cluster (readiness simulated) until the CR is stable,
  the would-delete preview and the YAML output, exactly what the CLI does per call.
* :func:`bench_generated` - a generated N-component bundle: load + validate + compile
  once, cold, then the same full offline render repeated.
* :func:`bench_process` - ``oper8d render`` of a generated N-component bundle as a whole
  process (a fresh interpreter each time), with the compile cache off, cold (emptied before
  each run) and warm: wall time and the child's CPU time.
* :func:`bench_stages` - the same warm render split into its steps (imports, load,
  reconcile, output), CPU time of each, to see where the whole-process time goes.
* :func:`bench_templates` - one compiled template rendered in a loop: ``TreeTemplate``
  (inline objects, no YAML parse) and ``TextTemplate`` (Jinja text, then a libyaml parse
  unless the rendered text is cached), per object, to compare with
  ``performance-notes.md``; ruamel's safe loader on the same text for reference.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML

from benchmarks.gen import write_bundle
from benchmarks.timing import Row, Samples, sample, sample_per_op
from oper8d import yamlio
from oper8d.bundle import Bundle, ControllerSpec, load_bundle
from oper8d.bundle.validate import apply_defaults
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.session import SeededRandoms, Session
from oper8d.offline import OfflineRun, controller_for, reconcile_offline, would_delete
from oper8d.template.documents import DocumentCache

EXAMPLE_BUNDLE = Path(__file__).resolve().parent.parent / "examples" / "operators" / "stateful"
EXAMPLE_CR = EXAMPLE_BUNDLE / "samples" / "notes.yaml"


def offline_render(bundle: Bundle, cr: dict[str, Any]) -> tuple[OfflineRun, str]:
    """What ``oper8d render`` does once the bundle and CR are loaded: returns the run and
    the YAML text it would print."""
    run = reconcile_offline(bundle, cr)
    deletions = would_delete(bundle, run)
    text = yamlio.dump_all(obj for obj in run.applied.values())
    text += "".join(f"# would delete: {obj['metadata']['name']}\n" for _c, obj in deletions)
    return run, text


def _render_rows(label: str, bundle: Bundle, cr: dict[str, Any], repeat: int) -> list[Row]:
    run, _text = offline_render(bundle, cr)  # also warms lazy imports and template caches
    if not run.ready:
        raise RuntimeError(f"{label}: the offline render did not reach Ready: {run.last.error}")
    samples = sample(lambda: offline_render(bundle, cr), repeat=repeat)
    objects = len(run.applied)
    extra = {
        "objects": str(objects),
        "reconcile passes": str(len(run.results)),
        "objects/s": f"{objects / samples.median:,.0f}",
    }
    return [Row(f"{label}: full offline render", samples, "ms", extra)]


def bench_example(
    bundle_path: Path = EXAMPLE_BUNDLE, cr_path: Path = EXAMPLE_CR, *, repeat: int = 20
) -> list[Row]:
    """Offline render of an example bundle (default: examples/operators/stateful)."""
    bundle = load_bundle(bundle_path)
    cr = yaml.safe_load(Path(cr_path).read_text(encoding="utf-8"))
    return _render_rows(f"example `{bundle.name}`", bundle, cr, repeat)


def bench_generated(*, components: int = 50, repeat: int = 10) -> list[Row]:
    """Cold load+compile (once, compile cache off) and full offline render of a generated
    bundle."""
    with tempfile.TemporaryDirectory(prefix="oper8d-bench-") as tmp:
        generated = write_bundle(Path(tmp), components=components, shape="independent")
        loaded: list[Bundle] = []
        cold = sample(lambda: loaded.append(load_bundle(generated.path, cache=False)), repeat=1)
        bundle = loaded[0]
        rows = [
            Row(
                f"generated {components} components: load + validate + compile (cold, once)",
                cold,
                "ms",
                {"objects": str(generated.objects)},
            )
        ]
        rows += _render_rows(f"generated {components} components", bundle, generated.cr, repeat)
    return rows


#: the compile cache modes :func:`bench_process` measures: label -> what is set up
PROCESS_MODES = ("cache off (OPER8D_NO_CACHE=1)", "cold cache", "warm cache")


def bench_process(
    *, components: int = 50, repeat: int = 10, baselines: Sequence[Path] = ()
) -> list[Row]:
    """``python -m oper8d render BUNDLE --cr CR`` of a generated bundle (``chain``, as
    ``gen.py`` writes by default), a fresh process per run, from the repository root.

    The three modes of ``PROCESS_MODES`` run in turn in every round, so load on a shared
    machine hits them alike; the cache lives in a temporary ``XDG_CACHE_HOME``. With
    ``baselines`` (other checkouts of oper8d), each round also runs the same command from
    each of those folders, whose ``oper8d`` it then imports, cache off and warm (their own
    caches). Each row also gives the least CPU time of its runs: on a shared host that
    swings from minute to minute it is the steadier number, and with baselines each row
    also gives its CPU time per round divided by that of the first baseline with the cache
    off in the same round (median and quartiles).
    CPU time is the child's user + system time (``RUSAGE_CHILDREN``). Python writes and
    reuses compiled bytecode (``PYTHONDONTWRITEBYTECODE`` is unset for the children), as an
    installed package has it; one untimed run per mode warms it and the file system cache."""
    with tempfile.TemporaryDirectory(prefix="oper8d-bench-") as tmp:
        root = Path(tmp)
        generated = write_bundle(root / "bundle", components=components)
        cr = root / "cr.yaml"
        cr.write_text(yaml.safe_dump(generated.cr), encoding="utf-8")
        cache = root / "cache"
        command = [sys.executable, "-m", "oper8d", "render", str(generated.path), "--cr", str(cr)]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["XDG_CACHE_HOME"] = str(cache)
        envs = {
            PROCESS_MODES[0]: {**env, "OPER8D_NO_CACHE": "1"},
            PROCESS_MODES[1]: {k: v for k, v in env.items() if k != "OPER8D_NO_CACHE"},
            PROCESS_MODES[2]: {k: v for k, v in env.items() if k != "OPER8D_NO_CACHE"},
        }
        here = Path(__file__).resolve().parent.parent
        runs = {mode: (here, envs[mode]) for mode in PROCESS_MODES}
        others: dict[str, tuple[Path, dict[str, str]]] = {}
        for number, baseline in enumerate(baselines):
            # its own cache folder: the checkouts' store files must not replace each other
            cache_of = str(root / f"baseline-cache-{number}")
            warm = {**envs[PROCESS_MODES[2]], "XDG_CACHE_HOME": cache_of}
            others[f"baseline {baseline}: cache off"] = (baseline, envs[PROCESS_MODES[0]])
            others[f"baseline {baseline}: warm cache"] = (baseline, warm)
        runs = {**others, **runs}
        outputs = {mode: _run_process(command, *runs[mode])[2] for mode in runs}
        if len(set(outputs.values())) != 1:
            raise RuntimeError("oper8d render printed different output with the cache")
        wall: dict[str, list[float]] = {mode: [] for mode in runs}
        cpu: dict[str, list[float]] = {mode: [] for mode in runs}
        for _ in range(repeat):
            for mode, (folder, env_of_mode) in runs.items():
                if mode == PROCESS_MODES[1]:
                    shutil.rmtree(cache, ignore_errors=True)
                seconds, cpu_seconds, _out = _run_process(command, folder, env_of_mode)
                wall[mode].append(seconds)
                cpu[mode].append(cpu_seconds)
    label = f"`oper8d render` of the generated {components} components, whole process"
    first = next(iter(others), None)  # the first baseline, cache off: each round's yardstick
    return [
        Row(
            f"{label}: {mode}",
            Samples(tuple(wall[mode]), tuple(cpu[mode])),
            "ms",
            {
                "CPU min": f"{1000 * min(cpu[mode]):.1f} ms",
                "÷ first baseline": _round_ratios(cpu[mode], cpu[first]) if first else "",
                "objects": str(generated.objects),
            },
        )
        for mode in runs
    ]


def _round_ratios(cpu: list[float], yardstick: list[float]) -> str:
    """The CPU time of each round ÷ that of the same round's yardstick: median and
    quartiles. Both ran back to back, so a host that swings from minute to minute moves
    them together; the ratio is steadier than either time."""
    ratios = sorted(mine / theirs for mine, theirs in zip(cpu, yardstick, strict=True))
    quartile = len(ratios) // 4
    median = statistics.median(ratios)
    return f"{median:.3f} ({ratios[quartile]:.3f} to {ratios[-1 - quartile]:.3f})"


#: what ``bench_stages`` runs in each child: the steps of ``oper8d render BUNDLE --cr CR``
#: (``cli.main.render``, GC off and the startup code store in use as ``python -m oper8d``
#: runs it), each step's CPU time
#: printed as ``stage=ms`` (the first stage is the interpreter's own start)
_STAGES = """
import gc, sys, time
gc.disable()
marks = [("interpreter start", time.process_time())]
def mark(label):
    marks.append((label, time.process_time()))
from oper8d.cachefiles import cache_dir
from oper8d.cli.startup_code import reused_startup_code
startup = reused_startup_code(cache_dir())  # as cli/process.py runs every command
startup.__enter__()
mark("the startup code store")
import click
mark("import click")
import oper8d.cli.main
mark("import oper8d.cli.main (bundle, template, Jinja, PyYAML, kubeschema)")
from oper8d.cli.inputs import cr_problems, load_bundle_or_exit, load_cr_or_exit
from oper8d.cli.schemas import schemas_for
from oper8d.kubeschema import KubeSchemas
from oper8d.offline import reconcile_offline, would_delete
from oper8d.render_output import render_stream
mark("import the engine, the in-memory cluster, the output")
builtin = KubeSchemas.builtin()
bundle = load_bundle_or_exit(sys.argv[1], builtin)
mark("load_bundle (warm cache) and the shipped schemas")
cr = load_cr_or_exit(sys.argv[2])
schemas = schemas_for(bundle, (), None, builtin)
problems, _fatal = cr_problems(bundle, cr, schemas)
assert not problems, problems
mark("the CR and its checks")
run = reconcile_offline(bundle, cr.data, schemas=schemas)
mark("offline reconcile")
text = render_stream(
    list(run.applied.values()), would_delete(bundle, run), None, sensitive=run.sensitive
)
mark("YAML output")
startup.__exit__(None, None, None)
previous = 0.0
for label, at in marks:
    print(f"{label}={1000 * (at - previous):.3f}")
    previous = at
"""


def bench_stages(*, components: int = 50, repeat: int = 10) -> list[Row]:
    """Where a warm ``oper8d render`` of a generated bundle spends its CPU time: each step
    of the render command in a fresh process (``_STAGES``), median and least over
    ``repeat`` runs after one that fills the compile cache and the bytecode."""
    with tempfile.TemporaryDirectory(prefix="oper8d-bench-") as tmp:
        root = Path(tmp)
        generated = write_bundle(root / "bundle", components=components)
        cr = root / "cr.yaml"
        cr.write_text(yaml.safe_dump(generated.cr), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["XDG_CACHE_HOME"] = str(root / "cache")
        command = [sys.executable, "-c", _STAGES, str(generated.path), str(cr)]
        here = Path(__file__).resolve().parent.parent
        stages: dict[str, list[float]] = {}
        for _ in range(repeat + 1):
            out = _run_process(command, here, env)[2]
            for line in out.splitlines():
                label, _eq, ms = line.rpartition("=")
                stages.setdefault(label, []).append(float(ms) / 1000)
    return [
        Row(
            f"render stage: {label}",
            Samples(tuple(seconds[1:])),
            "ms",
            {"min": f"{1000 * min(seconds[1:]):.2f} ms"},  # the steadier number on a busy host
        )
        for label, seconds in stages.items()
    ]


def _run_process(command: list[str], folder: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, the child's CPU seconds and its output, running in ``folder``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr}")
    cpu_seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu_seconds, proc.stdout


def bench_templates(*, number: int = 500, repeat: int = 7) -> list[Row]:
    """Per-object cost of rendering compiled templates of a generated component."""
    with tempfile.TemporaryDirectory(prefix="oper8d-bench-") as tmp:
        generated = write_bundle(Path(tmp), components=2, shape="independent")
        bundle = load_bundle(generated.path)
    controller = controller_for(bundle, generated.cr)
    context = _template_context(bundle, controller, generated.cr)
    inline = controller.components[0]  # c000: ConfigMap, Deployment, Service inline
    text = controller.components[1].resources[0].template  # c001: the same, as text
    assert text is not None
    deployment = next(r.object for r in inline.resources if r.name == "deployment")
    assert deployment is not None
    trees = [r.object for r in inline.resources if r.object is not None]
    per_docs = len(text.render(context))
    rendered_text = text.render_text(context)
    tokens, slots = text.render_tokens(context)
    rendered_deployment = deployment.render(context)
    uncached = DocumentCache(text.file, size=0)
    ruamel = YAML(typ="safe", pure=False)

    def per(n: int, samples: Samples) -> Samples:
        return Samples(tuple(s / n for s in samples.seconds))

    def all_trees() -> None:
        for tree in trees:
            tree.render(context)

    run = {"number": number, "repeat": repeat}
    slow = {"number": max(1, number // 20), "repeat": repeat}  # the reference is ~10x slower
    return [
        Row(
            "TreeTemplate.render: Deployment",
            sample_per_op(lambda: deployment.render(context), **run),
            "µs",
        ),
        Row(
            "TreeTemplate.render: ConfigMap + Deployment + Service, per object",
            per(len(trees), sample_per_op(all_trees, **run)),
            "µs",
        ),
        Row(
            "TextTemplate.render_tokens (Jinja only), per object",
            per(per_docs, sample_per_op(lambda: text.render_tokens(context), **run)),
            "µs",
        ),
        Row(
            "rendered text parse, libyaml (cache miss), per object",
            per(per_docs, sample_per_op(lambda: uncached.parse(tokens, slots), **run)),
            "µs",
        ),
        Row(
            f"rendered text parse, ruamel.yaml safe loader ({_ruamel_flavour()}), per object "
            "(reference)",
            per(per_docs, sample_per_op(lambda: list(ruamel.load_all(rendered_text)), **slow)),
            "µs",
        ),
        Row(
            "TextTemplate.render (text unchanged: cache hit), per object",
            per(per_docs, sample_per_op(lambda: text.render(context), **run)),
            "µs",
        ),
        Row(
            "json.loads(json.dumps(Deployment)) (reference)",
            sample_per_op(lambda: json.loads(json.dumps(rendered_deployment)), **run),
            "µs",
        ),
    ]


def _template_context(
    bundle: Bundle, controller: ControllerSpec, cr: dict[str, Any]
) -> dict[str, Any]:
    """The template context a reconcile would give component ``c000`` of ``cr``."""
    clock = FakeClock()
    cr = {**cr, "spec": apply_defaults(cr.get("spec") or {}, controller.resource.schema)}
    session = Session(
        bundle=bundle,
        controller=controller,
        cr=cr,
        config=dict(controller.config_defaults),
        cluster=MemoryCluster(clock=clock.now),
        randoms=SeededRandoms("bench"),
    )
    return session.context(component="c000")


def _ruamel_flavour() -> str:
    """Whether ruamel.yaml parses with its C extension (ruamel.yaml.clib) here."""
    try:
        import _ruamel_yaml  # noqa: F401  (the C extension's module name)
    except ImportError:
        return "pure Python: ruamel.yaml.clib missing"
    return "with ruamel.yaml.clib"


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_render [--components N] [--repeat N] [--baseline DIR]...
    [--stages]``: the whole-process render benchmark (or its steps), as a markdown table."""
    import argparse

    from benchmarks.run import table

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_render")
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="another oper8d checkout to measure in the same rounds (repeatable)",
    )
    parser.add_argument(
        "--stages", action="store_true", help="where a warm render's CPU time goes, by step"
    )
    args = parser.parse_args(argv)
    if args.stages:
        rows = bench_stages(components=args.components, repeat=args.repeat)
    else:
        rows = bench_process(
            components=args.components, repeat=args.repeat, baselines=args.baseline
        )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before: {load}\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
