"""What ``oper8d render`` says disabled components would remove (``# would delete`` lines)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from oper8d.bundle.model import Bundle, ComponentSpec, DeletionPolicy
from oper8d.engine.deploy import DeployManager
from oper8d.engine.inputs import read_config_maps, resolve_inputs
from oper8d.engine.render import Renderer
from oper8d.engine.session import SeededRandoms, Session
from oper8d.errors import ReconcileError
from oper8d.objects import Deletion, Obj
from oper8d.offline.run import OfflineRun, controller_for

__all__ = ["would_delete"]


def would_delete(bundle: Bundle, run: OfflineRun) -> list[Deletion]:
    """Objects of disabled components, rendered as if enabled: what a cluster that ran an
    earlier CR with them enabled would lose. Returns (component, object) pairs in component
    order; every disabled component is listed.

    ``live()`` sees what it saw in the run's last pass (the run's objects in the in-memory
    cluster). An object that does not exist there (one of another disabled component)
    reads as :data:`_ABSENT` when ``none`` fails the template, so names that do not depend
    on it are still known. A component whose names do depend on it, or that does not
    render at all, gives one (component, "all <kind> objects ...") pair per kind it
    declares: nothing is left out."""
    if not run.results or run.last.rollout is None:
        return []
    disabled = [n for n, c in run.last.rollout.components.items() if c.disabled]
    if not disabled:
        return []
    controller = controller_for(bundle, run.cr)
    # the inputs and the template context the reconciler rendered with (engine.inputs,
    # engine.session), over the cluster the run left behind
    inputs = resolve_inputs(controller, run.cr, read_config_maps(run.cluster, run.cr))
    meta = run.cr["metadata"]
    sessions = [
        session_type(
            bundle=bundle,
            controller=controller,
            cr=run.cr,
            config=inputs.config,
            cluster=run.cluster,
            randoms=SeededRandoms(f"{meta.get('namespace')}/{meta['name']}"),
            spec=inputs.spec,
            rendered=dict(run.applied),  # what live() read in the run
        )
        for session_type in (Session, _AbsentReadsSession)
    ]
    deployer = DeployManager(run.cluster, run.cr, field_manager="oper8d")
    renderers = [Renderer(session) for session in sessions]
    out: list[Deletion] = []
    for name in (c.name for c in controller.components if c.name in disabled):
        enabled_copy = dataclasses.replace(controller.component(name), enabled=None)
        for internal, what, policy in _render_disabled(renderers, enabled_copy):
            if not isinstance(what, str):
                what = deployer.prepare(what, internal, name, policy=policy)
            out.append((name, what))
    return out


def _render_disabled(
    renderers: list[Renderer], component: ComponentSpec
) -> list[tuple[str, Obj | str, DeletionPolicy]]:
    """(internal name, object, its resource's deletionPolicy) of each object of
    ``component`` from the first renderer that renders it, Retain ones left out (nothing
    removes them); (internal name, "all <kind> objects ...") for an object whose name
    depends on an absent object; one such line per declared kind when none renders it."""
    if all(res.deletion_policy == "Retain" for res in component.resources):
        return []
    why = ""
    for renderer in renderers:
        try:
            objects = renderer.render_component(component).objects
        except ReconcileError as err:
            why = why or f"it does not render offline: {err.message}"
            continue
        unknown = "the name of {} depends on a live() object that does not exist offline"
        return [
            (internal, item.obj, item.resource.deletion_policy)
            if not _depends_on_absent(item.obj)
            else (
                internal,
                _all_of(item.obj["apiVersion"], item.obj["kind"], unknown.format(internal)),
                item.resource.deletion_policy,
            )
            for internal, item in objects.items()
            if item.resource.deletion_policy != "Retain"
        ]
    kinds = dict.fromkeys(
        k for res in component.resources if res.deletion_policy != "Retain" for k in res.kinds
    )
    if not kinds:
        return [("", f"all objects of the component ({why})", "Delete")]
    return [("", _all_of(api_version, kind, why), "Delete") for api_version, kind in kinds]


def _all_of(api_version: str, kind: str, why: str) -> str:
    return f"all {api_version} {kind} objects of the component ({why})"


class _Absent(str):
    """What ``live()`` gives in place of an object that does not exist offline, when
    ``none`` would fail the template: every field of it is absent too, it is false and
    empty, and printed it is ``<absent>``, which no Kubernetes name can hold."""

    __slots__ = ()

    def __getattr__(self, _name: str) -> _Absent:
        return self

    def __getitem__(self, _key: Any) -> _Absent:
        return self

    def __call__(self, *_args: Any, **_kwargs: Any) -> _Absent:
        return self

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False


#: the absent object (``_Absent``)
_ABSENT = _Absent("<absent>")


def _depends_on_absent(obj: Obj) -> bool:
    meta = obj.get("metadata") or {}
    return any(
        isinstance(meta.get(key), str) and _ABSENT in meta[key] for key in ("name", "namespace")
    )


@dataclass
class _AbsentReadsSession(Session):
    """A session whose ``live()`` gives :data:`_ABSENT` for an object that does not exist."""

    def live(self, ref: str) -> Obj | None:
        obj = super().live(ref)
        return obj if obj is not None else cast(Obj, _ABSENT)


#: metadata a stored object carries that a write must not send (``kubectl get -o yaml``)
