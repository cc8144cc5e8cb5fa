#!/usr/bin/env python3
"""Fuzz campaign: mutated example bundles and CRs through validate, render and run --dry-run.

Every input must end in a clean outcome: exit 0, or exit 1/2 with a message and no Python
traceback. The campaign prints how many inputs ended ok, in a clean error, or in a
traceback, grouped by cause (exception type and the innermost oper8d frame), and exits 1
when any traceback was seen. ``tests/unit/test_fuzz_cli.py`` runs the same mutations under
hypothesis for about a minute in CI; this script runs many more:

    .venv/bin/python scripts/fuzz_campaign.py --inputs 10000 --seed 1

The mutations are drawn through a ``Chooser`` (a ``random.Random`` here, hypothesis' data in
the test), so the test can shrink a failure to a small input.
"""

from __future__ import annotations

import argparse
import collections
import copy
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "operators"

T = TypeVar("T")
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_NEST = "NESTED-VALUE-MARKER"


class Chooser(Protocol):
    """Where the mutations' choices come from."""

    def choice(self, options: Sequence[T]) -> T: ...

    def integer(self, low: int, high: int) -> int: ...


class RandomChooser:
    def __init__(self, rng: Any) -> None:
        self._rng = rng

    def choice(self, options: Sequence[T]) -> T:
        return options[self._rng.randrange(len(options))]

    def integer(self, low: int, high: int) -> int:
        return self._rng.randint(low, high)


#: values a mutation may put anywhere: wrong types, template edge cases, odd names
VALUES: tuple[Any, ...] = (
    None, 0, -1, 1.5, True, "", "x", "a/b", "A_B", "@x", "{{", "}}", "{{ self }}",
    "{{ 1/0 }}", "{{ spec }}", "{{ [1, 2] }}", "{{ {'a': 1} }}", "{{ nope }}", "spec.nope",
    "{{ 10**100 }}", "{{ 'a' * 3 }}", "{% for i in range(3) %}{{ i }}{% endfor %}",
    "{{ 'x' * 10**9 }}", "{{ 10 ** 10000000 }}", "{{ '%0*d' | format(10**9, 1) }}",
    "{{ live('nope.nope') }}", "{{ scoped_name(1) }}", "{{ name }}", "x" * 300, "ü",
    [], {}, [1], ["a", "b"], {"a": {"b": 1}}, {"name": "x"}, [{"name": "w"}, {"name": "w"}],
    {"apiVersion": 1, "kind": {}}, "---\nkind: X", "true", "1e3", "::", "- a",
)

#: text inserted into text templates and YAML files
SNIPPETS: tuple[str, ...] = (
    "{{", "}}", "{%", "%}", "{{ self }}", "{{ spec }}", ": ", "\n---\n", "\n- ", "&a ", "*a",
    "!!set ", "!!binary ", "{{ spec | to_yaml }}", "{% for x in spec %}", "{% endfor %}",
    "\n  ", "#", "'", '"', "[", "{", "{{ 10 ** 10000 }}", "{{ name }}", "\t", "\x00",
)


@dataclass
class Case:
    """One fuzz input: bundle files (path -> text) and a CR text."""

    example: str
    files: dict[str, str]
    cr: str


def example_cases() -> list[Case]:
    """Each example bundle with each of its samples, unmutated."""
    cases = []
    for bundle in sorted(p for p in EXAMPLES.iterdir() if (p / "operator.yaml").is_file()):
        files = {
            p.relative_to(bundle).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(bundle.rglob("*"))
            if p.is_file() and "tests" not in p.relative_to(bundle).parts
        }
        for sample in sorted((bundle / "samples").glob("*.yaml")):
            cases.append(Case(bundle.name, files, sample.read_text(encoding="utf-8")))
    return cases


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            out += _paths(value, (*prefix, index))
    return out


