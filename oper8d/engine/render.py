"""Rendering: a component's templates turned into the objects it wants, patched. No writes.

Used by the rollout's deploy phase and hooks (``engine.deploy_phase``, ``engine.hooks``)
and by ``offline.would_delete``. Objects come out of a bundle's templates in exactly one
place, :func:`render_resource` (component instances and hooks alike), before any patch
or apply touches them: a check of what a template produced belongs there.

A component renders once per instance (``forEach`` items, else one), each instance's
objects named ``<instance>.<resource>`` (``<instance>.<resource>-<kind>[-<name>]`` for a
text template of several documents). Bundle patches apply next, then TemporaryPatches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oper8d.bundle.model import ComponentSpec, ResourceSpec
from oper8d.engine.declared import check_declared, check_shape
from oper8d.engine.kubecheck import check_schema
from oper8d.engine.missing import SchemaSource, evaluate_live
from oper8d.engine.patch import (
    TemporaryPatchRef,
    apply_temporary_patches,
    check_identity_preserved,
    json_patch,
)
from oper8d.engine.session import Session, generated_secret_name
from oper8d.errors import ConfigError, ObjectError, ReconcileError, RolloutError
from oper8d.kinds import group_of
from oper8d.limits import LimitExceeded
from oper8d.logs import mark_secret
from oper8d.objects import Obj
from oper8d.template import Expr
from oper8d.template.filters import MissingRequiredValue

__all__ = [
    "RenderedComponent",
    "RenderedObject",
    "Renderer",
    "checked_against_schema",
    "holds",
    "render_resource",
]


@dataclass(frozen=True)
class RenderedObject:
    """One object a resource rendered: its internal name, the object, and the resource
    it came from (its deploy method and readiness rules)."""

    internal: str
    obj: Obj
    resource: ResourceSpec
    #: which document of a text template it is (of the non-empty ones)
    document: int = 0


@dataclass
class RenderedComponent:
    """What one component rendered in a rollout, by internal name. ``disabled``: its
    ``enabled`` condition was false, and ``objects`` is empty."""

    objects: dict[str, RenderedObject] = field(default_factory=dict)
    disabled: bool = False


def render_resource(res: ResourceSpec, instance: str, ctx: dict[str, Any]) -> list[RenderedObject]:
    """The objects resource ``res`` renders for ``instance`` (a component instance, or
    ``hook-<name>``) in context ``ctx``: the one place objects come out of templates, for
    components and hooks alike. Each is checked to be a named Kubernetes object and marked
    for redaction before anything can log it; no patch has touched it yet."""
    return [
        RenderedObject(internal, obj, res, index)
        for index, (internal, obj) in enumerate(_render(res, instance, ctx))
    ]


def _render(res: ResourceSpec, instance: str, ctx: dict[str, Any]) -> list[tuple[str, Obj]]:
    if res.object is not None:
        obj = res.object.render(ctx)
        check_shape(obj, res, f"{instance}.{res.name}")
        mark_secret(obj)  # before anything can log it
        return [(f"{instance}.{res.name}", obj)]
    assert res.template is not None
    docs = res.template.render(ctx)
    for index, doc in enumerate(docs):
        try:
            check_shape(doc, res, f"{instance}.{res.name}")
        except ObjectError as err:
            raise at_template_line(err, res, ctx, index) from None
        mark_secret(doc)
    if len(docs) == 1:
        return [(f"{instance}.{res.name}", docs[0])]
    # several documents: "<resource>-<kind>", plus "-<name>" when the kind repeats
    kinds = [d["kind"].lower() for d in docs]
    return [
        (
            f"{instance}.{res.name}-{kind}"
            + (f"-{d['metadata']['name']}" if kinds.count(kind) > 1 else ""),
            d,
        )
        for kind, d in zip(kinds, docs, strict=True)
    ]


class Renderer:
    """Renders the components of one session, with the CR's TemporaryPatches."""

    def __init__(
        self, session: Session, temporary_patches: Sequence[TemporaryPatchRef] = ()
    ) -> None:
        self.session = session
        self.temporary_patches = list(temporary_patches)
        # object identity -> the internal name that rendered it, across the components of
        # this rollout (rendered concurrently by the DAG runner's workers)
        self._identities: dict[tuple[str, str, str | None, str], str] = {}
        self._identities_lock = threading.Lock()
        self._generated_secret = generated_secret_name(session.cr["metadata"]["name"])

    def render_component(self, comp: ComponentSpec) -> RenderedComponent:
        """Every object of every instance of ``comp``, patched (no writes). A disabled
        component renders nothing and says so."""
        base = self.session.context(component=comp.name)
        base["live"] = _not_own(base["live"], comp.name)
        if comp.enabled is not None and not comp.enabled.evaluate(base):
            return RenderedComponent(disabled=True)
        result = RenderedComponent()
        matched: set[int] = set()
        instances = self._instances(comp, base)
        for instance, ctx in instances:
            for res in comp.resources:
                document = 0  # (the error of a text template's document: at its line)
                try:
                    for item in render_resource(res, instance, ctx):
                        document = item.document
                        obj = self._patch(comp, item, ctx, matched)
                        mark_secret(obj)  # a patch may have added values
                        # after patches: neither a template nor a patch may leave the
                        # declaration
                        check_declared(
                            obj,
                            res,
                            item.internal,
                            ctx,
                            self.session.namespace,
                            self.session.controller.config_defaults,
                        )
                        obj = checked_against_schema(self.session, obj, res, item.internal)
                        result.objects[item.internal] = RenderedObject(item.internal, obj, res)
                except ObjectError as err:
                    raise at_template_line(err, res, ctx, document) from None
                except ReconcileError:
                    raise
                except Exception as err:  # a bug: say where, so it can be reported and fixed
                    raise RolloutError(
                        f"resource '{instance}.{res.name}' of component '{comp.name}': "
                        f"internal error while rendering: {type(err).__name__}: {err}",
                        pos=res.pos,
                    ) from err
        if instances:
            _check_patches_matched(comp, matched)
        self.claim(result.objects)
        return result

    def claim(self, objects: Mapping[str, RenderedObject]) -> None:
        """Record the identities of ``objects`` (a component's or a hook's); one another
        resource of this rollout already renders is a ConfigError naming both (two owners
        of one object would overwrite each other at every reconcile). A component rendered
        again (a retry) keeps its own identities."""
        with self._identities_lock:
            claims: dict[tuple[str, str, str | None, str], str] = {}
            reserved = ("", "Secret", self.session.namespace, self._generated_secret)
            for internal, item in objects.items():
                key = _identity(item.obj, self.session.namespace)
                if key == reserved:
                    raise ConfigError(
                        f"{internal} renders {_describe(key)}, the Secret random_string() "
                        "keeps this CR's generated values in: give the resource another name",
                        pos=item.resource.pos,
                    )
                other = claims.get(key) or self._identities.get(key)
                if other is not None and other != internal:
                    raise ConfigError(
                        f"{internal} and {other} both render {_describe(key)}: one object "
                        "can have one source; rename one of them",
                        pos=item.resource.pos,
                    )
                claims[key] = internal
            self._identities.update(claims)

    def _instances(
        self, comp: ComponentSpec, base: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        """(instance name, context) of each instance: one per ``forEach`` item."""
        fe = comp.for_each
        if fe is None:
            return [(comp.name, base)]
        items = fe.items.evaluate(base)
        if items is None:
            return []
        if not isinstance(items, list):
            raise ConfigError(
                f"forEach.items of component '{comp.name}' must be a list, got "
                f"{type(items).__name__}",
                pos=fe.items.pos,
            )
        limit = fe.items.limits.for_each_items
        if len(items) > limit:
            detail = f"forEach.items of component '{comp.name}' has {len(items)} items"
            hit = LimitExceeded("for_each_items", f"{detail} (at most {limit})")
            raise ConfigError(str(hit), pos=fe.items.pos)
        if fe.max_items is not None and len(items) > fe.max_items:
            raise ConfigError(
                f"forEach.items of component '{comp.name}' has {len(items)} items; the "
                f"bundle's forEach.maxItems allows at most {fe.max_items}",
                pos=fe.pos or fe.items.pos,
            )
        out: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            ctx = {**base, fe.var: item, "index": index}
            if fe.key is not None:
                key = fe.key.evaluate(ctx)
            elif isinstance(item, dict) and "name" in item:
                key = item["name"]
            else:
                key = index
            instance = f"{comp.name}-{key}"
            if instance in seen:
                raise ConfigError(
                    f"forEach of component '{comp.name}': two items have the key '{key}'",
                    pos=fe.items.pos,
                )
            seen.add(instance)
            out.append((instance, {**ctx, "component": instance}))
        return out

    def _patch(
        self, comp: ComponentSpec, item: RenderedObject, ctx: dict[str, Any], matched: set[int]
    ) -> Obj:
        """``item``'s object with the component's patches that target it (their indexes
        added to ``matched``), then the CR's TemporaryPatches, within the bundle's policy."""
        obj = item.obj
        for index, patch in enumerate(comp.patches):
            if patch.target_resource and patch.target_resource != item.resource.name:
                continue
            if patch.target_kind and patch.target_kind != obj.get("kind"):
                continue
            if patch.target_name and patch.target_name != obj["metadata"].get("name"):
                continue
            matched.add(index)
            body = patch.patch.render(ctx)
            before = obj
            try:
                if patch.type == "json6902":
                    obj = json_patch(obj, body)
                else:
                    # (imported on first use: most bundles have no strategic patches)
                    from oper8d.engine.patch.strategic import strategic_merge

                    obj = strategic_merge(
                        obj, body, kind=obj.get("kind"), api_version=obj.get("apiVersion")
                    )
            except ConfigError as err:  # name the patch that failed
                if err.pos is not None:
                    raise
                raise ConfigError(err.message, pos=patch.pos, field=err.field) from err
            check_identity_preserved(before, obj, source=str(patch.pos))
        if self.temporary_patches:  # (only when the bundle turns them on)
            policy = self.session.controller.temporary_patches
            obj = apply_temporary_patches(obj, item.internal, self.temporary_patches, policy)
        return obj


def checked_against_schema(session: Session, obj: Obj, res: ResourceSpec, internal: str) -> Obj:
    """``obj`` as Kubernetes' schema for its kind takes it (``engine.kubecheck``), when the
    session checks schemas."""
    if session.schemas is None:
        return obj
    return check_schema(obj, res, internal, session.schemas, session.kind_warnings)


def at_template_line(
    err: ObjectError, res: ResourceSpec, ctx: dict[str, Any], document: int
) -> ConfigError:
    """``err`` at the text template's line of the place it is about; an inline object's
    error stays at the resource."""
    if res.template is None:
        return err
    return ConfigError(err.message, pos=res.template.locate(ctx, document, err.path))


class OwnComponentRead(MissingRequiredValue):
    """A template read its own component's object with ``live()``: a ``ConfigError`` that
    the template engine re-raises at the template's line (like ``require``'s)."""


def _not_own(live: Callable[..., Obj | None], component: str) -> Callable[..., Obj | None]:
    """``live`` refusing the objects of ``component``, the one rendering: they are applied
    after all of them render, so reading one here would always give none."""

    def checked(ref: Any) -> Obj | None:
        if isinstance(ref, str) and ref.partition(".")[0] == component:
            raise OwnComponentRead(
                f"live({ref!r}) reads an object of component '{component}', the component "
                "this template renders: its objects are applied only after all of them "
                "render, so there is nothing to read yet (live() would give none at every "
                f"reconcile); read it from a component that depends on '{component}', or in "
                "its readyWhen"
            )
        return live(ref)

    return checked


Identity = tuple[str, str, str | None, str]


def _identity(obj: Obj, default_namespace: str | None) -> Identity:
    """(API group, kind, namespace, name): what the API server keys an object by (two
    versions of one group are one object). ``obj`` has passed ``check_declared``."""
    meta = obj["metadata"]
    return (
        group_of(obj["apiVersion"]),
        str(obj.get("kind")),
        meta.get("namespace") or default_namespace,
        meta["name"],
    )


def _describe(key: Identity) -> str:
    group, kind, namespace, name = key
    where = f"{namespace}/{name}" if namespace else name
    return f"{kind}{'.' + group if group else ''} {where}"


def _check_patches_matched(comp: ComponentSpec, matched: set[int]) -> None:
    """A patch whose target matches no object of its component is a typo, not a no-op."""
    for index, patch in enumerate(comp.patches):
        if index in matched:
            continue
        target = ", ".join(
            f"{key} {value!r}"
            for key, value in (
                ("resource", patch.target_resource),
                ("kind", patch.target_kind),
                ("name", patch.target_name),
            )
            if value
        )
        names = sorted({r.name for r in comp.resources})
        raise ConfigError(
            f"patch of component '{comp.name}' targets {target or 'every object'} but no "
            f"object the component rendered matches (its resources: {', '.join(names)})",
            pos=patch.pos,
        )


def holds(expr: Expr, context: dict[str, Any], schemas: SchemaSource | None = None) -> bool:
    """Evaluate a condition over live objects. A field the object's schema has but the
    live object lacks yet (a status not written), or an object not created yet, means "not
    yet"; an undefined name or a field the kind's schema does not have is a ConfigError at
    the expression (``engine.missing``). ``schemas``: read once per rollout when given."""
    value, _waiting = evaluate_live(expr, context, schemas or SchemaSource())
    return bool(value)
