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

What it builds, and how, is ``runtime.manager_wiring`` (a mixin of ``Manager``); this
module runs it: probes, leader election or the shard group, workers, the graceful stop.

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
from oper8d.errors import ClusterError
from oper8d.runtime.cache import ApiServer
from oper8d.runtime.controller import ControllerRuntime
from oper8d.runtime.informer import Informer, ListWatch
from oper8d.runtime.leaderelection import LeaderElector
from oper8d.runtime.manager_wiring import ManagerWiring
from oper8d.runtime.metrics import Metrics
from oper8d.runtime.options import ManagerOptions
from oper8d.runtime.probes import ProbeServer
from oper8d.runtime.sharding import Sharding

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


class Manager(ManagerWiring):
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

    # -- identity, sharding callbacks ----------------------------------------------------
    def _identity(self) -> str:
        return self.options.identity or f"{socket.gethostname()}_{os.getpid()}"

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
        # the CR informers (no label selector): counted in place, no copy of each CR
        kinds = {f"{c.resource.api_version}/{c.resource.kind}" for c in self.bundle.controllers}
        informers = [inf for key, inf in self.informers.items() if key[0] in kinds and not key[1]]
        return float(sum(inf.count(sharding.accepts) for inf in informers))

    def _on_shard_change(self, sharding: Sharding) -> None:
        wanted = sharding.wanted()
        for inf in self._sharded:
            inf.set_shard(wanted)
        self.metrics.set_shard(sharding.members, len(sharding.held), None)
        if self._leading.is_set():
            for c in self.controllers:
                c.enqueue_all()  # CRs of buckets just taken; the gate skips the others

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
