"""The defaults the in-memory API server fills in before it stores a write.

Used by ``cluster.memory.store`` on every write's content, as the apiserver defaults an object
when it decodes one:

* ``fill_key_defaults`` first, on what a client sends: the ``protocol`` of a port is part
  of its identity in a list keyed by ``(containerPort, protocol)`` or ``(port,
  protocol)``, so the apiserver fills in ``TCP`` before server-side apply matches items,
  and a port applied without a protocol is the same item as that port applied with
  ``protocol: TCP``; a custom resource's key field with a ``default:`` likewise
  (``Shape.key_defaults``);
* ``apply_defaults`` on the object a write makes (a create's content, an update's or
  patch's merged result, a server-side apply's merged result): a built-in kind gets
  Kubernetes' defaulting functions (``cluster.memory.defaults_builtin``), a custom resource the
  ``default:`` values of its CRD's structural schema (``cluster.memory.defaults_crd``).

A create or an update owns the defaults it gets (the apiserver defaults before it
records ownership); a server-side apply owns only what it applied, so the defaults of
its result are owned by nobody. What the storage layer of each kind sets afterwards
(a Job's selector, a new object's status...) is in ``cluster.memory.defaults_server``.
"""

from __future__ import annotations

from typing import Any

from oper8d.cluster.copies import clone
from oper8d.cluster.listtypes import Shape
from oper8d.cluster.memory.defaults_builtin import default_builtin
from oper8d.cluster.memory.defaults_crd import default_custom
from oper8d.cluster.memory.defaults_plan import DefaultPlans
from oper8d.kubeschema import KubeSchemas

__all__ = [
    "apply_defaults",
    "apply_status_defaults",
    "decode_string_map",
    "fill_item_keys",
    "fill_key_defaults",
]


def fill_key_defaults(tree: dict[str, Any], shape: Shape) -> None:
    """Set the defaulted key fields of map-list items in ``tree`` (in place), and read a
    null in a built-in string map as "" (``decode_string_map``)."""
    if shape.string_map:
        decode_string_map(tree)
    for key, value in tree.items():
        sub = shape.field(key)
        if type(value) is dict:
            fill_key_defaults(value, sub)
        elif type(value) is list and value:
            key_defaults = sub.key_defaults()
            items = sub.items()
            for item in value:
                if type(item) is not dict:
                    continue
                if key_defaults:
                    fill_item_keys(item, key_defaults)
                fill_key_defaults(item, items)


def decode_string_map(tree: dict[str, Any]) -> None:
    """A null value of a built-in ``map[string]string`` becomes "" (in place), as Go's
    decoding makes it before the apiserver merges, checks or stores the write: ``{a:
    null}`` in labels, data or a selector is the key ``a`` with an empty value."""
    for key, value in tree.items():
        if value is None:
            tree[key] = ""


def fill_item_keys(item: dict[str, Any], key_defaults: tuple[tuple[str, Any], ...]) -> None:
    """Give ``item`` the defaults of ``Shape.key_defaults`` it lacks (in place)."""
    for key, default in key_defaults:
        if item.get(key) is None:
            item[key] = clone(default)


def apply_defaults(
    content: dict[str, Any],
    api_version: str,
    kind: str,
    schemas: KubeSchemas,
    plans: DefaultPlans | None = None,
) -> None:
    """Fill in, in place, the defaults of an object's content (without apiVersion, kind
    and status) of ``kind`` in ``api_version``. A kind without a known schema gets none.
    ``plans`` (``default_plans(schemas.definitions)``, kept by the caller across writes)
    spares a built-in kind's walk the parts where no default can be."""
    schema = schemas.raw_schema(api_version, kind)
    info = schemas.kind_info(api_version, kind)
    if schema is None or info is None:
        return
    if info.builtin:
        default_builtin(content, api_version, kind, schema, schemas.definitions, plans)
    else:
        default_custom(content, schema)


def apply_status_defaults(status: Any, api_version: str, kind: str, schemas: KubeSchemas) -> None:
    """Fill in, in place, the schema defaults of a custom resource's status write."""
    info = schemas.kind_info(api_version, kind)
    schema = schemas.raw_schema(api_version, kind)
    if info is None or info.builtin or schema is None or type(status) is not dict:
        return
    default_custom({"status": status}, schema)
