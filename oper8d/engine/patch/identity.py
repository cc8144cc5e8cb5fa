"""The check that a patch leaves an object's identity alone.

A patch (a component's ``patches:`` or a TemporaryPatch) may change anything but
what names the object: apiVersion, kind, metadata.name and metadata.namespace.
Changing those would deploy a different object and orphan the rendered one. Used
by the rollout after each bundle patch and by ``patch.route`` after each
temporary patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oper8d.errors import ConfigError

#: The fields that name an object, as (label in messages, path).
IDENTITY_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("apiVersion", ("apiVersion",)),
    ("kind", ("kind",)),
    ("metadata.name", ("metadata", "name")),
    ("metadata.namespace", ("metadata", "namespace")),
)


def check_identity_preserved(
    before: Mapping[str, Any], after: Mapping[str, Any], *, source: str
) -> None:
    """Raise ConfigError when ``after`` names a different object than ``before``.

    ``source`` says which patch did it ("TemporaryPatch ns/foo", "operator.yaml:12:5").
    """
    for label, path in IDENTITY_FIELDS:
        was, now = _get(before, path), _get(after, path)
        if was != now:
            raise ConfigError(
                f"{source} changes {label} of {_describe(before)} from {was!r} to {now!r}; "
                "a patch may not change apiVersion, kind, metadata.name or "
                "metadata.namespace: remove that part of the patch"
            )


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _describe(obj: Mapping[str, Any]) -> str:
    name = _get(obj, ("metadata", "name"))
    namespace = _get(obj, ("metadata", "namespace"))
    where = f"{namespace}/{name}" if namespace else str(name)
    return f"{obj.get('kind')} {where}"
