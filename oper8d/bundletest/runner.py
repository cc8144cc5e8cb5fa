"""Run bundle test cases offline: render, expected errors, simulated rollouts.

Used by ``oper8d test`` (``cli/test_cmd.py``) and ``oper8d init``. Each case runs the
real engine against the in-memory cluster exactly as ``oper8d render`` and ``oper8d run
--dry-run`` do (deterministic clock, uids and random strings), so what a test checks is
what those commands show. A case never raises for a failure of the bundle or the CR: it
returns a ``CaseResult`` whose failures are ``Problem``s placed at the assertion, the CR
field or the bundle line concerned (files relative to the bundle under test).

Everything a result says (failures, notes, the golden diff) passes the run's redactor
(``redaction.SensitiveValues``, the one ``oper8d render`` masks its output with) in
:func:`run_case`, so a failed field check shows a value from a Secret as ``***`` there
too: a test log is a CI log.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle
from oper8d.bundletest.checks import (
    Named,
    check_components,
    check_conditions,
    check_counts,
    check_created,
    check_fields,
    check_not_created,
    check_objects,
    internal_name_of,
    show,
)
from oper8d.bundletest.golden import compare_golden
from oper8d.bundletest.model import Case, ErrorCheck, RenderCheck, RolloutCheck, Suite
from oper8d.bundletest.offline_runs import RecordingSimulator, render_text
from oper8d.bundletest.values import parse_path
from oper8d.cluster.memory.simulate import DefaultSimulator
from oper8d.errors import (
    BundleError,
    ClusterError,
    ConfigError,
    FatalError,
    Oper8dError,
    Problem,
    ReconcileError,
    RolloutError,
    SourcePos,
)
from oper8d.limits import Limits
from oper8d.offline import OfflineRun, reconcile_offline
from oper8d.redaction import SensitiveValues

__all__ = ["ERROR_TYPES", "BundleCache", "CaseResult", "run_case", "select_cases"]

#: the ``error.type`` names a test file may expect
ERROR_TYPES: dict[str, type[Oper8dError]] = {
    "ConfigError": ConfigError,
    "ClusterError": ClusterError,
    "RolloutError": RolloutError,
    "FatalError": FatalError,
    "BundleError": BundleError,
}


@dataclass(frozen=True)
class CaseResult:
    """How one case went."""

    case: Case
    failures: tuple[Problem, ...] = ()
    #: unified diff of the golden file against the render, when they differ
    diff: str = ""
    #: context for a failure (how a rollout ended)
    notes: tuple[str, ...] = ()
    #: ``--update`` wrote the golden file (it was missing or different)
    golden_updated: bool = False
    #: references among the case's objects that cannot resolve (``engine.references``):
    #: shown, never a failure
    warnings: tuple[Problem, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures


class BundleCache:
    """Compiled bundles by folder, so the cases of one bundle compile it once; a bundle
    that does not load is remembered with its error. ``limits``: what the bundles are
    compiled (and their golden files read) with."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits if limits is not None else Limits()
        self._loaded: dict[Path, Bundle | BundleError] = {}

    def get(self, folder: Path) -> Bundle:
        """The compiled bundle, or its ``BundleError``."""
        key = folder.resolve()
        if key not in self._loaded:
            try:
                self._loaded[key] = load_bundle(folder, self.limits)
            except BundleError as err:
                self._loaded[key] = err
        loaded = self._loaded[key]
        if isinstance(loaded, BundleError):
            raise loaded
        return loaded


def select_cases(suite: Suite, pattern: str | None) -> list[Case]:
    """The cases whose id (``tests/file.yaml::case name``) holds ``pattern``, ignoring case;
    every case when ``pattern`` is None or empty."""
    if not pattern:
        return list(suite.cases)
    folded = pattern.casefold()
    return [c for c in suite.cases if folded in c.id.casefold()]


def run_case(case: Case, *, root: Path, bundles: BundleCache, update: bool = False) -> CaseResult:
    """Run ``case`` (of the bundle at ``root``). ``update`` rewrites a render case's golden
    file instead of comparing with it."""
    context = _Context(case, root)
    return context.redacted(_run(context, bundles, update))


def _run(context: _Context, bundles: BundleCache, update: bool) -> CaseResult:
    case = context.case
    if isinstance(case.check, ErrorCheck):
        return _run_error(context, case.check, bundles)
    try:
        bundle = bundles.get(case.bundle)
    except BundleError as err:
        return CaseResult(case, context.bundle_failures(err))
    if isinstance(case.check, RenderCheck):
        return _run_render(context, case.check, bundle, update, bundles.limits)
    return _run_rollout(context, case.check, bundle)


