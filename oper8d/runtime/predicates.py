"""Which watch events on a CR are worth a reconcile: pure functions over old/new object dicts.

The manager calls ``cr_update_matters`` for every MODIFIED event of a watched CR and queues
the CR only when it returns True, so the operator's own status writes (and anything else
that changes no input of a reconcile) do not trigger another reconcile. ``is_paused`` is
oper8's ``oper8.org/pause-execution`` test, shared with the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oper8d.engine.config import (
    CONFIG_DEFAULTS_ANNOTATION,
    TEMPORARY_PATCHES_ANNOTATION,
)
from oper8d.engine.config import (
    is_paused as _cr_is_paused,
)

__all__ = ["cr_update_matters", "is_paused"]

#: annotations whose change alters what a reconcile does (pause is handled on its own:
#: only lifting it matters, pausing makes the next reconcile a no-op anyway)
_INPUT_ANNOTATIONS = (TEMPORARY_PATCHES_ANNOTATION, CONFIG_DEFAULTS_ANNOTATION)

#: top-level keys that are not the CR's desired state
_NOT_DESIRED_STATE = frozenset({"metadata", "status"})


def is_paused(obj: Mapping[str, Any] | None) -> bool:
    """True when ``obj`` carries ``oper8.org/pause-execution: "true"`` (any case)."""
    return obj is not None and _cr_is_paused(obj)


def cr_update_matters(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """True when the change from ``old`` to ``new`` may change what a reconcile does.

    It matters when: there is no ``old`` (first sight); the desired state changed (a new
    ``metadata.generation`` whose content differs outside ``metadata`` and ``status``);
    deletion started (``deletionTimestamp`` set); the finalizers changed while deleting;
    the ``temporary-patches`` or ``config-defaults`` annotation changed; the pause was lifted.
    Status-only, resourceVersion-only, label and other annotation changes do not matter."""
    if old is None:
        return True
    old_meta = _metadata(old)
    new_meta = _metadata(new)
    if _desired_state_changed(old, new, old_meta, new_meta):
        return True
    if new_meta.get("deletionTimestamp"):
        if not old_meta.get("deletionTimestamp"):
            return True
        if (old_meta.get("finalizers") or []) != (new_meta.get("finalizers") or []):
            return True
    old_annotations = old_meta.get("annotations") or {}
    new_annotations = new_meta.get("annotations") or {}
    if any(old_annotations.get(a) != new_annotations.get(a) for a in _INPUT_ANNOTATIONS):
        return True
    return is_paused(old) and not is_paused(new)


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _desired_state_changed(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    old_meta: Mapping[str, Any],
    new_meta: Mapping[str, Any],
) -> bool:
    old_generation = old_meta.get("generation")
    new_generation = new_meta.get("generation")
    if old_generation is not None and old_generation == new_generation:
        # The API server bumps generation on every change outside metadata (and status,
        # with the status subresource), so an equal generation spares the comparison.
        return False
    # A new generation (or none at all) is confirmed by content: on a CRD without the
    # status subresource a status write bumps generation too, and must not loop.
    return _desired_state(old) != _desired_state(new)


def _desired_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _NOT_DESIRED_STATE}
