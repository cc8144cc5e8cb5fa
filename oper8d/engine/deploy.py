"""DeployManager: puts rendered objects into a cluster on behalf of one CR.

Used by the rollout. It stamps ownership (labels, the internal-name annotation,
owner references to the CR), skips writes for objects that have not changed since
our last successful apply (a no-op reconcile sends no writes), deletes objects of
disabled components, and finds owned objects for pruning through the CR's
inventory annotation (the kinds it has deployed, ApplySet-style). It never writes the
inventory: the reconciler records it before the rollout, and the rollout asks
``require_recorded`` before it applies anything, so that no object is created of a kind
the inventory does not name yet.

"Unchanged" needs care: the API server rewrites some of what we send (Secret
``stringData`` becomes ``data``, quantities are normalised, ``1000m`` -> ``1``), so the
live object need not contain our rendering verbatim. Known rewrites are undone before
comparing (``as_stored``); for the rest, ``AppliedMemory`` (owned by the reconciler,
kept across reconciles) remembers what the server made of our last apply.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oper8d.bundle.model import DeletionPolicy
from oper8d.cluster.base import Cluster, ClusterReader, Method, Propagation
from oper8d.engine.config import (
    INTERNAL_NAME_ANNOTATION,
    PASSTHROUGH_ANNOTATIONS,
    passthrough_annotations,
)
from oper8d.engine.leave import FieldPath, update_body, without
from oper8d.engine.ownership import refuse_foreign
from oper8d.engine.unchanged import (
    HASH_ANNOTATION,
    applied_hash,
    as_stored,
    content_hash,
    is_current,
    projection_digest,
    sorted_hash,
)
from oper8d.errors import ClusterError, PreconditionError
from oper8d.fieldpaths import format_field_path, parse_field_path
from oper8d.kinds import api_version_problem, group_of, is_cluster_scoped
from oper8d.logs import Logger
from oper8d.objects import DELETION_POLICY_ANNOTATION, MANAGED_BY_LABEL, OWNER_LABEL, Obj

log = Logger("oper8d.deploy")

COMPONENT_ANNOTATION = "oper8d.io/component"
#: the fields of an object left to other controllers (``leaveToOthers``), comma-separated
LEAVE_ANNOTATION = "oper8d.io/leave-to-others"
#: on the CR: the ``apiVersion/Kind``s it has deployed, so pruning knows what to list
INVENTORY_ANNOTATION = "oper8d.io/inventory"
#: metadata keys first in a prepared object, in this order; the rest follow as they came
_METADATA_ORDER = ("name", "generateName", "namespace", "labels", "annotations", "ownerReferences")


@dataclass
class DeployStats:
    """What a reconcile did to the cluster (shown by the CLI, used by benchmarks)."""

    applied: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


class AppliedMemory:
    """What the server stored for each object we applied: uid -> (our content hash, a
    digest of the live object's values at the paths we set). Lets ``is_current`` accept
    an object the server normalised, while any later change of those values (drift)
    still triggers an apply. Created by the reconciler and shared by its reconciles."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self._seen: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        # objects deleted by others are never forgotten explicitly: bound the memory
        self.max_entries = max_entries

    def remember(self, wanted: Obj, live: Obj) -> None:
        uid = (live.get("metadata") or {}).get("uid")
        if not uid:
            return
        if as_stored(wanted) is wanted and is_current(wanted, live):
            # stored as sent: ``is_current`` accepts it while nothing at our paths changes,
            # and a change there (``matches`` is asked only then) would change the digest
            # too, so an entry could never match; none is kept (nor its digest computed)
            with self._lock:
                self._seen.pop(uid, None)
            return
        entry = (applied_hash(wanted) or "", projection_digest(live, wanted))
        with self._lock:
            self._seen.pop(uid, None)  # re-insert: the oldest entries go first
            self._seen[uid] = entry
            while len(self._seen) > self.max_entries:
                del self._seen[next(iter(self._seen))]

    def matches(self, wanted: Obj, live: Obj) -> bool:
        uid = (live.get("metadata") or {}).get("uid")
        with self._lock:
            seen = self._seen.get(uid) if uid else None
        return seen is not None and seen == (
            applied_hash(wanted) or "",
            projection_digest(live, wanted),
        )

    def forget(self, live: Obj) -> None:
        uid = (live.get("metadata") or {}).get("uid")
        with self._lock:
            self._seen.pop(uid or "", None)


class DeployManager:
    """Applies and deletes the objects of one CR. Thread-safe (components deploy concurrently)."""

    def __init__(
        self,
        cluster: Cluster,
        cr: Obj,
        *,
        field_manager: str,
        memory: AppliedMemory | None = None,
        replace_on_invalid: bool = False,
    ) -> None:
        """``cr`` is the CR as last written: its inventory annotation says which kinds may
        be written. ``memory`` remembers what the server stored for our applies (see the
        module docstring)."""
        self.cluster = cluster
        #: when a server-side apply is refused as invalid (422, or the 500 the API server
        #: answers when it cannot build a typed patch), PUT the object instead
        self.replace_on_invalid = replace_on_invalid
        self.memory = memory if memory is not None else AppliedMemory()
        #: the kinds the CR's inventory names (what ``owned`` lists, ``require_recorded`` checks)
        self.inventory: set[str] = set(inventory_of(cr))
        #: kinds it was asked to write that the inventory did not name (nothing written)
        self.unrecorded: set[str] = set()
        self.cr = cr
        self.field_manager = field_manager
        meta = cr.get("metadata") or {}
        self.cr_uid: str = meta.get("uid", "")
        self._cr_ref = f"{cr.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')}"
        self.cr_namespace: str | None = meta.get("namespace")
        self.stats = DeployStats()
        self._lock = threading.Lock()
        self._passthrough = passthrough_annotations(cr)

    # -- stamping ------------------------------------------------------------------------
    def prepare(
        self,
        obj: Obj,
        internal_name: str,
        component: str,
        leave: Sequence[FieldPath] = (),
        policy: DeletionPolicy = "Delete",
    ) -> Obj:
        """``obj`` as it will be applied: namespace, labels, annotations, owner. The hash
        annotation leaves out the fields at ``leave`` (left to other controllers).

        ``obj`` is left unchanged. The result is a new top-level dict with new
        ``metadata``, ``labels``, ``annotations`` and ``ownerReferences``; everything else
        (``spec``, ``data`` ...) is shared with ``obj``, not deep-copied. That is safe
        because the rollout hands over objects nobody else holds: every render returns
        fresh objects (``TreeTemplate``, ``TextTemplate``'s parse cache, expression results
        copied out of the context) and the patch functions never share with their patch
        bodies. Nothing changes a prepared object afterwards; the cluster copies what it
        is sent. (A deep copy here cost as much as the rest of ``prepare``.)
        """
        obj = dict(obj)
        meta = _copied(obj.get("metadata", {}))
        namespaced = not is_cluster_scoped(str(obj.get("apiVersion")), str(obj.get("kind")))
        if namespaced and not meta.get("namespace") and self.cr_namespace:
            meta["namespace"] = self.cr_namespace
        # new dicts: the input's may be shared (a YAML alias: ``matchLabels: *labels``)
        labels = meta["labels"] = _copied(meta.get("labels", {}))
        labels.setdefault(MANAGED_BY_LABEL, "oper8d")
        if self.cr_uid:
            labels[OWNER_LABEL] = self.cr_uid
        annotations = meta["annotations"] = _copied(meta.get("annotations", {}))
        annotations[INTERNAL_NAME_ANNOTATION] = internal_name
        annotations[COMPONENT_ANNOTATION] = component
        if leave:  # says why oper8d does not revert them, and lets ``oper8d diff`` know
            annotations[LEAVE_ANNOTATION] = ",".join(format_field_path(p) for p in leave)
        if policy != "Delete":
            annotations[DELETION_POLICY_ANNOTATION] = policy
        for key, value in self._passthrough.items():
            annotations.setdefault(key, value)
        # An owner reference needs the owner in the same namespace (or a cluster-scoped owner);
        # a retained object has none, so the garbage collector never deletes it with the CR
        same_scope = not self.cr_namespace or meta.get("namespace") == self.cr_namespace
        if policy == "Retain":
            if meta.get("ownerReferences"):
                refs = [r for r in meta["ownerReferences"] if r.get("uid") != self.cr_uid]
                meta["ownerReferences"] = refs
        elif self.cr_uid and namespaced and same_scope:
            ref = {
                "apiVersion": self.cr["apiVersion"],
                "kind": self.cr["kind"],
                "name": self.cr["metadata"]["name"],
                "uid": self.cr_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
            refs = [r for r in meta.get("ownerReferences", []) if r.get("uid") != self.cr_uid]
            meta["ownerReferences"] = [*refs, ref]
        # a stable, conventional key order: name, namespace, labels, annotations, owners, rest
        obj["metadata"] = {k: meta[k] for k in _METADATA_ORDER if k in meta} | {
            k: v for k, v in meta.items() if k not in _METADATA_ORDER
        }
        # the hash of the object without its hash annotation: hashed as it stands unless
        # the input carried one (content_hash then leaves it out of a copy)
        ours = without(obj, leave)
        if HASH_ANNOTATION in annotations:
            annotations[HASH_ANNOTATION] = content_hash(ours)
        else:
            annotations[HASH_ANNOTATION] = sorted_hash(ours)
        return obj

    # -- writes --------------------------------------------------------------------------
    def apply(
        self, obj: Obj, method: Method = "apply", leave: Sequence[FieldPath] = ()
    ) -> tuple[Obj, bool]:
        """Apply a prepared object unless the live one already matches. Returns (live, written).

        The fields at ``leave`` belong to other controllers once the object exists: they
        count for nothing in the comparison and are never reverted (``engine.leave``)."""
        api_version, kind, name, ns = identity(obj)
        live = self.cluster.get(api_version, kind, name, ns)
        refuse_foreign(live, self.cr_uid, self._cr_ref)
        label = _label(obj)
        ours = without(obj, leave)
        if live is not None and (is_current(ours, live) or self.memory.matches(ours, live)):
            with self._lock:
                self.stats.unchanged.append(label)
            return live, False
        log.debug("applying %s (%s)", label, "created" if live is None else "changed")
        before = live
        body = obj
        if before is not None and leave:
            ssa = method == "apply"
            body = update_body(obj, before, leave, self.field_manager, server_side=ssa)
        try:
            live = self.cluster.apply(body, field_manager=self.field_manager, method=method)
        except ClusterError as err:
            if not (self.replace_on_invalid and method == "apply" and err.status in (422, 500)):
                raise
            log.warning("server-side apply of %s refused (%s): replacing it", label, err)
            if before is not None and leave:
                body = update_body(obj, before, leave, self.field_manager, server_side=False)
            live = self.cluster.apply(body, field_manager=self.field_manager, method="replace")
        self.memory.remember(ours, live)
        with self._lock:
            self.stats.applied.append(label)
        return live, True

    def require_recorded(self, objs: Iterable[Obj]) -> None:
        """Raise PreconditionError (the component waits) when the CR's inventory does not
        name the kind of one of ``objs``: pruning and finalization find owned objects by
        listing the inventory's kinds, so an object of another kind must not be created
        before the reconciler has recorded it (it does so before its next rollout)."""
        missing = {kind_key(o) for o in objs} - self.inventory
        if not missing:
            return
        with self._lock:
            self.unrecorded |= missing
        raise PreconditionError(
            f"{', '.join(sorted(missing))} not yet in the CR's inventory "
            f"(annotation {INVENTORY_ANNOTATION}): recorded before the next reconcile"
        )

    def delete(self, obj: Obj, propagation: Propagation = "Background") -> bool:
        """Delete ``obj`` (a live object); False when it was gone or is already being
        deleted (finalizers of its own hold it): asking again would only add requests."""
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return False
        api_version, kind, name, ns = identity(obj)
        gone = self.cluster.delete(api_version, kind, name, ns, propagation=propagation)
        self.memory.forget(obj)
        if gone:
            with self._lock:
                self.stats.deleted.append(_label(obj))
        return gone

    # -- ownership -----------------------------------------------------------------------
    def owned(self) -> list[Obj]:
        """Live objects carrying this CR's owner label, of every kind in the inventory."""
        with self._lock:
            kinds = set(self.inventory)
        return list_owned(self.cluster, self.cr_uid, self.cr_namespace, kinds)


#: the CR's annotations ``prepare`` copies onto what it applies
PASSTHROUGH = frozenset(PASSTHROUGH_ANNOTATIONS)


def stamped_annotation(key: str) -> bool:
    """Whether ``prepare`` may have put annotation ``key`` on an object: oper8d's own
    (``oper8d.io/...``, the internal name) and those passed through from the CR."""
    return key.startswith("oper8d.io/") or key == INTERNAL_NAME_ANNOTATION or key in PASSTHROUGH


def list_owned(
    reader: ClusterReader, uid: str, namespace: str | None, kinds: Iterable[str]
) -> list[Obj]:
    """Live objects carrying the owner label of the CR with ``uid`` (in ``namespace``), of
    each of ``kinds`` (``apiVersion/kind``, as the inventory names them), kinds in sorted
    order. A kind the server no longer serves (404) has none. The one way the reconciler's
    prune and teardown, ``oper8d diff`` and ``oper8d trace`` find what a CR owns."""
    if not uid:
        return []
    found: list[Obj] = []
    for key in sorted(kinds):
        api_version, _, kind = key.rpartition("/")
        ns = None if is_cluster_scoped(api_version, kind) else namespace
        try:
            found += reader.list(api_version, kind, ns, label_selector=f"{OWNER_LABEL}={uid}")
        except ClusterError as err:
            if err.status != 404:
                raise
    return found


def identity(obj: Obj) -> tuple[str, str, str, str | None]:
    meta = obj.get("metadata") or {}
    return obj["apiVersion"], obj["kind"], meta.get("name", ""), meta.get("namespace")


#: what identifies an object on the server: (API group, kind, namespace, name)
ObjectKey = tuple[str, str, str, str]


def object_key(obj: Obj) -> ObjectKey:
    """What identifies an object on the server: (API group, kind, namespace, name); the
    version is not part of it (``apps/v1`` and ``apps/v1beta1`` name the same object)."""
    api_version, kind, name, ns = identity(obj)
    return group_of(api_version), kind, ns or "", name


def kind_key(obj: Obj) -> str:
    """The inventory key of an object's kind: ``apps/v1/Deployment``."""
    return f"{obj['apiVersion']}/{obj['kind']}"


def internal_name_of(obj: Obj) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(INTERNAL_NAME_ANNOTATION)


def hook_component(hook: str) -> str:
    """The component annotation of a hook's objects: ``hook-<name>``."""
    return f"hook-{hook}"


def left_fields(obj: Obj) -> tuple[FieldPath, ...]:
    """The fields a prepared object leaves to other controllers (its ``LEAVE_ANNOTATION``)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(LEAVE_ANNOTATION, "")
    paths = (parse_field_path(p) for p in str(value).split(",") if p)
    return tuple(p for p in paths if p is not None)


def component_of(obj: Obj) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(COMPONENT_ANNOTATION)


def inventory_of(cr: Obj) -> list[str]:
    """The kinds (``kind_key``) the CR's inventory annotation names. Whoever may edit the
    CR may edit the annotation, and its kinds become lists and deletes: a key that is not
    ``<apiVersion>/<Kind>`` (``../api/v1/Secret``) is not one oper8d wrote, and is
    ignored rather than sent."""
    value = ((cr.get("metadata") or {}).get("annotations") or {}).get(INVENTORY_ANNOTATION, "")
    keys = (k.rpartition("/") for k in str(value).split(","))
    return sorted(
        f"{api_version}/{kind}"
        for api_version, _, kind in keys
        if kind.isascii() and kind.isalnum() and api_version_problem(api_version) is None
    )


def _copied(value: Any) -> Any:
    """A shallow copy of a map, for ``prepare`` to change; anything else as it is."""
    return dict(value) if isinstance(value, dict) else value


def _label(obj: Obj) -> str:
    _api_version, kind, name, ns = identity(obj)
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
