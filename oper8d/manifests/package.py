"""Everything that deploys an operator with ``kubectl apply`` (or kustomize), in order.

``operator_manifests(bundle, options)`` lists: the operator's Namespace (unless it is
``default`` or a ``kube-*`` one, which exist already and must never be deleted with
``kubectl delete -f``), the bundle's CRDs and the TemporaryPatch CRD (when the bundle
turns temporary patches on), the ServiceAccount,
the RBAC (``manifests.rbac``), the bundle ConfigMap and the Deployment
(``manifests.deployment``). ``render_stream`` writes them as one YAML stream;
``write_folder`` as one file per object (``NN-kind-name.yaml``) plus a
``kustomization.yaml``. Caveats (kinds the RBAC could not cover) are YAML comments above
the rules they concern. The output depends only on the bundle and the options: no
timestamps, sorted rules, fixed key order. Used by ``oper8d manifests``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from oper8d import __version__
from oper8d.bundle.model import Bundle
from oper8d.manifests.bundle_configmap import bundle_configmap
from oper8d.manifests.crd import crd_for, temporary_patch_crd
from oper8d.manifests.deployment import namespace_object, operator_deployment, service_account
from oper8d.manifests.rbac import rbac_objects, required_permissions
from oper8d.yamlio import dump

BundleSource = Literal["configmap", "image"]

DEFAULT_IMAGE = f"oper8d:{__version__}"
KUSTOMIZATION = "kustomization.yaml"
#: files ``write_folder`` owns in its folder (a rerun replaces them all)
_OUR_FILE = re.compile(r"^\d+-[-.a-z0-9]+\.yaml$")
_PREEXISTING_NAMESPACES = re.compile(r"^(default|kube-.*)$")


@dataclass(frozen=True)
class InstallOptions:
    """How the operator is deployed (``oper8d manifests`` options)."""

    #: the operator's namespace: ServiceAccount, Deployment, Lease; default "<bundle>-system"
    namespace: str | None = None
    image: str = DEFAULT_IMAGE
    #: empty: the operator watches every namespace (ClusterRole); else only these (Roles)
    watch_namespaces: tuple[str, ...] = ()
    bundle_from: BundleSource = "configmap"
    #: (apiVersion, kind) the bundle renders without naming them literally
    extra_kinds: tuple[tuple[str, str], ...] = ()
    #: the replicas share the CRs (``oper8d run --sharding``) instead of electing a leader
    sharding: bool = False
    #: Pods of the Deployment (a standby with leader election; a share each with sharding)
    replicas: int = 2


@dataclass(frozen=True)
class Manifest:
    """One object to apply, with the comment lines written above it."""

    obj: dict[str, Any]
    comments: tuple[str, ...] = field(default=())

    def yaml(self) -> str:
        head = "".join(f"# {line}\n" if line else "#\n" for line in self.comments)
        return head + dump(self.obj)


def names_for(bundle: Bundle) -> dict[str, str]:
    """The names of what the manifests create, from the bundle's name."""
    base = f"{bundle.name}-operator"
    return {
        "operator": base,
        "namespace": f"{bundle.name}-system",
        "configmap": f"{base}-bundle",
        # the manager's default Lease name (oper8d run --leader-election-id)
        "lease": f"{bundle.name}-oper8d",
    }


