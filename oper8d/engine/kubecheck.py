"""Rendered objects against Kubernetes' own schema for their kind, before anything is applied.

``engine.render`` (components) and ``engine.hooks`` call :func:`check_schema` on every object
after the declaration check (``engine.declared``): the same check runs in ``render``,
``test``, ``run --dry-run``, ``diff`` and the live operator, so what passes offline is what
the API server takes. It first makes values the types the author meant (``kubeschema``'s
coercion: a number or boolean where the schema says string becomes its text, as in
``value: "{{ spec.replicas }}"`` of an env var), then validates: served apiVersion/kind,
unknown fields, types, required fields, enums, formats, base64 of Secret ``data``.

Problems are a ``ConfigError`` at the resource's position naming the object and each field
path. A kind with no known schema (a custom resource whose CRD was not given) is checked
for nothing; the reconcile records one warning per kind (``KindWarnings``), and one per
CEL rule of a CRD that could not be evaluated (``kubeschema.cel``).
"""

from __future__ import annotations

import threading
from typing import Any

from oper8d.bundle.model import ResourceSpec
from oper8d.errors import ObjectError
from oper8d.kinds import ref_of
from oper8d.kubeschema import KubeSchemas
from oper8d.logs import Logger
from oper8d.objects import Obj

__all__ = ["KindWarnings", "check_schema"]

_LOG = Logger("oper8d.schema")

#: findings quoted in one error; the rest are counted
_MAX_FINDINGS = 5


class KindWarnings:
    """The kinds a process already warned about having no schema for: one warning each."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def once(self, message: str) -> None:
        with self._lock:
            if message in self._seen:
                return
            self._seen.add(message)
        _LOG.warning("%s", message)


def check_schema(
    obj: Obj,
    res: ResourceSpec,
    internal: str,
    schemas: KubeSchemas,
    warnings: KindWarnings | None = None,
) -> Obj:
    """``obj`` with its values coerced to the schema's types, once it validates; else a
    ConfigError listing the fields the API server would refuse."""
    coerced: dict[str, Any]
    coerced, result = schemas.checked(obj)
    if warnings is not None:
        if result.warning:
            warnings.once(result.warning)
        for line in result.unchecked:  # CEL rules it could not evaluate: said, not passed
            warnings.once(f"{ref_of(coerced)}: {line}")
    if result.ok:
        return coerced
    shown = [f"{f.path}: {f.message}" if f.path else f.message for f in result.errors]
    more = len(shown) - _MAX_FINDINGS
    listed = "; ".join(shown[:_MAX_FINDINGS]) + (f"; and {more} more" if more > 0 else "")
    raise ObjectError(
        f"resource '{internal}' renders {ref_of(coerced)}, which the API server would refuse: "
        f"{listed}",
        pos=res.pos,
        path=result.errors[0].segments,
    )
