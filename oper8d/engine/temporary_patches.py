"""The TemporaryPatches a CR names (annotation ``oper8.org/temporary-patches``), read for
one reconcile: only patches that exist, are not being deleted, target this CR and use a
patch type the controller's policy allows. Used by the reconciler before the rollout;
the rollout's renderer applies them (``engine.patch.apply_temporary_patches``).
"""

from __future__ import annotations

import json
import logging

from oper8d.bundle.model import ControllerSpec
from oper8d.cluster.base import ClusterReader
from oper8d.engine.config import TEMPORARY_PATCHES_ANNOTATION, get_path
from oper8d.engine.patch import TemporaryPatchRef
from oper8d.errors import ConfigError
from oper8d.objects import Obj

__all__ = ["TEMPORARY_PATCH_API_VERSION", "temporary_patch_refs"]

log = logging.getLogger("oper8d.reconcile")

TEMPORARY_PATCH_API_VERSION = "oper8.org/v1"


def temporary_patch_refs(
    cluster: ClusterReader, controller: ControllerSpec, cr: Obj
) -> list[TemporaryPatchRef]:
    """The TemporaryPatches to apply for ``cr``, by name. Raises ConfigError naming the
    annotation when it is not JSON; patches for another CR or of a refused type are
    skipped with a warning."""
    raw = get_path(cr, ["metadata", "annotations", TEMPORARY_PATCHES_ANNOTATION])
    policy = controller.temporary_patches
    if not raw or not policy.enabled:
        return []
    try:
        entries = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"annotation {TEMPORARY_PATCHES_ANNOTATION} is not JSON: {err.msg}",
            field=f"metadata.annotations[{TEMPORARY_PATCHES_ANNOTATION}]",
        ) from err
    refs: list[TemporaryPatchRef] = []
    ns = cr["metadata"].get("namespace")
    for patch_name, info in sorted((entries or {}).items()):
        obj = cluster.get(TEMPORARY_PATCH_API_VERSION, "TemporaryPatch", patch_name, ns)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            continue
        spec = obj.get("spec") or {}
        target_ok = (
            spec.get("apiVersion") == cr["apiVersion"]
            and spec.get("kind") == cr["kind"]
            and spec.get("name") == cr["metadata"]["name"]
        )
        patch_type = spec.get("patchType", "patchStrategicMerge")
        if not target_ok or patch_type not in policy.allowed_types:
            log.warning("ignoring TemporaryPatch %s/%s: not for this CR or type", ns, patch_name)
            continue
        refs.append(
            TemporaryPatchRef(
                name=patch_name,
                namespace=ns or "",
                patch_type=patch_type,
                patch=spec.get("patch") or {},
                timestamp=str((info or {}).get("timestamp", "")),
            )
        )
    return refs
