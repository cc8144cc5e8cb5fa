"""The order of a merged list, as apimachinery's strategic merge patch sets it.

Used by ``patch.strategic`` after it merges a list with a merge strategy, and for
``$setElementOrder``. apimachinery splits the merged items in two: the items the patch
(or the order directive) names, in the patch's order, and the original's other items,
in the original's order; then it interleaves the two, taking an original item first only
where both items are in the original and the original has it first. So a patch item the
original lacks comes before the original items not yet placed: a patch ``[d, b]`` on
``[a, b, c]`` gives ``[d, a, b, c]``.

``seen_original`` gives the original list as apimachinery's in-place merge leaves it,
which ``$setElementOrder`` sorts by; ``KeyIndex`` finds merge keys in a growing list.

Values compare as Go compares them once decoded from JSON: ``1`` equals ``1.0``, ``True``
does not equal ``1``. Sorting keeps Go's ``sort.SliceStable`` with apimachinery's
comparison, which calls two items "less" both ways when either is missing from the order
list; a stable sort that only works for proper orders would place such items elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oper8d.errors import ConfigError

_DIRECTIVE = "$patch"


def go_kind(value: Any) -> str:
    """The Go type a JSON value decodes to: ints and floats are both float64."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def go_equal(a: Any, b: Any) -> bool:
    """``a == b`` on two Go interface values decoded from JSON."""
    return go_kind(a) == go_kind(b) and bool(a == b)


def contains(items: list[Any], value: Any) -> bool:
    return any(go_equal(item, value) for item in items)


def positions(order: list[Any], items: list[Any], merge_key: str, maps: bool) -> list[int]:
    """Where each of ``items`` first appears in ``order`` (by merge key for maps), or -1."""

    def identity(item: Any) -> Any:
        if not maps:
            return item
        return item.get(merge_key) if isinstance(item, dict) else None

    first: dict[tuple[str, Any], int] = {}
    unhashable: list[tuple[Any, int]] = []
    for at, item in enumerate(order):
        ident = identity(item)
        try:
            first.setdefault((go_kind(ident), ident), at)
        except TypeError:
            unhashable.append((ident, at))
    found = []
    for item in items:
        ident = identity(item)
        try:
            found.append(first.get((go_kind(ident), ident), -1))
        except TypeError:
            found.append(next((at for o, at in unhashable if go_equal(o, ident)), -1))
    return found


def check_merge_keys(merge_key: str, where: str, *lists: list[Any]) -> None:
    """Every item of ``lists`` must be a map with the merge key."""
    for items in lists:
        for item in items:
            if not isinstance(item, dict) or merge_key not in item:
                what = f"the merge key '{merge_key}'" if merge_key else "a merge key"
                raise ConfigError(f"{where}: every item must be a map with {what}, got {item!r}")


def normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    maps: bool,
    where: str,
) -> list[Any]:
    """``patch_items`` sorted by ``patch_order``, ``server_only`` by ``server_order``,
    then interleaved by ``server_order``."""
    patch_items = _sort_by(patch_items, patch_order, merge_key, maps, where)
    server_only = _sort_by(server_only, server_order, merge_key, maps, where)
    return _interleave(server_only, patch_items, server_order, merge_key, maps)


def _sort_by(
    items: list[Any], order: list[Any], merge_key: str, maps: bool, where: str
) -> list[Any]:
    doomed: list[Any] = []
    if maps:
        check_merge_keys(merge_key, where, items, order)
        doomed = [i for i in items if i.get(_DIRECTIVE) == "delete"]
        items = [i for i in items if i.get(_DIRECTIVE) != "delete"]

    at = positions(order, items, merge_key, maps)

    def less(a: int, b: int) -> bool:
        return at[a] < at[b] if at[a] >= 0 and at[b] >= 0 else True

    return [items[i] for i in go_stable_sort(list(range(len(items))), less)] + doomed


def _interleave(
    left: list[Any], right: list[Any], order: list[Any], merge_key: str, maps: bool
) -> list[Any]:
    """Go's ``mergeSortedSlice``: a ``left`` item goes first only where ``order`` says so."""
    merged: list[Any] = []
    left_at = positions(order, left, merge_key, maps)
    right_at = positions(order, right, merge_key, maps)
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            merged.append(left[i])
            i += 1
            continue
        if i < len(left):
            li, ri = left_at[i], right_at[j]
            if li >= 0 and ri >= 0 and li < ri:
                merged.append(left[i])
                i += 1
                continue
        merged.append(right[j])
        j += 1
    return merged


