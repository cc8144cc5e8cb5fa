"""Strategic merge patch, as apimachinery applies it (``kubectl patch``, the API server).

Used by the rollout for a component's ``patches:`` of type ``strategicMerge`` and
for TemporaryPatch objects (through ``patch.route``). The result agrees with
apimachinery's ``StrategicMergePatch``, list order included; a differential test
(tests/integration/test_smp_apimachinery.py) checks that on generated patches. The rules:

- maps merge recursively; ``null`` deletes a key;
- a list with a merge key (``patch.mergekeys``) merges item by item on that key, and a
  primitive list with strategy merge (``finalizers``) as a set; the result's order is
  ``patch.ordering``'s: the patch's items in patch order, interleaved with the original's
  other items. Every other list is replaced by the patch's list;
- ``$patch: replace`` in a map: the map becomes the patch's map as written;
  ``$patch: delete``: the map becomes ``{}`` (the key goes only if the original has no
  map there); a ``$patch`` map where the original has no map adds nothing at all;
- list items ``{"$patch": "replace"}`` (the list becomes the patch's other items) and
  ``{"$patch": "delete", <key>: v}``; ``$retainKeys``, ``$setElementOrder/<field>`` and
  ``$deleteFromPrimitiveList/<field>``. ``$patch: merge`` is refused, as apimachinery does.

A value the original lacks (or holds with another type) is the patch's value with its
``null``s dropped and every map holding ``$patch`` left out; a replaced list or map, and a
new item of a merged list, are taken as written. Where apimachinery refuses a patch,
this raises ConfigError naming the place in the patch.

Objects and patches are plain dicts and lists, as parsed from JSON or YAML. Inputs
are never changed. Runs on every reconcile for every patched object, so it
copies only the maps and lists on the paths a patch changes: the result shares every
untouched subtree with ``original`` (treat both as read-only, or copy before
changing either). It never shares anything with ``patch``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oper8d.engine.patch.mergekeys import ITEM, REPLACE, SET, Path, list_rules
from oper8d.engine.patch.ordering import (
    KeyIndex,
    check_merge_keys,
    contains,
    go_equal,
    go_kind,
    normalize_order,
    positions,
    seen_original,
)
from oper8d.errors import ConfigError

PATCH: Final = "$patch"
RETAIN_KEYS: Final = "$retainKeys"
SET_ELEMENT_ORDER: Final = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"


class _Dropped:
    """What ``_as_written`` returns for a map holding ``$patch``: the parent leaves it out."""


_DROPPED: Final = _Dropped()


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
    where apimachinery refuses the patch (a merge-list item without its key, an unknown
    directive, a ``$setElementOrder`` that contradicts its list, ...).
    """
    if not isinstance(patch, dict):
        raise ConfigError(
            f"a strategic merge patch must be a map, got {type(patch).__name__}: "
            "write the fields to change as a map, e.g. {spec: {replicas: 2}}"
        )
    return _Merger(list_rules(kind, api_version)).merge_map(original, patch, ())


