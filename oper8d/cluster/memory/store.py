"""The in-memory API server's storage: what every write does to an object.

Used only by ``cluster.memory.MemoryCluster``, which holds its lock around every call,
counts requests and delivers the watch events queued here in ``events``. The rules
(system metadata, resourceVersion, generation, status, finalizers, garbage collection,
namespaces) are described in ``cluster.memory.cluster``'s docstring; field merging and
ownership live in ``cluster.fields``, admission checks in ``cluster.memory.admission``,
defaults in ``cluster.memory.defaults`` (and what a kind's registry sets in
``cluster.memory.defaults_server``).
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from oper8d.clock import rfc3339
from oper8d.cluster import fields
from oper8d.cluster.base import Propagation
from oper8d.cluster.listtypes import ListTypes, Shape
from oper8d.cluster.memory import admission
from oper8d.cluster.memory.apply_create import apply_create
from oper8d.cluster.memory.defaults import apply_defaults, apply_status_defaults, fill_key_defaults
from oper8d.cluster.memory.defaults_builtin import default_plans
from oper8d.cluster.memory.defaults_server import initial_status, on_write
from oper8d.cluster.memory.deletion import DeletionMixin
from oper8d.cluster.memory.entries import (
    Entry,
    check_preconditions,
    compose,
    generation_moves,
    out,
    refuse_new_finalizers,
)
from oper8d.cluster.memory.index import Key, ObjectIndex
from oper8d.cluster.memory.scheme import KindTable, has_generation
from oper8d.cluster.memory.simulate import DefaultSimulator, Simulator
from oper8d.cluster.memory.workload_status import SAFE_ALPHABET
from oper8d.cluster.selectors import Selector, as_selector
from oper8d.errors import ClusterError
from oper8d.kinds import group_of, path_segment_problem
from oper8d.kubeschema import CRDError, KubeSchemas
from oper8d.objects import Obj

_FIRST_CLUSTER_IP = int(ipaddress.IPv4Address("10.96.0.0"))


def _group_of(api_version: Any, kind: Any) -> str:
    """The group of ``api_version``; a ClusterError when it is not an apiVersion, as the
    real client refuses it before sending (``cluster.kube.discovery``)."""
    try:
        return group_of(api_version)
    except ValueError as err:
        raise ClusterError(f"{kind}: {err}", status=400) from err


def _unsafe(value: Any) -> bool:
    """``kinds.path_segment_problem`` would refuse ``value`` (a test holds the two to the
    same answer), answered without building its message."""
    return isinstance(value, str) and (
        value in (".", "..") or "/" in value or "%" in value or "?" in value or "#" in value
    )


class StoreView:
    """Reads for a simulator: not client requests, no locking of their own."""

    def __init__(self, store: Store):
        self._store = store

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        return self._store.read(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        return self._store.select(api_version, kind, namespace, as_selector(label_selector))

    def now(self) -> datetime:
        return self._store.now()


class Store(DeletionMixin):
    """Objects by key, with the API server's write semantics. Not thread-safe: the caller
    serialises calls."""

    def __init__(
        self,
        *,
        clock: Callable[[], Any],
        new_uid: Callable[[], str],
        simulator: Simulator | None,
        schemas: KubeSchemas,
    ):
        self.list_types = ListTypes(schemas)
        self._default_plans = default_plans(schemas.definitions)  # (kept across writes)
        self._clock = clock
        self._new_uid = new_uid
        self._simulator = simulator
        self.kinds = KindTable()
        self._objects: dict[Key, Entry] = {}
        self._index = ObjectIndex()  # by kind, namespace, label, owner: reads never scan
        self._by_uid: dict[str, Key] = {}
        self._resource_version = 0
        self._cluster_ips = 0
        self._last_stamp: tuple[Any, str] | None = None  # (clock reading, its timestamp)
        self.events: deque[tuple[str, Obj]] = deque()
        self.record_events = False  # set while someone watches
        self._view = StoreView(self)
        self._unchecked_seen: set[str] = set()  # CEL rules not evaluated, logged once

    # -- reads --------------------------------------------------------------------------
    def key(self, api_version: str, kind: str, name: str, namespace: str | None) -> Key:
        if _unsafe(name) or _unsafe(namespace):  # (every read and write asks this)
            for what, value in (("name", name), ("namespace", namespace)):
                problem = path_segment_problem(value) if isinstance(value, str) else None
                if problem is not None:  # a real client refuses it before sending
                    raise ClusterError(f"{kind}: invalid {what}: {problem}", status=400)
        group = _group_of(api_version, kind)
        if not self.kinds.namespaced(group, kind):
            return (group, kind, "", name)
        if not namespace:
            raise ClusterError(
                f"{kind} {name!r} is namespaced: give its namespace "
                "(or register_kind() it as cluster-scoped)",
                status=400,
            )
        return (group, kind, namespace, name)

    def key_of(self, obj: Obj) -> Key:
        meta = obj["metadata"]
        return self.key(obj["apiVersion"], obj["kind"], meta.get("name", ""), meta.get("namespace"))

    def read(self, api_version: str, kind: str, name: str, namespace: str | None) -> Obj | None:
        entry = self._objects.get(self.key(api_version, kind, name, namespace))
        return out(entry.obj, api_version) if entry else None

    def select(
        self, api_version: str, kind: str, namespace: str | None, selector: Selector
    ) -> list[Obj]:
        found = []
        for key in self._index.select(_group_of(api_version, kind), kind, namespace, selector):
            obj = self._objects[key].obj
            if selector.matches(obj["metadata"].get("labels")):
                found.append(out(obj, api_version))
        return found

    def objects(self, namespace: str | None) -> list[Obj]:
        keys = sorted(self._objects) if namespace is None else self._index.in_namespace(namespace)
        return [fields.clone(self._objects[k].obj) for k in keys]

    def owners(self, key: Key) -> fields.Owners:
        entry = self._objects.get(key)
        return dict(entry.owners) if entry else {}

    def exists(self, obj: Obj) -> bool:
        return self.key_of(obj) in self._objects

    # -- client writes ------------------------------------------------------------------
    def create(self, obj: Obj, manager: str) -> Obj:
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(obj)
        key = self.key_of(obj)
        if key in self._objects:
            raise ClusterError(
                f"{admission.describe(obj)} already exists; update it, or delete it first",
                status=409,
            )
        if meta.get("resourceVersion"):
            raise ClusterError(
                f"{admission.describe(obj)}: resourceVersion must not be set on create", status=400
            )
        shape = self._shape_of(obj, None)
        new = self._defaulted(self._content(obj, shape), obj)
        owners = fields.record_update(None, new, {}, manager, shape)
        return self._write(key, compose(new, key, obj), owners)

    def server_side_apply(self, obj: Obj, manager: str, force: bool) -> Obj:
        """``obj``: ``entries.outlined`` (below its top level and metadata, the client's):
        a create copies it as ``apply_create`` walks it, anything else copies it first."""
        if not obj["metadata"].get("name"):
            raise ClusterError(
                f"{admission.describe(obj)}: metadata.name is required for server-side apply "
                "(generateName works with create() or apply methods 'update' and 'replace')",
                status=400,
            )
        key = self.key_of(obj)
        entry = self._objects.get(key)
        check_preconditions(obj, entry.obj if entry else None)
        if entry is None:  # a create: nothing to merge with, nobody else's fields
            admission.check_sent_metadata(obj, self.list_types.schemas)
            new = fields.content(obj)  # (its own top level; apply_create copies the rest)
            owners, unknown = apply_create(new, manager, self._shape_of(obj, None))
            if unknown:
                raise admission.unknown_fields_error(obj, unknown)
        else:
            obj = fields.clone(obj)
            shape = self._shape_of(obj, entry)
            new, owners = fields.server_side_apply(
                fields.content(entry.obj),
                self._content(obj, shape, apply=True),
                entry.owners,
                manager,
                shape,
                force=force,
                where=admission.describe(obj),
            )
        # defaults owned by nobody; ``new`` shares nothing with the live object or the
        # caller's (both paths build it from copies), so it is filled in place
        new = self._defaulted(new, obj)
        return self._write(key, compose(new, key, entry.obj if entry else obj), owners)

    def put(self, obj: Obj, manager: str, *, merge: bool) -> Obj:
        """PUT (everything but status), or with ``merge`` a read-modify-write."""
        key, entry = self._existing(obj)
        check_preconditions(obj, entry.obj)
        live = fields.content(entry.obj)
        shape = self._shape_of(obj, entry)
        sent = self._content(obj, shape)
        new = fields.merge(live, sent) if merge else sent
        new = self._defaulted(fields.clone(new), obj)
        owners = fields.record_update(live, new, entry.owners, manager, shape)
        return self._write(key, compose(new, key, entry.obj), owners)

    def merge_patch(self, target: Obj, patch: Mapping[str, Any], manager: str) -> Obj:
        key, entry = self._existing(target)
        preconditions = {**(patch.get("metadata") or {}), **target["metadata"]}
        check_preconditions({**target, "metadata": preconditions}, entry.obj)
        live = fields.content(entry.obj)
        new = fields.merge(live, fields.content(patch), keyed=False)
        shape = self._shape_of(target, entry)
        admission.prune_unknown(new, shape)
        fill_key_defaults(new, shape)
        new = self._defaulted(fields.clone(new), target)
        owners = fields.record_update(live, new, entry.owners, manager, shape)
        return self._write(key, compose(new, key, entry.obj), owners)

    def update_status(self, obj: Obj) -> Obj:
        key, entry = self._existing(obj)
        check_preconditions(obj, entry.obj)
        schemas = self.list_types.schemas
        kind = (str(entry.obj["apiVersion"]), str(entry.obj["kind"]))
        # (a kind without status, such as ConfigMap, has no status subresource: a real
        # server answers 404; not modelled, the status is stored unchecked)
        if schemas.has_field(*kind, ("status",))[0] is not False:
            status = fields.clone(obj.get("status"))
            apply_status_defaults(status, *kind, schemas)
            new = {**entry.obj, "status": status}
            admission.check_values(new, schemas, entry.obj, self._unchecked_seen)
            return self._write_status(key, status)
        return self._write_status(key, obj.get("status"))

    def delete(self, key: Key, propagation: Propagation) -> bool:
        if key not in self._objects:
            return False
        self._request_deletion(key, propagation)
        return True

    def tick(self) -> int:
        if self._simulator is None:
            return 0
        changed = 0
        for key in sorted(self._objects):
            entry = self._objects.get(key)
            if entry is None or entry.obj["metadata"].get("deletionTimestamp"):
                continue
            status = self._simulator.on_tick(self._view, self._shown(entry.obj))
            if status is not None and status != entry.obj.get("status"):
                self._write_status(key, status)
                changed += 1
        return changed

    # -- the write path -----------------------------------------------------------------
    def _write(self, key: Key, new: Obj, owners: fields.Owners) -> Obj:
        """Store a spec/metadata change: admission, system metadata, generation,
        resourceVersion, the watch event, then removal or simulation. ``new`` becomes
        the store's; the stored object is returned (callers copy it: ``out()``)."""
        entry = self._objects.get(key)
        old = entry.obj if entry else None
        # the API server's order: decode (types), mutate, validate
        admission.check_values(new, self.list_types.schemas, old, self._unchecked_seen)
        admission.mutate(new, old, self._allocate_cluster_ip)
        admission.validate(new, old)
        if old is None:
            self._check_namespace_open(key, new)
        uid = str(old["metadata"]["uid"]) if old else self._new_uid()
        on_write(new, old, uid)  # what the kind's registry sets
        # stored as the API server stores it: Go maps (labels, data, custom resources) sorted
        new = admission.server_ordered(new)
        meta = new["metadata"]
        if old is None:
            meta["uid"] = uid
            meta["creationTimestamp"] = self._timestamp()
            if has_generation(key[0], key[1]):
                meta["generation"] = 1
            status = initial_status(str(new["apiVersion"]), key[1])
            if status is not None:
                new["status"] = status
        else:
            old_meta = old["metadata"]
            for name in fields.SYSTEM_METADATA & old_meta.keys():
                meta[name] = old_meta[name]
            if "status" in old:
                new["status"] = fields.clone(old["status"])
            if old_meta.get("deletionTimestamp"):
                refuse_new_finalizers(old, new)
            if new == old:  # a no-op write: nothing moves
                assert entry is not None
                entry.owners = owners
                return old
            if "generation" in meta and generation_moves(key, old, new):
                meta["generation"] = old_meta["generation"] + 1
        meta["resourceVersion"] = self._next_resource_version()
        if entry is None:
            self._objects[key] = Entry(new, owners)
            self._index.add(key, new)
            self._by_uid[meta["uid"]] = key
            self._on_created(new)
        else:
            self._index.update(key, entry.obj, new)
            entry.obj, entry.owners = new, owners
        self._emit("ADDED" if old is None else "MODIFIED", new)
        if self._removable(key, new):
            self._remove(key)
        elif not meta.get("deletionTimestamp") and self._simulator is not None:
            status = self._simulator.on_write(self._view, self._shown(new))
            if status is not None:
                self._write_status(key, status)
        return new

    def _write_status(self, key: Key, status: Any) -> Obj:
        entry = self._objects[key]
        # a new version sharing all but metadata and status with the stored one: the
        # store never changes a stored object's parts in place, and hands out copies
        new = {**entry.obj, "metadata": dict(entry.obj["metadata"])}
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = fields.clone(status)
        new = admission.status_ordered(new)
        if new == entry.obj:
            return entry.obj
        new["metadata"]["resourceVersion"] = self._next_resource_version()
        entry.obj = new
        self._emit("MODIFIED", new)
        return new

    def _write_internal(self, key: Key, new: Obj) -> None:
        """A write by the server itself (deletion, garbage collector): ownership kept."""
        self._write(key, new, self._objects[key].owners)

    # -- helpers ------------------------------------------------------------------------
    def _shown(self, obj: Obj) -> Obj:
        """What the simulator is given of a stored object: a copy, except for our own
        ``DefaultSimulator`` (exactly that class), which only reads it and keeps nothing
        of it (``tests/unit/test_simulate.py`` holds every builder to that), so it reads
        the stored version itself. Its statuses are copied when written."""
        return obj if type(self._simulator) is DefaultSimulator else fields.clone(obj)

    def _content(self, obj: Obj, shape: Shape, *, apply: bool = False) -> dict[str, Any]:
        """What the client writes (``obj``: its private copy, at the root ``shape``):
        unknown fields refused (apply) or dropped, the defaults that decide list item
        identities filled in."""
        admission.check_sent_metadata(obj, self.list_types.schemas)
        new = fields.content(obj)
        if apply:
            admission.refuse_unknown(obj, new, shape)
        else:
            admission.prune_unknown(new, shape)
        fill_key_defaults(new, shape)
        return new

    def _defaulted(self, content: dict[str, Any], obj: Obj) -> dict[str, Any]:
        """``content`` (the write's own) with the defaults of ``obj``'s kind filled in."""
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        schemas = self.list_types.schemas
        if self._default_plans.definitions is not schemas.definitions:
            self._default_plans = default_plans(schemas.definitions)
        apply_defaults(content, api_version, kind, schemas, self._default_plans)
        return content

    def _shape_of(self, obj: Obj, entry: Entry | None) -> Shape:
        """The root shape of ``obj``'s kind, whose stored version is ``entry``."""
        stored_as = str(entry.obj["apiVersion"]) if entry else None
        return self.list_types.root(str(obj["apiVersion"]), str(obj["kind"]), stored_as)

    def _existing(self, obj: Obj) -> tuple[Key, Entry]:
        key = self.key_of(obj)
        entry = self._objects.get(key)
        if entry is None:
            raise ClusterError(f"{admission.describe(obj)} not found", status=404)
        return key, entry

    def _on_created(self, obj: Obj) -> None:
        """A new CustomResourceDefinition makes its kind known, with its scope."""
        if (group_of(obj["apiVersion"]), obj["kind"]) != (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
        ):
            return
        spec = obj.get("spec") or {}
        kind = (spec.get("names") or {}).get("kind")
        if spec.get("group") and kind:
            self.kinds.register(f"{spec['group']}/v1", kind, spec.get("scope") != "Cluster")
        with contextlib.suppress(CRDError):  # a malformed CRD: its lists are atomic
            self.list_types = self.list_types.with_crd(obj)  # how its lists merge

    def _emit(self, event: str, obj: Obj) -> None:
        if self.record_events:
            self.events.append((event, fields.clone(obj)))

    def _generate_name(self, obj: Obj) -> str:
        base = str(obj["metadata"]["generateName"])[:58]
        digest = hashlib.sha256(self._new_uid().encode()).digest()
        alphabet = SAFE_ALPHABET
        return base + "".join(alphabet[b % len(alphabet)] for b in digest[:5])

    def _next_resource_version(self) -> str:
        self._resource_version += 1
        return str(self._resource_version)

    def _allocate_cluster_ip(self) -> str:
        self._cluster_ips += 1
        return str(ipaddress.IPv4Address(_FIRST_CLUSTER_IP + self._cluster_ips))

    def now(self) -> datetime:
        """The clock's time as an aware UTC datetime (it may give a datetime or seconds)."""
        return self.now_of(self._clock())

    @staticmethod
    def now_of(value: datetime | int | float) -> datetime:
        """A clock's reading as an aware UTC datetime."""
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, UTC)
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)

    def _timestamp(self) -> str:
        """``now()`` as the API server writes a timestamp. Remembered while the clock
        gives the same time (an offline run's clock moves between passes, not between
        the hundreds of creates of one pass; the formatting costs more than the rest)."""
        value = self._clock()
        if self._last_stamp is None or self._last_stamp[0] != value:
            self._last_stamp = (value, rfc3339(self.now_of(value)))
        return self._last_stamp[1]