class _Context:
    """Places errors of one case: bundle positions under the bundle root, CR fields at
    their line in the CR."""

    def __init__(self, case: Case, root: Path) -> None:
        self.case = case
        self.prefix = _relative_folder(case.bundle, root)
        #: the values from Secrets the case's run saw (none before it ran)
        self.sensitive = SensitiveValues()

    def offline(
        self,
        bundle: Bundle,
        *,
        simulator: DefaultSimulator | RecordingSimulator | None = None,
        max_reconciles: int = 20,
    ) -> OfflineRun:
        """The case's CR reconciled offline; what the run saw is masked in the result."""
        assert self.case.cr is not None  # the loader requires a CR for every case that runs
        run = reconcile_offline(
            bundle, self.case.cr.data, simulator=simulator, max_reconciles=max_reconciles
        )
        self.sensitive = run.sensitive
        return run

    def redacted(self, result: CaseResult) -> CaseResult:
        """``result`` with the run's sensitive values masked in everything it prints."""
        if not self.sensitive:
            return result
        redact = self.sensitive.redact
        return replace(
            result,
            failures=tuple(replace(p, message=redact(p.message)) for p in result.failures),
            diff=redact(result.diff),
            notes=tuple(redact(note) for note in result.notes),
            warnings=tuple(replace(w, message=redact(w.message)) for w in result.warnings),
        )

    def warnings(self, run: OfflineRun) -> tuple[Problem, ...]:
        return tuple(self._rebased(w) for w in run.warnings)

    def bundle_failures(self, err: BundleError) -> tuple[Problem, ...]:
        n = len(err.problems)
        head = Problem(
            f"the bundle does not load ({n} problem{'s' if n != 1 else ''}; "
            "`oper8d validate` shows the same):",
            self.case.pos,
        )
        return (head, *(self._rebased(p) for p in err.problems))

    def error_problem(self, err: ReconcileError, doing: str) -> Problem:
        """``err`` as a failure: at its bundle position, or at the CR field it names."""
        message = f"{doing}: {type(err).__name__}: {_error_text(err)}"
        if err.pos is not None:
            return self._rebased(Problem(message, err.pos))
        if err.field and self.case.cr is not None:
            try:
                return Problem(message, self.case.cr.pos(parse_path(err.field)))
            except ValueError:
                pass
        return Problem(message, self.case.pos)

    def _rebased(self, problem: Problem) -> Problem:
        pos = problem.pos
        if pos is None or not self.prefix or Path(pos.file).is_absolute():
            return problem
        return Problem(
            problem.message,
            SourcePos(f"{self.prefix}/{pos.file}", pos.line, pos.col),
            problem.field,
        )


def _relative_folder(folder: Path, root: Path) -> str:
    try:
        rel = folder.resolve().relative_to(root.resolve())
    except ValueError:
        return str(folder)
    return "" if rel == Path(".") else rel.as_posix()


def _error_text(err: Oper8dError) -> str:
    """What ``error.contains`` is matched against: a BundleError's problems, one a line;
    a reconcile error's message, starting with the CR field it is about."""
    if isinstance(err, BundleError):
        return "\n".join(str(p) for p in err.problems)
    if isinstance(err, ReconcileError):
        if err.field and not err.message.startswith(f"{err.field}:"):
            return f"{err.field}: {err.message}"
        return err.message
    return str(err)


# -- error cases ---------------------------------------------------------------------------
def _run_error(context: _Context, check: ErrorCheck, bundles: BundleCache) -> CaseResult:
    case = context.case
    expected = ERROR_TYPES[check.type]
    got: Oper8dError | None = None
    outcome = ""
    try:
        bundle = bundles.get(case.bundle)
    except BundleError as err:
        got = err
    else:
        if expected is BundleError:
            return _failed(case, "expected the bundle not to load, but it loaded", check.pos)
        if case.cr is None:
            return _failed(case, "this case needs a CR (cr: or crFile:)", case.pos)
        try:
            run = context.offline(bundle)
        except ReconcileError as err:
            got = err
        else:
            got = run.fatal_error
            outcome = _outcome(run)
    if got is None:
        return _failed(
            case,
            f"expected a {check.type}, but rendering the CR did not fail ({outcome})",
            check.pos,
        )
    text = _error_text(got)
    failures: list[Problem] = []
    if not isinstance(got, expected):
        failures.append(
            Problem(f"expected a {check.type}, got a {type(got).__name__}: {text}", check.pos)
        )
    elif check.contains is not None and check.contains not in text:
        failures.append(
            Problem(
                f"the {type(got).__name__} does not contain {show(check.contains)}; "
                f"its message is: {text}",
                check.pos,
            )
        )
    field = getattr(got, "field", None)
    if check.field is not None and isinstance(got, expected) and field != check.field:
        failures.append(
            Problem(
                f"expected the error to be about {check.field}, it is about {field}: {text}",
                check.pos,
            )
        )
    return CaseResult(case, tuple(failures))


