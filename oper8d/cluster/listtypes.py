"""How server-side apply merges each list and map of a kind: read from its schema.

Used by ``cluster.fields`` (through ``cluster.memory.store``): the API server merges an applied
list by its ``x-kubernetes-list-type`` (``atomic``: replaced whole, ``set``: by value,
``map``: by the ``x-kubernetes-list-map-keys`` of its items) and a map by its
``x-kubernetes-map-type`` (``atomic`` maps such as label selectors are replaced whole).
Built-in kinds take this from the shipped OpenAPI schemas (``oper8d.kubeschema``), where
a list without a list type but with ``x-kubernetes-patch-strategy: merge`` is a map keyed
by its patch merge key (or a set of scalars), as the apiserver's conversion of those
schemas makes it. Custom kinds take it from their CRD's structural schema, where a list
without a list type is atomic, like every list under ``x-kubernetes-preserve-unknown-
fields`` and every list of a kind whose schema is unknown. ``metadata`` is ObjectMeta for
every kind, so finalizers (a set) and ownerReferences (keyed by uid) merge everywhere.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any, Literal

from oper8d.kubeschema import KubeSchemas

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
ListKind = Literal["atomic", "set", "map"]


@dataclass(frozen=True)
class ListType:
    """How a list merges (``x-kubernetes-list-type``) and its map keys."""

    kind: ListKind
    keys: tuple[str, ...] = ()


ATOMIC = ListType("atomic")
#: the protocol the apiserver gives a port that has none (built-in schemas carry no default)
DEFAULT_PROTOCOL = "TCP"
_EMBEDDED = frozenset({"apiVersion", "kind", "metadata"})


class Shape:
    """One position in a kind's schema: what is below it and how it merges. A shape
    without a schema (unknown kind, free-form content) has atomic lists and granular
    maps."""

    __slots__ = (
        "_below",
        "_builtin",
        "_declared",
        "_defs",
        "_key_defaults",
        "_list_type",
        "_schema",
        "_stored",
        "atomic_map",
        "string_map",
    )

    def __init__(
        self, schema: Mapping[str, Any] | None, defs: Mapping[str, Any], builtin: bool = False
    ) -> None:
        self._defs = defs
        # the shapes below, made once: a write walks the same ones every time (a render
        # of a big bundle made tens of thousands)
        self._below: dict[str | None, Shape] = {}
        self._declared: dict[str, bool] = {}  # declares(), per field name
        self._list_type: ListType | None = None
        self._key_defaults: tuple[tuple[str, Any], ...] | None = None
        # (only built-in definitions are reached through a $ref)
        self._builtin = builtin or (schema is not None and "$ref" in schema)
        self._schema = _resolve(schema, defs)
        self._stored: dict[str, Shape | None] = {}  # stored(), per field name
        #: a map replaced whole by server-side apply (a label selector)
        self.atomic_map = self._schema is not None and (
            self._schema.get("x-kubernetes-map-type") == "atomic"
        )
        values = self._schema.get("additionalProperties") if self._schema is not None else None
        #: a built-in ``map[string]string`` (labels, a ConfigMap's data, a selector...): the
        #: apiserver decodes a null value in it as "" (a custom resource's stays null)
        self.string_map = (
            self._builtin
            and isinstance(values, Mapping)
            and values.get("type") == "string"
            and "format" not in values
        )

    def stored(self, name: str) -> Shape | None:
        """``field(name)`` when ``declares(name)``, else None: both in one lookup, for
        the walks that ask both of every field of a write."""
        try:
            return self._stored[name]
        except KeyError:
            below = self._stored[name] = self.field(name) if self.declares(name) else None
            return below

    def declares(self, name: str) -> bool:
        """Whether a field ``name`` may be stored here: declared, a map's key, or under a
        schema that keeps unknown fields (a built-in free-form object, a custom one with
        ``x-kubernetes-preserve-unknown-fields``, or no schema at all)."""
        declared = self._declared.get(name)
        if declared is None:
            declared = self._declared[name] = self._declares(name)
        return declared

    def _declares(self, name: str) -> bool:
        schema = self._schema
        if schema is None or schema.get("x-kubernetes-preserve-unknown-fields"):
            return True
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if (isinstance(props, Mapping) and name in props) or extra not in (None, False):
            return True
        if schema.get("x-kubernetes-embedded-resource") and name in _EMBEDDED:
            return True
        return self._builtin and not props and schema.get("type") in (None, "object")

    def field(self, name: str) -> Shape:
        below = self._below.get(name)
        if below is None:
            below = self._below[name] = self._field(name)
        return below

    def _field(self, name: str) -> Shape:
        schema = self._schema
        if schema is None:
            return Shape(None, self._defs)
        props = schema.get("properties")
        if isinstance(props, Mapping) and name in props:
            return Shape(props[name], self._defs, self._builtin)
        if schema.get("x-kubernetes-embedded-resource") and name == "metadata":
            return Shape({"$ref": OBJECT_META}, self._defs)
        extra = schema.get("additionalProperties")
        return Shape(extra if isinstance(extra, Mapping) else None, self._defs, self._builtin)

    def items(self) -> Shape:
        below = self._below.get(None)  # (None: the items; a field name is a string)
        if below is None:
            items = self._schema.get("items") if self._schema is not None else None
            below = Shape(items if isinstance(items, Mapping) else None, self._defs, self._builtin)
            self._below[None] = below
        return below

    def list_type(self) -> ListType:
        if self._list_type is None:
            self._list_type = self._read_list_type()
        return self._list_type

    def key_defaults(self) -> tuple[tuple[str, Any], ...]:
        """The key fields of this map-list's items that the apiserver defaults before
        server-side apply matches items, with their defaults: a built-in port's
        ``protocol``, a custom resource's key field with a ``default:``. An item that
        leaves such a key out (or sets it to null, unless the field is nullable) is the
        item with the default."""
        if self._key_defaults is None:
            self._key_defaults = self._read_key_defaults()
        return self._key_defaults

    def _read_key_defaults(self) -> tuple[tuple[str, Any], ...]:
        keys = self.list_type().keys
        if self._builtin:
            return (("protocol", DEFAULT_PROTOCOL),) if "protocol" in keys else ()
        item = self.items()._schema
        props = item.get("properties") if item is not None else None
        if not keys or not isinstance(props, Mapping):
            return ()
        found = []
        for key in keys:
            field = props.get(key)
            if isinstance(field, Mapping) and "default" in field and not field.get("nullable"):
                found.append((key, field["default"]))
        return tuple(found)

    def _read_list_type(self) -> ListType:
        schema = self._schema
        if schema is None:
            return ATOMIC
        declared = schema.get("x-kubernetes-list-type")
        if declared == "set":
            return ListType("set")
        if declared == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or ()
            return ListType("map", tuple(str(k) for k in keys)) if keys else ATOMIC
        if declared is None and "merge" in str(schema.get("x-kubernetes-patch-strategy", "")):
            key = schema.get("x-kubernetes-patch-merge-key")
            return ListType("map", (str(key),)) if key else ListType("set")
        return ATOMIC


def _resolve(schema: Mapping[str, Any] | None, defs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for _ in range(8):  # a $ref to a $ref (never deep)
        if schema is None:
            return None
        ref = schema.get("$ref")
        if isinstance(ref, str):
            schema = defs.get(ref)
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
            schema = all_of[0]
            continue
        return schema
    return None


class ListTypes:
    """The root ``Shape`` of each kind the cluster knows. Immutable: ``with_crd`` returns
    a new one that also knows a CRD's versions."""

    def __init__(self, schemas: KubeSchemas) -> None:
        self.schemas = schemas
        self._roots: dict[tuple[str, str, str | None], Shape] = {}

    def with_crd(self, crd: Mapping[str, Any]) -> ListTypes:
        return ListTypes(self.schemas.with_crds([crd]))

    def root(self, api_version: str, kind: str, stored_as: str | None = None) -> Shape:
        """The shape of ``kind`` in ``api_version``; when that version has no known
        schema (``apps/v1beta2``), the one of the version the object is stored as."""
        key = (api_version, kind, stored_as)
        root = self._roots.get(key)
        if root is None:
            root = self._roots[key] = self._root(api_version, kind, stored_as)
        return root

    def _root(self, api_version: str, kind: str, stored_as: str | None) -> Shape:
        defs: Mapping[str, Any] = self.schemas.definitions
        schema = self.schemas.raw_schema(api_version, kind)
        if schema is None and stored_as:
            api_version = stored_as
            schema = self.schemas.raw_schema(api_version, kind)
        info = self.schemas.kind_info(api_version, kind)
        builtin = info is not None and info.builtin
        if schema is None:  # not known: anything goes, lists are atomic
            schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        props = dict(schema.get("properties") or {})
        props["metadata"] = {"$ref": OBJECT_META}
        for name in ("apiVersion", "kind"):
            props.setdefault(name, {"type": "string"})
        return Shape({**schema, "properties": props}, defs, builtin)


