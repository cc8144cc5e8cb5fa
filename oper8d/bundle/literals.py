"""What a resource's template says literally: its kinds, its namespace, its identity.

Used by the bundle compiler to record, for each resource, the ``(apiVersion, kind)`` pairs
and the namespace its template writes without expressions: what RBAC rules are generated
for and what a rendered object is checked against before it is applied. A value computed
by a template is not literal; the bundle declares it instead.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeGuard

from oper8d.errors import SourcePos
from oper8d.kinds import api_version_problem, group_of
from oper8d.template import Expr

__all__ = ["literal_identity", "literal_kinds", "literal_namespace", "text_documents"]

_DOC_SPLIT = re.compile(r"^---\s*$", re.M)
_TOP_LINE = re.compile(r"^(apiVersion|kind):\s*([^\s#]+)\s*$", re.M)


def text_documents(text: str) -> list[dict[str, str]]:
    """The literal top-level apiVersion/kind lines of each document of a text template."""
    docs = []
    for part in _DOC_SPLIT.split(text):
        fields = {m[1]: m[2].strip("'\"") for m in _TOP_LINE.finditer(part)}
        docs.append(fields)
    return docs


def literal_namespace(obj: Any, pos: SourcePos) -> Expr | None:
    """An inline object's namespace written literally: the author declared it."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    value = meta.get("namespace") if isinstance(meta, dict) else None
    if isinstance(value, str) and value and "{" not in value:
        return Expr(json.dumps(value), pos, constant=value)
    return None


def literal_kinds(objects: list[Any]) -> list[tuple[str, str]]:
    """(apiVersion, kind) of objects whose apiVersion and kind are written literally."""
    out = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if _literal(api_version) and _literal(kind):
            out.append((api_version, kind))
    return out


def literal_identity(obj: Any) -> tuple[str, str, str | None, str] | None:
    """(group, kind, namespace, name) of an inline object that writes them all literally
    (no namespace: the CR's); None when any is computed."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return None
    meta = obj["metadata"]
    values = (obj.get("apiVersion"), obj.get("kind"), meta.get("name"))
    namespace = meta.get("namespace")
    plain = [v for v in (*values, namespace) if isinstance(v, str) and v and "{" not in v]
    if len(plain) != 3 + (namespace is not None):
        return None
    api_version, kind, name = (str(v) for v in values)
    if api_version_problem(api_version) is not None:
        return None  # (the compile reports it)
    return group_of(api_version), kind, namespace, name


def _literal(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value) and "{" not in value