def operator_manifests(bundle: Bundle, options: InstallOptions) -> list[Manifest]:
    """Every object, in the order they can be applied. Raises BundleError when a CRD
    cannot be generated or the bundle does not fit in a ConfigMap."""
    names = names_for(bundle)
    name = names["operator"]
    namespace = options.namespace or names["namespace"]
    watched = tuple(sorted(set(options.watch_namespaces)))
    selector = {"app.kubernetes.io/name": bundle.name, "app.kubernetes.io/component": "operator"}
    labels = dict(selector)
    if bundle.operator_version:
        labels["app.kubernetes.io/version"] = bundle.operator_version
    out: list[Manifest] = []
    if not _PREEXISTING_NAMESPACES.match(namespace):
        out.append(Manifest(namespace_object(namespace, labels)))
    out += [Manifest(crd_for(c)) for c in bundle.controllers]
    if bundle.temporary_patch_targets:
        out.append(Manifest(temporary_patch_crd()))
    out.append(Manifest(service_account(name, namespace, labels)))
    permissions = required_permissions(bundle, extra_kinds=options.extra_kinds)
    rbac = rbac_objects(
        permissions,
        name=name,
        namespace=namespace,
        service_account=name,
        lease_name=names["lease"],
        watch_namespaces=watched,
        labels=labels,
        sharding=options.sharding,
    )
    notes = tuple(f"note: {n}" for n in permissions.notes)
    out += [Manifest(obj, notes if i == 0 else ()) for i, obj in enumerate(rbac)]
    bundle_cm = None
    if options.bundle_from == "configmap":
        bundle_cm = bundle_configmap(
            bundle.root, name=names["configmap"], namespace=namespace, labels=labels
        )
        out.append(Manifest(bundle_cm.configmap))
    deployment = operator_deployment(
        name=name,
        namespace=namespace,
        image=options.image,
        service_account_name=name,
        labels=labels,
        selector=selector,
        watch_namespaces=watched,
        bundle=bundle_cm,
        replicas=options.replicas,
        sharding=options.sharding,
    )
    out.append(Manifest(deployment))
    out[0] = Manifest(out[0].obj, (*_header(bundle, options, namespace), *out[0].comments))
    return out


def render_stream(manifests: Sequence[Manifest]) -> str:
    """One YAML stream, documents separated by ``---``."""
    return "---\n".join(m.yaml() for m in manifests)


def file_names(manifests: Sequence[Manifest]) -> list[str]:
    """``NN-kind-name.yaml``: NN keeps ``kubectl apply -f DIR`` in dependency order."""
    width = max(2, len(str(len(manifests) - 1)))
    out = []
    for i, m in enumerate(manifests):
        meta = m.obj["metadata"]
        # a Role of the same name exists in each watched namespace: the namespace tells
        # their files apart
        scoped = m.obj["kind"] in ("Role", "RoleBinding")
        parts = [m.obj["kind"], meta.get("namespace") if scoped else None, meta["name"]]
        stem = "-".join(p for p in parts if p).lower()
        out.append(f"{i:0{width}d}-{re.sub(r'[^-.a-z0-9]', '-', stem)}.yaml")
    return out


def write_folder(manifests: Sequence[Manifest], folder: Path) -> list[Path]:
    """One file per object plus ``kustomization.yaml`` listing them; files of an earlier
    run (``NN-*.yaml``) that this one does not write are removed. Returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    names = file_names(manifests)
    for stale in sorted(folder.iterdir()):
        if stale.is_file() and _OUR_FILE.match(stale.name) and stale.name not in names:
            stale.unlink()
    written = []
    for name, manifest in zip(names, manifests, strict=True):
        path = folder / name
        path.write_text(manifest.yaml(), encoding="utf-8")
        written.append(path)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": names,
    }
    path = folder / KUSTOMIZATION
    path.write_text(dump(kustomization), encoding="utf-8")
    return [*written, path]


def _header(bundle: Bundle, options: InstallOptions, namespace: str) -> tuple[str, ...]:
    version = f" {bundle.operator_version}" if bundle.operator_version else ""
    scope = (
        "namespaces " + ", ".join(sorted(set(options.watch_namespaces)))
        if options.watch_namespaces
        else "all namespaces"
    )
    mode = "sharing the CRs" if options.sharding else "one leader at a time"
    return (
        f"Operator {bundle.name}{version}: generated by `oper8d manifests` (oper8d {__version__}).",
        f"Runs in namespace {namespace}, watches {scope}; bundle from the {options.bundle_from}.",
        f"{options.replicas} replicas, {mode}.",
        "Apply with `kubectl apply -f` (or `kubectl apply -k` on a folder).",
    )
