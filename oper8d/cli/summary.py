"""The end-of-run report of ``oper8d run --dry-run``: the CR's conditions and components."""

from __future__ import annotations

from typing import Any

import click

from oper8d.errors import Problem
from oper8d.offline import OfflineRun


def print_summary(run: OfflineRun, problems: list[Problem]) -> None:
    status: dict[str, Any] = run.cr.get("status") or {}
    click.echo("")
    for p in problems:
        click.secho(f"error: {p}", fg="red", err=True)
    for cond in status.get("conditions", []):
        ok = (cond["type"] == "Ready") == (cond["status"] == "True")
        click.echo(
            f"{cond['type']:<9} {click.style(cond['status'], fg='green' if ok else 'yellow')}"
            f"  {cond.get('reason', '')}: {cond.get('message', '')}"
        )
    comp = status.get("componentStatus") or {}
    if comp:
        click.echo(f"deployed {comp.get('deployed', '?')}, verified {comp.get('verified', '?')}")
        for w in comp.get("waiting", []) or []:
            click.echo(f"  waiting: {w.get('component')}: {w.get('reason')}")
        for f in comp.get("failedComponents", []) or []:
            click.secho(f"  failed: {f}", fg="red")
    reconciled = (status.get("versions") or {}).get("reconciled")
    if reconciled is not None:
        click.echo(f"versions.reconciled: {reconciled}")
    if run.cluster is not None:
        click.echo(
            f"{len(run.results)} reconcile(s); API requests: "
            + ", ".join(f"{k}={v}" for k, v in sorted(run.cluster.requests.items()))
        )
    verdict = "Ready" if run.ready else "not Ready"
    click.secho(
        f"{run.cr['kind']} {run.cr['metadata'].get('namespace', '')}/{run.cr['metadata']['name']}:"
        f" {verdict}",
        fg="green" if run.ready else "red",
        bold=True,
    )
