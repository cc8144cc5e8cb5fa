"""Rendered objects against the bundle's declaration: checked before anything is applied.

The bundle author is trusted, the CR author is not. Whatever a CR holds, the rollout
applies only objects the bundle declared:

- every rendered object is a mapping with an ``apiVersion`` of Kubernetes' grammar
  (``kinds.parse_api_version``), a string ``kind`` and a ``metadata.name`` that is a
  non-empty string (:func:`check_shape`, right after render, and again after patches);
- its (apiVersion, kind) is one the resource declares: written literally in the inline
  object or text template, or listed in the resource's ``kinds:``;
- a namespaced object lives in the CR's namespace, or in the namespace the resource
  declares with ``namespace:``; a cluster-scoped kind has no namespace
  (:func:`check_identity`, after patches, so a patch cannot move an object either).

Used by ``engine.rollout`` for components and hooks. A failure is a ``ConfigError`` at the
resource's position naming the object; the component applies nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oper8d.bundle.model import ResourceSpec
from oper8d.errors import ConfigError, ObjectError
from oper8d.kinds import api_version_problem, is_cluster_scoped

__all__ = ["check_declared", "check_identity", "check_shape"]

#: the keys of an object's top level that check_shape needs
_TOP_KEYS = ("apiVersion", "kind", "metadata")


def check_declared(
    obj: dict[str, Any],
    res: ResourceSpec,
    internal: str,
    ctx: dict[str, Any],
    cr_namespace: str | None,
    bundle_config: Mapping[str, Any] | None = None,
) -> None:
    """Refuse an object ``res`` does not declare; put a namespaced object without a
    namespace into the resource's declared namespace (the deployer gives others the CR's).
    ``ctx`` is the template context the resource rendered in; ``bundle_config`` the
    bundle's own config, which alone may decide a declared namespace (a CR's config
    overrides may not: ``bundle.placement``)."""
    check_shape(obj, res, internal)  # again: patches ran since the render
    namespace = cr_namespace
    if res.namespace is not None:
        namespace = res.namespace.evaluate(ctx)
        if not isinstance(namespace, str) or not namespace:
            raise ConfigError(
                f"the namespace of resource '{internal}' rendered to {namespace!r}, not a "
                "namespace name",
                pos=res.namespace.pos,
            )
        if bundle_config is not None and res.namespace.compiled is not None:
            try:
                own = res.namespace.evaluate({**ctx, "config": bundle_config})
                where = f"from namespace '{own}'"
            except ConfigError:  # it reads config the bundle does not set
                own, where = None, "(the bundle's own config does not set it)"
            if own != namespace:
                raise ConfigError(
                    f"the CR's config (configOverrides, or the ConfigMap its "
                    f"oper8.org/config-defaults annotation names) would move resource "
                    f"'{internal}' {where} to '{namespace}': a CR cannot choose the "
                    "namespace of the objects the bundle declares; set it in the bundle's "
                    "`config:`",
                    pos=res.namespace.pos,
                )
        meta = obj["metadata"]
        if not meta.get("namespace") and not is_cluster_scoped(obj["apiVersion"], obj["kind"]):
            meta["namespace"] = namespace
    check_identity(obj, res, internal, namespace)


def check_shape(obj: Any, res: ResourceSpec, internal: str) -> None:
    """``obj`` is a Kubernetes object at all: a mapping with string apiVersion, kind, name."""
    meta = obj.get("metadata") if type(obj) is dict else None
    if (
        type(meta) is dict
        and api_version_problem(obj.get("apiVersion")) is None
        and _nonempty_str(obj.get("kind"))
        and _nonempty_str(meta.get("name"))
        and isinstance(meta.get("namespace"), str | None)
    ):
        return  # the usual object: nothing to say (rendered objects are all checked)
    where = f"resource '{internal}'"
    if not isinstance(obj, dict):
        raise ConfigError(
            f"{where} must render to a mapping, got {type(obj).__name__}", pos=res.pos
        )
    meta = obj.get("metadata")
    fields = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata.name": meta.get("name") if isinstance(meta, dict) else None,
    }
    missing = [key for key, value in fields.items() if not value and value != 0]
    wrong = [
        f"{key} is a {type(value).__name__}, not a string"
        for key, value in fields.items()
        if key not in missing and not isinstance(value, str)
    ]
    if meta is not None and not isinstance(meta, dict):
        wrong.append(f"metadata is a {type(meta).__name__}, not a mapping")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    if namespace is not None and not isinstance(namespace, str):
        wrong.append(f"metadata.namespace is a {type(namespace).__name__}, not a string")
    if "apiVersion" not in missing and isinstance(fields["apiVersion"], str):
        problem = api_version_problem(fields["apiVersion"])
        if problem is not None:
            wrong.append(problem)
    if missing:
        wrong.insert(0, f"it has no {', '.join(missing)}")
    path: tuple[str | int, ...] = ("metadata",) if isinstance(meta, dict) else ()
    # a misspelt top-level key is why a field is missing: name it
    absent = [k for k in _TOP_KEYS if k not in obj]
    for key in obj:
        meant = _meant(key, absent)
        if meant is not None:
            wrong.append(f"unknown key {key!r} (did you mean {meant!r}?)")
            path = (key,)
            break
    if wrong:
        raise ObjectError(
            f"{where} renders an object that Kubernetes cannot take: {'; '.join(wrong)}",
            pos=res.pos,
            path=path,
        )


def _meant(key: Any, absent: list[str]) -> str | None:
    """The key of ``absent`` that ``key`` misspells (``metdata``, ``Kind``), if any: close
    enough that ``data`` is not taken for ``metadata``."""
    if not isinstance(key, str) or not absent:
        return None
    for name in absent:
        if name.lower() == key.lower():
            return name
    import difflib  # (only for a problem)

    close = difflib.get_close_matches(key, absent, n=1, cutoff=0.75)
    return close[0] if close else None


def check_identity(
    obj: dict[str, Any], res: ResourceSpec, internal: str, namespace: str | None
) -> None:
    """``obj`` is of a kind ``res`` declares and in the namespace it may use: the CR's, or
    ``namespace`` when the resource declares one (evaluated by the caller); ``obj`` has
    passed :func:`check_shape`."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    name = obj["metadata"]["name"]
    if (api_version, kind) not in res.kinds:
        declared = ", ".join(f"{a} {k}" for a, k in res.kinds) or "none"
        raise ConfigError(
            f"resource '{internal}' rendered {api_version} {kind} '{name}', a kind it does not "
            f"declare (declared: {declared}); list every kind a template may render under "
            "the resource's `kinds:`",
            pos=res.pos,
        )
    if is_cluster_scoped(api_version, kind):
        return
    rendered = obj["metadata"].get("namespace")
    if rendered and rendered != namespace:
        allowed = f"'{namespace}'" if namespace else "the CR's (it has none)"
        which = "the namespace it declares" if res.namespace is not None else "the CR's namespace"
        raise ConfigError(
            f"resource '{internal}' rendered {kind} '{name}' in namespace '{rendered}'; its "
            f"objects must be in {which}, {allowed} (declare another with the resource's "
            "`namespace:`)",
            pos=res.pos,
        )


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""
