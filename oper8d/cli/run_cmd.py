"""``oper8d run``: the operator on a real cluster, or ``--dry-run`` on the in-memory one.

The click command object ``run`` is registered on the ``oper8d`` group by ``cli/main.py``.
The flags that configure the manager take their defaults from ``ManagerOptions``, so the
command and the library agree on them. A dry run imports nothing from the kubernetes
client; the real run connects through ``cli/run_cluster.py``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import click

from oper8d.cli.inputs import (
    CR_FILE,
    EXIT_INVALID,
    bundle_argument,
    bundle_dir,
    cr_problems,
    fail,
    load_bundle_or_exit,
    load_cr_or_exit,
    locate,
    report,
    warn,
)
from oper8d.cli.schemas import schema_options
from oper8d.errors import Oper8dError, ReconcileError
from oper8d.kinds import DNS_LABEL
from oper8d.runtime.options import ManagerOptions

__all__ = ["run"]


def _default(name: str) -> Any:
    """``ManagerOptions``' default for the field ``name``."""
    return next(f.default for f in dataclasses.fields(ManagerOptions) if f.name == name)


def _namespace_names(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    """Each --namespace must be a namespace name: an empty one (an unset $WATCH_NS) would
    watch every namespace, a malformed one would be retried forever."""
    for value in values:
        if not DNS_LABEL.fullmatch(value) or len(value) > 63:
            raise click.BadParameter(
                f"{value!r} is not a namespace name (lowercase letters, digits and '-', at "
                "most 63 characters); leave --namespace out to watch all namespaces"
            )
    return values


@click.command(short_help="Run the operator on a cluster, or --dry-run on the in-memory one.")
@bundle_argument
@click.option(
    "--cr", "cr_path", type=CR_FILE, metavar="FILE", help="With --dry-run: the CR to reconcile."
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Reconcile the CR against the embedded in-memory cluster (readiness simulated) "
    "and show the rollout pass by pass.",
)
@click.option(
    "--max-reconciles",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Dry run: give up after this many reconcile passes.",
)
@click.option(
    "--ready-after",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="Dry run: simulated workloads become ready this many passes after each change "
    "(0: at once).",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    envvar="KUBECONFIG",
    help="Kubeconfig file (default: $KUBECONFIG, in-cluster config inside a Pod, ~/.kube/config).",
)
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    callback=_namespace_names,
    help="Watch only this namespace (repeat for several; default: all namespaces).",
)
@click.option("--leader-elect", is_flag=True, help="Only the Lease holder reconciles.")
@click.option(
    "--leader-election-namespace",
    default=_default("leader_election_namespace"),
    show_default=True,
    envvar="POD_NAMESPACE",
    help="Namespace of the leader-election Lease.",
)
@click.option(
    "--leader-election-id",
    default=_default("leader_election_id"),
    help="Name of the leader-election Lease (default: <bundle name>-oper8d); give each "
    "namespace shard its own.",
)
@click.option(
    "--lease-duration",
    default=_default("lease_duration"),
    show_default=True,
    type=click.FloatRange(min=1),
    help="Leader election: seconds a Lease is valid without renewal.",
)
@click.option(
    "--renew-deadline",
    default=_default("renew_deadline"),
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Leader election: a leader that cannot renew for this long stops.",
)
@click.option(
    "--retry-period",
    default=_default("retry_period"),
    show_default=True,
    type=click.FloatRange(min=0.05),
    help="Leader election: seconds between acquire/renew attempts.",
)
@click.option(
    "--sharding",
    is_flag=True,
    help="Share the CRs with the other replicas of the shard group: each replica holds a "
    "Lease (in --leader-election-namespace, with the Lease timings above) and reconciles "
    "only its hash slice. Excludes --leader-elect.",
)
@click.option(
    "--shard-key",
    type=click.Choice(["namespace", "uid"]),
    default=_default("shard_key"),
    show_default=True,
    help="Sharding: hash a CR's namespace (a CR and what it owns land together) or its uid.",
)
@click.option(
    "--shard-group",
    default=_default("shard_group"),
    help="Sharding: the group's name, prefix of its Leases (default: <bundle name>-oper8d-shards).",
)
@click.option(
    "--metrics-bind-address",
    default=_default("metrics_bind_address"),
    show_default=True,
    help="host:port of /metrics ('0' to turn it off).",
)
@click.option(
    "--health-probe-bind-address",
    default=_default("health_probe_bind_address"),
    show_default=True,
    help="host:port of /healthz and /readyz ('0' to turn them off).",
)
@click.option(
    "--resync-period",
    default=_default("resync_period"),
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Every this many seconds, every cached CR and owned object is handed to the "
    "controllers again, as controller-runtime's SyncPeriod (a CR whose inputs did not change "
    "is skipped at little cost); 0 turns it off.",
)
@click.option(
    "--max-concurrent-reconciles",
    default=_default("max_concurrent_reconciles"),
    show_default=True,
    type=click.IntRange(min=1),
    help="CRs of one controller reconciled at the same time.",
)
@click.option(
    "--replace-on-invalid",
    is_flag=True,
    help="When the API server refuses a server-side apply as invalid (422), PUT the object.",
)
@click.option(
    "--install-crds",
    is_flag=True,
    help="Create or update the bundle's CRDs (and the TemporaryPatch CRD, when the bundle "
    "turns temporary patches on) before starting.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Log line format.",
)
@schema_options
def run(
    bundle: str,
    cr_path: str | None,
    dry_run: bool,
    max_reconciles: int,
    ready_after: int,
    kubeconfig: str | None,
    namespaces: tuple[str, ...],
    leader_elect: bool,
    leader_election_namespace: str,
    leader_election_id: str | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    sharding: bool,
    shard_key: str,
    shard_group: str | None,
    metrics_bind_address: str,
    health_probe_bind_address: str,
    resync_period: float,
    max_concurrent_reconciles: int,
    replace_on_invalid: bool,
    install_crds: bool,
    log_format: str,
    crd_dirs: tuple[str, ...],
    kube_schemas: str | None,
) -> None:
    """Run the operator.

    Without --dry-run: connect to the cluster (kubeconfig or in-cluster config), watch the
    bundle's CRs and the objects they own, and reconcile them until SIGTERM/SIGINT.

    With --dry-run: reconcile one CR on the embedded in-memory cluster, print each
    component's state changes per pass, then the CR's conditions; exit 0 when the CR
    ends Ready, 1 when it does not.
    """
    if not dry_run:
        from oper8d.cli.run_cluster import run_on_cluster

        if sharding and leader_elect:
            raise click.UsageError("--sharding and --leader-elect exclude each other")
        options = ManagerOptions(
            namespaces=namespaces,
            max_concurrent_reconciles=max_concurrent_reconciles,
            replace_on_invalid=replace_on_invalid,
            leader_elect=leader_elect,
            leader_election_namespace=leader_election_namespace,
            leader_election_id=leader_election_id,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            sharding=sharding,
            shard_key=shard_key,
            shard_group=shard_group,
            metrics_bind_address=_endpoint(metrics_bind_address),
            health_probe_bind_address=_endpoint(health_probe_bind_address),
            resync_period=resync_period or None,
        )
        b = load_bundle_or_exit(bundle)
        from oper8d.cli.schemas import schemas_for

        options.schemas = schemas_for(b, crd_dirs, kube_schemas)
        sys.exit(
            run_on_cluster(
                b, options, kubeconfig=kubeconfig, install_crds=install_crds, log_format=log_format
            )
        )
    if not cr_path:
        raise click.UsageError("--dry-run needs --cr FILE (the CR to reconcile)")
    from oper8d.cli.progress import LineProgress
    from oper8d.cli.schemas import schemas_for
    from oper8d.cli.summary import print_summary
    from oper8d.cluster.memory.simulate import DefaultSimulator
    from oper8d.offline import reconcile_offline

    b = load_bundle_or_exit(bundle)
    cr = load_cr_or_exit(cr_path)
    schemas = schemas_for(b, crd_dirs, kube_schemas)
    problems, fatal = cr_problems(b, cr, schemas)
    if fatal:  # no reconcile can start, or the API server would not store the CR
        fail(problems, hint=f"the dry run stopped before creating the CR: fix {cr_path}")
    if problems:  # the reconciler refuses the CR too: the run shows it in the status
        report(problems)
    meta = cr.data["metadata"]
    click.echo(
        f"dry run: {cr.data['kind']} {meta.get('namespace', 'default')}/{meta['name']} "
        f"with operator '{b.name}'{f' {b.operator_version}' if b.operator_version else ''} "
        "on the in-memory cluster"
    )
    width = max((len(c.name) for ctl in b.controllers for c in ctl.components), default=8)
    progress = LineProgress(width=width, ascii_only=not _can_print("↑✓✗…∅"))
    elapsed = [0.0]

    def start_pass(number: int, seconds: float) -> None:
        elapsed[0] = seconds
        progress.start_pass(number, seconds)

    try:
        outcome = reconcile_offline(
            b,
            cr.data,
            max_reconciles=max_reconciles,
            progress=progress,
            # one at a time: the components of one wave report in the bundle's order, so the
            # report is the same in every run (bundle-format.md: offline runs are
            # deterministic); with workers they reported in the order they finished
            max_workers=1,
            simulator=DefaultSimulator(delay_writes=ready_after),
            on_pass=start_pass,
            schemas=schemas,
        )
    except ReconcileError as err:
        fail([locate(err, bundle, cr)])
    except Oper8dError as err:
        fail([str(err)])
    print_summary(outcome, max_reconciles=max_reconciles, seconds=elapsed[0])
    warn(
        [dataclasses.replace(w, message=outcome.redact(w.message)) for w in outcome.warnings],
        bundle_dir(bundle),
    )
    sys.exit(0 if outcome.ready else EXIT_INVALID)


def _endpoint(address: str) -> str | None:
    """ "0" (or "") turns an HTTP endpoint off, as controller-runtime's flags do."""
    return None if address in ("", "0") else address


def _can_print(text: str) -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
