"""``oper8d manifests``: the Kubernetes objects that deploy an operator (CRDs, ServiceAccount,
least-privilege RBAC, bundle ConfigMap, Deployment), as a YAML stream or a kustomize folder.

Defines the click command ``manifests``; ``cli.main`` registers it. Imports nothing from
the kubernetes client: it needs no cluster.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from oper8d.cli.inputs import (
    EXIT_INVALID,
    bundle_argument,
    bundle_dir,
    fail,
    load_bundle_or_exit,
)
from oper8d.errors import BundleError
from oper8d.kinds import api_version_problem

#: a namespace name: an RFC 1123 label
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def _namespace(_ctx: click.Context, param: click.Parameter, value: object) -> object:
    values = value if isinstance(value, tuple) else (value,)
    for ns in values:
        if ns is not None and not _NAMESPACE.match(ns):
            raise click.BadParameter(
                f"{ns!r} is not a namespace name (lower-case letters, digits and '-', "
                "at most 63 characters)",
                param=param,
            )
    return value


def _extra_kinds(
    _ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    kinds = []
    for text in value:
        api_version, _, kind = text.rpartition("/")
        problem = api_version_problem(api_version)
        if problem is not None or not _KIND.match(kind):
            raise click.BadParameter(
                f"{text!r} is not apiVersion/Kind (e.g. apps/v1/Deployment or v1/ConfigMap)"
                + (f": {problem}" if problem and _KIND.match(kind) else ""),
                param=param,
            )
        kinds.append((api_version, kind))
    return tuple(sorted(set(kinds)))


@click.command(short_help="Print or write the manifests that deploy the operator on a cluster.")
@bundle_argument
@click.option(
    "-o",
    "--output",
    "output_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write one file per object (NN-kind-name.yaml) and a kustomization.yaml to DIR "
    "(NN-*.yaml files of an earlier run are replaced) instead of printing a YAML stream.",
)
@click.option(
    "--image",
    default=None,
    metavar="IMAGE",
    help="The operator image (default: oper8d:<oper8d version>).",
)
@click.option(
    "--namespace",
    default=None,
    metavar="NS",
    callback=_namespace,
    help="The operator's namespace: its ServiceAccount, Deployment and leader-election "
    "Lease, or shard Leases with --sharding (default: <bundle name>-system). Created by the "
    "manifests unless it is 'default' or kube-*.",
)
@click.option(
    "--watch-namespace",
    "watch_namespaces",
    multiple=True,
    metavar="NS",
    callback=_namespace,
    help="Watch only this namespace (repeat for several): a Role per namespace instead of a "
    "ClusterRole. Default: all namespaces.",
)
@click.option(
    "--bundle-from",
    type=click.Choice(["configmap", "image"]),
    default="configmap",
    show_default=True,
    help="configmap: ship the bundle's files in a ConfigMap mounted at /bundle; image: the "
    "image already has the bundle at /bundle.",
)
@click.option(
    "--extra-kind",
    "extra_kinds",
    multiple=True,
    metavar="apiVersion/Kind",
    callback=_extra_kinds,
    help="Grant the operator a kind the bundle renders without naming it literally "
    "(a templated kind:), e.g. --extra-kind batch/v1/CronJob. Repeatable.",
)
@click.option(
    "--sharding",
    is_flag=True,
    help="The replicas share the CRs (oper8d run --sharding, one Lease each in the operator's "
    "namespace) instead of electing a leader; the Role on Leases is the one sharding needs.",
)
@click.option(
    "--replicas",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Replicas of the Deployment (default: 2, a warm standby; 3 with --sharding).",
)
def manifests(
    bundle: str,
    output_dir: str | None,
    image: str | None,
    namespace: str | None,
    watch_namespaces: tuple[str, ...],
    bundle_from: str,
    extra_kinds: tuple[tuple[str, str], ...],
    sharding: bool,
    replicas: int | None,
) -> None:
    """Generate everything that deploys the operator of BUNDLE with kubectl apply.

    The bundle's CRDs and the TemporaryPatch CRD, a ServiceAccount, RBAC with only the
    verbs the operator uses on the kinds the bundle deploys, the bundle ConfigMap and a
    Deployment of two replicas with leader election (or, with --sharding, of three that
    share the CRs).

    \b
    Examples:
      oper8d manifests examples/operators/webapp | kubectl apply -f -
      oper8d manifests examples/operators/webapp -o deploy/ && kubectl apply -k deploy/
      oper8d manifests BUNDLE --watch-namespace team-a --watch-namespace team-b
      oper8d manifests BUNDLE --sharding --replicas 4

    Kinds a template computes at render time cannot be read from the bundle: the output
    names the resources that do so (as comments, and on stderr); add their kinds with
    --extra-kind.
    """
    from oper8d.manifests.package import (
        DEFAULT_IMAGE,
        InstallOptions,
        operator_manifests,
        render_stream,
        write_folder,
    )
    from oper8d.manifests.rbac import required_permissions

    b = load_bundle_or_exit(bundle)
    options = InstallOptions(
        namespace=namespace,
        image=image or DEFAULT_IMAGE,
        watch_namespaces=tuple(sorted(set(watch_namespaces))),
        bundle_from=bundle_from,  # type: ignore[arg-type]
        extra_kinds=extra_kinds,
        sharding=sharding,
        replicas=replicas if replicas is not None else (3 if sharding else 2),
    )
    try:
        objects = operator_manifests(b, options)
    except BundleError as err:
        fail(err.problems, bundle_dir(bundle), code=EXIT_INVALID)
    for note in required_permissions(b, extra_kinds=extra_kinds).notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    if output_dir is None:
        click.echo(render_stream(objects), nl=False)
        return
    written = write_folder(objects, Path(output_dir))
    click.echo(
        f"wrote {len(written)} files to {output_dir} "
        f"(apply them with: kubectl apply -k {output_dir})",
        err=True,
    )