#: how a list item's identity is written (``json.dumps`` with these settings, without
#: building an encoder per call: a big render names thousands of items)
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


#: JSON for scalars of these types, without the encoder (``_json``'s common case)
_SCALAR_JSON: dict[type, Callable[[Any], str]] = {
    str: encode_basestring_ascii,  # (what the encoder uses for strings, ensure_ascii)
    int: int.__repr__,
    bool: lambda b: "true" if b else "false",
    type(None): lambda _: "null",
}


def _json(value: Any) -> str:
    """``_ENCODE(value)``. An item's identity is nearly always a string, or a small map
    of string keys to strings and integers: those are written here directly (the
    encoder's setup costs more than the encoding), anything else goes to the encoder. A
    property test holds the two to the same text."""
    kind = type(value)
    scalar = _SCALAR_JSON.get(kind)
    if scalar is not None:
        return scalar(value)
    if kind is dict and all(type(k) is str for k in value):
        parts = []
        for k in sorted(value):
            scalar = _SCALAR_JSON.get(type(value[k]))
            if scalar is None:
                return _ENCODE(value)
            parts.append(f"{encode_basestring_ascii(k)}:{scalar(value[k])}")
        return "{" + ",".join(parts) + "}"
    return _ENCODE(value)


@functools.lru_cache(maxsize=4096)
def _key_names(part: str) -> tuple[str, ...] | None:
    """The key names a ``k:`` path element sets (None: not a map). A pure function of a
    string that every ownership pass asks again of the same few elements, so cached."""
    parsed = json.loads(part[2:])
    return tuple(parsed) if isinstance(parsed, dict) else None


