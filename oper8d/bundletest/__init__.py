"""Bundle tests: test cases kept in a bundle's ``tests/*.yaml``, run by ``oper8d test``.

A test file lists cases; each gives a CR and one check: ``render`` (a golden file of the
``oper8d render`` output and/or assertions on the rendered objects), ``error`` (rendering
fails with a given error) or ``rollout`` (a simulated rollout with forced statuses, and
expectations on the final CR and on which objects exist). The format is documented in
docs/testing-bundles.md and checked by ``schemas/bundle-test.schema.json``.

Layout: ``model`` (frozen dataclasses), ``loader`` / ``checks_loader`` (YAML -> model,
every problem at ``file:line:col``), ``values`` (field paths, comparisons, merge patch),
``checks`` (assertions), ``offline_runs`` (render text, recording simulator) and
``runner`` (one case -> ``CaseResult``). Used by ``oper8d test`` and ``oper8d init``.
"""

from oper8d.bundletest.loader import find_test_files, load_case_file, load_suite
from oper8d.bundletest.model import Case, CaseFile, Suite
from oper8d.bundletest.runner import BundleCache, CaseResult, run_case, select_cases

__all__ = [
    "BundleCache",
    "Case",
    "CaseFile",
    "CaseResult",
    "Suite",
    "find_test_files",
    "load_case_file",
    "load_suite",
    "run_case",
    "select_cases",
]
