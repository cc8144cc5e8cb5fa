"""The typed model of bundle test files (``BUNDLE/tests/*.yaml``).

``bundletest.loader`` builds it from the YAML (after JSON Schema validation against
``schemas/bundle-test.schema.json``); ``bundletest.runner`` runs it. Every assertion keeps
the position where it is written, so a failure points at the line to look at. The format
itself is described in docs/testing-bundles.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from oper8d.bundle.loader import Document
from oper8d.errors import SourcePos

__all__ = [
    "COMPONENT_STATES",
    "Case",
    "CaseFile",
    "ComponentsCheck",
    "ConditionCheck",
    "CountCheck",
    "CrSource",
    "ErrorCheck",
    "FieldCheck",
    "FieldOp",
    "ObjectCheck",
    "RenderCheck",
    "RolloutCheck",
    "Selector",
    "Suite",
]

FieldOp = Literal["equals", "absent", "contains"]
FieldPath = tuple[str | int, ...]

#: component state in a test file -> the key of status.componentStatus listing them
COMPONENT_STATES: Mapping[str, str] = {
    "deployed": "deployedComponents",
    "verified": "verifiedComponents",
    "failed": "failedComponents",
    "unverified": "unverifiedComponents",
    "unstarted": "unstartedComponents",
    "waiting": "waiting",
}


@dataclass(frozen=True)
class FieldCheck:
    """``{path, equals | absent | contains}``: one check on a value inside an object."""

    path: str
    parts: FieldPath
    op: FieldOp
    value: Any
    pos: SourcePos


@dataclass(frozen=True)
class Selector:
    """Which object: ``kind`` + ``name``, or ``internal_name`` (``component.resource``)."""

    pos: SourcePos
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    internal_name: str | None = None

    def describe(self) -> str:
        """``Deployment hello-app``, ``app.deployment``, ``Deployment app.deployment``."""
        words = [w for w in (self.kind, self.name or self.internal_name) if w]
        text = " ".join(words)
        return f"{text} in namespace {self.namespace}" if self.namespace else text


@dataclass(frozen=True)
class ObjectCheck:
    """A rendered object that must exist, and checks on its fields."""

    selector: Selector
    fields: tuple[FieldCheck, ...] = ()


@dataclass(frozen=True)
class CountCheck:
    """``count: {Kind: n}``: exactly ``count`` rendered objects of ``kind``."""

    kind: str
    count: int
    pos: SourcePos


@dataclass(frozen=True)
class RenderCheck:
    """Render the CR as ``oper8d render`` does; compare and check the output."""

    pos: SourcePos
    golden: str | None = None  # bundle-relative, as written
    golden_path: Path | None = None  # resolved inside the bundle
    golden_pos: SourcePos | None = None
    objects: tuple[ObjectCheck, ...] = ()
    counts: tuple[CountCheck, ...] = ()


@dataclass(frozen=True)
class ErrorCheck:
    """The case passes when the render fails with ``type`` (or a subclass of it)."""

    pos: SourcePos
    type: str = "ConfigError"
    contains: str | None = None
    field: str | None = None


@dataclass(frozen=True)
class ConditionCheck:
    """A condition of the final CR; ``None`` keys are not compared."""

    type: str
    pos: SourcePos
    status: str | None = None
    reason: str | None = None
    message_contains: str | None = None


@dataclass(frozen=True)
class ComponentsCheck:
    """The exact set of components in ``state`` at the end of a rollout."""

    state: str  # a key of COMPONENT_STATES
    names: frozenset[str]
    pos: SourcePos


@dataclass(frozen=True)
class RolloutCheck:
    """A simulated rollout (statuses forced) and expectations on how it ends."""

    pos: SourcePos
    #: ``(kind, name) -> status`` the object settles with instead of the simulated one
    statuses: Mapping[tuple[str, str], Mapping[str, Any]]
    ready_after: int = 0
    max_reconciles: int = 20
    ready: bool | None = None
    ready_pos: SourcePos | None = None
    conditions: tuple[ConditionCheck, ...] = ()
    components: tuple[ComponentsCheck, ...] = ()
    fields: tuple[FieldCheck, ...] = ()
    created: tuple[Selector, ...] = ()
    not_created: tuple[Selector, ...] = ()


@dataclass(frozen=True)
class CrSource:
    """The CR of a case (``crPatch`` already applied) and where its fields are written."""

    data: Mapping[str, Any]
    doc: Document  # the file holding the CR (the test file itself for an inline CR)
    base: FieldPath  # where the CR starts in ``doc``
    patch: Mapping[str, Any] | None = None
    patch_base: FieldPath = ()  # where crPatch starts in the test file
    test_doc: Document | None = None

    def pos(self, field: FieldPath) -> SourcePos:
        """Where a CR field is written: in ``crPatch`` when the patch sets it, else in the
        CR (its nearest written parent)."""
        if self.patch is not None and self.test_doc is not None and _has_path(self.patch, field):
            return self.test_doc.pos((*self.patch_base, *field))
        return self.doc.pos((*self.base, *field))


def _has_path(tree: Any, path: FieldPath) -> bool:
    for part in path:
        if isinstance(tree, Mapping) and part in tree:
            tree = tree[part]
        else:
            return False
    return True


@dataclass(frozen=True)
class Case:
    """One test case of a test file."""

    name: str
    file: str  # bundle-relative test file, e.g. ``tests/render.yaml``
    pos: SourcePos
    bundle: Path  # the bundle folder the case runs against
    cr: CrSource | None  # None only for a case expecting a BundleError
    check: RenderCheck | ErrorCheck | RolloutCheck

    @property
    def id(self) -> str:
        """``tests/render.yaml::the sample renders as committed`` (what ``-k`` matches)."""
        return f"{self.file}::{self.name}"


@dataclass(frozen=True)
class CaseFile:
    """One test file and its cases, in the order written."""

    file: str
    cases: tuple[Case, ...]


@dataclass(frozen=True)
class Suite:
    """Every test file of a bundle, sorted by file name."""

    bundle: Path
    files: tuple[CaseFile, ...]

    @property
    def cases(self) -> tuple[Case, ...]:
        return tuple(c for f in self.files for c in f.cases)
