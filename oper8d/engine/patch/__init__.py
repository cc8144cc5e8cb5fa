"""Patching rendered objects: strategic merge patch, JSON 6902, and oper8's temporary patches.

Used by ``engine.rollout`` on every render. Modules:

- ``strategic``: strategic merge patch with Kubernetes' directives, as apimachinery applies it;
- ``ordering``: the order apimachinery gives a merged list;
- ``mergekeys``: the merge keys of built-in kinds' lists, as data;
- ``jsonpatch6902``: JSON Patch (RFC 6902) with copy-on-write;
- ``identity``: patches may not rename or re-kind an object;
- ``bounds``: a TemporaryPatch changes only the kinds and fields the bundle's policy lists;
- ``route``: TemporaryPatch bodies routed by internal name, applied oldest first.

Results share untouched subtrees with the object patched (copying only what a
patch changes keeps this cheap); copy before changing them in place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oper8d.engine.patch.identity import check_identity_preserved
from oper8d.engine.patch.jsonpatch6902 import json_patch
from oper8d.engine.patch.route import (
    TemporaryPatchRef,
    TemporaryPatchType,
    apply_temporary_patches,
    route_json6902_patch,
    route_strategic_patch,
)

if TYPE_CHECKING:
    from oper8d.engine.patch.strategic import strategic_merge

__all__ = [
    "TemporaryPatchRef",
    "TemporaryPatchType",
    "apply_temporary_patches",
    "check_identity_preserved",
    "json_patch",
    "route_json6902_patch",
    "route_strategic_patch",
    "strategic_merge",
]


def __getattr__(name: str) -> Any:
    """``strategic_merge``, imported when first asked for: its merge-key tables cost a
    render that applies no strategic merge patch a share of its start-up."""
    if name == "strategic_merge":
        from oper8d.engine.patch.strategic import strategic_merge

        return strategic_merge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
