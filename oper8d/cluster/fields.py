"""Field paths, merges and field ownership behind the in-memory cluster's writes.

Used by ``cluster.memory.store``, and by ``cluster.kube`` (``content``, ``merge``). Objects
are plain JSON-like dicts; a *path* is a tuple of map keys (``("spec", "replicas")``) and
list item names as ``managedFields`` writes them (``k:{"name":"web"}`` in a list keyed by
name, ``v:"example.com/x"`` in a set). Server-side apply (SSA) follows the apiserver, lists
and maps merging as the kind's schema says (``cluster.listtypes``):

* A *leaf* is a scalar, an atomic list (replaced whole), an atomic map (a label
  selector) or an empty map (``emptyDir: {}``). An item of a set or of a map-list is a
  path of its own (its existence), and a map-list item's fields are leaves under it, so
  managers add and drop their own items and item fields without touching the others'.
  An empty associative list gives no path (nobody owns it).
* For every object the cluster remembers, per field manager, the set of paths it owns.
  ``server_side_apply`` merges the applied config in (maps recurse, associative lists
  merge item by item, in the order ``_merge_list`` describes), then removes the paths the
  manager owned before and no longer applies (unless another manager owns them or
  something under them; a map-list item's key fields go only with the item), and
  reports a conflict for fields another manager owns whose value would change: with
  ``force`` the applier takes them over, without it the apply fails (409).
* A non-apply write (create, update, replace, patch) hands the fields it changed to its
  manager and takes them from the others, as the API server does for Update operations.
  Its merges (``merge``: read-modify-write and JSON merge patch) keep the simpler rule:
  lists replace, except ``KEYED_LISTS``.

Not modelled: ``managedFields`` in returned objects (see ``MemoryCluster.managed_fields``),
versions of the same object with different schemas, ``$patch``-style directives.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from oper8d.cluster.copies import clone as clone
from oper8d.cluster.copies import is_map as _is_map
from oper8d.cluster.listtypes import ItemFinder, ListType, Shape, is_item, item_id
from oper8d.errors import ClusterError

Path = tuple[str, ...]
Owners = dict[str, frozenset[Path]]

#: lists merged by element instead of replaced: path -> key naming an element (None: the
#: element itself, a set of strings)
KEYED_LISTS: dict[Path, str | None] = {
    ("metadata", "finalizers"): None,
    ("metadata", "ownerReferences"): "uid",
}

#: metadata the server owns: never taken from a client, never owned by a manager
SYSTEM_METADATA = frozenset(
    {
        "uid",
        "creationTimestamp",
        "resourceVersion",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def content(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a client writes and a manager can own: ``obj`` without apiVersion, kind,
    status, name, namespace and system metadata. The top level and ``metadata`` are new
    dicts; values below are shared with ``obj`` (copy before changing them)."""
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status", "metadata")}
    meta = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in SYSTEM_METADATA and k not in ("name", "namespace")
    }
    if meta:
        out["metadata"] = meta
    return out


def _element_id(item: Any, key: str | None) -> str:
    if key is None:
        return str(item)
    return str(item.get(key)) if isinstance(item, Mapping) else repr(item)


def _is_key_field(path: Path) -> bool:
    """``path`` names a key field of a map-list item (which stays while the item does)."""
    if len(path) < 2 or not path[-2].startswith("k:"):
        return False
    keys = json.loads(path[-2][2:])
    return isinstance(keys, dict) and path[-1] in keys


def leaves(tree: Mapping[str, Any], shape: Shape, prefix: Path = ()) -> dict[Path, Any]:
    """Every path a manager owns by setting ``tree`` (at ``shape``), with its value: the
    leaves, and each item of an associative list (its existence) with its own leaves."""
    out: dict[Path, Any] = {}
    for k, v in tree.items():
        path = (*prefix, k)
        sub = shape.field(k)
        if type(v) is list and (list_type := sub.list_type()).kind != "atomic":
            # (an empty associative list gives no path: nobody owns it, nothing removes it)
            items = sub.items()
            for item in v:
                at = (*path, item_id(item, list_type))
                out[at] = item
                if list_type.kind == "map" and _is_map(item):
                    out.update(leaves(item, items, at))
        elif _is_map(v) and v and not sub.atomic_map:
            out.update(leaves(v, sub, path))
        else:
            out[path] = v
    return out


def _child(node: Any, at: Path, part: str) -> Any:
    """The child ``part`` of ``node``, which sits at path ``at``; ``MISSING`` when absent."""
    if isinstance(node, list):
        return next((x for x in node if is_item(x, part)), MISSING)
    if isinstance(node, Mapping):
        return node.get(part, MISSING)
    return MISSING


def get_path(tree: Any, path: Path) -> Any:
    """The value at ``path``, or ``MISSING``."""
    node = tree
    for i, part in enumerate(path):
        # a dict (the common case) without slicing the path for _child
        node = node.get(part, MISSING) if type(node) is dict else _child(node, path[:i], part)
        if node is MISSING:
            return MISSING
    return node


def delete_path(tree: dict[str, Any], path: Path, keep: Collection[Path] = frozenset()) -> None:
    """Remove ``path`` from ``tree`` in place, then the maps and lists this leaves
    empty (``metadata`` itself stays, and so do the paths in ``keep``)."""
    nodes: list[Any] = [tree]  # nodes[d] sits at path[:d]
    for i, part in enumerate(path[:-1]):
        child = _child(nodes[-1], path[:i], part)
        if not isinstance(child, dict | list):
            return
        nodes.append(child)
    parent, last = nodes[-1], path[-1]
    if isinstance(parent, list):
        kept = [x for x in parent if not is_item(x, last)]
        if len(kept) == len(parent):
            return
        parent[:] = kept
    elif parent.pop(last, MISSING) is MISSING:
        return
    for depth in range(len(nodes) - 1, 0, -1):
        if nodes[depth] not in ({}, []) or not isinstance(nodes[depth - 1], dict):
            break
        if path[:depth] == ("metadata",) or path[:depth] in keep:
            break
        nodes[depth - 1].pop(path[depth - 1])


def _merge_keyed(target: list[Any], overlay: list[Any], key: str | None) -> None:
    index = {_element_id(x, key): i for i, x in enumerate(target)}
    for item in overlay:
        ident = _element_id(item, key)
        if ident in index:
            target[index[ident]] = clone(item)
        else:
            index[ident] = len(target)
            target.append(clone(item))


def _merge_into(target: dict[str, Any], overlay: Mapping[str, Any], keyed: bool, at: Path) -> None:
    for k, v in overlay.items():
        path = (*at, k)
        current = target.get(k)
        if v is None:
            target.pop(k, None)
        elif keyed and path in KEYED_LISTS and isinstance(v, list) and isinstance(current, list):
            _merge_keyed(current, v, KEYED_LISTS[path])
        elif type(v) is dict or isinstance(v, Mapping):
            if not isinstance(current, dict):
                current = target[k] = {}
            _merge_into(current, v, keyed, path)
        else:
            target[k] = clone(v)


def merge(
    base: Mapping[str, Any], overlay: Mapping[str, Any], *, keyed: bool = True
) -> dict[str, Any]:
    """``overlay`` merged into a copy of ``base``: maps recurse, lists and scalars replace,
    ``None`` removes the key. With ``keyed`` the lists in ``KEYED_LISTS`` merge by
    element; without it (JSON merge patch, RFC 7386) they replace too."""
    out: dict[str, Any] = clone(base)
    _merge_into(out, overlay, keyed, ())
    return out


def _merge_list(
    live: list[Any], applied: list[Any], list_type: ListType, items: Shape
) -> list[Any]:
    """An associative list merged as server-side apply merges it: items matched by
    identity (an applied item merged into the live one), the two orders interleaved as
    the apiserver interleaves them. Both lists are walked together: live-only items come
    out as the live walk meets them; the applied walk then goes to the next item both
    lists have, which comes out after the live-only items before it in the live list,
    then the applied-only items before it in the applied list; the live walk resumes
    after it."""
    applied_by_id = {item_id(x, list_type): x for x in applied}
    live_ids: list[str] = []
    live_by_id: dict[str, Any] = {}
    for item in live:
        ident = item_id(item, list_type)
        if ident not in live_by_id:
            live_ids.append(ident)
            live_by_id[ident] = item
    position = {ident: i for i, ident in enumerate(live_ids)}
    applied_ids = list(applied_by_id)
    out: list[Any] = []
    done: set[str] = set()

    def emit(ident: str) -> None:
        done.add(ident)
        previous, value = live_by_id.get(ident, MISSING), applied_by_id.get(ident, MISSING)
        if value is MISSING:
            out.append(previous)
        elif list_type.kind == "map" and isinstance(previous, dict) and isinstance(value, Mapping):
            merged = clone(previous)
            _apply_into(merged, value, items)
            out.append(merged)
        else:
            out.append(clone(value))

    li = ai = 0
    while True:
        while li < len(live_ids) and (live_ids[li] in done or live_ids[li] not in applied_by_id):
            if live_ids[li] not in done:
                emit(live_ids[li])
            li += 1
        pending: list[str] = []
        shared: str | None = None
        while ai < len(applied_ids):
            ident = applied_ids[ai]
            ai += 1
            if ident in position:
                if ident not in done:
                    shared = ident
                    break
            elif ident not in done:
                pending.append(ident)
        if shared is None:
            for ident in (*live_ids[li:], *pending):
                if ident not in done:
                    emit(ident)
            return out
        for ident in live_ids[li : position[shared]]:
            if ident not in applied_by_id and ident not in done:
                emit(ident)
        for ident in pending:
            emit(ident)
        emit(shared)
        li = max(li, position[shared] + 1)


def _apply_into(target: dict[str, Any], config: Mapping[str, Any], shape: Shape) -> None:
    for k, v in config.items():
        sub = shape.field(k)
        current = target.get(k)
        if v is None:
            continue  # no opinion: server-side apply ignores a null it is given
        if type(v) is list and type(current) is list and sub.list_type().kind != "atomic":
            target[k] = _merge_list(current, v, sub.list_type(), sub.items())
        elif _is_map(v) and not sub.atomic_map:
            if not isinstance(current, dict):
                current = target[k] = {}
            _apply_into(current, v, sub)
        else:
            target[k] = clone(v)


def differs(before: Any, after: Any) -> bool:
    """Whether a field changed. A map that exists before and after is unchanged: owning
    a map means owning its existence, not its contents."""
    if _is_map(before) and _is_map(after):
        return False
    return bool(before != after)


def _under(path: Path, owned: Iterable[Path]) -> bool:
    """One of ``owned`` is ``path`` or lies under it."""
    n = len(path)
    return any(q[:n] == path for q in owned)


def _fmt(path: Path) -> str:
    return ".".join(path)


def server_side_apply(
    live: Mapping[str, Any],
    config: Mapping[str, Any],
    owners: Owners,
    manager: str,
    shape: Shape,
    *,
    force: bool,
    where: str,
) -> tuple[dict[str, Any], Owners]:
    """Apply ``config`` (a ``content()``) as ``manager`` over ``live`` (a ``content()``,
    ``{}`` when creating), lists and maps merged as ``shape`` (the kind's root) says.
    Returns the new content (built from copies: it shares nothing with ``live`` or
    ``config``, and ``Store`` fills defaults into it in place) and the new ownership."""
    applied = leaves(config, shape)
    owned_now = frozenset(p for p, v in applied.items() if v is not None)
    others = {m: set(ps) for m, ps in owners.items() if m != manager}
    result: dict[str, Any] = clone(live)
    _apply_into(result, config, shape)
    # The config is merged in, then the fields this manager applied before and dropped
    # now are removed, unless someone else owns them (or something under them): SSA's
    # "remove what you stopped applying". A list or map this empties goes too. The key
    # fields of a map-list item go with the item, never alone.
    dropped = owners.get(manager, frozenset()) - owned_now
    for path in sorted(dropped, key=len, reverse=True):
        if _is_key_field(path) or _under(path, owned_now):
            continue  # what is applied now lies under it
        if any(_under(path, ps) for ps in others.values()):
            continue
        delete_path(result, path, owned_now)
    conflicts = sorted(
        (m, p)
        for m, ps in others.items()
        for p in ps
        if p in owned_now and differs(get_path(live, p), get_path(result, p))
    )
    if conflicts and not force:
        listed = "; ".join(f"{_fmt(p)} (owned by {m!r})" for m, p in conflicts)
        raise ClusterError(
            f"Apply failed for {where} with {len(conflicts)} conflict(s): {listed}. "
            f"Apply with force to take these fields over as {manager!r}, or stop setting them",
            status=409,
        )
    for m, p in conflicts:
        others[m].discard(p)
    new_owners = present_only(others, result)
    if owned_now:
        new_owners[manager] = owned_now
    return result, new_owners


def record_update(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    owners: Owners,
    manager: str,
    shape: Shape,
) -> Owners:
    """Ownership after a non-apply write of ``new`` (a ``content()``) by ``manager``:
    it gains the fields it changed, the other managers lose them."""
    before: Mapping[str, Any] = old or {}
    changed = {p for p, v in leaves(new, shape).items() if differs(get_path(before, p), v)}
    kept: dict[str, set[Path]] = {}
    for m, ps in owners.items():
        kept[m] = {
            p for p in ps if m == manager or not differs(get_path(before, p), get_path(new, p))
        }
    kept[manager] = kept.get(manager, set()) | changed
    return present_only(kept, new)


def present_only(owners: Mapping[str, Iterable[Path]], tree: Mapping[str, Any]) -> Owners:
    """``owners`` without the paths ``tree`` does not hold (and without managers left with
    none). Every write asks this of all its paths, which share most of their prefixes:
    the node at each parent path is looked up once per pass (``tree`` does not change
    meanwhile), and list items are found through an ``ItemFinder``."""
    out: Owners = {}
    nodes: dict[Path, Any] = {(): tree}
    finder = ItemFinder()
    for m, ps in owners.items():
        present = []
        for path in ps:
            node = nodes.get(path[:-1], _UNKNOWN)
            if node is _UNKNOWN:
                node = _locate(path[:-1], nodes, finder)
            if node is not MISSING and _step(node, path[-1], finder) is not MISSING:
                present.append(path)
        if present:
            out[m] = frozenset(present)
    return out


def _locate(path: Path, nodes: dict[Path, Any], finder: ItemFinder) -> Any:
    """The node at ``path`` (or ``MISSING``), remembered in ``nodes`` with its parents."""
    node = nodes.get(path, _UNKNOWN)
    if node is _UNKNOWN:
        parent = _locate(path[:-1], nodes, finder)
        node = nodes[path] = MISSING if parent is MISSING else _step(parent, path[-1], finder)
    return node


def _step(node: Any, part: str, finder: ItemFinder) -> Any:
    if type(node) is dict:
        return node.get(part, MISSING)
    if type(node) is list:
        return finder.find(node, part, MISSING)
    return _child(node, (), part)


_UNKNOWN: Any = object()  # a path not looked up yet