def _set(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = tree
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return tree


def _delete(tree: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return tree
    parent = tree
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return tree


def _mutate_tree(text: str, chooser: Chooser) -> str:
    try:
        return _mutate_tree_or_fail(text, chooser)
    except RecursionError:  # an earlier mutation nested the tree too deep to walk: keep it
        return text


def _mutate_tree_or_fail(text: str, chooser: Chooser) -> str:
    try:
        tree = yaml.load(text, Loader=_LOADER)
    except (yaml.YAMLError, RecursionError):
        return text
    paths = _paths(tree)
    path = chooser.choice(paths)
    action = chooser.choice(("set", "set", "set", "delete", "duplicate", "nest"))
    tree = copy.deepcopy(tree)
    if action == "set":
        tree = _set(tree, path, copy.deepcopy(chooser.choice(VALUES)))
    elif action == "delete" and path:
        tree = _delete(tree, path)
    elif action == "duplicate" and path and isinstance(path[-1], str):
        parent = tree
        for part in path[:-1]:
            parent = parent[part]
        parent[path[-1] + "x"] = copy.deepcopy(parent[path[-1]])
    nested = ""
    if action == "nest":  # written as flow text: the dumper itself would recurse too deep
        depth = chooser.integer(1, 400)
        nested = "[" * depth + "1" + "]" * depth
        tree = _set(tree, path, _NEST)
    try:
        out = yaml.dump(tree, Dumper=_DUMPER, sort_keys=False, width=1 << 30)
    except RecursionError:
        return text
    return out.replace(_NEST, nested) if nested else out


def _mutate_text(text: str, chooser: Chooser) -> str:
    lines = text.split("\n")
    index = chooser.integer(0, max(0, len(lines) - 1))
    line = lines[index]
    column = chooser.integer(0, len(line))
    action = chooser.choice(("insert", "insert", "delete-line", "replace-value"))
    if action == "insert":
        lines[index] = line[:column] + chooser.choice(SNIPPETS) + line[column:]
    elif action == "delete-line":
        del lines[index]
    elif ": " in line:
        key = line.split(": ", 1)[0]
        lines[index] = f"{key}: {chooser.choice(SNIPPETS)}"
    return "\n".join(lines)


def mutate(case: Case, chooser: Chooser) -> Case:
    """``case`` with one to three mutations of its bundle files or its CR."""
    files = dict(case.files)
    cr = case.cr
    for _ in range(chooser.integer(1, 3)):
        target = chooser.choice(("cr", "cr", *sorted(files)))
        structured = chooser.integer(0, 2) > 0
        if target == "cr":
            cr = _mutate_tree(cr, chooser) if structured else _mutate_text(cr, chooser)
        else:
            text = files[target]
            if target.endswith((".yaml", ".yml")) and "templates/" not in target and structured:
                files[target] = _mutate_tree(text, chooser)
            else:
                files[target] = _mutate_text(text, chooser)
    return Case(case.example, files, cr)


# -- running ----------------------------------------------------------------------------------

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("validate",),
    ("render",),
    ("run", "--dry-run", "--max-reconciles", "3"),
)

#: an exception repr in a message: an internal error shown without a position
_INTERNAL = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\(")


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ok", "error", "internal" (a clean exit showing a raw exception) or "traceback"
    cause: str = ""
    detail: str = ""


def run_case(case: Case, command: tuple[str, ...], workdir: Path) -> Outcome:
    """Write ``case`` under ``workdir`` and run ``oper8d <command>`` on it in-process."""
    from click.testing import CliRunner

    from oper8d.cli.main import main

    bundle = workdir / "bundle"
    if bundle.exists():
        shutil.rmtree(bundle)
    for relpath, text in case.files.items():
        path = bundle / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    cr = workdir / "cr.yaml"
    cr.write_text(case.cr, encoding="utf-8", errors="surrogatepass")
    args = [command[0], str(bundle), "--cr", str(cr), *command[1:]]
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    output = result.output
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        trace = "".join(traceback.format_exception(exc)[-6:])
        return Outcome("traceback", _cause(exc), f"{output[-1000:]}\n{trace}")
    if "Traceback (most recent call last)" in output:
        return Outcome("traceback", "printed traceback", output[-2000:])
    if result.exit_code == 0:
        return Outcome("ok")
    if result.exit_code not in (1, 2) or not output.strip():
        return Outcome("traceback", f"exit {result.exit_code} without a message", output)
    found = _INTERNAL.search(output)
    if found:
        return Outcome("internal", found.group(0), output[-500:])
    return Outcome("error")


def _cause(exc: BaseException) -> str:
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if "/oper8d/" in f.filename
    ]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].name}" if frames else "?"
    return f"{type(exc).__name__} at {where}"


def campaign(inputs: int, seed: int, budget: float) -> collections.Counter[tuple[str, str]]:
    import random

    rng = random.Random(seed)
    chooser = RandomChooser(rng)
    bases = example_cases()
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    samples: dict[str, str] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(inputs):
            if time.monotonic() - started > budget:
                print(f"time budget reached after {number} inputs", file=sys.stderr)
                break
            case = mutate(chooser.choice(bases), chooser)
            outcome = run_case(case, chooser.choice(COMMANDS), Path(tmp))
            counts[(outcome.kind, outcome.cause)] += 1
            if outcome.kind in ("traceback", "internal") and outcome.cause not in samples:
                samples[outcome.cause] = outcome.detail
            if (number + 1) % 500 == 0:
                print(f"{number + 1} inputs, {_summary(counts)}", file=sys.stderr, flush=True)
    for cause, detail in samples.items():
        print(f"--- first {cause}:\n{detail}\n", file=sys.stderr)
    return counts


def _summary(counts: collections.Counter[tuple[str, str]]) -> str:
    kinds: collections.Counter[str] = collections.Counter()
    for (kind, _cause), n in counts.items():
        kinds[kind] += n
    return ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=float, default=6 * 3600, help="seconds at most")
    options = parser.parse_args()
    counts = campaign(options.inputs, options.seed, options.budget)
    total = sum(counts.values())
    print(f"{total} inputs: {_summary(counts)}")
    for (kind, cause), n in sorted(counts.items()):
        if cause:
            print(f"  {kind:9} {n:6}  {cause}")
    return 1 if any(kind == "traceback" for kind, _ in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
