"""One object's difference, as ``oper8d diff`` shows it: both sides normalised (what the
server manages left out, keys sorted), Secret values masked as kubectl masks them, written
as YAML and compared with ``difflib`` into a unified diff named as kubectl names objects."""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from typing import Any, Literal

from oper8d import yamlio
from oper8d.cluster.memory.admission import sorted_keys
from oper8d.engine.deploy import identity
from oper8d.engine.unchanged import HASH_ANNOTATION
from oper8d.objects import Obj
from oper8d.redaction import SensitiveValues, redact_strings

__all__ = [
    "DEV_NULL",
    "MASK",
    "NOISY_ANNOTATIONS",
    "SERVER_METADATA",
    "ObjectDiff",
    "compare",
    "diff_name",
    "mask_secret_data",
    "normalise",
    "unified_diff",
]

#: metadata the server sets and moves on every write: it says nothing about content
SERVER_METADATA = frozenset(
    {"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}
)
#: annotations other clients and controllers keep for themselves: kubectl's client-side
#: apply record (the whole object again, on one line) and the Deployment controller's
#: revision counter
NOISY_ANNOTATIONS = frozenset(
    {"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision"}
)
#: what a masked Secret value shows; changed values get a suffix so the change is visible
MASK = "***"
DEV_NULL = "/dev/null"

Action = Literal["create", "change", "delete"]


@dataclass(frozen=True)
class ObjectDiff:
    """One object's comparison. ``text`` is its unified diff, empty when nothing changes."""

    name: str  # apps.v1.Deployment.<namespace>.<name>
    action: Action | None  # None: no difference
    text: str


# -- normalising and formatting ---------------------------------------------------------
def normalise(obj: Obj) -> Obj:
    """``obj`` without what the server manages (``status``, ``SERVER_METADATA``,
    ``NOISY_ANNOTATIONS``; an annotation map left empty goes too), keys sorted at every
    level so that key order never shows up as a difference. ``obj`` is not changed."""
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (out.get("metadata") or {}).items() if k not in SERVER_METADATA}
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k not in NOISY_ANNOTATIONS
    }
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    out["metadata"] = meta
    normalised: Obj = sorted_keys(out)
    return normalised


def mask_secret_data(live: Obj | None, merged: Obj | None) -> tuple[Obj | None, Obj | None]:
    """For a v1 Secret, every ``data`` (and ``stringData``) value replaced by ``***``; a key
    whose value differs shows ``*** (before)`` / ``*** (after)``, so the diff says *that* it
    changed without printing it (the server folds ``stringData`` into ``data``). Its
    ``oper8d.io/applied-hash``, a digest of the values, is masked too. Other kinds pass as
    they are."""
    sample = merged if merged is not None else live
    if sample is None or (sample.get("apiVersion"), sample.get("kind")) != ("v1", "Secret"):
        return live, merged

    def masked(obj: Obj | None, suffix: str) -> Obj | None:
        if obj is None:
            return None
        out = dict(obj)
        for field in ("data", "stringData"):
            old, new = (dict((o or {}).get(field) or {}) for o in (live, merged))
            changed = {k for k in old.keys() & new.keys() if old[k] != new[k]}
            if field in obj:
                values = obj.get(field) or {}
                out[field] = {k: f"{MASK} ({suffix})" if k in changed else MASK for k in values}
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if HASH_ANNOTATION in annotations:
            annotations = {**annotations, HASH_ANNOTATION: MASK}
            out["metadata"] = {**obj["metadata"], "annotations": annotations}
        return out

    return masked(live, "before"), masked(merged, "after")


def _changes_kept(raw_before: Any, raw_after: Any, before: Any, after: Any) -> tuple[Any, Any]:
    """Masked ``before``/``after``, where a string that changed but masks to the same text
    on both sides gets `` (before)``/`` (after)``: a masked change still shows."""
    if isinstance(before, dict) and isinstance(after, dict):
        b, a = dict(before), dict(after)
        for key in before.keys() & after.keys():
            b[key], a[key] = _changes_kept(
                raw_before.get(key), raw_after.get(key), before[key], after[key]
            )
        return b, a
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        pairs = [
            _changes_kept(rb, ra, b, a)
            for rb, ra, b, a in zip(raw_before, raw_after, before, after, strict=True)
        ]
        return [b for b, _ in pairs], [a for _, a in pairs]
    if isinstance(before, str) and before == after and raw_before != raw_after:
        return f"{before} (before)", f"{after} (after)"
    return before, after


def diff_name(obj: Obj) -> str:
    """kubectl's file name of an object: ``apps.v1.Deployment.<namespace>.<name>``
    (``v1.ConfigMap...`` for the core group; no namespace part when cluster-scoped)."""
    api_version, kind, name, namespace = identity(obj)
    parts = [api_version.replace("/", "."), kind, namespace, name]
    return ".".join(p for p in parts if p)


def unified_diff(live: Obj | None, merged: Obj | None, name: str) -> str:
    """The unified diff of two (normalised) objects as YAML; ``None`` on either side is
    ``/dev/null``. Empty when they are equal."""
    before = yamlio.dump(live).splitlines(keepends=True) if live is not None else []
    after = yamlio.dump(merged).splitlines(keepends=True) if merged is not None else []
    return "".join(
        difflib.unified_diff(
            before,
            after,
            fromfile=f"live/{name}" if live is not None else DEV_NULL,
            tofile=f"merged/{name}" if merged is not None else DEV_NULL,
        )
    )


def compare(
    live: Obj | None, merged: Obj | None, sensitive: SensitiveValues | None = None
) -> ObjectDiff:
    """The diff of a live object (None: it does not exist) and what the server would store
    (None: it would be deleted), both normalised, Secret values masked and, in any kind,
    the ``sensitive`` values masked where they stand as whole values."""
    sample = merged if merged is not None else live
    if sample is None:
        raise ValueError("compare() needs at least one object")
    name = diff_name(sample)
    before, after = mask_secret_data(
        normalise(live) if live is not None else None,
        normalise(merged) if merged is not None else None,
    )
    if sensitive:
        masked = [redact_strings(o, sensitive) for o in (before, after)]
        before, after = _changes_kept(before, after, masked[0], masked[1])
    text = unified_diff(before, after, name)
    action: Action | None = None
    if live is None:
        action = "create"
    elif merged is None:
        action = "delete"
    elif text:
        action = "change"
    return ObjectDiff(name=name, action=action, text=text)


# -- rendering --------------------------------------------------------------------------
