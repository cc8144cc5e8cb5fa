"""Build the check of one test case (``render:``, ``error:`` or ``rollout:``) from its YAML.

Called by ``bundletest.loader`` for each case, after the file passed JSON Schema
validation, so shapes and types are known to be right here; what the schema cannot say
(field paths that do not parse, golden paths that leave the bundle, a status given twice
for one object) is appended to ``problems`` with its position.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oper8d.bundle.loader import Document, resolve_path
from oper8d.bundletest.model import (
    ComponentsCheck,
    ConditionCheck,
    CountCheck,
    ErrorCheck,
    FieldCheck,
    FieldOp,
    ObjectCheck,
    RenderCheck,
    RolloutCheck,
    Selector,
)
from oper8d.bundletest.values import parse_path
from oper8d.errors import BundleError, Problem

__all__ = ["build_check"]

DocPath = tuple[str | int, ...]


def build_check(
    root: Path, doc: Document, path: DocPath, raw: Mapping[str, Any], problems: list[Problem]
) -> RenderCheck | ErrorCheck | RolloutCheck | None:
    """The check of the case at ``path`` of ``doc``; None when it has problems."""
    builder = _Builder(root, doc, problems)
    if "render" in raw:
        return builder.render((*path, "render"), raw["render"])
    if "error" in raw:
        return builder.error((*path, "error"), raw["error"])
    return builder.rollout((*path, "rollout"), raw["rollout"])


class _Builder:
    def __init__(self, root: Path, doc: Document, problems: list[Problem]) -> None:
        self.root = root
        self.doc = doc
        self.problems = problems

    def render(self, path: DocPath, raw: Mapping[str, Any]) -> RenderCheck:
        golden = raw.get("golden")
        golden_path = None
        if golden is not None:
            try:
                golden_path = resolve_path(self.root, golden, pos=self.doc.pos((*path, "golden")))
            except BundleError as err:
                self.problems += err.problems
        objects = tuple(
            ObjectCheck(
                self.selector((*path, "expect", i), item),
                self.fields((*path, "expect", i, "fields"), item.get("fields") or []),
            )
            for i, item in enumerate(raw.get("expect") or [])
        )
        counts = tuple(
            CountCheck(kind, n, self.doc.key_pos((*path, "count", kind)))
            for kind, n in (raw.get("count") or {}).items()
        )
        return RenderCheck(
            pos=self.doc.pos(path),
            golden=golden,
            golden_path=golden_path,
            golden_pos=self.doc.pos((*path, "golden")) if golden is not None else None,
            objects=objects,
            counts=counts,
        )

    def error(self, path: DocPath, raw: str | Mapping[str, Any]) -> ErrorCheck:
        if isinstance(raw, str):
            return ErrorCheck(self.doc.pos(path), contains=raw)
        return ErrorCheck(
            self.doc.pos(path),
            type=raw.get("type", "ConfigError"),
            contains=raw.get("contains"),
            field=raw.get("field"),
        )

    def rollout(self, path: DocPath, raw: Mapping[str, Any]) -> RolloutCheck:
        statuses: dict[tuple[str, str], Mapping[str, Any]] = {}
        for i, item in enumerate(raw.get("statuses") or []):
            key = (item["kind"], item["name"])
            if key in statuses:
                self.problems.append(
                    Problem(
                        f"a status for {item['kind']} {item['name']} is already given: "
                        "give one status per object",
                        self.doc.pos((*path, "statuses", i)),
                    )
                )
            statuses[key] = item["status"]
        written = raw.get("condition")
        if isinstance(written, Mapping):
            conditions = [((*path, "condition"), written)]
        else:
            conditions = [((*path, "condition", i), c) for i, c in enumerate(written or [])]
        components = raw.get("components") or {}
        return RolloutCheck(
            pos=self.doc.pos(path),
            statuses=statuses,
            ready_after=raw.get("readyAfter", 0),
            max_reconciles=raw.get("maxReconciles", 20),
            ready=raw.get("ready"),
            ready_pos=self.doc.pos((*path, "ready")) if "ready" in raw else None,
            conditions=tuple(
                ConditionCheck(
                    type=c["type"],
                    pos=self.doc.pos(where),
                    status=c.get("status"),
                    reason=c.get("reason"),
                    message_contains=c.get("messageContains"),
                )
                for where, c in conditions
            ),
            components=tuple(
                ComponentsCheck(state, frozenset(names), self.doc.pos((*path, "components", state)))
                for state, names in components.items()
            ),
            fields=self.fields((*path, "fields"), raw.get("fields") or []),
            created=tuple(
                self.selector((*path, "created", i), s)
                for i, s in enumerate(raw.get("created") or [])
            ),
            not_created=tuple(
                self.selector((*path, "notCreated", i), s)
                for i, s in enumerate(raw.get("notCreated") or [])
            ),
        )

    def selector(self, path: DocPath, raw: Mapping[str, Any]) -> Selector:
        return Selector(
            pos=self.doc.pos(path),
            kind=raw.get("kind"),
            name=raw.get("name"),
            namespace=raw.get("namespace"),
            internal_name=raw.get("internalName"),
        )

    def fields(self, path: DocPath, raw: list[Mapping[str, Any]]) -> tuple[FieldCheck, ...]:
        out: list[FieldCheck] = []
        for i, item in enumerate(raw):
            where = self.doc.pos((*path, i, "path"))
            try:
                parts = parse_path(item["path"])
            except ValueError as err:
                self.problems.append(Problem(f"field path {item['path']!r}: {err}", where))
                continue
            op: FieldOp = next(k for k in ("equals", "absent", "contains") if k in item)
            out.append(FieldCheck(item["path"], parts, op, item[op], self.doc.pos((*path, i))))
        return tuple(out)
