"""The operator's Prometheus metrics, kept in a registry per ``Metrics`` instance.

The manager creates one ``Metrics`` and passes it around: workers count reconciles and time
them, each work queue reports through a ``QueueMetrics`` observer (``queue_observer(name)``),
the API client counts requests, the leader elector sets ``oper8d_leader``, and the probe
server (``runtime/probes.py``) serves ``exposition()`` on ``/metrics``. Never the global
prometheus_client registry, so two managers (or two tests) in one process do not collide.

Exposed families:

- ``oper8d_reconcile_total{controller,result}``, result one of success, error, requeue, paused
- ``oper8d_reconcile_duration_seconds{controller}`` (histogram)
- ``oper8d_workqueue_depth{name}``, ``oper8d_workqueue_adds_total{name}``,
  ``oper8d_workqueue_queue_duration_seconds{name}`` (histogram: time from add to a worker)
- ``oper8d_api_requests_total{verb,code}``
- ``oper8d_watch_events_total{kind,type}``: events the informers' watches received, before
  any filtering on our side (type ADDED, MODIFIED, DELETED, BOOKMARK, ...): what the API
  server sent this replica
- ``oper8d_leader`` (1 while this process leads)
- with sharding: ``oper8d_shard_members`` (live replicas seen), ``oper8d_shard_buckets``
  (hash buckets this replica works on), ``oper8d_shard_member{identity}`` (1 per live
  replica), ``oper8d_shard_server_side`` (1 when the API server honours shardSelector),
  ``oper8d_shard_crs`` (CRs in the buckets this replica works on)
- ``process_*``, ``python_*`` (the process and interpreter, unless ``runtime_collectors=False``)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

__all__ = ["EXPOSITION_CONTENT_TYPE", "RECONCILE_RESULTS", "Metrics", "QueueMetrics"]

#: the Content-Type of ``Metrics.exposition()``: the classic text format 0.0.4, which every
#: scraper understands. Newer prometheus_client versions announce 1.0.0 (UTF-8 metric names);
#: our names are all classic-valid, so the body is the same either way.
EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: the values of the ``result`` label of ``oper8d_reconcile_total``
RECONCILE_RESULTS = ("success", "error", "requeue", "paused")

# Reconciles range from a no-op (milliseconds) to a rollout that applies many objects.
_RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# Queue waits range from an idle queue (microseconds) to a long backlog.
_QUEUE_BUCKETS = (0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300)


class QueueMetrics:
    """A ``runtime.queue.QueueObserver`` that records one named queue's metrics."""

    def __init__(self, metrics: Metrics, name: str):
        self._adds = metrics.workqueue_adds.labels(name=name)
        self._depth = metrics.workqueue_depth.labels(name=name)
        self._waits = metrics.workqueue_queue_duration.labels(name=name)

    def added(self, key: Hashable) -> None:
        self._adds.inc()

    def started(self, key: Hashable, waited_seconds: float) -> None:
        self._waits.observe(waited_seconds)

    def depth(self, n: int) -> None:
        self._depth.set(n)


