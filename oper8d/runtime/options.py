"""``ManagerOptions``: the settings of a ``Manager``, in a module of their own.

``oper8d run`` takes its flag defaults from here, so the command and the library cannot
disagree; the module imports nothing but the clock, so reading the defaults loads neither
the manager nor the kubernetes client (``run --dry-run`` does not need them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oper8d.clock import Clock, SystemClock

if TYPE_CHECKING:
    from oper8d.kubeschema import KubeSchemas

__all__ = ["ManagerOptions"]


@dataclass
class ManagerOptions:
    """Settings of a Manager. The defaults suit one replica watching all namespaces."""

    #: namespaces to watch; empty: all namespaces
    namespaces: tuple[str, ...] = ()
    max_concurrent_reconciles: int = 4
    #: components deployed concurrently within one reconcile
    rollout_workers: int = 4
    leader_elect: bool = False
    leader_election_namespace: str = "default"
    #: the Lease's name; default "<bundle name>-oper8d"
    leader_election_id: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: "host:port" for /metrics ("" or None: off); ":0" picks a free port
    metrics_bind_address: str | None = ":8080"
    #: "host:port" for /healthz and /readyz ("" or None: off)
    health_probe_bind_address: str | None = ":8081"
    #: how often every cached object is handed to the handlers again (None: never)
    resync_period: float | None = 600.0
    #: how long in-flight reconciles may take to finish on stop
    graceful_shutdown_timeout: float = 30.0
    #: field manager of server-side apply; default: the bundle's name
    field_manager: str | None = None
    #: leader-election identity; default: "<hostname>_<pid>"
    identity: str | None = None
    events: bool = True
    #: PUT an object whose server-side apply is refused as invalid (see engine.deploy)
    replace_on_invalid: bool = False
    #: skip reconciles of CRs whose inputs did not change since their last stable
    #: reconcile (engine.fingerprint); drift, dependency, config and bundle changes are
    #: still acted on (their watch events, or the hourly recheck, forget the record)
    skip_unchanged: bool = True
    #: share the CRs with other replicas of the same shard group (runtime/sharding.py);
    #: uses the leader-election namespace and timings, and excludes leader election
    sharding: bool = False
    #: what CRs are sharded by: "namespace" (a CR and what it owns land together) or "uid"
    shard_key: str = "namespace"
    #: the shard group (the prefix of its Leases); default "<bundle name>-oper8d-shards"
    shard_group: str | None = None
    #: what rendered objects are checked against before apply, loaded once for every
    #: controller; default: the built-in kinds (``oper8d run`` adds the bundle's own CRDs
    #: and ``--crds``)
    schemas: KubeSchemas | None = None
    clock: Clock = field(default_factory=SystemClock)
