"""The building blocks of ``tests.realworld``'s edits: an edit changes a copy of an object
in place and says whether it applied (``set_at`` a path that the object has, ``drop`` a
field, ``rename`` the object)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Edit = Callable[[Obj], bool]


def at(obj: Any, *path: str | int) -> Any:
    for part in path:
        if isinstance(obj, dict) and isinstance(part, str):
            obj = obj.get(part)
        elif isinstance(obj, list) and isinstance(part, int) and -len(obj) <= part < len(obj):
            obj = obj[part]
        else:
            return None
    return obj


def set_at(path: tuple[str | int, ...], value: Any, only_if_present: bool = True) -> Edit:
    def edit(obj: Obj) -> bool:
        parent = at(obj, *path[:-1])
        last = path[-1]
        if isinstance(parent, dict) and isinstance(last, str):
            if only_if_present and last not in parent:
                return False
            parent[last] = copy.deepcopy(value)
            return True
        if isinstance(parent, list) and isinstance(last, int) and last < len(parent):
            parent[last] = copy.deepcopy(value)
            return True
        return False

    return edit


def drop(*path: str | int) -> Edit:
    def edit(obj: Obj) -> bool:
        parent = at(obj, *path[:-1])
        if isinstance(parent, dict) and path[-1] in parent:
            del parent[path[-1]]
            return True
        return False

    return edit


def rename(change: Callable[[str], str]) -> Edit:
    def edit(obj: Obj) -> bool:
        obj["metadata"]["name"] = change(obj["metadata"]["name"])
        return True

    return edit
