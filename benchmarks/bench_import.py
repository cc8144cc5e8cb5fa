"""Start-up benchmarks: what a fresh ``oper8d`` process pays before doing any work.

Used by ``benchmarks.run`` and the smoke test. Every measurement runs a new Python
process (``sys.executable``, from the repository root), as a user's shell would:

* :func:`import_profile` - ``python -X importtime -c CODE`` for importing the CLI and
  for running ``validate`` / ``render`` (``PROFILED_CODE``): the total import cost and the
  direct dependencies oper8d modules import, heaviest first;
* :func:`kubernetes_imported` - whether ``kubernetes`` is in ``sys.modules`` after the
  import and after running ``validate`` / ``render`` in-process (it must not be);
* :func:`bench_commands` - wall time of whole commands (``oper8d validate`` of an
  example, and a bare interpreter for reference), repeated subprocesses (hyperfine is
  used when it is installed).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.timing import Row, Samples

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_BUNDLE = "examples/operators/stateful"
EXAMPLE_CR = "examples/operators/stateful/samples/notes.yaml"
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)$")


@dataclass(frozen=True)
class ImportEntry:
    """One line of ``-X importtime``: a module, its own and cumulative cost in µs."""

    module: str
    self_us: int
    cumulative_us: int
    depth: int
    parent: str | None


@dataclass(frozen=True)
class ImportProfile:
    total_us: int  # cumulative cost of importing the target, dependencies included
    entries: tuple[ImportEntry, ...]

    def direct_dependencies(self, package: str = "oper8d") -> list[ImportEntry]:
        """Modules outside ``package`` imported directly by a module of ``package``,
        heaviest first."""
        deps = [
            e
            for e in self.entries
            if not _in_package(e.module, package) and e.parent and _in_package(e.parent, package)
        ]
        return sorted(deps, key=lambda e: -e.cumulative_us)


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def parse_importtime(stderr: str) -> list[ImportEntry]:
    """The entries of ``-X importtime`` output, each with the module that imported it."""
    raw: list[tuple[str, int, int, int]] = []
    for line in stderr.splitlines():
        match = _LINE.match(line)
        if match:
            self_us, cumulative, indent, module = match.groups()
            raw.append((module, int(self_us), int(cumulative), len(indent) // 2))
    # Python prints a module after everything it imported: read backwards, parents first.
    ancestors: dict[int, str] = {}
    entries: list[ImportEntry] = []
    for module, self_us, cumulative, depth in reversed(raw):
        ancestors[depth] = module
        parent = ancestors.get(depth - 1) if depth > 0 else None
        entries.append(ImportEntry(module, self_us, cumulative, depth, parent))
    entries.reverse()
    return entries


#: what the start-up section profiles: label -> Python code run with ``-X importtime``
PROFILED_CODE = {
    "import oper8d.cli.main": "import oper8d.cli.main",
    f"oper8d validate {EXAMPLE_BUNDLE}": (
        "from oper8d.cli.main import main\n"
        f"main(['validate', {EXAMPLE_BUNDLE!r}], standalone_mode=False)"
    ),
    f"oper8d render {EXAMPLE_BUNDLE} --cr …": (
        "from oper8d.cli.main import main\n"
        f"main(['render', {EXAMPLE_BUNDLE!r}, '--cr', {EXAMPLE_CR!r}], standalone_mode=False)"
    ),
}


def import_profile(code: str = "import oper8d.cli.main") -> ImportProfile:
    """``-X importtime`` of running ``code`` in a fresh interpreter. The total counts what
    ``code`` imported: the interpreter's own start-up imports (``site``, ...) are left out."""
    startup = {e.module for e in parse_importtime(_python("-X", "importtime", "-c", "pass").stderr)}
    entries = parse_importtime(_python("-X", "importtime", "-c", code).stderr)
    total = sum(e.cumulative_us for e in entries if e.depth == 0 and e.module not in startup)
    return ImportProfile(total_us=total, entries=tuple(entries))


_PROBE = """
import json, sys
stages = {}
def has_kubernetes():
    return any(m == "kubernetes" or m.startswith("kubernetes.") for m in sys.modules)
import oper8d.cli.main as cli
stages["import oper8d.cli.main"] = has_kubernetes()
for name, args in (
    ("oper8d validate", ["validate", BUNDLE]),
    ("oper8d render", ["render", BUNDLE, "--cr", CR]),
):
    try:
        cli.main(args, standalone_mode=False)
    except SystemExit:
        pass
    stages[name] = has_kubernetes()
sys.stdout.flush()
print("\\n@@" + json.dumps(stages))
"""


def kubernetes_imported() -> dict[str, bool]:
    """Stage -> whether ``kubernetes`` was imported by then (all must be False)."""
    code = f"BUNDLE = {EXAMPLE_BUNDLE!r}\nCR = {EXAMPLE_CR!r}\n{_PROBE}"
    proc = _python("-c", code)
    marker = proc.stdout.rpartition("\n@@")[2]
    try:
        return {k: bool(v) for k, v in json.loads(marker).items()}
    except json.JSONDecodeError as err:
        raise RuntimeError(f"the import probe failed:\n{proc.stderr}") from err


def bench_commands(*, repeat: int = 10, render_components: int = 50) -> list[Row]:
    """Wall time of fresh processes: ``oper8d validate`` of the example and references,
    then ``oper8d render`` of a generated bundle of ``render_components`` components with
    the compile cache off, cold and warm (``bench_render.bench_process``, CPU time too)."""
    commands = [
        ("python -c pass (interpreter start, reference)", ["-c", "pass"]),
        ('python -c "import oper8d.cli.main"', ["-c", "import oper8d.cli.main"]),
        (f"oper8d validate {EXAMPLE_BUNDLE}", ["-m", "oper8d", "validate", EXAMPLE_BUNDLE]),
        (
            f"oper8d render {EXAMPLE_BUNDLE} --cr …/notes.yaml",
            ["-m", "oper8d", "render", EXAMPLE_BUNDLE, "--cr", EXAMPLE_CR],
        ),
    ]
    tool = "hyperfine" if shutil.which("hyperfine") else "subprocess"
    rows = []
    for label, args in commands:
        samples = (
            _hyperfine(args, repeat) if tool == "hyperfine" else _subprocess_times(args, repeat)
        )
        rows.append(Row(label, samples, "ms", {"runs": str(len(samples)), "timed with": tool}))
    from benchmarks.bench_render import bench_process  # imports oper8d: only when measuring

    rows += bench_process(components=render_components, repeat=repeat)
    return rows


def _subprocess_times(args: list[str], repeat: int) -> Samples:
    _python(*args)  # warm the file system cache, as hyperfine's warmup does
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        _python(*args)
        out.append(time.perf_counter() - start)
    return Samples(tuple(out))


def _hyperfine(args: list[str], repeat: int) -> Samples:
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "out.json"
        command = " ".join([_quote(sys.executable), *(_quote(a) for a in args)])
        subprocess.run(
            ["hyperfine", "--warmup", "1", "--runs", str(repeat), "--export-json", str(export),
             "--shell=none", "--style", "none", command],
            cwd=REPO_ROOT, check=True, capture_output=True,
        )  # fmt: skip
        times = json.loads(export.read_text())["results"][0]["times"]
    return Samples(tuple(float(t) for t in times))


def _quote(arg: str) -> str:
    return f'"{arg}"' if " " in arg else arg


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"python {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc
