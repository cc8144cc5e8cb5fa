"""A create by server-side apply in one walk: what an offline render does to every object.

Used by ``cluster.memory.store`` when a server-side apply names an object that does not exist.
The general path walks the applied configuration three times along the kind's schema
(``cluster.listtypes``) before merging it into nothing: ``admission.unknown_fields``
(a field the schema lacks fails the apply), ``defaults.fill_key_defaults`` (the port
``protocol`` that list items are matched by) and ``fields.server_side_apply`` (the merge,
and the leaves the manager comes to own). With nothing live and no other manager there
is nothing to merge: the result is the configuration itself with the nulls of its maps
dropped (no opinion), and the manager owns each of its leaves (``fields.leaves``). This
module does the three in one walk, and makes the store's copy of the client's object as
it goes (the store does not copy it first): each map and list below the top level is
copied before it is changed or kept. A property test holds it to the general path on
generated configurations, unknown fields and all, and another to sharing nothing with
the client's object.
"""

from __future__ import annotations

from typing import Any

from oper8d.cluster.copies import clone
from oper8d.cluster.fields import Owners, Path
from oper8d.cluster.listtypes import Shape, item_id
from oper8d.cluster.memory.admission import unknown_fields
from oper8d.cluster.memory.defaults import decode_string_map, fill_item_keys, fill_key_defaults

__all__ = ["apply_create"]

#: JSON scalars: immutable, kept as they are
_SCALARS = frozenset({str, int, float, bool, type(None)})


def apply_create(config: dict[str, Any], manager: str, shape: Shape) -> tuple[Owners, list[str]]:
    """Make ``config`` (a ``content()`` at the kind's root ``shape``: a map of its own,
    whose values may still be the client's) the object a server-side apply by ``manager``
    creates, in place: every map and list in it is replaced by a copy (tuples and other
    mappings made lists and dicts, as ``clone`` makes them), so nothing the client holds
    is changed or kept. Returns its owners and the fields the schema lacks, as
    ``unknown_fields`` lists them: when there are any the apply fails, and ``config`` is
    left half done.

    The walk only notes that a field is unknown; the list is then made by
    ``unknown_fields`` over the changed ``config``, which has the same unknown fields: the
    walk changes only declared fields (nulls dropped, key defaults and string-map values
    filled in). So a valid write builds no field paths for messages."""
    found: dict[Path, Any] = {}
    unknown: list[bool] = []
    _walk(config, shape, (), True, found, unknown)
    if unknown:
        return {}, unknown_fields(config, shape)
    owned = frozenset([p for p, v in found.items() if v is not None])
    return ({manager: owned} if owned else {}), []


def _walk(
    tree: dict[str, Any],
    shape: Shape,
    own: Path,
    strip: bool,
    found: dict[Path, Any],
    unknown: list[bool],
) -> None:
    """One map (the walk's own copy; its values not yet): its leaves into ``found`` (at
    the ownership path ``own``), a note in ``unknown`` for a field the schema lacks, the
    key defaults of its lists filled in and, with ``strip`` (outside lists, where the
    merge would drop them), its nulls dropped."""
    if shape.string_map:  # (its nulls are "" then, never dropped)
        decode_string_map(tree)
    nulls = []
    stored = shape.stored
    for k, v in tree.items():
        sub = stored(k)
        if sub is None:
            unknown.append(True)
            continue
        path = (*own, k)
        kind = type(v)
        if kind is not dict and kind is not list and kind not in _SCALARS:
            v = tree[k] = clone(v)  # (a tuple or another mapping, as the store keeps it)
            kind = type(v)
        if kind is list:
            v = tree[k] = v.copy()
            _list(v, sub, path, found, unknown)
        elif kind is dict:
            if v and not sub.atomic_map:
                v = tree[k] = v.copy()
                _walk(v, sub, path, strip, found, unknown)
            else:  # a leaf (an empty or atomic map); still checked and filled below
                v = tree[k] = clone(v)
                if v and unknown_fields(v, sub):
                    unknown.append(True)
                fill_key_defaults(v, sub)
                found[path] = v
        elif v is None and strip:
            nulls.append(k)
        else:
            found[path] = v
    for k in nulls:
        del tree[k]


def _list(
    value: list[Any],
    shape: Shape,
    path: Path,
    found: dict[Path, Any],
    unknown: list[bool],
) -> None:
    """A list at ``shape`` (the walk's own copy; its items not yet): an associative one's
    items are paths of their own (a map-list item's fields are leaves under it), an
    atomic one is a leaf."""
    list_type, items = shape.list_type(), shape.items()
    associative = list_type.kind != "atomic"
    key_defaults = shape.key_defaults()
    for i, item in enumerate(value):
        kind = type(item)
        if kind is dict and associative and list_type.kind == "map":
            item = value[i] = item.copy()  # (its own maps and lists: copied by _walk)
        elif kind not in _SCALARS:
            item = value[i] = clone(item)  # (a tuple or another mapping made a list or dict)
        if type(item) is dict:
            if key_defaults:
                fill_item_keys(item, key_defaults)
            if associative and list_type.kind == "map":
                ident = (*path, item_id(item, list_type))
                found[ident] = item
                _walk(item, items, ident, False, found, unknown)
                continue
            if item and unknown_fields(item, items):
                unknown.append(True)
            fill_key_defaults(item, items)
        if associative:
            found[(*path, item_id(item, list_type))] = item
    if not associative:
        found[path] = value
