"""The defaults the in-memory API server fills in before it merges and stores a write.

Used by ``cluster.store`` on every write's content. Only defaults that change what a
write does are modelled: the ``protocol`` of a port is part of its identity in a list
keyed by ``(containerPort, protocol)`` or ``(port, protocol)``, so the apiserver fills in
``TCP`` before server-side apply matches items, and a port applied without a protocol is
the same item as that port applied with ``protocol: TCP``. Other defaults (a Service's
``type``, a container's ``imagePullPolicy`` ...) are not written.
"""

from __future__ import annotations

from typing import Any

from oper8d.cluster.listtypes import Shape

DEFAULT_PROTOCOL = "TCP"


def fill_key_defaults(tree: dict[str, Any], shape: Shape) -> None:
    """Set the defaulted key fields of map-list items in ``tree`` (in place)."""
    for key, value in tree.items():
        sub = shape.field(key)
        if type(value) is dict:
            fill_key_defaults(value, sub)
        elif type(value) is list and value:
            list_type = sub.list_type()
            items = sub.items()
            for item in value:
                if type(item) is not dict:
                    continue
                if "protocol" in list_type.keys and item.get("protocol") is None:
                    item["protocol"] = DEFAULT_PROTOCOL
                fill_key_defaults(item, items)