class Metrics:
    """The metrics of one manager (every controller it runs, every queue)."""

    def __init__(self, *, controllers: Iterable[str] = (), runtime_collectors: bool = True):
        self.registry = CollectorRegistry()
        if runtime_collectors:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)
        self.reconciles = Counter(
            "oper8d_reconcile_total",
            "Reconciles finished, by controller and result (success, error, requeue, paused).",
            ["controller", "result"],
            registry=self.registry,
        )
        self.reconcile_seconds = Histogram(
            "oper8d_reconcile_duration_seconds",
            "How long reconciles took, by controller.",
            ["controller"],
            buckets=_RECONCILE_BUCKETS,
            registry=self.registry,
        )
        self.workqueue_depth = Gauge(
            "oper8d_workqueue_depth",
            "Keys ready in the work queue, by queue name.",
            ["name"],
            registry=self.registry,
        )
        self.workqueue_queue_duration = Histogram(
            "oper8d_workqueue_queue_duration_seconds",
            "How long keys waited in the work queue before a worker took them, by queue name.",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=self.registry,
        )
        self.workqueue_adds = Counter(
            "oper8d_workqueue_adds_total",
            "Keys added to the work queue (deduplicated adds not counted), by queue name.",
            ["name"],
            registry=self.registry,
        )
        self.api_requests = Counter(
            "oper8d_api_requests_total",
            "Requests to the Kubernetes API server, by verb and HTTP status code.",
            ["verb", "code"],
            registry=self.registry,
        )
        self.watch_events = Counter(
            "oper8d_watch_events_total",
            "Watch events the informers received from the API server, by kind and event type "
            "(counted before any filtering on our side).",
            ["kind", "type"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "oper8d_leader",
            "1 while this process holds the leader lease, else 0.",
            registry=self.registry,
        )
        self.shard_members = Gauge(
            "oper8d_shard_members",
            "Live replicas of this replica's shard group (sharding only).",
            registry=self.registry,
        )
        self.shard_buckets = Gauge(
            "oper8d_shard_buckets",
            "Hash buckets of CRs this replica works on now (sharding only).",
            registry=self.registry,
        )
        self.shard_member = Gauge(
            "oper8d_shard_member",
            "1 for every live replica of the shard group, by identity (sharding only).",
            ["identity"],
            registry=self.registry,
        )
        self.shard_server_side = Gauge(
            "oper8d_shard_server_side",
            "1 when the API server filters the CR lists and watches by shard, 0 when we do.",
            registry=self.registry,
        )
        self.shard_crs = Gauge(
            "oper8d_shard_crs",
            "CRs in the hash buckets this replica works on now (sharding only).",
            registry=self.registry,
        )
        self._controllers: set[str] = set()
        self._shard_members: set[str] = set()
        for controller in controllers:
            self.add_controller(controller)

    def add_controller(self, controller: str) -> None:
        """Show every result of ``controller`` at 0 until counted, so ``rate()`` and
        ``absent()`` work from the start (done on a controller's first reconcile anyway)."""
        if controller not in self._controllers:
            self._controllers.add(controller)
            for result in RECONCILE_RESULTS:
                self.reconciles.labels(controller=controller, result=result)

    def reconcile_total(self, controller: str, result: str) -> None:
        """Count one finished reconcile of ``controller`` with ``result`` (one of
        ``RECONCILE_RESULTS``)."""
        if result not in RECONCILE_RESULTS:
            raise ValueError(
                f"unknown reconcile result {result!r} for controller {controller!r}; "
                f"use one of {', '.join(RECONCILE_RESULTS)}"
            )
        self.add_controller(controller)
        self.reconciles.labels(controller=controller, result=result).inc()

    def reconcile_duration(self, controller: str, seconds: float) -> None:
        """Record how long one reconcile of ``controller`` took."""
        self.reconcile_seconds.labels(controller=controller).observe(seconds)

    def queue_observer(self, name: str) -> QueueMetrics:
        """The observer to pass to ``WorkQueue(observer=...)`` for the queue called ``name``."""
        return QueueMetrics(self, name)

    def api_request(self, verb: str, code: str | int) -> None:
        """Count one API request (``verb`` like get/list/watch/patch, ``code`` like 200)."""
        self.api_requests.labels(verb=verb, code=str(code)).inc()

    def watch_event(self, kind: str, event_type: str) -> None:
        """Count one watch event of ``kind`` received (``event_type`` like ADDED)."""
        self.watch_events.labels(kind=kind, type=event_type).inc()

    def set_leader(self, leading: bool) -> None:
        """Record whether this process is the leader now."""
        self.leader.set(1 if leading else 0)

    def set_shard(self, members: Iterable[str], buckets: int, server_side: bool | None) -> None:
        """Record the shard group's live members and how many buckets this replica holds."""
        names = set(members)
        self.shard_members.set(len(names))
        self.shard_buckets.set(buckets)
        for gone in self._shard_members - names:
            self.shard_member.remove(gone)
        self._shard_members = names
        for name in names:
            self.shard_member.labels(identity=name).set(1)
        if server_side is not None:
            self.shard_server_side.set(1 if server_side else 0)

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format (``EXPOSITION_CONTENT_TYPE``)."""
        return generate_latest(self.registry)
