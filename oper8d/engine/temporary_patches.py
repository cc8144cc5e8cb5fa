"""The TemporaryPatches a CR names (annotation ``oper8.org/temporary-patches``), read for
one reconcile: only patches that exist, are not being deleted and target this CR, when
the controller's bundle turns temporary patches on (``temporaryPatches.enabled``). Used by
the reconciler before the rollout; the rollout's renderer applies them, within the
policy's kinds and paths (``engine.patch.apply_temporary_patches``). The annotation is
read by :func:`announced_patches`, which the TemporaryPatch controller
(``runtime.temporarypatch``) uses too.
"""

from __future__ import annotations

import json
from typing import Any

from oper8d.bundle.model import ControllerSpec
from oper8d.cluster.base import ClusterReader
from oper8d.engine.config import TEMPORARY_PATCHES_ANNOTATION, get_path
from oper8d.engine.patch import TemporaryPatchRef
from oper8d.errors import ConfigError
from oper8d.kinds import is_dns_subdomain
from oper8d.logs import Logger
from oper8d.objects import Obj

__all__ = ["TEMPORARY_PATCH_API_VERSION", "announced_patches", "temporary_patch_refs"]

log = Logger("oper8d.reconcile")

TEMPORARY_PATCH_API_VERSION = "oper8.org/v1"
_FIELD = f"metadata.annotations[{TEMPORARY_PATCHES_ANNOTATION}]"
_SHAPE = '{"<TemporaryPatch name>": {"timestamp": "<RFC 3339>", ...}, ...}'


def announced_patches(raw: str) -> dict[str, str]:
    """The annotation's entries: TemporaryPatch name -> the timestamp it was added at
    (``""`` when it has none). Raises ConfigError naming the annotation when it is not a
    JSON object of that shape, so a reconcile reports it in the CR's status instead of
    failing with a traceback at every attempt, and nothing is applied half-way."""
    try:
        entries = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as err:
        why = err.msg if isinstance(err, json.JSONDecodeError) else "nested too deeply"
        raise _malformed(f"is not JSON: {why}") from err
    if not isinstance(entries, dict):
        raise _malformed(f"is a JSON {_json_type(entries)}, not an object")
    announced: dict[str, str] = {}
    for name, info in entries.items():
        if not is_dns_subdomain(name):
            raise _malformed(f"names {name[:80]!r}, which is not a TemporaryPatch name")
        if info is None:
            info = {}
        if not isinstance(info, dict):
            raise _malformed(f"gives {name!r} a JSON {_json_type(info)}, not an object")
        timestamp = info.get("timestamp", "")
        if not isinstance(timestamp, str):
            raise _malformed(f"gives {name!r} a timestamp that is not a string")
        announced[name] = timestamp
    return announced


def temporary_patch_refs(
    cluster: ClusterReader, controller: ControllerSpec, cr: Obj
) -> list[TemporaryPatchRef]:
    """The TemporaryPatches to apply for ``cr``, by name: none unless the controller turns
    them on. Raises ConfigError naming the annotation when it is malformed
    (:func:`announced_patches`); patches for another CR or of a refused type are skipped
    with a warning."""
    raw = get_path(cr, ["metadata", "annotations", TEMPORARY_PATCHES_ANNOTATION])
    policy = controller.temporary_patches
    if not raw or not policy.enabled:
        return []
    refs: list[TemporaryPatchRef] = []
    ns = cr["metadata"].get("namespace")
    for patch_name, timestamp in sorted(announced_patches(str(raw)).items()):
        obj = cluster.get(TEMPORARY_PATCH_API_VERSION, "TemporaryPatch", patch_name, ns)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            continue
        spec = obj.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        patch_type = spec.get("patchType", "patchStrategicMerge")
        if not _targets(spec, cr) or patch_type not in policy.allowed_types:
            log.warning("ignoring TemporaryPatch %s/%s: not for this CR or type", ns, patch_name)
            continue
        refs.append(
            TemporaryPatchRef(
                name=patch_name,
                namespace=ns or "",
                patch_type=patch_type,
                patch=spec.get("patch") or {},
                timestamp=timestamp,
            )
        )
    return refs


def _targets(spec: dict[str, Any], cr: Obj) -> bool:
    return bool(
        spec.get("apiVersion") == cr["apiVersion"]
        and spec.get("kind") == cr["kind"]
        and spec.get("name") == cr["metadata"]["name"]
    )


def _malformed(why: str) -> ConfigError:
    return ConfigError(
        f"annotation {TEMPORARY_PATCHES_ANNOTATION} {why}; the TemporaryPatch controller "
        f"writes it as {_SHAPE}: remove it, and it is written again from the TemporaryPatches",
        field=_FIELD,
    )


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", type(None): "null"}.get(type(value), "value")