class _Merger:
    """One patch's merge: carries the list rules of the object's kind down the tree."""

    __slots__ = ("rules",)

    def __init__(self, rules: Mapping[Path, str]):
        self.rules = rules

    def merge_key(self, path: Path) -> tuple[bool, str]:
        """(merges, merge key) of the list at ``path``; ``""``: a list of plain values."""
        rule = self.rules.get(path)
        if rule is None or rule == REPLACE:
            return False, ""
        return True, "" if rule == SET else rule

    # -- maps ---------------------------------------------------------------------------
    def merge_map(
        self, original: dict[str, Any] | None, patch: dict[str, Any], path: Path
    ) -> dict[str, Any]:
        if PATCH in patch:
            directive = patch[PATCH]
            if directive == "replace":
                return {k: _copy(v) for k, v in patch.items() if k != PATCH}
            if directive == "delete":
                return {}
            raise ConfigError(
                f"{_where(path)}: `$patch: {directive}` in a map; use replace or delete "
                "(a map merges without a directive)"
            )
        result: dict[str, Any] = dict(original) if original else {}
        rest = dict(patch)
        if RETAIN_KEYS in rest:
            _retain_keys(result, rest, path)
        for key in [k for k in rest if k.startswith(SET_ELEMENT_ORDER)]:
            self._set_element_order(result, rest, key, path)

        for key, value in rest.items():
            deleting = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
            if deleting:
                key = _field_of(key, DELETE_FROM_PRIMITIVE_LIST, path)
            if value is None:
                result.pop(key, None)
                continue
            if key not in result or go_kind(result[key]) != go_kind(value):
                if not deleting:
                    _put(result, key, _as_written(value, drop_nulls=True))
                continue
            current, where = result[key], (*path, key)
            if isinstance(value, dict):
                if self.rules.get(where) == REPLACE:
                    result[key] = _copy(value)  # patchStrategy "replace": as written
                else:
                    result[key] = self.merge_map(current, value, where)
            elif isinstance(value, list):
                merges, merge_key = self.merge_key(where)
                if merges or deleting:
                    result[key] = self.merge_list(current, value, merge_key, where, deleting)
                else:
                    result[key] = _copy(value)
            else:
                result[key] = value
        return result

    def _set_element_order(
        self, result: dict[str, Any], rest: dict[str, Any], key: str, path: Path
    ) -> None:
        """Merge the list ``key`` names and order it: the listed items in that order."""
        order = rest.pop(key)
        field = _field_of(key, SET_ELEMENT_ORDER, path)
        where = (*path, field)
        if not isinstance(order, list):
            raise ConfigError(f"{_where(path)}: {key} takes a list, got {order!r}")
        current = result.get(field)
        if field in result and not isinstance(current, list):
            raise ConfigError(f"{_where(where)}: {key} orders a list, but this is {current!r}")
        in_patch = field in rest
        patch_list = rest.pop(field, None)
        if in_patch and not isinstance(patch_list, list):
            raise ConfigError(
                f"{_where(where)}: {key} orders a list, but the patch sets {patch_list!r}"
            )
        merges, merge_key = self.merge_key(where)
        _check_order(patch_list or [], order, merge_key, where)
        if current is not None and patch_list is not None:
            merged = self.merge_list(current, patch_list, merge_key, where, False, merges)
        elif current is not None:
            merged = current
        elif patch_list is not None:
            merged = _as_written(patch_list, drop_nulls=False)
        else:
            return
        maps = _element_kind([*(current or []), *(patch_list or [])], where) == "map"
        listed, others = _partition(merged, order, merge_key, where)
        # apimachinery deletes and appends items in the original's own array, so that
        # its ordering sees the original as those steps left it
        seen = current
        if maps and merges and current is not None and patch_list is not None:
            seen = seen_original(current, patch_list, merge_key)
        result[field] = normalize_order(
            listed, others, order, seen or [], merge_key, maps, _where(where)
        )

    # -- lists --------------------------------------------------------------------------
    def merge_list(
        self,
        original: list[Any],
        patch: list[Any],
        merge_key: str,
        path: Path,
        deleting: bool = False,
        merges: bool = True,
    ) -> list[Any]:
        if not merges and not deleting:
            return list(_copy(patch))
        if not original and not patch:
            return []
        maps = _element_kind([*original, *patch], path) == "map"
        if not maps:
            if deleting:
                return [v for v in original if not contains(patch, v)]
            merged: list[Any] = []
            for value in [*original, *patch]:
                if not contains(merged, value):
                    merged.append(value)
        else:
            if not merge_key:
                raise ConfigError(
                    f"{_where(path)}: a list of plain values, got maps; remove values with "
                    f"$deleteFromPrimitiveList/{path[-1]}"
                )
            original, patch = _special_items(original, patch, merge_key, path)
            merged = list(original)
            index = KeyIndex(merged, merge_key)
            for item in patch:
                if merge_key not in item:
                    raise _no_merge_key(item, merge_key, path)
                at = index.find(item[merge_key])
                if at < 0:
                    index.add(item[merge_key], len(merged))
                    merged.append(_copy(item))
                else:
                    merged[at] = self.merge_map(merged[at], item, (*path, ITEM))
        listed, others = _partition(merged, patch, merge_key, path)
        return normalize_order(listed, others, patch, original, merge_key, maps, _where(path))