def item_id(item: Any, list_type: ListType) -> str:
    """The path element naming one item of an associative list, as ``managedFields``
    writes it: ``v:"value"`` in a set, ``k:{"name":"web"}`` in a map-list."""
    if list_type.kind == "set" or (type(item) is not dict and not isinstance(item, Mapping)):
        return "v:" + _json(item)
    return "k:" + _json({k: item[k] for k in list_type.keys if k in item})


def is_item(item: Any, part: str) -> bool:
    """Whether ``item`` is the list item the path element ``part`` names."""
    if part.startswith("v:"):
        return _json(item) == part[2:]
    if part.startswith("k:") and isinstance(item, Mapping):
        keys = json.loads(part[2:])
        return isinstance(keys, dict) and _json({k: item.get(k) for k in keys}) == part[2:]
    return False


class ItemFinder:
    """``is_item`` for many path elements over lists that do not change meanwhile: each
    list is indexed once per kind of element (``v:``, or ``k:`` with its key names), so
    finding an item costs one lookup instead of a JSON encoding per item. Holds the lists
    it indexed (an index is keyed by the list's ``id``); use one per pass, not across
    changes."""

    __slots__ = ("_indexes",)

    def __init__(self) -> None:
        self._indexes: dict[tuple[int, tuple[str, ...] | None], tuple[list[Any], dict[str, Any]]]
        self._indexes = {}

    def find(self, items: list[Any], part: str, missing: Any) -> Any:
        """The first item of ``items`` that ``part`` names, or ``missing``."""
        if part.startswith("v:"):
            keys: tuple[str, ...] | None = None
        elif part.startswith("k:"):
            keys = _key_names(part)
            if keys is None:
                return missing
        else:
            return missing
        slot = (id(items), keys)
        entry = self._indexes.get(slot)
        if entry is None:
            index: dict[str, Any] = {}
            for item in items:
                if keys is None:
                    ident = _json(item)
                elif isinstance(item, Mapping):
                    ident = _json({k: item.get(k) for k in keys})
                else:
                    continue
                index.setdefault(ident, item)  # the first one, as is_item's scan finds
            entry = self._indexes[slot] = (items, index)
        return entry[1].get(part[2:], missing)
