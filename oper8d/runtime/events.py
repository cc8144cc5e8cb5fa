"""Kubernetes Events on a CR for rollout milestones and errors (``kubectl describe`` shows them).

Used by the manager after each reconcile: an event is recorded only when the CR's Ready or
Updating condition changed (reason or status), so steady reconciles record nothing. Until
a CR's first rollout is done only failures (Warnings) are recorded, and after one every
change, so its recovery shows too: its steps
(Initializing, InProgress, then Ready) are in its status and in ``kubectl get``'s Ready
column, and an Event per step would cost a request per step and per CR. After it, every
change is recorded: the CR stops being Ready or is Ready again, an update starts or ends.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from oper8d.clock import Clock, SystemClock, rfc3339
from oper8d.engine.status import reconciled_once
from oper8d.errors import ClusterError
from oper8d.logs import redact
from oper8d.objects import Obj

log = logging.getLogger("oper8d.events")

MAX_MESSAGE = 1024

#: condition reasons recorded as Warnings
FAILURES = frozenset({"ConfigError", "Errored", "ClusterError"})
#: CRs remembered as having failed their first rollout (``EventRecorder._failed``)
MAX_FAILED_FIRST = 10_000


class EventSink(Protocol):
    """Creates objects (``KubeCluster``, ``MemoryCluster``): one POST per Event."""

    def create(self, obj: Obj, *, field_manager: str) -> Obj: ...


class EventRecorder:
    """Writes ``events.k8s.io/v1`` Events about CRs."""

    def __init__(self, cluster: EventSink, *, controller: str, clock: Clock | None = None):
        self.cluster = cluster
        self.controller = controller
        self.clock = clock or SystemClock()
        self.instance = socket.gethostname()
        #: CRs whose first rollout failed: every change of theirs is recorded from then on,
        #: so the recovery follows the Warnings in ``kubectl describe``
        self._failed: set[str] = set()

    def _failed_first_rollout(self, uid: str) -> None:
        if len(self._failed) >= MAX_FAILED_FIRST:
            self._failed.clear()  # a bound; at worst a recovery goes unrecorded
        self._failed.add(uid)

    def record(self, cr: Obj, *, type_: str, reason: str, note: str, action: str) -> None:
        meta = cr["metadata"]
        now = self.clock.now()
        # time plus a random suffix: two events recorded in the same microsecond (Ready
        # and Updating changing together) must not replace each other
        name = f"{meta['name']}.{int(now.timestamp() * 1e6):x}.{uuid.uuid4().hex[:6]}"
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name[:253], "namespace": meta.get("namespace") or "default"},
            "eventTime": rfc3339(now).replace("Z", ".000000Z"),
            "reportingController": f"oper8d.io/{self.controller}",
            "reportingInstance": self.instance[:128],
            "action": action,
            "reason": reason,
            "type": type_,
            # redacted before it is cut, so no part of a Secret value survives the cut
            "note": redact(note)[:MAX_MESSAGE],
            "regarding": {
                "apiVersion": cr["apiVersion"],
                "kind": cr["kind"],
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
        }
        try:
            self.cluster.create(event, field_manager="oper8d-events")
        except ClusterError as err:  # events are best effort: never fail a reconcile
            log.debug("event not recorded: %s", err)

    def record_transition(
        self, cr: Obj, old_status: Mapping[str, Any], new_status: Mapping[str, Any]
    ) -> None:
        """An event when Ready or Updating changed between two statuses (see the module
        docstring for the changes of a CR not Ready yet)."""
        old, new = _conditions(old_status), _conditions(new_status)
        first_rollout = not reconciled_once(old_status)
        uid = str((cr.get("metadata") or {}).get("uid") or "")
        if not first_rollout:
            self._failed.discard(uid)
        for type_ in ("Ready", "Updating"):
            before, after = old.get(type_), new.get(type_)
            if after is None:
                continue
            key = (after.get("status"), after.get("reason"))
            if before is not None and (before.get("status"), before.get("reason")) == key:
                continue
            reason = after.get("reason") or type_
            warning = reason in FAILURES
            if warning and first_rollout:
                self._failed_first_rollout(uid)
            if first_rollout and not warning and uid not in self._failed:
                continue
            note = f"{type_} {after.get('status')}: {after.get('message') or reason}"
            self.record(
                cr,
                type_="Warning" if warning else "Normal",
                reason=reason,
                note=note,
                action="Reconcile",
            )


def _conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type"): c for c in (status or {}).get("conditions") or []}
