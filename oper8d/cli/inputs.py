"""Loading a command's inputs (the bundle, the CR) and reporting what is wrong with them.

Used by every ``oper8d`` command. Problems are printed one a line as
``file:line:col: message`` (``file:line:col: spec.field: message`` for a CR), with paths
as the user can open them from the current directory, and the command exits 1; bad input
never shows a traceback. Imports nothing from the kubernetes client.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from oper8d.errors import BundleError, ClusterError, Problem, ReconcileError, SourcePos
from oper8d.fieldpaths import parse_field_path
from oper8d.objects import Obj

if TYPE_CHECKING:
    from oper8d.bundle.loader import Document
    from oper8d.bundle.model import Bundle
    from oper8d.kubeschema import KubeSchemas
    from oper8d.limits import Limits

__all__ = [
    "CR_FILE",
    "EXIT_INVALID",
    "EXIT_USAGE",
    "CrInput",
    "bundle_argument",
    "bundle_dir",
    "cr_problems",
    "current_limits",
    "fail",
    "format_problem",
    "load_bundle_or_exit",
    "load_cr_or_exit",
    "locate",
    "problem_of",
    "report",
    "warn",
]

#: bad bundle, bad CR, failed rollout
EXIT_INVALID = 1
#: the command cannot run as asked (click uses 2 for usage errors too)
EXIT_USAGE = 2

#: the BUNDLE argument of every command that reads a bundle
bundle_argument = click.argument("bundle", type=click.Path(exists=True), metavar="BUNDLE")
#: an existing file: a CR
CR_FILE = click.Path(exists=True, dir_okay=False)


@dataclass(frozen=True)
class CrInput:
    """A CR read from a file, with the positions of its fields."""

    path: str
    data: dict[str, Any]
    doc: Document


def bundle_dir(bundle: str) -> Path:
    """The bundle folder as the user wrote it (``operator.yaml`` given: its folder)."""
    path = Path(bundle)
    return path.parent if path.is_file() else path


def format_problem(problem: Problem, base: Path | None = None) -> str:
    """``file:line:col: [field: ]message``; a bundle-relative file is put under ``base``."""
    parts: list[str] = []
    if problem.pos is not None:
        parts.append(str(_under(problem.pos, base)))
    if problem.field and not problem.message.startswith(f"{problem.field}:"):
        parts.append(problem.field)
    parts.append(problem.message)
    return ": ".join(parts)


def _under(pos: SourcePos, base: Path | None) -> SourcePos:
    if base is None or Path(pos.file).is_absolute():
        return pos
    return SourcePos(str(base / pos.file), pos.line, pos.col)


def problem_of(err: ReconcileError) -> Problem:
    return Problem(err.message, err.pos, err.field)


def locate(err: ReconcileError, bundle: str, cr: CrInput) -> Problem:
    """A reconcile error as the user can find it: a bundle position under the bundle
    folder, or a CR field at its line in the CR file."""
    if err.pos is not None:
        return Problem(err.message, _under(err.pos, bundle_dir(bundle)), err.field)
    if err.field:
        return _placed(cr, problem_of(err))
    return problem_of(err)


def report(problems: Iterable[Problem], base: Path | None = None) -> int:
    """Print problems to stderr, one a line; returns how many."""
    count = 0
    for problem in problems:
        click.secho(format_problem(problem, base), fg="red", err=True)
        count += 1
    return count


def warn(problems: Iterable[Problem], base: Path | None = None) -> None:
    """Print warnings to stderr, one a line, as ``warning: file:line:col: message``."""
    for problem in problems:
        click.secho(f"warning: {format_problem(problem, base)}", fg="yellow", err=True)


def fail(
    problems: Sequence[Problem | str],
    base: Path | None = None,
    *,
    hint: str | None = None,
    code: int = EXIT_INVALID,
) -> NoReturn:
    """Report ``problems`` (plain strings are printed as ``error: ...``), a hint, and exit."""
    placed = [p for p in problems if isinstance(p, Problem)]
    for text in (p for p in problems if isinstance(p, str)):
        click.secho(f"error: {text}", fg="red", err=True)
    report(placed, base)
    if hint:
        click.echo(hint, err=True)
    sys.exit(code)


def current_limits() -> Limits:
    """The limits given with ``oper8d --limit`` (defaults outside a command line)."""
    from oper8d.limits import Limits

    ctx = click.get_current_context(silent=True)
    found = ctx.find_root().obj if ctx is not None else None
    return found if isinstance(found, Limits) else Limits()


def load_bundle_or_exit(bundle: str, builtin_schemas: KubeSchemas | None = None) -> Bundle:
    """The bundle at ``bundle``, or exit 1 listing its problems. ``builtin_schemas``:
    ``KubeSchemas.builtin()``, when the command loaded it already."""
    from oper8d.bundle import load_bundle

    try:
        return load_bundle(bundle, current_limits(), builtin_schemas=builtin_schemas)
    except BundleError as err:
        n = len(err.problems)
        fail(
            err.problems,
            bundle_dir(bundle),
            hint=f"{n} problem{'s' if n != 1 else ''} in bundle {bundle}",
        )


def load_cr_or_exit(path: str) -> CrInput:
    from oper8d.bundle.loader import load_cr_file

    try:
        doc = load_cr_file(path, current_limits())
    except BundleError as err:
        fail(err.problems)
    if not isinstance(doc.data, dict):
        fail([Problem("a CR file holds one mapping (a Kubernetes object)", SourcePos(path, 1, 1))])
    return CrInput(path, doc.data, doc)


def cr_problems(
    bundle: Bundle,
    cr: CrInput,
    schemas: KubeSchemas | None = None,
    live: Mapping[str, Any] | None = None,
) -> tuple[list[Problem], bool]:
    """Problems of a CR against the bundle, each placed at its line in the CR file, and
    whether any is fatal: the CR cannot be reconciled (no controller for its kind) or the
    API server would refuse to store it (a name, label or field that breaks the CRD's
    schema, checked against ``schemas`` when given: the same check as the in-memory
    cluster's admission). The reconciler's own rules (``engine.inputs``) add their
    findings: the spec's, "did you mean" for unknown fields included, and the config's
    that need no cluster (a config-defaults annotation that names no ConfigMap); whether
    the named ConfigMap exists is left to the reconcile. ``live``: the stored CR this one
    would replace (``diff``): the CRD's CEL transition rules are checked against it. CEL
    rules that cannot be evaluated are printed as warnings on stderr."""
    from oper8d.engine.inputs import resolve_inputs
    from oper8d.offline import check_cr_metadata, find_controller

    try:
        controller = find_controller(bundle, cr.data)
    except ReconcileError as err:
        return [_placed(cr, problem_of(err))], True
    problems: list[Problem] = []
    try:
        check_cr_metadata(cr.data)
    except ReconcileError as err:
        problems.append(_placed(cr, problem_of(err)))
    else:
        problems += _admission_problems(cr)
    fatal = bool(problems)
    inputs = resolve_inputs(controller, cr.data, config_maps=None)
    problems += [_placed(cr, p) for p in (*inputs.spec_problems, *inputs.config_problems)]
    if schemas is not None and not fatal:
        refused = _schema_problems(cr, schemas, live)
        fatal = bool(refused)
        covered = [p.field for p in problems if p.field]
        problems += [p for p in refused if not any(_nested(p.field, c) for c in covered)]
    return sorted(problems, key=lambda p: (p.pos or SourcePos(""), p.field or "")), fatal


def _nested(a: str | None, b: str) -> bool:
    """Whether field paths ``a`` and ``b`` are one field, or one holds the other."""
    if a is None:
        return False
    inner, outer = (a, b) if len(a) >= len(b) else (b, a)
    return inner == outer or inner.startswith((outer + ".", outer + "["))


def _schema_problems(
    cr: CrInput, schemas: KubeSchemas, live: Mapping[str, Any] | None
) -> list[Problem]:
    """Where the CR breaks its CRD's schema, as the API server checks it on create (on
    update of ``live`` when given)."""
    body = {k: v for k, v in cr.data.items() if k != "status"}  # status is not written so
    old = None if live is None else {k: v for k, v in live.items() if k != "status"}
    found = schemas.validate(body, old)
    for line in found.unchecked:
        click.secho(f"warning: {cr.path}: {line}", fg="yellow", err=True)
    return [
        Problem(f"the API server would refuse the CR: {f.message}", cr.doc.pos(f.segments), f.path)
        for f in found.errors
    ]


def _admission_problems(cr: CrInput) -> list[Problem]:
    """What the API server would refuse when the CR is created (labels, annotations,
    finalizers, owner references), placed at the CR's metadata."""
    from oper8d.cluster.memory.admission import validate as admit

    try:
        admit({**cr.data, "metadata": dict(cr.data["metadata"])}, None)
    except ClusterError as err:
        return [Problem(err.message, cr.doc.pos(("metadata",)))]
    return []


