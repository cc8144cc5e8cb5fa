"""The Leases of a shard group, as ``runtime.sharding`` writes and reads them.

Every replica of a group keeps one Lease (``<group>-<identity>`` in one namespace, labelled
with the group). Its spec is a leader-election record (holder, duration, renew time); two
annotations carry the sharding state: the buckets the holder claims (``0-20,33``) and,
when it left without being able to delete its Lease, a stopped mark. ``OwnLease`` writes
and deletes this replica's; ``read_group`` lists the group's as ``PeerLease`` records and
``delete_peer`` removes a stopped or expired one, only at the version that was read (a
resourceVersion precondition: a Lease renewed in the meantime stays).

The verbs used here (get, create, update, list, delete on Leases of one namespace) are the
whole of what sharding needs from RBAC (``manifests.rbac.shard_lease_grants``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from oper8d.clock import Clock
from oper8d.errors import ClusterError
from oper8d.objects import Obj
from oper8d.runtime.hashing import format_buckets, parse_buckets
from oper8d.runtime.leaderelection import LEASE_API_VERSION, LEASE_KIND, LeaseClient

__all__ = [
    "GROUP_LABEL",
    "OwnLease",
    "PeerLease",
    "ShardLeases",
    "delete_peer",
    "lease_name",
    "read_group",
]

log = logging.getLogger("oper8d.sharding")

GROUP_LABEL = "oper8d.io/shard-group"
CLAIMS_ANNOTATION = "oper8d.io/shard-claims"
STOPPED_ANNOTATION = "oper8d.io/shard-stopped"


class ShardLeases(LeaseClient, Protocol):
    """The Lease client of the leader elector, plus a list by label and a delete with a
    resourceVersion precondition (``KubeCluster``)."""

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]: ...

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
    ) -> bool:
        """False when it was gone; a 409 ClusterError when it is no longer at
        ``resource_version``."""
        ...


def lease_name(group: str, identity: str) -> str:
    """A valid Lease name for ``identity`` in ``group``."""
    tail = re.sub(r"[^a-z0-9.-]+", "-", identity.lower()).strip("-.") or "replica"
    return f"{group}-{tail}"[:253]


def _micro_time(clock: Clock) -> str:
    now: datetime = clock.now()
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class PeerLease:
    """One Lease of the group as listed."""

    name: str
    identity: str
    claims: frozenset[int]
    #: changes whenever the holder writes it (its resourceVersion)
    record: str
    resource_version: str | None
    stopped: bool


def read_group(api: ShardLeases, namespace: str, group: str) -> list[PeerLease]:
    """Every Lease of ``group`` (raises ClusterError when they cannot be listed)."""
    out = []
    for lease in api.list(LEASE_API_VERSION, LEASE_KIND, namespace, f"{GROUP_LABEL}={group}"):
        meta, spec = lease.get("metadata") or {}, lease.get("spec") or {}
        annotations = meta.get("annotations") or {}
        version = meta.get("resourceVersion")
        out.append(
            PeerLease(
                name=str(meta.get("name", "")),
                identity=str(spec.get("holderIdentity") or ""),
                claims=parse_buckets(annotations.get(CLAIMS_ANNOTATION)),
                record=str(version or spec.get("renewTime")),
                resource_version=str(version) if version else None,
                stopped=bool(annotations.get(STOPPED_ANNOTATION)),
            )
        )
    return out


def delete_peer(api: ShardLeases, namespace: str, lease: PeerLease, by: str) -> bool:
    """Delete ``lease`` as it was read; False when it changed since, was gone, or the
    request failed (the next round tries again)."""
    if lease.resource_version is None:
        return False  # no precondition possible: leave it (it is ignored anyway)
    try:
        deleted = api.delete(
            LEASE_API_VERSION,
            LEASE_KIND,
            lease.name,
            namespace,
            resource_version=lease.resource_version,
        )
    except ClusterError as err:  # 409: renewed or deleted since
        log.debug("shard %s: Lease %s/%s not deleted: %s", by, namespace, lease.name, err)
        return False
    if deleted:
        log.info(
            "shard %s: deleted the Lease %s/%s of %s replica %s",
            by,
            namespace,
            lease.name,
            "stopped" if lease.stopped else "expired",
            lease.identity,
        )
    return deleted


class OwnLease:
    """This replica's Lease: created on the first write, renewed by the next ones."""

    def __init__(
        self,
        api: ShardLeases,
        *,
        group: str,
        namespace: str,
        identity: str,
        lease_duration: float,
        clock: Clock,
    ):
        self.api = api
        self.group = group
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.clock = clock
        self.name = lease_name(group, identity)
        self._lease: Obj | None = None  # as last written or read

    def _body(self, claims: frozenset[int], stopped: bool) -> Obj:
        annotations = {CLAIMS_ANNOTATION: format_buckets(claims)}
        if stopped:
            annotations[STOPPED_ANNOTATION] = "true"
        base = self._lease or {
            "apiVersion": LEASE_API_VERSION,
            "kind": LEASE_KIND,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"acquireTime": _micro_time(self.clock)},
        }
        meta = dict(base["metadata"])
        meta["labels"] = {**(meta.get("labels") or {}), GROUP_LABEL: self.group}
        meta["annotations"] = {
            k: v for k, v in (meta.get("annotations") or {}).items() if k != STOPPED_ANNOTATION
        } | annotations
        spec = dict(base.get("spec") or {})
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=int(self.lease_duration),
            renewTime=_micro_time(self.clock),
        )
        return {**base, "metadata": meta, "spec": spec}

    def write(self, claims: frozenset[int], stopped: bool = False) -> bool:
        """Renew (or create) the Lease with these claims; False when it failed."""
        try:
            if self._lease is None:
                self._lease = self.api.get(LEASE_API_VERSION, LEASE_KIND, self.name, self.namespace)
            body = self._body(claims, stopped)
            if self._lease is None:
                self._lease = self.api.create(body)
            else:
                self._lease = self.api.update(body)
            return True
        except ClusterError as err:
            self._lease = None  # read it again next time (a 409 means it changed)
            log.warning(
                "shard %s: cannot write Lease %s/%s: %s",
                self.identity,
                self.namespace,
                self.name,
                err,
            )
            return False

    def delete(self) -> bool:
        """Delete the Lease (as we last wrote it); True when it is gone."""
        try:
            lease = self._lease or self.api.get(
                LEASE_API_VERSION, LEASE_KIND, self.name, self.namespace
            )
            if lease is not None:
                self.api.delete(
                    LEASE_API_VERSION,
                    LEASE_KIND,
                    self.name,
                    self.namespace,
                    resource_version=(lease.get("metadata") or {}).get("resourceVersion"),
                )
        except ClusterError as err:
            log.warning(
                "shard %s: cannot delete Lease %s/%s: %s",
                self.identity,
                self.namespace,
                self.name,
                err,
            )
            return False
        finally:
            self._lease = None
        return True
