"""``oper8d diff BUNDLE --cr FILE``: what the operator would change in a cluster for a CR,
as a unified diff, like ``kubectl diff --server-side``.

Registered in ``cli/main.py``; the logic is ``oper8d.diff``. Exit status as kubectl's:
0 no differences, 1 differences, 2 an error (bad bundle or CR, a template that fails, an
unreachable cluster, an object the server refuses): errors are printed as messages on
stderr, never as tracebacks. The kubernetes client is imported only when the command runs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from oper8d.cli.inputs import (
    CR_FILE,
    EXIT_INVALID,
    EXIT_USAGE,
    bundle_argument,
    cr_problems,
    fail,
    load_bundle_or_exit,
    load_cr_or_exit,
    locate,
)
from oper8d.errors import ClusterError, Oper8dError, ReconcileError

if TYPE_CHECKING:
    from oper8d.diff import DiffReport

__all__ = ["EXIT_DIFFERENCES", "EXIT_ERROR", "EXIT_SAME", "diff"]

EXIT_SAME = 0
EXIT_DIFFERENCES = 1
EXIT_ERROR = 2


@click.command(name="diff", short_help="Show what the operator would change in a cluster.")
@bundle_argument
@click.option(
    "--cr",
    "cr_path",
    required=True,
    type=CR_FILE,
    metavar="FILE",
    help="The CR as you would apply it.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    envvar="KUBECONFIG",
    help="Kubeconfig file (default: $KUBECONFIG, in-cluster config inside a Pod, ~/.kube/config).",
)
def diff(bundle: str, cr_path: str, kubeconfig: str | None) -> None:
    """Diff the live objects against what the operator would make of them for a CR.

    Renders the objects as `oper8d render` does (for the CR's namespace, with the live
    CR's uid when it exists), asks the API server for a dry run of each server-side apply
    (field manager: the bundle name) and prints a unified diff of each live object
    against that result. New objects are diffs from /dev/null; owned objects the
    operator would delete (disabled or removed components) are diffs to /dev/null.
    Status and server-managed metadata are left out; Secret values are masked.

    Exits 0 when nothing would change, 1 when something would, 2 on errors.
    """
    with _input_errors_exit(EXIT_ERROR):
        b = load_bundle_or_exit(bundle)
        cr = load_cr_or_exit(cr_path)
    problems, _fatal = cr_problems(b, cr)
    if problems:
        fail(problems, hint=f"fix the CR ({cr_path}) and diff again", code=EXIT_ERROR)

    from oper8d.cli.run_cluster import api_client, context_namespace
    from oper8d.cli.schemas import schemas_for
    from oper8d.cluster.kube import KubeCluster
    from oper8d.diff import diff_cr

    try:
        client = api_client(kubeconfig)
    except Exception as err:  # the kubernetes config loaders raise several types
        fail([f"cannot load cluster credentials: {err}"], code=EXIT_ERROR)
    try:
        report = diff_cr(
            b,
            cr.data,
            KubeCluster(client, field_manager=b.name),
            namespace=context_namespace(kubeconfig),
            schemas=schemas_for(b),
        )
    except ClusterError as err:
        hint = "is the cluster reachable? (check --kubeconfig)" if err.status is None else None
        fail([err.message], hint=hint, code=EXIT_ERROR)
    except ReconcileError as err:
        fail([locate(err, bundle, cr)], code=EXIT_ERROR)
    except Oper8dError as err:
        fail([str(err)], code=EXIT_ERROR)
    finally:
        _close(client)
    sys.exit(_print_report(report))


def _print_report(report: DiffReport) -> int:
    """The diff on stdout, warnings and errors on stderr; returns the exit status."""
    for warning in report.warnings:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    click.echo(report.text, nl=False)
    for error in report.errors:
        click.secho(f"error: {error}", fg="red", err=True)
    if report.errors:
        return EXIT_ERROR
    return EXIT_DIFFERENCES if report.changed else EXIT_SAME


@contextmanager
def _input_errors_exit(code: int) -> Iterator[None]:
    """The input loaders exit with EXIT_INVALID (1), which here means "differences":
    turn it into ``code``."""
    try:
        yield
    except SystemExit as exit_:
        if exit_.code in (EXIT_INVALID, EXIT_USAGE):
            raise SystemExit(code) from None
        raise


def _close(client: Any) -> None:
    close = getattr(client, "close", None)
    if callable(close):
        close()
