"""What the operator would change in a cluster for a CR: ``oper8d diff``'s logic (no click).

The objects are rendered as ``oper8d render`` renders them (the real reconciler on the
in-memory cluster, ``offline.reconcile_offline``), adjusted to match what the operator
applies: the CR's namespace is resolved by the caller; when the CR exists, the render uses
its live uid (owner references, the ``oper8d.io/owner-uid`` label); the ConfigMap named by
``oper8.org/config-defaults`` is copied from the cluster; and objects read back during the
render have their map keys in the API server's order (the in-memory cluster stores them so). Each
object is then server-side applied with ``dryRun=All`` (field manager: the bundle name,
forced, as the operator applies) and compared with the live object; live objects the CR
owns that the render no longer produces are deletions, as the reconciler's prune makes them.

Both sides are normalised (:func:`normalise`), written as YAML with sorted keys and compared
with ``difflib``: one unified diff per object, ``live/<name>`` against ``merged/<name>``
(``/dev/null`` for a new or deleted object), named as kubectl names them
(``apps.v1.Deployment.<namespace>.<name>``). Secret values are masked as kubectl masks them,
and values from Secrets (the render's, and those of the live Secrets the CR owns) are masked
as whole values wherever else they appear, on both sides (``oper8d.redaction``).

``random_string()`` returns the values the operator keeps in the CR's live
``<cr>-oper8d-generated`` Secret, so an unchanged generated password is no difference (a
key that Secret does not hold yet gets a fresh offline value: a change, as it would be).
Not modelled (the render cannot know them): ``lookup()`` of objects the bundle does not
create, and TemporaryPatches applied to the live objects.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.cluster.base import ClusterReader
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator
from oper8d.difftext import (
    ObjectDiff,
    compare,
    diff_name,
    mask_secret_data,
    normalise,
    unified_diff,
)
from oper8d.engine.config import CONFIG_DEFAULTS_ANNOTATION
from oper8d.engine.deploy import (
    ObjectKey,
    identity,
    inventory_of,
    kind_key,
    left_fields,
    list_owned,
    object_key,
)
from oper8d.engine.immutable import planned_refusal
from oper8d.engine.leave import update_body
from oper8d.engine.prune import prunable
from oper8d.engine.session import KnownRandoms, SeededRandoms, generated_values
from oper8d.engine.teardown import deletion_policy_of, released
from oper8d.errors import ClusterError, ConfigError
from oper8d.kinds import ref_of
from oper8d.kubeschema import KubeSchemas
from oper8d.objects import OWNER_LABEL, Obj
from oper8d.offline import EPOCH, OfflineRun, controller_for, reconcile_offline
from oper8d.redaction import SensitiveValues, secret_values

__all__ = [
    "DiffCluster",
    "DiffReport",
    "ObjectDiff",
    "compare",
    "diff_cr",
    "diff_name",
    "mask_secret_data",
    "normalise",
    "render_for_diff",
    "unified_diff",
]


class DiffCluster(ClusterReader, Protocol):
    """What the diff needs from a cluster (``KubeCluster`` provides it)."""

    def dry_run_apply(self, obj: Obj, *, field_manager: str, force: bool = True) -> Obj: ...


@dataclass(frozen=True)
class DiffReport:
    """Every object's comparison, in rollout order and then the deletions; ``errors`` name
    the objects the server refused to dry-run; ``warnings`` say what the diff cannot show."""

    diffs: tuple[ObjectDiff, ...] = ()
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return any(d.action is not None for d in self.diffs)

    @property
    def text(self) -> str:
        return "".join(d.text for d in self.diffs)


def render_for_diff(
    bundle: Bundle,
    cr: Mapping[str, Any],
    *,
    live_uid: str | None = None,
    seed_objects: Sequence[Obj] = (),
    generated: Mapping[str, str] | None = None,
) -> OfflineRun:
    """``reconcile_offline`` of ``cr`` (its namespace already set) on a
    ``MemoryCluster`` where the CR has uid ``live_uid`` (when given) and
    ``seed_objects`` (copied from the live cluster) exist before the first reconcile.
    ``random_string()`` returns the values of ``generated`` (the live generated Secret's,
    by data key) where it has them, else values derived from the CR."""
    controller = controller_for(bundle, cr)
    kind = controller.resource
    body = copy.deepcopy(dict(cr))
    body.pop("status", None)
    meta = body["metadata"]
    seed = f"{meta.get('namespace')}/{meta['name']}"
    cluster = MemoryCluster(
        clock=lambda: EPOCH,
        uid_factory=_first_uid(live_uid, sequential_uids(seed)),
        simulator=DefaultSimulator(),
    )
    cluster.register_kind(kind.api_version, kind.kind, namespaced=kind.namespaced)
    # the CR is created first, so it is the object that takes ``live_uid``
    cluster.apply(body, field_manager="oper8d-cli")
    for obj in seed_objects:
        cluster.apply(normalise(obj), field_manager="oper8d-cli")  # content, no server fields
    randoms = KnownRandoms(generated or {}, SeededRandoms(seed))
    return reconcile_offline(bundle, body, cluster=cluster, randoms=randoms)


def _first_uid(uid: str | None, then: Callable[[], str]) -> Callable[[], str]:
    pending = [uid] if uid else []
    return lambda: pending.pop() if pending else then()


def _without_owner(obj: Obj, uid: str) -> Obj:
    """``obj`` without the owner label and owner reference naming ``uid``."""
    meta = dict(obj["metadata"])
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if (k, v) != (OWNER_LABEL, uid)}
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != uid]
    for key, value in (("labels", labels), ("ownerReferences", refs)):
        if value:
            meta[key] = value
        else:
            meta.pop(key, None)
    return {**obj, "metadata": meta}


# -- the diff ---------------------------------------------------------------------------
#: metadata the API server sets on a stored object
_SERVER_SET = frozenset(
    {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"}
)


def diff_cr(
    bundle: Bundle,
    cr: Mapping[str, Any],
    cluster: DiffCluster,
    *,
    namespace: str = "default",
    schemas: KubeSchemas | None = None,
) -> DiffReport:
    """Compare what the operator would apply for ``cr`` with ``cluster``. ``namespace`` is
    used when a namespaced CR names none (kubectl's rule: the context's namespace).
    ``schemas`` (holding the bundle's CRDs): the CR is checked against its CRD as the
    API server would check its create, or its update of the live CR (CEL transition
    rules against the live CR, unchanged fields ratcheted); a refusal is a ConfigError.

    Raises the render's fatal error (a ``ConfigError`` for a bad CR or template) and
    ``ClusterError`` when the cluster cannot be read; objects the server refuses to
    dry-run are listed in ``DiffReport.errors`` and the others are still compared."""
    controller = controller_for(bundle, cr)
    kind = controller.resource
    body = copy.deepcopy(dict(cr))
    # a CR saved with `kubectl get -o yaml` keeps what the server set; the CR is rendered
    # as the CR it describes, not as that stored copy (whose version the render's own
    # cluster would not know)
    body["metadata"] = {
        key: value for key, value in body["metadata"].items() if key not in _SERVER_SET
    }
    if kind.namespaced:
        body["metadata"].setdefault("namespace", namespace)
    else:
        body["metadata"].pop("namespace", None)
    name, ns = body["metadata"]["name"], body["metadata"].get("namespace")
    where = f"{kind.kind} {ns}/{name}" if ns else f"{kind.kind} {name}"
    live_cr = cluster.get(kind.api_version, kind.kind, name, ns)
    live_uid = ((live_cr or {}).get("metadata") or {}).get("uid")
    warnings: list[str] = []
    if schemas is not None:
        warnings += _cr_refusals(schemas, body, live_cr, where)
    run = render_for_diff(
        bundle,
        body,
        live_uid=live_uid,
        seed_objects=_config_defaults(cluster, body),
        generated=generated_values(cluster, name, ns) if live_uid else None,
    )
    if run.fatal_error is not None:
        raise run.fatal_error
    if run.paused:
        return DiffReport(
            warnings=(
                f"{where} is paused (annotation oper8.org/pause-execution): the operator "
                "changes nothing while it is",
            )
        )
    sensitive = run.sensitive
    if live_uid:  # values of the live Secrets the CR owns (the operator's generated one too)
        for secret in cluster.list("v1", "Secret", ns, label_selector=f"{OWNER_LABEL}={live_uid}"):
            for value in secret_values(secret):
                sensitive.add(value)
    if not run.stable:
        warnings.append(
            f"the render of {where} did not complete ({run.redact(_why_incomplete(run))}): "
            "objects of components that were not reached are not compared"
        )
    objects = list(run.applied.values())
    if live_uid is None:
        placeholder = run.cr["metadata"]["uid"]
        objects = [_without_owner(o, placeholder) for o in objects]
        warnings.append(
            f"{where} does not exist in the cluster: every object is new; owner references "
            "and the owner-uid label are left out (they name the uid the CR gets when created)"
        )
    diffs: list[ObjectDiff] = []
    errors: list[str] = []
    for obj in objects:
        try:
            diffs.append(diff_object(cluster, obj, field_manager=bundle.name, sensitive=sensitive))
        except ClusterError as err:
            if err.status is None:  # the cluster is unreachable: every request would fail
                raise
            live = cluster.get(*identity(obj))
            planned = planned_refusal(err, live, obj, controller)
            if planned is None:
                errors.append(f"{ref_of(obj)}: {sensitive.redact(err.message)}")
            elif planned.recreate:  # the object as created anew (by the in-memory server)
                warnings.append(sensitive.redact(planned.message))
                created = MemoryCluster().apply(copy.deepcopy(obj), field_manager=bundle.name)
                diffs.append(compare(live, created, sensitive))
            else:
                errors.append(sensitive.redact(planned.message))
    if live_cr is not None and live_uid:
        rendered = {object_key(o) for o in objects}
        kinds = set(inventory_of(live_cr)) | {kind_key(o) for o in objects}
        for obj in _unrendered_owned(cluster, controller, run, live_uid, ns, kinds, rendered):
            # an Orphan object is released, not deleted: its owner and oper8d's marks go
            after = released(obj, live_uid) if deletion_policy_of(obj) == "Orphan" else None
            diffs.append(compare(obj, after, sensitive))
    return DiffReport(tuple(diffs), tuple(errors), tuple(warnings))


def _cr_refusals(schemas: KubeSchemas, body: Obj, live: Obj | None, where: str) -> list[str]:
    """The CR against its CRD (create, or update of ``live``): a ConfigError naming the
    fields the API server would refuse; the CEL rules not evaluated, as warnings."""
    old = None if live is None else {k: v for k, v in live.items() if k != "status"}
    found = schemas.validate({k: v for k, v in body.items() if k != "status"}, old)
    if found.errors:
        first = found.errors[0]
        listed = "; ".join(str(f) for f in found.errors[:5])
        verb = "update" if live is not None else "create"
        raise ConfigError(
            f"the API server would refuse this {verb} of {where}: {listed}", field=first.path
        )
    return [f"{where}: {line}" for line in found.unchecked]


def diff_object(
    cluster: DiffCluster,
    wanted: Obj,
    *,
    field_manager: str,
    sensitive: SensitiveValues | None = None,
) -> ObjectDiff:
    """The live object against the server's dry-run apply of ``wanted``."""
    api_version, kind, name, namespace = identity(wanted)
    live = cluster.get(api_version, kind, name, namespace)
    leave = left_fields(wanted)
    if live is not None and leave:  # what the operator sends: it never reverts those
        wanted = update_body(wanted, live, leave, field_manager)
    merged = cluster.dry_run_apply(wanted, field_manager=field_manager, force=True)
    return compare(live, merged, sensitive)


def _config_defaults(cluster: DiffCluster, cr: Obj) -> list[Obj]:
    annotations = cr["metadata"].get("annotations") or {}
    name = annotations.get(CONFIG_DEFAULTS_ANNOTATION)
    if not name:
        return []
    live = cluster.get("v1", "ConfigMap", str(name), cr["metadata"].get("namespace"))
    # missing: the render fails with the reconciler's own message naming the annotation
    return [live] if live is not None else []


def _unrendered_owned(
    cluster: DiffCluster,
    controller: ControllerSpec,
    run: OfflineRun,
    uid: str,
    namespace: str | None,
    kinds: set[str],
    rendered: set[ObjectKey],
) -> list[Obj]:
    """Live objects owned by the CR that the reconciler's prune would delete, by the
    reconciler's own rule (``engine.prune.prunable``), sorted by identity."""
    rollout = run.last.rollout if run.results else None
    processed = set(rollout.summary.deployed) if rollout is not None else set()
    owned = list_owned(cluster, uid, namespace, kinds)
    return sorted(prunable(owned, controller, processed, rendered), key=object_key)


def _why_incomplete(run: OfflineRun) -> str:
    if run.results and run.last.error is not None:
        return str(run.last.error)
    ready = run.condition("Ready") or {}
    return f"{ready.get('reason')}: {ready.get('message')}" if ready else "not Ready"
