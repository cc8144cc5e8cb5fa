"""``oper8d`` commands: validate, render, graph, run.

Every command prints what is wrong with its input as ``file:line:col: message`` (for a
CR: ``file:line:col: spec.field: message``) on stderr and exits 1, never with a
traceback; usage errors exit 2. ``validate``, ``render`` and ``graph`` do not import the
kubernetes client (a test checks ``sys.modules``), so they start fast and run anywhere;
each command imports what it needs when it runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from oper8d import __version__
from oper8d.cli.inputs import (
    EXIT_INVALID,
    cr_problems,
    fail,
    load_bundle_or_exit,
    load_cr_or_exit,
    locate,
    report,
)
from oper8d.errors import Oper8dError, ReconcileError

if TYPE_CHECKING:
    pass

_BUNDLE = click.argument("bundle", type=click.Path(exists=True), metavar="BUNDLE")
_CR_TYPE = click.Path(exists=True, dir_okay=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(version=__version__, prog_name="oper8d")
@click.option(
    "--limit",
    "limits",
    multiple=True,
    metavar="NAME=VALUE",
    envvar="OPER8D_LIMIT",
    help="Raise a resource limit, e.g. --limit templateSeconds=30 --limit crBytes=3Mi "
    "(repeatable; also OPER8D_LIMIT, space-separated). See docs/security.md.",
)
@click.pass_context
def main(ctx: click.Context, limits: tuple[str, ...]) -> None:
    """oper8d: Kubernetes operators written as YAML bundles.

    BUNDLE is a folder with an operator.yaml (see docs/bundle-format.md).

    \b
    Quick start:
      oper8d validate examples/operators/webapp
      oper8d render   examples/operators/webapp --cr examples/operators/webapp/samples/webapp.yaml
      oper8d graph    examples/operators/stateful --format mermaid
      oper8d run      examples/operators/stateful --dry-run \\
                      --cr examples/operators/stateful/samples/notes.yaml
    """
    from oper8d.limits import Limits, parse_limit_overrides

    try:
        ctx.obj = parse_limit_overrides(limits, Limits())
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--limit") from None


@main.command()
@_BUNDLE
@click.option(
    "--cr",
    "cr_path",
    type=_CR_TYPE,
    metavar="FILE",
    help="Also check this CR: that the bundle has a controller for it and that its spec "
    "matches the schema.",
)
def validate(bundle: str, cr_path: str | None) -> None:
    """Check a bundle, and optionally a CR, without running anything.

    Prints every problem found, one a line, as file:line:col: message, and exits 1;
    prints a one-line summary and exits 0 when there is none.
    """
    b = load_bundle_or_exit(bundle)
    n = sum(len(c.components) for c in b.controllers)
    counts = f"{_plural(len(b.controllers), 'controller')}, {_plural(n, 'component')}"
    summary = f"ok: bundle '{b.name}': {counts}"
    if cr_path:
        cr = load_cr_or_exit(cr_path)
        problems, _fatal = cr_problems(b, cr)
        if problems:
            fail(problems, hint=f"{_plural(len(problems), 'problem')} in CR {cr_path}")
        summary += f"; CR {cr.data['metadata']['name']} matches the {cr.data['kind']} schema"
    click.echo(summary)


@main.command()
@_BUNDLE
@click.option(
    "--cr", "cr_path", required=True, type=_CR_TYPE, metavar="FILE", help="The CR to render for."
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write one file per object (NNN-<internal name>.yaml) and deletions.txt into DIR, "
    "replacing those an earlier render wrote there, instead of one YAML stream on stdout.",
)
def render(bundle: str, cr_path: str, output_dir: str | None) -> None:
    """Print every object the operator would apply for a CR: offline, deterministic.

    Runs the real reconcile against an in-memory cluster (readiness simulated) until the
    CR is stable, so live() lookups and dependency edges behave as in a cluster. The same
    input always gives byte-identical output: commit it and diff it in CI. Objects of
    disabled components are listed as `# would delete ...` lines at the end.
    """
    from oper8d.offline import reconcile_offline, why_incomplete, would_delete
    from oper8d.render_output import render_stream, write_folder

    b = load_bundle_or_exit(bundle)
    cr = load_cr_or_exit(cr_path)
    problems, _fatal = cr_problems(b, cr)
    if problems:
        fail(problems, hint=f"fix the CR ({cr_path}) and render again")
    try:
        run = reconcile_offline(b, cr.data)
    except ReconcileError as err:
        fail([locate(err, bundle, cr)])
    except Oper8dError as err:
        fail([str(err)])
    if run.fatal_error is not None:
        failed = run.last.rollout.summary.failed if run.last.rollout else ()
        hint = None
        if len(failed) > 1:
            hint = (
                f"failed components: {', '.join(failed)} (the first error is shown; "
                f"`oper8d run {bundle} --dry-run --cr {cr_path}` shows each)"
            )
        fail([locate(run.fatal_error, bundle, cr)], hint=hint)
    deletions = would_delete(b, run)
    incomplete = None if run.stable else why_incomplete(run)
    if output_dir:
        written = write_folder(Path(output_dir), list(run.applied.items()), deletions)
        click.echo(f"wrote {_plural(len(written), 'file')} to {output_dir}", err=True)
        if incomplete:
            click.secho(f"warning: not complete: {incomplete}", fg="yellow", err=True)
        return
    click.echo(render_stream(list(run.applied.values()), deletions, incomplete), nl=False)


@main.command()
@_BUNDLE
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "mermaid", "dot"]),
    default="text",
    show_default=True,
    help="mermaid: paste into Markdown; dot: pipe into `dot -Tsvg`.",
)
def graph(bundle: str, fmt: str) -> None:
    """Show each controller's component graph.

    Edges come from dependsOn (with their `when` conditions) and from live() calls in
    templates; those inferred edges are marked (inferred) in text and dashed in
    mermaid and dot.
    """
    from oper8d.cli.graphs import render_graph

    click.echo(render_graph(load_bundle_or_exit(bundle), fmt), nl=False)


@main.command(short_help="Run the operator on a cluster, or --dry-run on the in-memory one.")
@_BUNDLE
@click.option(
    "--cr", "cr_path", type=_CR_TYPE, metavar="FILE", help="With --dry-run: the CR to reconcile."
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
    help="Watch only this namespace (repeat for several; default: all namespaces).",
)
@click.option("--leader-elect", is_flag=True, help="Only the Lease holder reconciles.")
@click.option(
    "--leader-election-namespace",
    default="default",
    show_default=True,
    envvar="POD_NAMESPACE",
    help="Namespace of the leader-election Lease.",
)
@click.option(
    "--leader-election-id",
    default=None,
    help="Name of the leader-election Lease (default: <bundle name>-oper8d); give each "
    "namespace shard its own.",
)
@click.option(
    "--lease-duration",
    default=15.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Leader election: seconds a Lease is valid without renewal.",
)
@click.option(
    "--renew-deadline",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Leader election: a leader that cannot renew for this long stops.",
)
@click.option(
    "--retry-period",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=0.05),
    help="Leader election: seconds between acquire/renew attempts.",
)
@click.option(
    "--metrics-bind-address",
    default=":8080",
    show_default=True,
    help="host:port of /metrics ('0' to turn it off).",
)
@click.option(
    "--health-probe-bind-address",
    default=":8081",
    show_default=True,
    help="host:port of /healthz and /readyz ('0' to turn them off).",
)
@click.option(
    "--max-concurrent-reconciles",
    default=4,
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
    help="Create or update the bundle's CRDs (and the TemporaryPatch CRD) before starting.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Log line format.",
)
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
    metrics_bind_address: str,
    health_probe_bind_address: str,
    max_concurrent_reconciles: int,
    replace_on_invalid: bool,
    install_crds: bool,
    log_format: str,
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
        from oper8d.runtime.manager import ManagerOptions

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
            metrics_bind_address=_endpoint(metrics_bind_address),
            health_probe_bind_address=_endpoint(health_probe_bind_address),
        )
        b = load_bundle_or_exit(bundle)
        sys.exit(
            run_on_cluster(
                b, options, kubeconfig=kubeconfig, install_crds=install_crds, log_format=log_format
            )
        )
    if not cr_path:
        raise click.UsageError("--dry-run needs --cr FILE (the CR to reconcile)")
    from oper8d.cli.progress import LineProgress
    from oper8d.cli.summary import print_summary
    from oper8d.cluster.simulate import DefaultSimulator
    from oper8d.offline import reconcile_offline

    b = load_bundle_or_exit(bundle)
    cr = load_cr_or_exit(cr_path)
    problems, fatal = cr_problems(b, cr)
    if fatal:
        fail(problems)
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
            max_workers=4,
            simulator=DefaultSimulator(delay_writes=ready_after),
            on_pass=start_pass,
        )
    except ReconcileError as err:
        fail([locate(err, bundle, cr)])
    except Oper8dError as err:
        fail([str(err)])
    print_summary(outcome, max_reconciles=max_reconciles, seconds=elapsed[0])
    sys.exit(0 if outcome.ready else EXIT_INVALID)


def _endpoint(address: str) -> str | None:
    """ "0" (or "") turns an HTTP endpoint off, as controller-runtime's flags do."""
    return None if address in ("", "0") else address


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _can_print(text: str) -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


# Commands kept in their own modules (imported lazily where they need the kubernetes client)
from oper8d.cli.diff_cmd import diff as diff_command  # noqa: E402
from oper8d.cli.init_cmd import init as init_command  # noqa: E402
from oper8d.cli.manifests_cmd import manifests as manifests_command  # noqa: E402
from oper8d.cli.test_cmd import test as test_command  # noqa: E402

main.add_command(diff_command)
main.add_command(test_command)
main.add_command(init_command)
main.add_command(manifests_command)


if __name__ == "__main__":  # pragma: no cover
    main()
