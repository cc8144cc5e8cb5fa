"""What the runtime manager builds before it starts: informers, the cache, controllers.

``runtime.manager.Manager`` builds its parts in ``__init__`` with this mixin: one informer
per watched kind, namespace and selector (shared by every controller that needs it; the CR
informers and, when sharding by namespace, those of owned objects hold only this
replica's slice), a names-only informer per owned kind (``runtime.cache``), the
cache-backed cluster all reads go through, a reconciler, work queue and
``ControllerRuntime`` per controller, the sharding group, and the TemporaryPatch
controller when the bundle turns temporary patches on and their CRD is installed.
Starting, leading and stopping them stay in ``runtime.manager``.

Kept apart from the manager's lifecycle so that each is short enough to read whole; the
manager's ``__init__`` sets every attribute declared below.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from oper8d.bundle.model import Bundle
from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.errors import ClusterError
from oper8d.kubeschema import KubeSchemas
from oper8d.objects import OWNER_LABEL
from oper8d.runtime.cache import CachedCluster
from oper8d.runtime.controller import ControllerRuntime, owned_kinds
from oper8d.runtime.events import EventRecorder
from oper8d.runtime.hashing import ShardKey
from oper8d.runtime.informer import Informer
from oper8d.runtime.queue import WorkQueue
from oper8d.runtime.sharding import GatedReconciler, Sharding
from oper8d.runtime.store import drop_unread
from oper8d.runtime.temporarypatch import API_VERSION as TP_API_VERSION
from oper8d.runtime.temporarypatch import KIND as TP_KIND
from oper8d.runtime.temporarypatch import TemporaryPatchSync

if TYPE_CHECKING:
    from oper8d.runtime.manager import ManagedApi
    from oper8d.runtime.metrics import Metrics
    from oper8d.runtime.options import ManagerOptions

__all__ = ["ManagerWiring"]

# (the manager's logger: its lines keep their name)
log = logging.getLogger("oper8d.manager")


class ManagerWiring:
    """The manager's building methods; ``runtime.manager.Manager`` provides what is
    declared here."""

    if TYPE_CHECKING:  # set by runtime.manager.Manager.__init__
        bundle: Bundle
        api: ManagedApi
        options: ManagerOptions
        metrics: Metrics
        field_manager: str
        informers: dict[tuple[str, str, str | None], Informer]
        controllers: list[ControllerRuntime]
        sharding: Sharding | None
        _sharded: list[Informer]

        def _identity(self) -> str: ...
        def _on_shard_change(self, sharding: Sharding) -> None: ...

    # -- the shard group -----------------------------------------------------------------
    def _sharding(self) -> Sharding:
        opts = self.options
        if opts.leader_elect:
            raise ValueError("sharding and leader election exclude each other: choose one")
        if opts.shard_key not in ("namespace", "uid"):
            raise ValueError(f"shard key must be 'namespace' or 'uid', got {opts.shard_key!r}")
        key: ShardKey = "uid" if opts.shard_key == "uid" else "namespace"
        return Sharding(
            self.api,
            group=opts.shard_group or f"{self.bundle.name}-oper8d-shards",
            namespace=opts.leader_election_namespace,
            identity=self._identity(),
            key=key,
            lease_duration=opts.lease_duration,
            renew_deadline=opts.renew_deadline,
            retry_period=opts.retry_period,
            clock=opts.clock,
            on_change=self._on_shard_change,
        )

    # -- scopes --------------------------------------------------------------------------
    def _scopes(self, namespaced: bool) -> list[str | None]:
        if not namespaced or not self.options.namespaces:
            return [None]
        return list(self.options.namespaces)

    def _informer(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        selector: str | None,
        sharded: bool = False,
        metadata_only: bool = False,
    ) -> Informer:
        key = (f"{api_version}/{kind}", selector or "", namespace)
        if key not in self.informers:
            shard = self.sharding.wanted() if sharded and self.sharding else None
            self.informers[key] = inf = Informer(
                self.api,
                api_version,
                kind,
                namespace=namespace,
                label_selector=selector,
                resync_period=self.options.resync_period,
                clock=self.options.clock,
                shard=shard,
                # leaveToOthers reads managedFields to see who owns a field (engine.leave)
                transform=None if _leaves_fields(self.bundle) else drop_unread,
                metadata_only=metadata_only,
                on_watch_event=self.metrics.watch_event,
            )
            if shard is not None:
                self._sharded.append(inf)
        return self.informers[key]

    def _build(self) -> None:
        opts = self.options
        plan = []
        # objects a CR owns share its namespace, not its uid
        owned_sharded = opts.shard_key == "namespace"
        for spec in self.bundle.controllers:
            kind = spec.resource
            cr_infs = [
                self._informer(kind.api_version, kind.kind, ns, None, sharded=True)
                for ns in self._scopes(kind.namespaced)
            ]
            owned = [
                self._informer(api_version, k, ns, OWNER_LABEL, sharded=owned_sharded)
                for api_version, k in owned_kinds(spec)
                for ns in self._scopes(True)
            ]
            # the names of the owned kinds' other objects: a name in neither informer is
            # absent, so the rollout creates it without a GET first (runtime.cache)
            for api_version, k in owned_kinds(spec):
                for ns in self._scopes(True):
                    self._informer(
                        api_version,
                        k,
                        ns,
                        f"!{OWNER_LABEL}",
                        sharded=owned_sharded,
                        metadata_only=True,
                    )
            plan.append((spec, cr_infs, owned))
        self.cache = CachedCluster(self.api, self.informers)
        schemas = opts.schemas or KubeSchemas.builtin()  # one load serves every controller
        # a queued CR outside this replica's shard reads as gone (runtime.cache)
        cr_reads = self.cache.within_shards() if self.sharding else self.cache
        for spec, cr_infs, owned in plan:
            # skips unchanged CRs (engine.fingerprint); ManagerOptions.skip_unchanged
            changes = ChangeTracker(clock=opts.clock) if opts.skip_unchanged else None
            reconciler = Reconciler(
                self.bundle,
                spec,
                self.cache,
                ReconcilerOptions(
                    field_manager=self.field_manager,
                    max_workers=opts.rollout_workers,
                    clock=opts.clock,
                    operator_version=self.bundle.operator_version,
                    replace_on_invalid=opts.replace_on_invalid,
                    changes=changes,
                    schemas=schemas,
                ),
            )
            queue = WorkQueue(clock=opts.clock, observer=self.metrics.queue_observer(spec.name))
            self.controllers.append(
                ControllerRuntime(
                    bundle=self.bundle,
                    spec=spec,
                    cluster=cr_reads,
                    reconciler=GatedReconciler(reconciler, self.sharding)
                    if self.sharding
                    else reconciler,
                    queue=queue,
                    cr_informers=cr_infs,
                    owned_informers=owned,
                    metrics=self.metrics,
                    events=EventRecorder(self.api, controller=spec.name, clock=opts.clock)
                    if opts.events
                    else None,
                    clock=opts.clock,
                    changes=changes,
                )
            )
        self._temporary_patches()

    def _temporary_patches(self) -> None:
        """The TemporaryPatch controller, when a controller of the bundle turns temporary
        patches on and their CRD is installed: for those controllers' CRs only."""
        self.tp_queue: WorkQueue | None = None
        targets = set(self.bundle.temporary_patch_targets)
        if not targets:
            return  # off: no watch of TemporaryPatches, and no RBAC for one
        try:
            self.api.resource(TP_API_VERSION, TP_KIND)
        except ClusterError as err:
            if err.status != 404:
                raise
            log.info("TemporaryPatch CRD not installed: temporary patches are off")
            return
        self.tp_sync = TemporaryPatchSync(self.api, targets=targets, clock=self.options.clock)
        self.tp_queue = WorkQueue(clock=self.options.clock)
        for ns in self._scopes(True):
            inf = self._informer(TP_API_VERSION, TP_KIND, ns, None)
            inf.add_handler(
                lambda _e, obj, _old: self.tp_queue.add(  # type: ignore[union-attr]
                    (obj["metadata"].get("namespace"), obj["metadata"]["name"])
                )
            )


def _leaves_fields(bundle: Bundle) -> bool:
    """Whether a resource of ``bundle`` leaves fields to other controllers: then cached
    objects keep their managedFields, which say who owns such a field."""
    resources = [
        r
        for c in bundle.controllers
        for group in (*(comp.resources for comp in c.components), *(h.resources for h in c.hooks))
        for r in group
    ]
    return any(r.leave_to_others for r in resources)