def _outcome(run: OfflineRun) -> str:
    ready = run.condition("Ready")
    state = f"Ready {ready.get('status')} {ready.get('reason')}" if ready else "no Ready condition"
    return f"{len(run.applied)} objects applied, {state}"


def _failed(case: Case, message: str, pos: SourcePos) -> CaseResult:
    return CaseResult(case, (Problem(message, pos),))


# -- render cases --------------------------------------------------------------------------
def _run_render(
    context: _Context, check: RenderCheck, bundle: Bundle, update: bool, limits: Limits
) -> CaseResult:
    case = context.case
    try:
        run = context.offline(bundle)
    except ReconcileError as err:
        return CaseResult(case, (context.error_problem(err, "the render failed"),))
    if run.fatal_error is not None:
        return CaseResult(case, (context.error_problem(run.fatal_error, "the render failed"),))
    named: list[Named] = list(run.applied.items())
    failures = check_objects(named, check.objects) + check_counts(named, check.counts)
    golden = compare_golden(check, render_text(bundle, run), update=update, limits=limits)
    if golden.failure is not None:
        failures.append(golden.failure)
    return CaseResult(
        case,
        _in_file_order(failures),
        diff=golden.diff,
        golden_updated=golden.updated,
        warnings=context.warnings(run),
    )


# -- rollout cases -------------------------------------------------------------------------
def _run_rollout(context: _Context, check: RolloutCheck, bundle: Bundle) -> CaseResult:
    case = context.case
    recorder = RecordingSimulator(
        DefaultSimulator(delay_writes=check.ready_after, overrides=check.statuses)
    )
    try:
        run = context.offline(bundle, simulator=recorder, max_reconciles=check.max_reconciles)
    except ReconcileError as err:
        return CaseResult(case, (context.error_problem(err, "the CR could not be reconciled"),))
    failures: list[Problem] = []
    if check.ready is not None and run.ready != check.ready:
        want = "to be Ready" if check.ready else "not to be Ready"
        failures.append(Problem(f"expected the CR {want}, {_ready_state(run)}", check.ready_pos))
    failures += check_conditions(run.cr, check.conditions)
    failures += check_components(run.cr, check.components)
    failures += check_fields(run.cr, check.fields, subject="the CR")
    existing: list[Named] = [(internal_name_of(o), o) for o in run.cluster.objects()]
    ever: list[Named] = [(internal_name_of(o), o) for o in recorder.written]
    failures += check_created(check.created, existing, ever)
    failures += check_not_created(check.not_created, ever)
    notes = () if not failures else (_how_it_ended(run),)
    return CaseResult(case, _in_file_order(failures), notes=notes, warnings=context.warnings(run))


def _in_file_order(failures: list[Problem]) -> tuple[Problem, ...]:
    """Failures in the order their assertions are written (unplaced ones last)."""
    return tuple(sorted(failures, key=lambda p: (p.pos is None, p.pos or SourcePos(""), p.message)))


def _ready_state(run: OfflineRun) -> str:
    ready = run.condition("Ready")
    if ready is None:
        return "but it has no Ready condition"
    message = f": {ready.get('message')}" if ready.get("message") else ""
    return f"but Ready is {ready.get('status')} ({ready.get('reason')}{message})"


def _how_it_ended(run: OfflineRun) -> str:
    passes = len(run.results)
    ready = run.condition("Ready")
    state = (
        f"Ready {ready.get('status')} {ready.get('reason')}"
        + (f": {ready.get('message')}" if ready.get("message") else "")
        if ready
        else "no Ready condition"
    )
    return f"the run ended after {passes} reconcile{'s' if passes != 1 else ''}: {state}"
