"""Indexes of the in-memory API server's objects, so no read scans the whole store.

``cluster.memory.store.Store`` keeps one :class:`ObjectIndex` beside its objects and tells it of
every object added, changed (labels or owner references) and removed. Reads then touch only
what can match: a list of a kind in a namespace, narrowed by the selector's most selective
``key=value`` (or ``key in (...)``) term; an owner's dependents; a namespace's contents.
Results come back sorted by key, the order the store has always listed in (the API server
lists by key too), and sorting the matches is cheap next to sorting everything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from oper8d.cluster.selectors import Selector

#: (group, kind, namespace or "", name): the store's key
Key = tuple[str, str, str, str]
_KindKey = tuple[str, str]
_LabelKey = tuple[str, str, str, str]  # group, kind, label key, label value


class ObjectIndex:
    """Keys by kind and namespace, by label value, by owner uid and by namespace."""

    def __init__(self) -> None:
        self._by_kind: defaultdict[_KindKey, defaultdict[str, set[Key]]] = defaultdict(
            lambda: defaultdict(set)
        )
        self._by_label: defaultdict[_LabelKey, set[Key]] = defaultdict(set)
        self._by_owner: defaultdict[str, set[Key]] = defaultdict(set)
        self._by_namespace: defaultdict[str, set[Key]] = defaultdict(set)

    # -- maintenance ----------------------------------------------------------------------
    def add(self, key: Key, obj: Mapping[str, Any]) -> None:
        group, kind, namespace, _name = key
        self._by_kind[(group, kind)][namespace].add(key)
        if namespace:
            self._by_namespace[namespace].add(key)
        self._add_meta(key, obj)

    def update(self, key: Key, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """``old`` became ``new``: re-index what changed in labels and owner references."""
        if _labels(old) == _labels(new) and _owners(old) == _owners(new):
            return
        self._drop_meta(key, old)
        self._add_meta(key, new)

    def remove(self, key: Key, obj: Mapping[str, Any]) -> None:
        group, kind, namespace, _name = key
        _discard(self._by_kind[(group, kind)], namespace, key)
        if not self._by_kind[(group, kind)]:
            del self._by_kind[(group, kind)]
        if namespace:
            _discard(self._by_namespace, namespace, key)
        self._drop_meta(key, obj)

    # -- reads ----------------------------------------------------------------------------
    def select(self, group: str, kind: str, namespace: str | None, selector: Selector) -> list[Key]:
        """Keys of ``group``/``kind`` in ``namespace`` (all when None or for cluster-scoped
        kinds) whose labels may match ``selector``; the caller checks the selector."""
        by_namespace = self._by_kind.get((group, kind))
        if not by_namespace:
            return []
        if namespace:
            candidates: set[Key] = set(by_namespace.get(namespace, ())) | set(
                by_namespace.get("", ())
            )
        else:
            candidates = set().union(*by_namespace.values())
        narrowed = self._narrowest(group, kind, selector)
        if narrowed is not None:
            candidates &= narrowed
        return sorted(candidates)

    def dependents(self, uid: str) -> list[Key]:
        """Keys of the objects with an owner reference to ``uid``."""
        return sorted(self._by_owner.get(uid, ()))

    def in_namespace(self, namespace: str) -> list[Key]:
        return sorted(self._by_namespace.get(namespace, ()))

    def _narrowest(self, group: str, kind: str, selector: Selector) -> set[Key] | None:
        best: set[Key] | None = None
        for requirement in selector.requirements:
            if requirement.operator != "In":
                continue
            keys: set[Key] = set()
            for value in requirement.values:
                keys |= self._by_label.get((group, kind, requirement.key, value), set())
            if best is None or len(keys) < len(best):
                best = keys
        return best

    def _add_meta(self, key: Key, obj: Mapping[str, Any]) -> None:
        group, kind = key[0], key[1]
        for label, value in _labels(obj).items():
            self._by_label[(group, kind, label, value)].add(key)
        for uid in _owners(obj):
            self._by_owner[uid].add(key)

    def _drop_meta(self, key: Key, obj: Mapping[str, Any]) -> None:
        group, kind = key[0], key[1]
        for label, value in _labels(obj).items():
            _discard(self._by_label, (group, kind, label, value), key)
        for uid in _owners(obj):
            _discard(self._by_owner, uid, key)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj["metadata"].get("labels") or {}


def _owners(obj: Mapping[str, Any]) -> frozenset[str]:
    refs: Iterable[Mapping[str, Any]] = obj["metadata"].get("ownerReferences") or ()
    return frozenset(str(r.get("uid")) for r in refs)


def _discard(index: Any, bucket: Any, key: Key) -> None:
    keys = index.get(bucket)
    if keys is None:
        return
    keys.discard(key)
    if not keys:
        del index[bucket]
