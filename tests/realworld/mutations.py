"""Generated mutations of Kubernetes objects for the differential tests: each is an object
one change away from a real one, with a label naming the change, so the offline check and
the real apiserver can be held to the same verdict on it.

``mutants`` makes decoding-level changes anywhere (a value of another JSON type, an unknown
field); ``tests.realworld.edits`` makes the semantic ones authors and templates get wrong.
Both are deterministic for a seed.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from typing import Any

from tests.realworld.edits import META_EDITS, cronjob_of, edited


def positions(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every value's path in an object, except its identity (apiVersion, kind, name)."""
    out = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += positions(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += positions(value, (*path, i))
    skip = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
    return [p for p in out if p[:2] not in skip and p[:1] not in skip]


def swap(value: Any, rng: random.Random) -> Any:
    """A value of another JSON type (a decoding-level change, not a semantic one)."""
    if isinstance(value, bool):
        return rng.choice(["true", 1, [value]])
    if isinstance(value, int):
        return rng.choice([str(value), True, 1.5, [value]])
    if isinstance(value, str):
        return rng.choice([7, False, [value], {"v": value}])
    if isinstance(value, list):
        return rng.choice(["list", {"items": value}])
    return rng.choice(["object", [value], 3])


def mutants(
    sources: list[tuple[str, dict[str, Any]]], seed: int, per_object: int
) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    out = []
    for name, original in sources:
        base = copy.deepcopy(original)
        base["metadata"].pop("ownerReferences", None)
        for _ in range(per_object):
            obj = copy.deepcopy(base)
            path = rng.choice(positions(obj))
            parent: Any = obj
            for part in path[:-1]:
                parent = parent[part]
            if isinstance(parent[path[-1]], dict) and rng.random() < 0.5:
                parent[path[-1]]["zzUnknownField"] = "x"
                what = f"{name} +field under {'.'.join(map(str, path))}"
            else:
                parent[path[-1]] = swap(parent[path[-1]], rng)
                what = f"{name} swap {'.'.join(map(str, path))}"
            out.append((what, obj))
    return out


#: maps whose keys the author chooses: a mutation's label names such a key "*"
FREE_KEYS = frozenset(
    {"labels", "annotations", "data", "binaryData", "stringData", "matchLabels", "nodeSelector"}
)


def shape(path: tuple[Any, ...]) -> str:
    """A field path as a mutation's label shows it: list items as ``[]``, the keys of
    free-form maps as ``*`` (``spec.template.metadata.labels.*``)."""
    out = ""
    for i, part in enumerate(path):
        if isinstance(part, int):
            out += "[]"
        else:
            free = i > 0 and path[i - 1] in FREE_KEYS
            out += ("." if out else "") + ("*" if free else str(part))
    return out


def scattered(obj: dict[str, Any], rng: random.Random, count: int) -> list[tuple[str, Any]]:
    """``count`` decoding-level mutations of ``obj`` at random places: a value of another
    JSON type, an unknown field, a field left out. Labelled "Kind: what path"."""
    out: list[tuple[str, Any]] = []
    places = positions(obj)
    members = [p for p in places if isinstance(p[-1], str)]
    for _ in range(count):
        changed = copy.deepcopy(obj)
        what = rng.choice(("swap", "unknown field", "left out"))
        path = rng.choice(members if what == "left out" else places)
        parent: Any = changed
        for part in path[:-1]:
            parent = parent[part]
        if what == "left out":
            del parent[path[-1]]
        elif what == "unknown field" and isinstance(parent[path[-1]], dict):
            parent[path[-1]]["zzUnknownField"] = "x"
        else:
            what = "swap"
            parent[path[-1]] = swap(parent[path[-1]], rng)
        out.append((f"{obj['kind']}: {what} {shape(path)}", changed))
    return out


#: objects of a kind each semantic edit is made on (sampled: the corpus has 18 Deployments)
PER_EDIT = 6
#: ... and each edit of ObjectMeta, which every kind has
PER_META_EDIT = 2
#: decoding-level mutations per corpus object
SCATTERED = 2


def generate(
    objects: list[tuple[str, dict[str, Any]]], seed: int
) -> list[tuple[str, str, dict[str, Any]]]:
    """The project's own cases made of the corpus: ``(label, where, object)`` for a CronJob
    made of every Job (the corpus has none) and each of the semantic edits
    (``tests.realworld.edits``) and decoding-level mutations of every object. Deterministic
    for a ``seed``."""
    rng = random.Random(seed)
    sources = list(objects)
    sources += [(f"{w} as a CronJob", cronjob_of(o)) for w, o in objects if o["kind"] == "Job"]
    out = [("CronJob: as made", w, o) for w, o in sources[len(objects) :]]
    order = list(range(len(sources)))
    rng.shuffle(order)
    made: Counter[str] = Counter()

    def wanted(label: str) -> bool:
        cap = PER_META_EDIT if label.split(": ", 1)[1] in META_EDITS else PER_EDIT
        return made[label] < cap

    for i in order:
        where, obj = sources[i]
        for label, changed in edited(obj, wanted):
            made[label] += 1
            out.append((label, where, changed))
    for where, obj in objects:
        out += [(label, where, changed) for label, changed in scattered(obj, rng, SCATTERED)]
    return out