def seen_original(original: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    """The original list's slots after apimachinery's in-place merge: each deletion
    shifts the later items left (the last slot keeps a stale copy), and new items
    are appended into the freed slots."""
    slots = list(original)
    live = len(slots)
    for item in patch:
        if item.get(_DIRECTIVE) == "delete":
            while (at := KeyIndex(slots[:live], merge_key).find(item[merge_key])) >= 0:
                slots[at : live - 1] = slots[at + 1 : live]
                live -= 1
    if any(item.get(_DIRECTIVE) == "replace" for item in patch):
        return slots
    index, length = KeyIndex(slots[:live], merge_key), live
    for item in patch:
        if _DIRECTIVE not in item and index.find(item[merge_key]) < 0:
            index.add(item[merge_key], length)
            if length < len(slots):
                slots[length] = item
            length += 1
    return slots


class KeyIndex:
    """Position of the first map with each merge key value in a list of maps, as the list
    grows (a dict where values are hashable, a scan where they are not)."""

    def __init__(self, items: list[Any], merge_key: str):
        self.first: dict[tuple[str, Any], int] = {}
        self.unhashable: list[tuple[Any, int]] = []
        for at, item in enumerate(items):
            if merge_key in item:
                self.add(item[merge_key], at)

    def add(self, value: Any, at: int) -> None:
        try:
            self.first.setdefault((go_kind(value), value), at)
        except TypeError:
            self.unhashable.append((value, at))

    def find(self, value: Any) -> int:
        try:
            return self.first.get((go_kind(value), value), -1)
        except TypeError:
            return next((at for v, at in self.unhashable if go_equal(v, value)), -1)


def go_stable_sort(items: list[Any], less: Callable[[Any, Any], bool]) -> list[Any]:
    """A copy of ``items`` sorted as Go's ``sort.SliceStable`` sorts it, step for step:
    insertion sort of blocks of 20, then blocks merged pairwise by SymMerge."""
    data = list(items)
    n = len(data)
    block = 20
    start = 0
    while start + block <= n:
        _insertion_sort(data, start, start + block, less)
        start += block
    _insertion_sort(data, start, n, less)
    while block < n:
        start = 0
        while start + 2 * block <= n:
            _sym_merge(data, start, start + block, start + 2 * block, less)
            start += 2 * block
        if start + block < n:
            _sym_merge(data, start, start + block, n, less)
        block *= 2
    return data


def _insertion_sort(data: list[Any], a: int, b: int, less: Callable[[Any, Any], bool]) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(data[j], data[j - 1]):
            data[j], data[j - 1] = data[j - 1], data[j]
            j -= 1


def _sym_merge(data: list[Any], a: int, m: int, b: int, less: Callable[[Any, Any], bool]) -> None:
    """Merge the sorted runs ``data[a:m]`` and ``data[m:b]`` in place (Kim and Kutzner's
    SymMerge, with the one-element shortcuts Go takes)."""
    if m - a == 1:
        # binary search for the first index in [m, b) where data[a] is not greater
        lo, hi = m, b
        while lo < hi:
            h = (lo + hi) // 2
            if less(data[h], data[a]):
                lo = h + 1
            else:
                hi = h
        for k in range(a, lo - 1):
            data[k], data[k + 1] = data[k + 1], data[k]
        return
    if b - m == 1:
        lo, hi = a, m
        while lo < hi:
            h = (lo + hi) // 2
            if not less(data[m], data[h]):
                lo = h + 1
            else:
                hi = h
        for k in range(m, lo, -1):
            data[k], data[k - 1] = data[k - 1], data[k]
        return
    mid = (a + b) // 2
    n = mid + m
    if m > mid:
        start, r = n - b, mid
    else:
        start, r = a, m
    p = n - 1
    while start < r:
        c = (start + r) // 2
        if not less(data[p - c], data[c]):
            start = c + 1
        else:
            r = c
    end = n - start
    if start < m < end:
        _rotate(data, start, m, end)
    if a < start < mid:
        _sym_merge(data, a, start, mid, less)
    if mid < end < b:
        _sym_merge(data, mid, end, b, less)


def _rotate(data: list[Any], a: int, m: int, b: int) -> None:
    """Swap the runs ``data[a:m]`` and ``data[m:b]``."""
    data[a:b] = data[m:b] + data[a:m]
