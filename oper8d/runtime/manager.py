"""The manager: runs every controller of a bundle against a real cluster.

It owns the shared parts (like controller-runtime's manager): one informer per watched
kind and namespace, a cache-backed cluster for reads, a work queue and workers per
controller, the TemporaryPatch controller, leader election (only the leader runs
workers), the health/ready/metrics endpoints and a graceful stop (stop taking work,
let in-flight reconciles finish within a grace period, release the lease). With
``options.sharding`` it runs next to other replicas instead of electing one leader:
``runtime.sharding`` decides which CRs this replica works on, the CR informers (and, when
sharding by namespace, those of owned objects) hold only that slice, and every reconcile
passes the shard's gate.

Used by ``oper8d run``, the integration tests, and the unit tests over an in-memory API
server: it needs no more of the cluster than ``ManagedApi`` declares.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Protocol

from oper8d.bundle.model import Bundle
from oper8d.cluster.base import Propagation
from oper8d.engine.fingerprint import ChangeTracker
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.errors import ClusterError
from oper8d.kubeschema import KubeSchemas
from oper8d.objects import OWNER_LABEL
from oper8d.runtime.cache import ApiServer, CachedCluster
from oper8d.runtime.controller import ControllerRuntime, owned_kinds
from oper8d.runtime.events import EventRecorder
from oper8d.runtime.hashing import ShardKey
from oper8d.runtime.informer import Informer, ListWatch
from oper8d.runtime.leaderelection import LeaderElector
from oper8d.runtime.metrics import Metrics
from oper8d.runtime.options import ManagerOptions
from oper8d.runtime.probes import ProbeServer
from oper8d.runtime.queue import WorkQueue
from oper8d.runtime.sharding import GatedReconciler, Sharding
from oper8d.runtime.store import drop_unread
from oper8d.runtime.temporarypatch import API_VERSION as TP_API_VERSION
from oper8d.runtime.temporarypatch import KIND as TP_KIND
from oper8d.runtime.temporarypatch import TemporaryPatchSync

log = logging.getLogger("oper8d.manager")

#: Python's recursion limit an operator process needs (``oper8d run`` sets it once its bundle
#: is loaded): a CR may nest as deep as the API server takes (Go's encoding/json refuses more
#: than 10,000 levels), and parsing, caching and copying it recurse that deep before the
#: reconcile refuses it (``engine.inputs``); a RecursionError there would stop the informer
#: for every CR of the kind. Three times that depth: the recursions nest.
RECURSION_LIMIT = 30_000


class ManagedApi(ListWatch, ApiServer, Protocol):
    """The API server as the manager uses it (``KubeCluster``): lists and watches for the
    informers, CRUD and discovery for the cache, the TemporaryPatch controller, Events and
    the Lease. The manager counts requests through ``on_request`` when it is unset."""

    #: ``on_request(verb, http_code)`` after every request (code None: unreachable)
    on_request: Callable[[str, int | None], None] | None
    #: "apiVersion/kind" -> whether the server applied a ``shardSelector`` to its lists
    shard_selector_honoured: dict[str, bool]

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
        resource_version: str | None = None,
    ) -> bool:
        """``resource_version``: a precondition (sharding deletes expired peers' Leases)."""
        ...


class Manager:
    """See the module docstring. ``start()`` returns at once; ``stop()`` is graceful."""

    def __init__(self, bundle: Bundle, cluster: ManagedApi, options: ManagerOptions | None = None):
        self.bundle = bundle
        self.api = cluster
        self.options = opts = options or ManagerOptions()
        self.metrics = Metrics(controllers=[c.name for c in bundle.controllers])
        if cluster.on_request is None:
            cluster.on_request = lambda verb, code: self.metrics.api_request(
                verb, "none" if code is None else str(code)
            )
        self.field_manager = opts.field_manager or bundle.name
        self.informers: dict[tuple[str, str, str | None], Informer] = {}
        self.controllers: list[ControllerRuntime] = []
        self._stop = threading.Event()
        # the elector stops only after in-flight reconciles ended (see stop())
        self._stop_election = threading.Event()
        self._leading = threading.Event()
        self._threads: list[threading.Thread] = []
        self._servers: list[ProbeServer] = []
        self.elector: LeaderElector | None = None
        self.sharding: Sharding | None = self._sharding() if opts.sharding else None
        if self.sharding is not None:
            self.metrics.shard_server_side.set_function(self._server_side)
            self.metrics.shard_crs.set_function(self._shard_crs)
        self._sharded: list[Informer] = []
        self._build()

    # -- wiring ---------------------------------------------------------------------------
    def _identity(self) -> str:
        return self.options.identity or f"{socket.gethostname()}_{os.getpid()}"

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

    def _server_side(self) -> float:
        """1 when the API server honoured shardSelector for every CR kind listed so far."""
        seen = self.api.shard_selector_honoured
        cr_kinds = [f"{c.resource.api_version}/{c.resource.kind}" for c in self.bundle.controllers]
        known = [seen[k] for k in cr_kinds if k in seen]
        return 1.0 if known and all(known) else 0.0

    def _shard_crs(self) -> float:
        """CRs this replica works on now (read when the metrics are scraped)."""
        sharding = self.sharding
        if sharding is None:
            return 0.0
        crs = [cr for c in self.controllers for inf in c.cr_informers for cr in inf.list()]
        return float(sum(1 for cr in crs if sharding.accepts(cr)))

    def _on_shard_change(self, sharding: Sharding) -> None:
        wanted = sharding.wanted()
        for inf in self._sharded:
            inf.set_shard(wanted)
        self.metrics.set_shard(sharding.members, len(sharding.held), None)
        if self._leading.is_set():
            for c in self.controllers:
                c.enqueue_all()  # CRs of buckets just taken; the gate skips the others

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

    # -- probes --------------------------------------------------------------------------
    def healthy(self) -> bool:
        return not self._stop.is_set() or self._leading.is_set()

    def ready(self) -> tuple[bool, str]:
        waiting = [f"{i.kind}" for i in self.informers.values() if not i.has_synced()]
        if waiting:
            return False, "caches not synced: " + ", ".join(sorted(set(waiting)))
        return True, "ok"

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        opts = self.options
        for addr, with_metrics in (
            (opts.health_probe_bind_address, False),
            (opts.metrics_bind_address, True),
        ):
            if addr:
                server = ProbeServer(
                    addr,
                    healthy=self.healthy,
                    ready=self.ready,
                    metrics=self.metrics if with_metrics else None,
                )
                server.start()
                self._servers.append(server)
        if self.sharding is not None:
            self.sharding.tick()  # join the group, so informers start with our slice
            self._on_shard_change(self.sharding)
        for inf in self.informers.values():
            inf.start()
        if self.sharding is not None:
            t = threading.Thread(
                target=self.sharding.run,
                args=(self._stop_election,),
                name="oper8d-sharding",
                daemon=True,
            )
            t.start()
            self._threads.append(t)
            self._start_leading()
        elif opts.leader_elect:
            identity = self._identity()
            self.elector = LeaderElector(
                self.api,
                name=opts.leader_election_id or f"{self.bundle.name}-oper8d",
                namespace=opts.leader_election_namespace,
                identity=identity,
                lease_duration=opts.lease_duration,
                renew_deadline=opts.renew_deadline,
                retry_period=opts.retry_period,
                clock=opts.clock,
            )
            t = threading.Thread(
                target=self.elector.run,
                args=(self._stop_election, self._start_leading, self._stop_leading),
                name="oper8d-leader-election",
                daemon=True,
            )
            t.start()
            self._threads.append(t)
        else:
            self._start_leading()

    def _start_leading(self) -> None:
        log.info("started leading: running controllers" if self.elector else "running controllers")
        self._leading.set()
        self.metrics.set_leader(True)
        # the elector's thread must go on renewing: wait for caches elsewhere
        t = threading.Thread(target=self._run_controllers, name="oper8d-start", daemon=True)
        t.start()
        self._threads.append(t)

    def _run_controllers(self) -> None:
        for inf in self.informers.values():
            while not inf.wait_for_sync(1.0):
                if self._stop.is_set():
                    return
        if self._stop.is_set():
            return
        for c in self.controllers:
            c.start_workers(self.options.max_concurrent_reconciles)
            c.enqueue_all()
        if self.tp_queue is not None:
            t = threading.Thread(target=self._tp_work, name="oper8d-temporarypatch", daemon=True)
            t.start()
            self._threads.append(t)

    def _stop_leading(self) -> None:
        if not self._leading.is_set():
            return
        if self._stop_election.is_set():
            log.info("stopped leading")
        else:
            log.warning("lost leadership: stopping")
        self._leading.clear()
        self.metrics.set_leader(False)
        # like controller-runtime, a replica that lost its lease stops; the process
        # supervisor restarts it as a follower
        self._stop.set()
        for c in self.controllers:
            c.queue.shutdown()

    def _tp_work(self) -> None:
        assert self.tp_queue is not None
        while True:
            key = self.tp_queue.get()
            if key is None:
                return
            try:
                self.tp_sync.sync(*key)  # type: ignore[misc]
                self.tp_queue.forget(key)
            except ClusterError as err:
                log.warning("TemporaryPatch %s/%s: %s", key[0], key[1], err)  # type: ignore[index]
                self.tp_queue.add_rate_limited(key)
            finally:
                self.tp_queue.done(key)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until stop() (or a lost lease); True when stopped."""
        return self._stop.wait(timeout)

    def stop(self) -> None:
        """Stop taking work, let in-flight reconciles finish, release the lease."""
        self._stop.set()
        grace = self.options.graceful_shutdown_timeout
        for c in self.controllers:
            c.queue.shutdown()
        if self.tp_queue is not None:
            self.tp_queue.shutdown()
        for c in self.controllers:
            if not c.wait_idle(grace):
                log.warning("in-flight reconciles did not finish within %.0fs", grace)
            c.join_workers(1.0)
        # only now give up the Lease: a standby must not start while we still write
        self._stop_election.set()
        for t in self._threads:
            t.join(grace)
        if self.sharding is not None:
            self.sharding.release()
        self._leading.clear()
        for inf in self.informers.values():
            inf.stop()
        for server in self._servers:
            server.stop()

    @property
    def probe_ports(self) -> list[int]:
        return [s.port for s in self._servers]


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
