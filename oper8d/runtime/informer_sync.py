"""How what an informer's reader receives changes its store, and what its handlers are told.

``runtime.informer.Informer`` keeps two maps of one kind's objects: the store (what reads
see; it also holds objects we just wrote, ``observe_write``) and ``seen`` (what handlers
were last told). The reader thread queues a ``Relisted`` (a whole list) or a
``WatchChange`` (one watch event); the dispatcher applies each with the functions here,
holding the informer's lock, and then tells the handlers the events they return:

* a watch event is ADDED, MODIFIED or DELETED by what handlers saw before;
* a relist is diffed against what handlers saw, so after a gap they get ADDED / MODIFIED /
  DELETED for exactly what changed (nothing for objects at the same resourceVersion);
* a stored object we wrote after the event or the list's snapshot stays until its own
  watch event arrives (read-your-writes);
* the key of an object that left is remembered as ``departed``: that a name is absent now
  does not show that nobody else holds it (``runtime.cache``).

Kept apart from the informer's threads so that each is short enough to read whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from oper8d.objects import Obj, newer, resource_version
from oper8d.runtime.hashing import ShardSlice
from oper8d.runtime.store import Key, ObjectStore, key_of

__all__ = ["Event", "Relisted", "WatchChange", "apply_change", "apply_relist"]

#: (event, obj, old) as handlers get it
Event = tuple[str, Obj, Obj | None]


@dataclass(frozen=True)
class Relisted:
    """A (re)list: the whole set of objects at ``resource_version``."""

    items: list[Obj]
    resource_version: str
    #: the slice the list asked for (None: everything)
    shard: ShardSlice | None = None


@dataclass(frozen=True)
class WatchChange:
    """One watch event (ADDED, MODIFIED or DELETED)."""

    type: str
    obj: Obj


def apply_change(
    seen: dict[Key, Obj], store: ObjectStore, change: WatchChange, departed: set[Key]
) -> Event:
    """Apply one watch event to ``seen`` and ``store``; the event handlers get. The key of
    an object that left (deleted, or no longer selected) is added to ``departed``."""
    obj, key = change.obj, key_of(change.obj)
    old = seen.get(key)
    stored = store.get(key)
    # an observed write newer than this event stays until its own event arrives
    keep_stored = stored is not None and newer(stored, obj) is True
    if change.type == "DELETED":
        seen.pop(key, None)
        departed.add(key)
        if not keep_stored:
            store.remove(key)
        return ("DELETED", obj, old)
    seen[key] = obj
    if not keep_stored:
        store.put(key, obj)
    return ("ADDED" if old is None else "MODIFIED", obj, old)


def apply_relist(
    seen: dict[Key, Obj], store: ObjectStore, listing: Relisted, departed: set[Key]
) -> tuple[dict[Key, Obj], list[Event]]:
    """Apply a list to ``store``; the new ``seen`` and the events handlers get (the keys of
    objects gone since are added to ``departed``)."""
    listed = {key_of(obj): obj for obj in listing.items}
    events: list[Event] = []
    for key, obj in listed.items():
        old = seen.get(key)
        if old is None:
            events.append(("ADDED", obj, None))
        elif resource_version(old) != resource_version(obj):
            events.append(("MODIFIED", obj, old))
    gone = [key for key in seen if key not in listed]
    departed.update(gone)
    events += [("DELETED", seen[key], seen[key]) for key in gone]
    list_version = {"metadata": {"resourceVersion": listing.resource_version}}
    for key in set(store.keys()) | set(listed):
        stored = store.get(key)
        if stored is not None and newer(stored, list_version) is True:
            continue  # written by us after the list's snapshot
        if key in listed:
            store.put(key, listed[key])
        else:
            store.remove(key)
    return listed, events
