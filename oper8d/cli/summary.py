"""The end of ``oper8d run --dry-run``: the CR's conditions and components, and a verdict.

The last line is the verdict (``<Kind> <ns>/<name>: Ready``, or ``not Ready`` with what
to do next), so a script can read it with ``tail -1``.
"""

from __future__ import annotations

from typing import Any

import click

from oper8d.cli.progress import format_seconds
from oper8d.offline import OfflineRun

__all__ = ["print_summary", "verdict"]


def print_summary(run: OfflineRun, *, max_reconciles: int, seconds: float) -> None:
    status: dict[str, Any] = run.cr.get("status") or {}
    click.echo("")
    conditions = status.get("conditions") or []
    width = max((len(str(c.get("type"))) for c in conditions), default=0)
    for cond in conditions:
        # Ready is healthy when True; Updating, Reconciling, Stalled when False
        healthy = (cond.get("type") == "Ready") == (cond.get("status") == "True")
        reason, message = cond.get("reason", ""), cond.get("message", "")
        click.echo(
            f"{cond.get('type'):<{width}}  "
            + click.style(f"{cond.get('status'):<5}", fg="green" if healthy else "yellow")
            + f"  {reason}"
            + (f": {message}" if message else "")
        )
    comp = status.get("componentStatus") or {}
    if comp:
        deployed, verified = comp.get("deployed", "?"), comp.get("verified", "?")
        click.echo(f"components: deployed {deployed}, verified {verified}")
        for failed in comp.get("failedComponents", []) or []:
            click.secho(f"  failed: {failed}", fg="red")
        for waiting in comp.get("waiting", []) or []:
            click.echo(f"  waiting: {waiting.get('component')}: {waiting.get('reason')}")
    reconciled = (status.get("versions") or {}).get("reconciled")
    if reconciled is not None:
        click.echo(f"versions.reconciled: {reconciled}")
    passes = len(run.results)
    requests = ", ".join(f"{k}={v}" for k, v in sorted(run.cluster.requests.items()))
    click.echo(
        f"{passes} reconcile{'s' if passes != 1 else ''} over {format_seconds(seconds)} "
        f"of simulated time; API requests: {requests}"
    )
    click.secho(verdict(run, max_reconciles), fg="green" if run.ready else "red", bold=True)


def verdict(run: OfflineRun, max_reconciles: int) -> str:
    meta = run.cr["metadata"]
    who = f"{run.cr['kind']} {meta.get('namespace') + '/' if meta.get('namespace') else ''}"
    who += meta["name"]
    if run.ready:
        return f"{who}: Ready"
    if run.paused:
        return f"{who}: not reconciled (paused by annotation oper8.org/pause-execution)"
    if run.fatal_error is not None:
        reason = type(run.fatal_error).__name__
        return f"{who}: not Ready ({reason}: fix the CR or the bundle, then run again)"
    failed = ((run.cr.get("status") or {}).get("componentStatus") or {}).get("failedComponents")
    if failed:
        return f"{who}: not Ready (failed: {', '.join(failed)}; see why above)"
    if len(run.results) >= max_reconciles:
        return (
            f"{who}: not Ready after {max_reconciles} reconciles (the --max-reconciles limit); "
            "see what it waits for above"
        )
    return f"{who}: not Ready"