def _special_items(
    original: list[Any], patch: list[Any], merge_key: str, path: Path
) -> tuple[list[Any], list[Any]]:
    """Apply the ``$patch`` items of a merge list: (the original left, the other items)."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if PATCH not in item:
            plain.append(item)
            continue
        directive = item[PATCH]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key, path)
            doomed = item[merge_key]
            original = [
                i for i in original if not (merge_key in i and go_equal(i[merge_key], doomed))
            ]
        elif directive == "replace":
            replace = True
        else:
            raise ConfigError(
                f"{_where(path)}: `$patch: {directive}` in a list item; use delete (with the "
                f"merge key '{merge_key}') or a {{$patch: replace}} item"
            )
    if replace:
        return [_copy(i) for i in plain], []
    return original, plain


def _partition(
    merged: list[Any], by: list[Any], merge_key: str, path: Path
) -> tuple[list[Any], list[Any]]:
    """(items of ``merged`` found in ``by``, the others), keeping their order."""
    if merge_key:
        for item in merged:
            if not isinstance(item, dict) or merge_key not in item:
                raise _no_merge_key(item, merge_key, path)
        if merged and not all(isinstance(o, dict) for o in by):
            # apimachinery stops at the first item that is not a map, unless a match is before
            for item in merged:
                _find(by, merge_key, item[merge_key], path)
        # an item without the merge key matches nothing (not even a null key)
        nothing = object()
        keyed = [o if merge_key in o else {merge_key: nothing} for o in by]
        at = positions(keyed, merged, merge_key, maps=True)
    else:
        at = positions(by, merged, merge_key, maps=False)
    listed = [item for item, where in zip(merged, at, strict=True) if where >= 0]
    others = [item for item, where in zip(merged, at, strict=True) if where < 0]
    return listed, others


def _find(items: list[Any], merge_key: str, value: Any, path: Path = ()) -> int:
    """Position of the first map in ``items`` whose merge key is ``value``, else -1."""
    for at, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f"{_where(path)}: a list of maps, got {item!r}")
        if merge_key in item and go_equal(item[merge_key], value):
            return at
    return -1


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str, path: Path) -> None:
    """The patch's items must appear in ``$setElementOrder``, in the same relative order
    (apimachinery's check, step for step)."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        for item in items:
            if not isinstance(item, dict):
                raise ConfigError(f"{_where(path)}: a list of maps, got {item!r}")
        items = [i for i in items if i.get(PATCH) != "delete"]
    at = placed = 0
    while at < len(items) and placed < len(order):
        if isinstance(items[at], dict) and PATCH in items[at]:
            at += 1
            continue
        if merge_key:
            check_merge_keys(merge_key, _where(path), [items[at], order[placed]])
            same = go_equal(items[at][merge_key], order[placed][merge_key])
        else:
            same = go_equal(items[at], order[placed])
        if same:
            at += 1
        placed += 1
    if at < len(items) and placed >= len(order):
        raise ConfigError(
            f"{_where(path)}: $setElementOrder/{path[-1]} must name every item the patch "
            "sets, in the patch's order"
        )


def _element_kind(items: list[Any], path: Path) -> str:
    """The one Go type of a merged list's items; lists of lists and mixed types refused."""
    kinds = {go_kind(i) for i in items}
    if not kinds:
        raise ConfigError(f"{_where(path)}: nothing to order (the list is empty)")
    if "list" in kinds or "null" in kinds or len(kinds) > 1:
        raise ConfigError(
            f"{_where(path)}: the items of a merged list must all be of one type "
            f"(no nulls, no lists), got {sorted(kinds)}"
        )
    return kinds.pop()


def _retain_keys(result: dict[str, Any], rest: dict[str, Any], path: Path) -> None:
    keep = rest.pop(RETAIN_KEYS)
    if not isinstance(keep, list):
        raise ConfigError(f"{_where(path)}: $retainKeys takes a list, got {keep!r}")
    missing = [
        k
        for k, v in rest.items()
        if v is not None
        and not k.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER))
        and not contains(keep, k)
    ]
    if missing:
        raise ConfigError(
            f"{_where(path)}: $retainKeys does not list {', '.join(sorted(missing))}, which "
            "the patch sets; add them to $retainKeys"
        )
    for key in [k for k in result if not contains(keep, k)]:
        del result[key]


def _field_of(key: str, directive: str, path: Path) -> str:
    """``$setElementOrder/containers`` -> ``containers``."""
    prefix, slash, field = key.partition("/")
    if not slash or prefix != directive:
        raise ConfigError(f"{_where(path)}: `{key}`: write {directive}/<field>")
    return field


def _as_written(value: Any, *, drop_nulls: bool) -> Any:
    """A patch value where the original has none: nulls (in maps) dropped if asked, and
    every map holding ``$patch`` left out, at any depth."""
    if isinstance(value, dict):
        if drop_nulls:
            value = {k: v for k, v in value.items() if v is not None}
        if PATCH in value:
            return _DROPPED
        kept = ((k, _as_written(v, drop_nulls=drop_nulls)) for k, v in value.items())
        return {k: v for k, v in kept if v is not _DROPPED}
    if isinstance(value, list):
        items = (_as_written(v, drop_nulls=drop_nulls) for v in value)
        return [v for v in items if v is not _DROPPED]
    return value


def _put(result: dict[str, Any], key: str, value: Any) -> None:
    if value is _DROPPED:
        result.pop(key, None)
    else:
        result[key] = value


def _copy(value: Any) -> Any:
    """A copy of a patch value taken as written, so that the result never shares with it."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _no_merge_key(item: Any, merge_key: str, path: Path) -> ConfigError:
    return ConfigError(
        f"{_where(path)}: every item must be a map with the merge key '{merge_key}', got {item!r}"
    )


def _where(path: Path) -> str:
    """A path for messages: ``spec.template.spec.containers[]``."""
    text = ""
    for part in path:
        text = text + "[]" if part is ITEM else (f"{text}.{part}" if text else str(part))
    return f"patch at {text}" if text else "patch"