def _placed(cr: CrInput, problem: Problem) -> Problem:
    """``problem`` placed at the line of its field in the CR file."""
    parts = parse_field_path(problem.field) if problem.field else None
    pos = cr.doc.pos([int(p) if p.isdigit() else p for p in parts]) if parts else None
    return Problem(problem.message, pos, problem.field)


def load_objects_or_exit(path: str) -> list[Obj]:
    """The Kubernetes objects of a YAML stream (``oper8d render``'s output, ``kubectl get
    -o yaml``'s, a ``List``'s items); a file that is not one is a message and exit 1."""
    import yaml

    from oper8d.fileio import FileRefused, read_bounded

    try:
        docs = list(yaml.safe_load_all(read_bounded(path, current_limits().file_bytes)))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        line = mark.line + 1 if mark is not None else 0
        fail([Problem(f"not valid YAML: {err.problem}", SourcePos(path, line))])
    except (OSError, FileRefused, UnicodeDecodeError, yaml.YAMLError) as err:
        fail([Problem(f"cannot be read: {err}", SourcePos(path))])
    objects: list[Obj] = []
    while docs:
        doc = docs.pop(0)
        if isinstance(doc, dict) and doc.get("kind") == "List":
            docs[:0] = list(doc.get("items") or [])
        elif isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"):
            objects.append(doc)
    return objects
