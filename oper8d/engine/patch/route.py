"""oper8's temporary patches: routing a TemporaryPatch body to one object, and applying them.

A TemporaryPatch addresses objects by internal name (docs/bundle-format.md): its
body is shaped ``{component: {resource: body}}``, and the body applies to the object
whose internal name's dot-separated levels are consumed one by one
(``app.deployment``, a forEach instance ``app-eu.deployment``, a template document
``app.extras-configmap-foo``). JSON 6902 bodies are routed the same way, with a list
of operations at the end. Used by the rollout after rendering each object; the
runtime turns the target CR's ``oper8.org/temporary-patches`` annotation and the
TemporaryPatch objects into ``TemporaryPatchRef``\\ s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oper8d.bundle.model import TemporaryPatchPolicy
from oper8d.engine.patch.bounds import check_within_policy
from oper8d.engine.patch.identity import check_identity_preserved
from oper8d.engine.patch.jsonpatch6902 import json_patch
from oper8d.errors import ConfigError

TemporaryPatchType = Literal["patchStrategicMerge", "patchJson6902"]


@dataclass(frozen=True)
class TemporaryPatchRef:
    """One TemporaryPatch aimed at the CR being reconciled (its ``spec`` and when it was added)."""

    name: str
    namespace: str
    patch_type: TemporaryPatchType
    patch: Any  # {component: {resource: body}}; body is a map or a list of JSON 6902 ops
    timestamp: str  # RFC 3339, from the CR's oper8.org/temporary-patches annotation

    @property
    def source(self) -> str:
        """How messages name this patch."""
        return f"TemporaryPatch {self.namespace}/{self.name}"


def route_strategic_patch(body: Any, internal_name: str) -> dict[str, Any] | None:
    """The part of a strategic-merge TemporaryPatch body for the object ``internal_name``,
    or None when the body does not address it."""
    routed = _route(body, internal_name)
    if routed is None:
        return None
    if not isinstance(routed, Mapping):
        raise ConfigError(
            f"the strategic merge patch for {internal_name} must be a map, got "
            f"{type(routed).__name__}: shape the body as {{component: {{resource: {{...}}}}}}"
        )
    return dict(routed)


def route_json6902_patch(body: Any, internal_name: str) -> list[dict[str, Any]] | None:
    """The JSON 6902 operations of a TemporaryPatch body for ``internal_name``, or None."""
    routed = _route(body, internal_name)
    if routed is None:
        return None
    if not isinstance(routed, list):
        raise ConfigError(
            f"the JSON 6902 patch for {internal_name} must be a list of operations, got "
            f"{type(routed).__name__}: shape the body as {{component: {{resource: [ops]}}}}"
        )
    return routed


def apply_temporary_patches(
    obj: dict[str, Any],
    internal_name: str,
    patches: list[TemporaryPatchRef],
    policy: TemporaryPatchPolicy,
) -> dict[str, Any]:
    """``obj`` with every patch that addresses ``internal_name`` applied, oldest first.

    Returns ``obj`` itself when no patch addresses it, else a new dict (sharing
    untouched subtrees with ``obj``). Raises ConfigError naming the TemporaryPatch
    when a patch is malformed, fails, changes the object's identity, or changes what
    the bundle's ``policy`` does not allow (``patch.bounds``).
    """
    result = obj
    for ref in sorted(patches, key=lambda p: (p.timestamp, p.name)):
        try:
            patched = _apply_one(result, internal_name, ref)
        except ConfigError as err:
            raise ConfigError(f"{ref.source}: {err.message}", pos=err.pos, field=err.field) from err
        if patched is None:
            continue
        check_identity_preserved(result, patched, source=ref.source)
        check_within_policy(result, patched, policy, source=ref.source, internal_name=internal_name)
        result = patched
    return result


def _apply_one(obj: dict[str, Any], internal_name: str, ref: TemporaryPatchRef) -> Any:
    if ref.patch_type == "patchStrategicMerge":
        body = route_strategic_patch(ref.patch, internal_name)
        if body is None:
            return None
        # (imported when first needed: the merge keys of every built-in kind are a table
        # that a render without strategic patches never reads)
        from oper8d.engine.patch.strategic import strategic_merge

        return strategic_merge(obj, body, kind=obj.get("kind"), api_version=obj.get("apiVersion"))
    if ref.patch_type == "patchJson6902":
        ops = route_json6902_patch(ref.patch, internal_name)
        return None if ops is None else json_patch(obj, ops)
    raise ConfigError(
        f"unknown patchType {ref.patch_type!r}; use patchStrategicMerge or patchJson6902"
    )


def _route(body: Any, internal_name: str) -> Any:
    node = body
    for level in internal_name.split("."):
        if not isinstance(node, Mapping) or level not in node:
            return None
        node = node[level]
    return node
