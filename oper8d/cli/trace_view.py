"""How ``oper8d trace`` prints a trace: a tree table (``-o wide``: more columns), or the
documented structure as JSON or YAML. Formatting only: the trace is built by
``oper8d.trace``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from oper8d import yamlio
from oper8d.trace.model import ComponentTrace, CrTrace, Manager, ObjectTrace, Trace

__all__ = ["FORMATS", "age", "format_trace"]

FORMATS = ("text", "wide", "json", "yaml")

_HEADER = ("NAME", "STATE", "REASON", "AGE", "MESSAGE")
_WIDE_HEADER = ("NAME", "STATE", "REASON", "AGE", "MANAGERS", "FINALIZERS", "UID", "MESSAGE")
#: the longest message a table cell shows (``-o json`` has them whole)
_MESSAGE_WIDTH = 160


def format_trace(trace: Trace, fmt: str) -> str:
    """``trace`` as ``fmt`` (one of ``FORMATS``), ending with a newline."""
    if fmt == "json":
        return json.dumps(trace.to_data(), indent=2) + "\n"
    if fmt == "yaml":
        return yamlio.dump(trace.to_data())
    return _table(trace, wide=fmt == "wide")


def age(since: str | None, now: datetime) -> str:
    """How long ago ``since`` (RFC 3339) was, as kubectl prints ages: ``45s``, ``3m12s``,
    ``17m``, ``5h3m``, ``20h``, ``3d4h``, ``12d``; ``-`` when unknown."""
    if not since:
        return "-"
    try:
        then = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    seconds = max(0, int((now - then).total_seconds()))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if days < 2:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def _table(trace: Trace, *, wide: bool) -> str:
    now = _parse(trace.observed_at)
    cr = trace.resource
    rows: list[tuple[str, ...]] = [_WIDE_HEADER if wide else _HEADER]
    rows.append(_cr_row(cr, now, wide))
    for i, comp in enumerate(trace.components):
        last_comp = i == len(trace.components) - 1
        rows.append(_component_row(comp, ("└─ " if last_comp else "├─ "), wide))
        stem = "   " if last_comp else "│  "
        for j, obj in enumerate(comp.objects):
            branch = "└─ " if j == len(comp.objects) - 1 else "├─ "
            rows.append(_object_row(obj, stem + branch, now, wide, trace.deleting))
    lines = [_summary(cr, now)]
    if cr.last_error:
        lines.append(f"last error: {cr.last_error}")
    lines += _aligned(rows)
    if trace.blockers:
        lines += ["", "deletion waits for:"] + [f"  - {b}" for b in trace.blockers]
    lines += [f"warning: {w}" for w in trace.warnings]
    return "\n".join(lines) + "\n"


def _summary(cr: CrTrace, now: datetime) -> str:
    where = f"{cr.namespace}/{cr.name}" if cr.namespace else cr.name
    parts = [f"{cr.kind} {where}"]
    for c in cr.conditions:
        parts.append(f"{c.type}={c.status} ({c.reason})" if c.reason else f"{c.type}={c.status}")
    observed = "-" if cr.observed_generation is None else str(cr.observed_generation)
    parts.append(f"generation {cr.generation} (observed {observed})")
    parts.append(f"age {age(cr.creation_timestamp, now)}")
    if cr.paused:
        parts.append("paused")
    if cr.deletion_timestamp:
        parts.append(f"deleting since {age(cr.deletion_timestamp, now)} ago")
    return ", ".join(parts)


def _cr_row(cr: CrTrace, now: datetime, wide: bool) -> tuple[str, ...]:
    ready, updating = cr.condition("Ready"), cr.condition("Updating")
    if cr.deletion_timestamp:
        state = "deleting"
    elif cr.paused:
        state = "paused"
    elif ready is None:
        state = "waiting"
    elif ready.status == "True":
        state = "ready"
    elif ready.reason in ("ConfigError", "Errored"):
        state = "failed"
    else:
        state = "waiting"
    shown = updating if updating is not None and updating.reason != "Stable" else ready
    reason = shown.reason if shown else "-"
    message = shown.message if shown else "no status yet"
    if cr.deletion_timestamp:
        reason = "Deleting"
        message = f"finalizers: {', '.join(cr.finalizers)}" if cr.finalizers else ""
    extra = (_managers_text(()), ",".join(cr.finalizers) or "-", cr.uid or "-") if wide else ()
    return (cr.ref, state, reason or "-", age(cr.creation_timestamp, now), *extra, _cut(message))


def _component_row(comp: ComponentTrace, prefix: str, wide: bool) -> tuple[str, ...]:
    judged = [o for o in comp.objects if o.readiness is not None]
    if comp.state in ("ready", "waiting", "failed") and judged and comp.reason != "ReadyWhen":
        # its objects' rows say why: the component says how many are ready
        ready = sum(o.readiness is not None and o.readiness.state == "ready" for o in judged)
        message = f"{ready}/{len(judged)} ready"
    else:
        message = comp.message
    if comp.reported is not None and comp.reported.state in ("waiting", "failed"):
        said = comp.reported.reason or comp.reported.state
        message += f"; operator: {said}" if message else f"operator: {said}"
    extra = ("", "", "") if wide else ()
    return (prefix + comp.name, comp.state, comp.reason or "-", "", *extra, _cut(message))


def _object_row(
    obj: ObjectTrace, prefix: str, now: datetime, wide: bool, deleting: bool
) -> tuple[str, ...]:
    name = f"{obj.kind}/{obj.name}"
    state: str
    if obj.readiness is not None:
        state, reason = obj.readiness.state, obj.readiness.reason
        message = _without_ref(obj.readiness.message, obj)
    elif obj.deletion_timestamp:
        state, reason, message = "deleting", "Terminating", _held(obj)
    elif obj.exists:
        state, reason = "present", "-"
        message = "" if obj.rendered or deleting else "not rendered now"
    else:
        state, reason, message = "missing", "NotFound", ""
    if not obj.exists and obj.readiness is not None:
        state = "missing"
    extra = (
        (_managers_text(obj.managers), ",".join(obj.finalizers) or "-", obj.uid or "-")
        if wide
        else ()
    )
    return (prefix + name, state, reason, age(obj.creation_timestamp, now), *extra, _cut(message))


def _held(obj: ObjectTrace) -> str:
    if obj.finalizers:
        return f"held by finalizers {', '.join(obj.finalizers)}"
    return "being deleted"


def _managers_text(managers: Sequence[Manager]) -> str:
    """``manager(Operation)`` of each field manager, ``/subresource`` when not the object."""
    names: list[str] = []
    for m in managers:
        how = f"{m.operation}/{m.subresource}" if m.subresource else m.operation
        text = f"{m.manager}({how})"
        if text not in names:
            names.append(text)
    return ",".join(names) or "-"


def _without_ref(message: str, obj: ObjectTrace) -> str:
    """A readiness message without the object's name in front (its row names it)."""
    for ref in (f"{obj.kind} {obj.namespace}/{obj.name}", f"{obj.kind} {obj.name}"):
        for sep in (": ", " "):
            if message.startswith(ref + sep):
                return message[len(ref) + len(sep) :]
    return message


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_WIDTH else text[: _MESSAGE_WIDTH - 3] + "..."


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        ("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]).rstrip()
        for r in rows
    ]


def _parse(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(UTC)
