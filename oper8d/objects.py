"""Kubernetes objects as every layer of oper8d handles them, and the labels oper8d puts on them.

Objects are plain dicts end to end, as the API server sends them (``Obj``); code that only
reads one takes an ``ObjView``. The cluster protocol, the engine, the runtime and the CLI
import these names from here (``cluster.base`` re-exports ``Obj`` for the protocol's users).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MANAGED_BY_LABEL", "OWNER_LABEL", "Obj", "ObjView"]

#: a Kubernetes object: the JSON the API server sends, as dicts, lists and scalars
Obj = dict[str, Any]
#: an object that is only read
ObjView = Mapping[str, Any]

#: on every object oper8d deploys: the uid of the CR it was deployed for; the runtime's
#: informers of owned kinds select on it
OWNER_LABEL = "oper8d.io/owner-uid"
#: on every object oper8d deploys, with the value ``oper8d``
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
