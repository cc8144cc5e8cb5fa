"""Load a bundle's test files (``tests/*.yaml``) into the ``bundletest.model``.

Used by ``oper8d test`` (``cli/test_cmd.py``) and ``oper8d init`` (to check what it wrote).
Each file is read with the bundle loader (``bundle.loader``: positions of every node),
validated against ``schemas/bundle-test.schema.json``, then built into cases; the CR
files they name are read here too, so a typo in a path is reported before anything
runs. Every problem of every file is collected and raised as one ``BundleError`` (each
``file:line:col: message``, bundle-relative), which the command reports with exit code 2.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from oper8d.bundle.loader import Document, load_yaml_file, resolve_path
from oper8d.bundle.validate import SchemaSet
from oper8d.bundletest.checks_loader import build_check
from oper8d.bundletest.model import Case, CaseFile, CrSource, Suite
from oper8d.bundletest.values import merge_patch
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.limits import Limits

__all__ = ["SCHEMA_FILE", "TESTS_DIR", "find_test_files", "load_case_file", "load_suite"]

TESTS_DIR = "tests"
SCHEMA_FILE = "bundle-test.schema.json"


def find_test_files(bundle: Path) -> list[str]:
    """The bundle-relative paths of the test files (``tests/*.yaml`` and ``*.yml``), sorted.
    Files in subfolders of tests/ (CRs, golden files) are not test files."""
    folder = bundle / TESTS_DIR
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml")]
    return sorted(f"{TESTS_DIR}/{p.name}" for p in found)


def load_suite(bundle: str | Path, limits: Limits | None = None) -> Suite:
    """Every test file of ``bundle`` (a folder, or its operator.yaml), built into cases;
    ``limits``: their ``fileBytes`` bounds each test and CR file.

    Raises ``BundleError`` with every problem of every file (the files are checked
    together so that one run shows them all).
    """
    root = Path(bundle)
    if root.is_file():
        root = root.parent
    loader = _SuiteLoader(root, limits)
    files = [loader.load(rel) for rel in find_test_files(root)]
    if loader.problems:
        raise BundleError(sorted(loader.problems, key=_problem_order))
    return Suite(root, tuple(f for f in files if f is not None))


def load_case_file(bundle: str | Path, relpath: str) -> CaseFile:
    """One test file of ``bundle``; ``BundleError`` with its problems."""
    loader = _SuiteLoader(Path(bundle))
    loaded = loader.load(relpath)
    if loader.problems or loaded is None:
        raise BundleError(sorted(loader.problems, key=_problem_order))
    return loaded


def _problem_order(p: Problem) -> tuple[str, int, int, str]:
    pos = p.pos or SourcePos("")
    return (pos.file, pos.line, pos.col, p.message)


class _SuiteLoader:
    """Loads test files of one bundle, collecting problems; reads each CR file once."""

    def __init__(self, root: Path, limits: Limits | None = None) -> None:
        self.root = root
        self.limits = limits
        self.schemas = SchemaSet()
        self.problems: list[Problem] = []
        self._cr_docs: dict[str, Document | None] = {}

    def load(self, relpath: str) -> CaseFile | None:
        try:
            doc = load_yaml_file(self.root, relpath, limits=self.limits)
        except BundleError as err:
            self.problems += err.problems
            return None
        if _looks_like_an_object(doc.data):
            self.problems.append(
                Problem(
                    "this looks like a Kubernetes object, not a test file: every "
                    f"{TESTS_DIR}/*.yaml holds test cases; move CRs into a subfolder "
                    f"(e.g. {TESTS_DIR}/crs/) and name them with crFile:",
                    doc.pos(()),
                )
            )
            return None
        schema_problems = self.schemas.validate(doc, SCHEMA_FILE)
        if schema_problems:
            self.problems += schema_problems
            return None
        cases: list[Case] = []
        seen: dict[str, SourcePos] = {}
        for index, raw in enumerate(doc.data["cases"]):
            path = ("cases", index)
            name = raw["name"]
            if name in seen:
                self.problems.append(
                    Problem(
                        f"test case {name!r} is already defined at line {seen[name].line}: "
                        "give each case of a file its own name",
                        doc.pos((*path, "name")),
                    )
                )
            seen.setdefault(name, doc.pos((*path, "name")))
            case = self._case(doc, path, raw)  # checked even when misnamed: all problems at once
            if case is not None:
                cases.append(case)
        return CaseFile(doc.file, tuple(cases))

    def _case(
        self, doc: Document, path: tuple[str | int, ...], raw: Mapping[str, Any]
    ) -> Case | None:
        before = len(self.problems)
        bundle = self.root
        if "bundle" in raw:
            bundle = self._folder(raw["bundle"], doc.pos((*path, "bundle")))
        cr = self._cr(doc, path, raw)
        check = build_check(self.root, doc, path, raw, self.problems)
        if len(self.problems) > before or check is None:
            return None
        return Case(
            name=raw["name"],
            file=doc.file,
            pos=doc.pos(path),
            bundle=bundle,
            cr=cr,
            check=check,
        )

    def _folder(self, relpath: str, pos: SourcePos) -> Path:
        try:
            folder = resolve_path(self.root, relpath, pos=pos)
        except BundleError as err:
            self.problems += err.problems
            return self.root
        if not folder.is_dir():
            self.problems.append(Problem(f"bundle folder {relpath!r} does not exist", pos))
        return folder

    def _cr(
        self, doc: Document, path: tuple[str | int, ...], raw: Mapping[str, Any]
    ) -> CrSource | None:
        if "cr" in raw and "crFile" in raw:
            self.problems.append(
                Problem(
                    "give the CR either inline (cr:) or as a file (crFile:), not both",
                    doc.pos(path),
                )
            )
            return None
        patch = raw.get("crPatch")
        if "cr" in raw:
            source = CrSource(copy.deepcopy(raw["cr"]), doc, (*path, "cr"))
        elif "crFile" in raw:
            cr_doc = self._cr_doc(raw["crFile"], doc.pos((*path, "crFile")))
            if cr_doc is None:
                return None
            source = CrSource(copy.deepcopy(cr_doc.data), cr_doc, ())
        else:
            if patch is not None:
                self.problems.append(
                    Problem(
                        "crPatch needs a CR to change: add cr: or crFile:",
                        doc.pos((*path, "crPatch")),
                    )
                )
            return None
        if patch is None:
            return source
        return CrSource(
            merge_patch(source.data, patch),
            source.doc,
            source.base,
            patch=patch,
            patch_base=(*path, "crPatch"),
            test_doc=doc,
        )

    def _cr_doc(self, relpath: str, pos: SourcePos) -> Document | None:
        key = PurePosixPath(relpath.replace("\\", "/")).as_posix()
        if key not in self._cr_docs:
            self._cr_docs[key] = self._read_cr(relpath, pos)
        return self._cr_docs[key]

    def _read_cr(self, relpath: str, pos: SourcePos) -> Document | None:
        try:
            cr_doc = load_yaml_file(self.root, relpath, pos=pos, limits=self.limits)
        except BundleError as err:
            self.problems += err.problems
            return None
        if not isinstance(cr_doc.data, dict):
            self.problems.append(
                Problem("a CR file holds one mapping (a Kubernetes object)", cr_doc.pos(()))
            )
            return None
        return cr_doc


def _looks_like_an_object(data: Any) -> bool:
    return isinstance(data, dict) and "cases" not in data and {"apiVersion", "kind"} <= data.keys()
