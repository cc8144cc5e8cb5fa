"""What a TemporaryPatch may change: the bundle's ``temporaryPatches`` policy.

A TemporaryPatch is an administrator's lever, but whoever may create one in a namespace
would otherwise steer everything the operator deploys there: ``hostNetwork``,
``privileged``, ``hostPath`` volumes, extra ``ownerReferences``. So a patch may change only
objects of the kinds the bundle lists, and only fields at or below the paths it lists.

A patch is judged by its effect, not its text: the object before and after it are
compared, so both patch types and every strategic-merge directive (``$patch: replace``,
``$retainKeys``, ``$setElementOrder``) are bounded alike. Lists are compared item by item
by position, so an added or removed item is a change of the list (``containers[1]``), which
only a path covering the list allows. Used by ``patch.route``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from oper8d.bundle.model import TemporaryPatchPolicy
from oper8d.errors import ConfigError
from oper8d.fieldpaths import format_field_path

__all__ = ["ANY", "changed_paths", "check_within_policy"]

#: in an allowed path, any one map key or list index (``containers[*].resources``)
ANY = "*"

Path = tuple[str | int, ...]


def check_within_policy(
    before: dict[str, Any],
    after: dict[str, Any],
    policy: TemporaryPatchPolicy,
    *,
    source: str,
    internal_name: str,
) -> None:
    """Raise ConfigError naming ``source``, the object and the first field it changes
    that ``policy`` does not allow (a kind it does not list: any field)."""
    kind = str(before.get("kind"))
    if kind not in policy.allowed_kinds:
        raise ConfigError(
            f"{source} patches {internal_name}, a {kind}: the bundle's "
            f"temporaryPatches.allowedKinds ({', '.join(policy.allowed_kinds) or 'none'}) "
            f"does not list {kind}; nothing of the component is applied"
        )
    for path in changed_paths(before, after):
        if not any(_covers(allowed, path) for allowed in policy.allowed_paths):
            allowed = ", ".join(format_field_path(p) for p in policy.allowed_paths)
            raise ConfigError(
                f"{source} changes {format_field_path(path) or '(the whole object)'} of "
                f"{internal_name}, which the bundle's temporaryPatches.allowedPaths "
                f"({allowed}) do not cover; nothing of the component is applied"
            )


def changed_paths(before: Any, after: Any, path: Path = ()) -> Iterator[Path]:
    """The paths where ``after`` differs from ``before``, as high up as the difference
    starts: a key added or removed, a list item added or removed, a value replaced (also
    by one of another type: ``1`` and ``True`` differ). Subtrees a patch left shared are
    skipped without a walk."""
    if before is after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys(), key=str):
            if key in before and key in after:
                yield from changed_paths(before[key], after[key], (*path, key))
            else:
                yield (*path, key)
    elif isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            if index < len(before) and index < len(after):
                yield from changed_paths(before[index], after[index], (*path, index))
            else:
                yield (*path, index)
    elif type(before) is not type(after) or before != after:
        yield path


def _covers(allowed: Sequence[str], path: Path) -> bool:
    """Whether ``path`` is at or below ``allowed``."""
    if len(path) < len(allowed):
        return False
    return all(want in (ANY, str(got)) for want, got in zip(allowed, path, strict=False))
