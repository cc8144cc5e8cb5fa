"""Whether a live object already holds what oper8d would apply, so the apply is skipped.

The prepared object carries ``HASH_ANNOTATION``, a hash of its content (``content_hash``,
key order ignored). A live object is current when it carries the same hash and holds every
field the prepared one sets (``is_current``); ``projection_digest`` hashes the part of a live
object that a prepared one sets, for ``deploy.AppliedMemory``'s comparison of what the server
stored for an earlier apply.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from typing import Any

from oper8d.objects import Obj

__all__ = [
    "HASH_ANNOTATION",
    "applied_hash",
    "as_stored",
    "content_hash",
    "is_current",
    "projection_digest",
    "sorted_hash",
]

#: on every object oper8d applies: the hash of what it applied (``content_hash``)
HASH_ANNOTATION = "oper8d.io/applied-hash"


def content_hash(obj: Obj) -> str:
    """sha256 of what we want, independent of key order (the hash annotation excluded)."""
    body = copy.copy(obj)
    meta = dict(body.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != HASH_ANNOTATION}
    meta["annotations"] = annotations
    body["metadata"] = meta
    return sorted_hash(body)


#: ``json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)`` without
#: building an encoder per call (every object a render applies is hashed)
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


def sorted_hash(body: Obj) -> str:
    """sha256 (32 hex digits) of ``body`` as JSON with sorted keys."""
    # sorted keys: the hash must not depend on the order a template or patch wrote keys in
    return hashlib.sha256(_CANONICAL_JSON(body).encode()).hexdigest()[:32]


def is_current(wanted: Obj, live: Obj) -> bool:
    """True when the live object was written from this exact rendering and still holds it.

    The hash says our intent has not changed since the last successful apply; the subset
    check says nobody changed what we own since (drift is corrected by the next apply).
    """
    wanted_hash = applied_hash(wanted)
    return (
        wanted_hash is not None
        and wanted_hash == applied_hash(live)
        and _contains(live, as_stored(wanted))
    )


def as_stored(obj: Obj) -> Obj:
    """``obj`` with the API server's known rewrites done: a Secret's ``stringData`` folded
    into ``data`` (base64), as the server stores it."""
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1":
        return obj
    string_data = obj.get("stringData")
    if not isinstance(string_data, dict):
        return obj
    stored = {k: v for k, v in obj.items() if k != "stringData"}
    data = dict(obj.get("data") or {})
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    stored["data"] = data
    return stored


def projection_digest(live: Obj, wanted: Obj) -> str:
    """A digest of the live object's values at the paths ``wanted`` sets."""
    return hashlib.sha256(_CANONICAL_JSON(_project(live, wanted)).encode()).hexdigest()[:32]


_ABSENT = "\x00absent"


def _project(live: Any, wanted: Any) -> Any:
    """``live``'s values at the paths of ``wanted`` (``_ABSENT`` where it has none)."""
    if type(live) is type(wanted) and live == wanted and type(live) in (dict, list):
        # equal in C: the same keys and lengths all the way down, so the projection holds
        # every value of ``live`` and is ``live`` itself (the digest sorts keys)
        return live
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return _ABSENT if live is None else live
        return {k: _project(live[k], v) if k in live else _ABSENT for k, v in wanted.items()}
    if isinstance(wanted, list) and isinstance(live, list) and len(live) == len(wanted):
        return [_project(a, b) for a, b in zip(live, wanted, strict=True)]
    return live


def applied_hash(obj: Obj) -> str | None:
    """The hash annotation ``obj`` carries (None: none)."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(HASH_ANNOTATION)


def _contains(live: Any, wanted: Any) -> bool:
    """Whether ``live`` holds every field of ``wanted`` with the same value (lists whole)."""
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return False
        for key, value in wanted.items():
            if key not in live:
                return False
            found = live[key]
            # equal values contain each other: one comparison in C settles most subtrees
            # (labels, containers the server did not default) without a Python walk
            if found is value or (type(found) is type(value) and found == value):
                continue
            if not _contains(found, value):
                return False
        return True
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(_contains(a, b) for a, b in zip(live, wanted, strict=True))
        )
    return bool(live == wanted)
