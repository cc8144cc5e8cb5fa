"""The prune rule: which live objects a CR owns must go because this rollout did not render
them. Shared by the reconciler (which deletes them) and ``oper8d diff`` (which shows them
as deletions), so the preview cannot drift from what the operator does.

An owned object goes when it was not rendered this time and its component was processed
(deployed or disabled) or no longer exists in the bundle. It stays when it has no
component (the generated-randoms Secret), when its component was not reached (a failed
upstream), when it belongs to a hook the bundle still has (a hook need not run every
time), when it is already being deleted, and when its resource's ``deletionPolicy`` is
Retain (``engine.teardown``). Objects are matched by identity, not by
internal name: an object whose name changed (a Job named after the version) leaves the
old one to prune.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from oper8d.bundle.model import ControllerSpec
from oper8d.engine.deploy import ObjectKey, component_of, hook_component, object_key
from oper8d.engine.rollout import RolloutResult
from oper8d.engine.teardown import deletion_policy_of
from oper8d.objects import Obj

__all__ = ["prunable", "rendered_keys"]


def prunable(
    owned: Iterable[Obj],
    controller: ControllerSpec,
    processed: Collection[str],
    rendered: Collection[ObjectKey],
) -> list[Obj]:
    """The objects of ``owned`` (live objects carrying the CR's owner label) to delete,
    each once, in the order given. ``processed``: the components the rollout deployed or
    found disabled; ``rendered``: the identities (``object_key``) of what it rendered."""
    known = {c.name for c in controller.components}
    hooks = {hook_component(h.name) for h in controller.hooks}
    found: dict[ObjectKey, Obj] = {}
    for obj in owned:
        component = component_of(obj)
        if component is None or (component in known and component not in processed):
            continue
        if component not in known and component in hooks:
            continue
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if deletion_policy_of(obj) == "Retain":
            continue
        key = object_key(obj)
        if key not in rendered:
            found.setdefault(key, obj)
    return list(found.values())


def rendered_keys(result: RolloutResult) -> set[ObjectKey]:
    """The identities of every object a rollout rendered: components' and hooks'."""
    keys = {
        object_key(item.obj)
        for component in result.components.values()
        for item in component.objects.values()
    }
    return keys | {object_key(obj) for obj in result.hook_objects.values()}
