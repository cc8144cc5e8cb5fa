"""Readiness simulation for the in-memory cluster: workloads become ready offline.

Used by dry runs (``oper8d render`` / offline rollout simulation) and bundle tests,
through ``MemoryCluster(simulator=...)``. Nothing runs controllers in an in-memory
cluster, so without a simulator a Deployment never reports a status and a rollout never
verifies. A ``Simulator`` plays the controllers' part: the cluster tells it about every
spec/metadata change (``on_write``) and every simulation step (``on_tick``, driven by
``MemoryCluster.tick()``), and writes back whatever status it returns through the same
path as ``update_status`` (new resourceVersion, a watch event; spec is never touched).

``DefaultSimulator`` reports what the real controllers would (see
``cluster.memory.workload_status``): Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs,
Pods, PersistentVolumeClaims, LoadBalancer Services, Ingresses and
CustomResourceDefinitions, with statuses that kstatus judges Current. Two knobs:

* ``delay_writes=N``: an object written (created, or its generation moved) first reports
  a rolling-out status and settles after N calls of ``MemoryCluster.tick()``, so a dry run
  can show progress and tests can check that a rollout waits. 0 (default): ready as soon
  as written.
* ``overrides={(kind, name): status}``: the status that object settles with instead,
  e.g. ``{("Job", "migrate"): {"conditions": [{"type": "Failed", "status": "True"}]}}``
  for "the migration Job failed". Also works for kinds without a builder (custom
  resources of other operators).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from oper8d.clock import rfc3339
from oper8d.cluster.base import ClusterReader
from oper8d.cluster.fields import MISSING, clone
from oper8d.cluster.memory.workload_status import Builder, StatusContext, builder_for
from oper8d.objects import Obj

__all__ = ["ClusterView", "DefaultSimulator", "Simulator"]


class ClusterView(ClusterReader, Protocol):
    """What a simulator may read (reads through it are not counted as client requests)."""

    def now(self) -> datetime:
        """The cluster's clock."""
        ...


class Simulator(Protocol):
    """Plays the controllers: returns the status an object should get, or None to leave it.
    Called with the store lock held: read through ``cluster``, never write."""

    def on_write(self, cluster: ClusterView, obj: Obj) -> Obj | None:
        """``obj`` was created or its spec/metadata changed."""
        ...

    def on_tick(self, cluster: ClusterView, obj: Obj) -> Obj | None:
        """One simulation step passed (called once per object per ``tick()``)."""
        ...


class DefaultSimulator:
    """Makes built-in workloads ready the way their controllers report it."""

    def __init__(
        self,
        *,
        delay_writes: int = 0,
        overrides: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    ):
        if delay_writes < 0:
            raise ValueError(f"delay_writes must be >= 0 ticks, got {delay_writes}")
        self.delay_writes = delay_writes
        self._overrides = {key: clone(status) for key, status in (overrides or {}).items()}
        self._lock = threading.Lock()
        self._ticks_left: dict[str, int] = {}  # uid -> ticks until settled
        self._generation_seen: dict[str, Any] = {}  # uid -> generation last written
        self._pod_ips = itertools.count(1)
        self._load_balancer_ips = itertools.count(1)
        self._last_stamp: tuple[datetime, str] | None = None  # (clock reading, as text)

    def on_write(self, cluster: ClusterView, obj: Obj) -> Obj | None:
        builder, override = builder_for(obj), self._override(obj)
        if builder is None and override is None:
            return None
        meta = obj.get("metadata") or {}
        uid, generation = str(meta.get("uid", "")), meta.get("generation")
        with self._lock:
            # a new object or a new generation rolls out again; a label change does not
            if self._generation_seen.get(uid, MISSING) != generation:
                self._generation_seen[uid] = generation
                if self.delay_writes:
                    self._ticks_left[uid] = self.delay_writes
            settled = uid not in self._ticks_left
        return self._status(cluster, obj, builder, override, settled)

    def on_tick(self, cluster: ClusterView, obj: Obj) -> Obj | None:
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        with self._lock:
            if uid not in self._ticks_left:
                return None
            self._ticks_left[uid] -= 1
            if self._ticks_left[uid] > 0:
                return None
            del self._ticks_left[uid]
        return self._status(cluster, obj, builder_for(obj), self._override(obj), True)

    def _timestamp(self, now: datetime) -> str:
        """``now`` in RFC 3339, remembered while the clock stands still (it moves
        between an offline run's passes, not between the writes of one)."""
        with self._lock:
            if self._last_stamp is None or self._last_stamp[0] != now:
                self._last_stamp = (now, rfc3339(now))
            return self._last_stamp[1]

    def _override(self, obj: Obj) -> Mapping[str, Any] | None:
        return self._overrides.get(
            (str(obj.get("kind")), str((obj.get("metadata") or {}).get("name")))
        )

    def _status(
        self,
        cluster: ClusterView,
        obj: Obj,
        builder: Builder | None,
        override: Mapping[str, Any] | None,
        settled: bool,
    ) -> Obj | None:
        if settled and override is not None:
            status: Obj = clone(override)
            return status
        if builder is None:
            return None
        context = StatusContext(
            now=self._timestamp(cluster.now()),
            cluster=cluster,
            next_pod_ip=lambda: f"10.244.0.{next(self._pod_ips)}",
            next_load_balancer_ip=lambda: f"127.0.0.{next(self._load_balancer_ips)}",
        )
        return builder(obj, context, settled)
