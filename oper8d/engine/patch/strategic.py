"""Strategic merge patch, as the Kubernetes API server applies it.

Used by the rollout for a component's ``patches:`` of type ``strategicMerge`` and
for TemporaryPatch objects (through ``patch.route``). The rules:

- maps merge recursively; ``null`` deletes a key;
- a list with a merge key (``patch.mergekeys``) merges item by item on that key:
  a patch item merges into the original item with the same key, new items are
  appended in patch order; a primitive list with strategy merge (``finalizers``)
  is an ordered set; every other list is replaced;
- directives: ``$patch: replace | delete | merge`` in a map, ``{"$patch": "replace"}``
  and ``{"$patch": "delete", <key>: v}`` as list items, ``$retainKeys``,
  ``$setElementOrder/<field>`` and ``$deleteFromPrimitiveList/<field>``.

Objects and patches are plain dicts and lists, as parsed from JSON or YAML. Inputs
are never changed. Runs on every reconcile for every patched object, so it
copies only the maps and lists on the paths a patch changes: the result shares every
untouched subtree with ``original`` (treat both as read-only, or copy before
changing either). It never shares anything with ``patch``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oper8d.engine.patch.mergekeys import ITEM, SET, Path, list_rules
from oper8d.errors import ConfigError

PATCH: Final = "$patch"
RETAIN_KEYS: Final = "$retainKeys"
SET_ELEMENT_ORDER: Final = "$setElementOrder/"
DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList/"


class _Deleted:
    """What merging a ``$patch: delete`` map returns: the parent drops the key."""


_DELETED: Final = _Deleted()


def strategic_merge(
    original: dict[str, Any],
    patch: dict[str, Any],
    *,
    kind: str | None = None,
    api_version: str | None = None,
) -> dict[str, Any]:
    """``original`` with ``patch`` merged in, as a new dict.

    ``kind``/``api_version`` select the merge keys of a built-in kind; for other
    kinds (custom resources) and ``None`` every list is replaced. Raises ConfigError
    for a malformed patch (a merge-list item without its key, an unknown directive).
    """
    if not isinstance(patch, dict):
        raise ConfigError(
            f"a strategic merge patch must be a map, got {type(patch).__name__}: "
            "write the fields to change as a map, e.g. {spec: {replicas: 2}}"
        )
    merged = _Merger(list_rules(kind, api_version)).merge_map(original, patch, ())
    return {} if isinstance(merged, _Deleted) else merged


class _Merger:
    """One patch's merge: carries the list rules of the object's kind down the tree."""

    __slots__ = ("rules",)

    def __init__(self, rules: Mapping[Path, str]):
        self.rules = rules

    def merge_value(self, original: Any, patch: Any, path: Path) -> Any:
        if isinstance(patch, dict):
            return self.merge_map(original if isinstance(original, dict) else None, patch, path)
        if isinstance(patch, list):
            return self.merge_list(original if isinstance(original, list) else None, patch, path)
        return patch  # scalars replace

    def build(self, patch: Any, path: Path) -> Any:
        """A patch value where the original has none: directives applied, nulls dropped."""
        return self.merge_value(None, patch, path)

    # -- maps ---------------------------------------------------------------------------
    def merge_map(
        self, original: dict[str, Any] | None, patch: dict[str, Any], path: Path
    ) -> dict[str, Any] | _Deleted:
        directive = patch.get(PATCH)
        if directive == "delete":
            return _DELETED
        if directive == "replace":
            rest = {k: v for k, v in patch.items() if k != PATCH}
            return self.merge_map(None, rest, path)
        if directive not in (None, "merge"):
            raise ConfigError(
                f"{_where(path)}: unknown directive `$patch: {directive}`; "
                "use replace, delete or merge"
            )

        result: dict[str, Any] = dict(original) if original else {}
        if RETAIN_KEYS in patch:
            _retain_keys(result, patch, path)

        # deletions from primitive lists apply to the original, before the merge
        for key, values in patch.items():
            if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
                field = key[len(DELETE_FROM_PRIMITIVE_LIST) :]
                _check_list(values, key, path)
                current = result.get(field)
                if isinstance(current, list):
                    result[field] = [v for v in current if v not in values]

        for key, value in patch.items():
            if key.startswith("$") and _is_directive(key):
                continue
            if value is None:
                result.pop(key, None)
                continue
            merged = self.merge_value(result.get(key), value, (*path, key))
            if merged is _DELETED:
                result.pop(key, None)
            else:
                result[key] = merged

        for key, order in patch.items():
            if key.startswith(SET_ELEMENT_ORDER):
                field = key[len(SET_ELEMENT_ORDER) :]
                _check_list(order, key, path)
                current = result.get(field)
                if isinstance(current, list):
                    merge_key = self.rules.get((*path, field))
                    result[field] = _set_order(current, order, merge_key)
        return result

    # -- lists --------------------------------------------------------------------------
    def merge_list(self, original: list[Any] | None, patch: list[Any], path: Path) -> list[Any]:
        item_path = (*path, ITEM)
        if any(_directive_of(item) == "replace" for item in patch):
            # `{"$patch": "replace"}` in a list: the rest of the list, any other
            # directive item ignored (as the API server does)
            return self._built_items([i for i in patch if _directive_of(i) is None], item_path)
        merge_key = self.rules.get(path)
        if merge_key is None:
            for item in patch:
                if _directive_of(item) is not None:
                    raise ConfigError(
                        f"{_where(path)}: `$patch: {_directive_of(item)}` in a list that has no "
                        "merge key (the list is replaced as a whole); write the whole list "
                        "instead, or use a JSON 6902 patch to change single items"
                    )
            return self._built_items(patch, item_path)
        if merge_key == SET:
            return _merge_set(original or [], patch, path)
        return self._merge_by_key(original or [], patch, merge_key, path)

    def _built_items(self, items: list[Any], item_path: Path) -> list[Any]:
        built = (self.build(item, item_path) for item in items)
        return [item for item in built if item is not _DELETED]

    def _merge_by_key(
        self, original: list[Any], patch: list[Any], merge_key: str, path: Path
    ) -> list[Any]:
        for item in patch:
            if not isinstance(item, dict) or merge_key not in item:
                raise ConfigError(
                    f"{_where(path)}: every item must be a map with the merge key "
                    f"'{merge_key}', got {item!r}"
                )
            directive = item.get(PATCH)
            if directive not in (None, "delete"):
                raise ConfigError(
                    f"{_where(path)}: unknown list item directive `$patch: {directive}`; "
                    "use delete (with the merge key) or replace"
                )
        # deletions apply to the original first, then the patch items merge
        doomed = [item[merge_key] for item in patch if item.get(PATCH) == "delete"]
        result = [i for i in original if not (doomed and _keyed(i, merge_key, doomed))]
        index = _index_by_key(result, merge_key)
        item_path = (*path, ITEM)
        for item in patch:
            if PATCH in item:
                continue
            value = item[merge_key]
            at = _find(index, result, merge_key, value)
            if at is None:
                built = self.build(item, item_path)
                if built is not _DELETED:
                    _remember(index, value, len(result))
                    result.append(built)
            else:
                result[at] = self.merge_map(result[at], item, item_path)
        return result


def _merge_set(original: list[Any], patch: list[Any], path: Path) -> list[Any]:
    """A primitive list with strategy merge: the original, then new patch values once each."""
    result = list(original)
    for value in patch:
        if isinstance(value, dict | list):
            raise ConfigError(
                f"{_where(path)}: a list of plain values, got {value!r}; remove values with "
                f"$deleteFromPrimitiveList/{path[-1]}"
            )
        if value not in result:
            result.append(value)
    return result


def _set_order(current: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    """Items named in ``order`` first, in that order; the others after, in their order."""

    def identity_of(item: Any) -> Any:
        if merge_key not in (None, SET) and isinstance(item, dict):
            return item.get(merge_key)
        return item

    wanted = [identity_of(o) for o in order]
    placed: list[Any] = []
    rest = list(current)
    for ident in wanted:
        for i, item in enumerate(rest):
            if identity_of(item) == ident:
                placed.append(rest.pop(i))
                break
    return placed + rest


def _retain_keys(result: dict[str, Any], patch: dict[str, Any], path: Path) -> None:
    keep = patch[RETAIN_KEYS]
    _check_list(keep, RETAIN_KEYS, path)
    missing = [
        k for k, v in patch.items() if v is not None and not _is_directive(k) and k not in keep
    ]
    if missing:
        raise ConfigError(
            f"{_where(path)}: $retainKeys does not list {', '.join(sorted(missing))}, which "
            "the patch sets; add them to $retainKeys"
        )
    for key in [k for k in result if k not in keep]:
        del result[key]


def _is_directive(key: str) -> bool:
    return (
        key in (PATCH, RETAIN_KEYS)
        or key.startswith(SET_ELEMENT_ORDER)
        or key.startswith(DELETE_FROM_PRIMITIVE_LIST)
    )


def _directive_of(item: Any) -> Any:
    return item.get(PATCH) if isinstance(item, dict) else None


def _keyed(item: Any, merge_key: str, values: list[Any]) -> bool:
    return isinstance(item, dict) and merge_key in item and item[merge_key] in values


def _index_by_key(items: list[Any], merge_key: str) -> dict[Any, int]:
    """Position of the first item with each key value (unhashable values: see ``_find``)."""
    index: dict[Any, int] = {}
    for i, item in enumerate(items):
        if isinstance(item, dict) and merge_key in item:
            _remember(index, item[merge_key], i)
    return index


def _remember(index: dict[Any, int], value: Any, at: int) -> None:
    if value.__hash__ is not None and value not in index:
        index[value] = at


def _find(index: dict[Any, int], items: list[Any], merge_key: str, value: Any) -> int | None:
    if value.__hash__ is not None:
        return index.get(value)
    return next(
        (
            i
            for i, item in enumerate(items)
            if isinstance(item, dict) and merge_key in item and item[merge_key] == value
        ),
        None,
    )


def _check_list(value: Any, directive: str, path: Path) -> None:
    if not isinstance(value, list):
        raise ConfigError(f"{_where(path)}: {directive} takes a list, got {value!r}")


def _where(path: Path) -> str:
    """A path for messages: ``spec.template.spec.containers[]``."""
    text = ""
    for part in path:
        text = text + "[]" if part is ITEM else (f"{text}.{part}" if text else str(part))
    return f"patch at {text}" if text else "patch"
