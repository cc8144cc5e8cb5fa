"""Golden files of render cases: compare with the ``oper8d render`` text, or rewrite them.

Used by ``bundletest.runner``. The comparison is byte for byte (a golden file is exactly
what ``oper8d render`` prints, so ``oper8d render ... > tests/golden/x.yaml`` writes a
valid one); a difference is shown as a unified diff from the golden file to the render.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from oper8d.bundle.loader import read_regular_file
from oper8d.bundletest.model import RenderCheck
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.limits import Limits

__all__ = ["GoldenOutcome", "compare_golden"]


@dataclass(frozen=True)
class GoldenOutcome:
    """How a golden file compared: ``failure`` None when it matched or was rewritten."""

    failure: Problem | None = None
    diff: str = ""
    updated: bool = False


def compare_golden(
    check: RenderCheck, text: str, *, update: bool, limits: Limits | None = None
) -> GoldenOutcome:
    """Compare ``check``'s golden file (of at most ``fileBytes``) with the rendered
    ``text``; with ``update``, write the file (and its folders) instead when it is missing
    or different."""
    if check.golden_path is None or check.golden is None:
        return GoldenOutcome()
    path, actual = check.golden_path, text.encode("utf-8")
    expected: bytes | None = None
    if path.exists():  # (a golden file is a bundle file: bounded, never a FIFO)
        where = check.golden_pos or SourcePos(check.golden)
        try:
            max_bytes = (limits if limits is not None else Limits()).file_bytes
            expected = read_regular_file(path, check.golden, where, max_bytes=max_bytes)
        except BundleError as err:
            return GoldenOutcome(err.problems[0])
    if expected == actual:
        return GoldenOutcome()
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual)
        return GoldenOutcome(updated=True)
    if expected is None:
        return GoldenOutcome(
            Problem(
                f"golden file {check.golden} does not exist: run `oper8d test` with --update "
                "to write it, then review and commit it",
                check.golden_pos,
            )
        )
    diff = "".join(
        difflib.unified_diff(
            expected.decode("utf-8", errors="replace").splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=check.golden,
            tofile="oper8d render",
        )
    )
    return GoldenOutcome(
        Problem(
            f"the render differs from {check.golden} (if the change is intended, rerun with "
            "--update and review the diff)",
            check.golden_pos,
        ),
        diff,
    )
