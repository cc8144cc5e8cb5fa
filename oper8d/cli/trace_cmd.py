"""``oper8d trace BUNDLE KIND/NAME``: a live CR's components in dependency order, each
object with its readiness and why, field managers, ages, the last error, and during a
deletion what holds it; like ``crossplane beta trace``.

Registered in ``cli/main.py``; the tree is built by ``oper8d.trace`` (GET and LIST
requests only) and printed by ``cli/trace_view.py``. Exit status: 0 when the trace was
shown (whatever the CR's state; Ctrl-C ends ``--watch`` with 0 too), 1 when it could not
be (unknown kind, no such CR, no cluster), with one line on stderr and never a traceback.
The kubernetes client is imported only when the command runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import click

from oper8d.cli.inputs import EXIT_INVALID, bundle_argument, fail, load_bundle_or_exit
from oper8d.errors import ClusterError

if TYPE_CHECKING:
    from oper8d.bundle.model import Bundle, ControllerSpec
    from oper8d.clock import Clock
    from oper8d.cluster.base import ClusterReader
    from oper8d.trace import Trace

__all__ = ["show", "trace"]

#: clear the screen and go home: each ``--watch`` frame on a terminal replaces the last
CLEAR = "\x1b[H\x1b[2J"
#: between two frames of ``--watch`` when stdout is not a terminal
_FRAME_SEPARATOR = {"text": "\n", "wide": "\n", "json": "", "yaml": "---\n"}


@click.command(name="trace", short_help="Show a live CR's components, objects and readiness.")
@bundle_argument
@click.argument("target", metavar="KIND/NAME")
@click.argument("name", required=False, metavar="[NAME]")
@click.option(
    "-n",
    "--namespace",
    metavar="NS",
    help="The CR's namespace (default: the kubeconfig context's, else default).",
)
@click.option(
    "-o",
    "--output",
    "fmt",
    type=click.Choice(["wide", "json", "yaml"]),
    help="wide: also field managers, finalizers and uids; json, yaml: the whole trace "
    "(docs/reference.md, Trace output).",
)
@click.option(
    "-w", "--watch", is_flag=True, help="Keep showing the trace as it changes; Ctrl-C ends."
)
@click.option(
    "--interval",
    type=click.FloatRange(0.5, 60),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often --watch reads the cluster.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    envvar="KUBECONFIG",
    help="Kubeconfig file (default: $KUBECONFIG, in-cluster config inside a Pod, ~/.kube/config).",
)
def trace(
    bundle: str,
    target: str,
    name: str | None,
    namespace: str | None,
    fmt: str | None,
    watch: bool,
    interval: float,
    kubeconfig: str | None,
) -> None:
    """Show a live CR: its components in dependency order, each object's readiness.

    KIND is the CR's kind, plural, singular or short name as the bundle defines it
    (`webapp/hello`, `WebApp hello`, `wa/hello`). Each component is rendered as the
    operator's next reconcile would render it (reading the live cluster) and each object
    judged by the operator's own readiness rules; objects the CR owns that are not
    rendered now are listed too. While the CR is being deleted, the trace shows what is
    left and what holds the deletion (finalizers, objects still there).

    Read-only: the command sends GET and LIST requests, nothing else.
    """
    kind_text, cr_name = _target(target, name)
    b = load_bundle_or_exit(bundle)
    from oper8d.trace import UnknownKind, find_controller

    try:
        controller = find_controller(b, kind_text)
    except UnknownKind as err:
        fail([str(err)])

    from oper8d.cli.run_cluster import api_client, context_namespace
    from oper8d.clock import SystemClock
    from oper8d.cluster.kube import KubeCluster

    try:
        client = api_client(kubeconfig)
    except Exception as err:  # the kubernetes config loaders raise several types
        fail([f"cannot load cluster credentials: {err}"])
    stdout = sys.stdout
    try:
        code = show(
            b,
            controller,
            KubeCluster(client, field_manager=b.name),
            cr_name,
            namespace or context_namespace(kubeconfig),
            fmt or "text",
            watch=watch,
            interval=interval,
            clock=SystemClock(),
            out=stdout,
            tty=stdout.isatty(),
        )
    finally:
        close = getattr(client, "close", None)
        if callable(close):
            close()
    sys.exit(code)


def _target(target: str, name: str | None) -> tuple[str, str]:
    """(KIND, NAME) from ``KIND/NAME`` or ``KIND NAME``."""
    kind, slash, rest = target.partition("/")
    if slash and name is None and kind and rest and "/" not in rest:
        return kind, rest
    if not slash and name:
        return target, name
    fail(
        [f"expected KIND/NAME or KIND NAME, got {' '.join(filter(None, (target, name)))!r}"],
        hint="e.g. oper8d trace examples/operators/webapp webapp/hello -n default",
        code=2,
    )


def show(
    bundle: Bundle,
    controller: ControllerSpec,
    reader: ClusterReader,
    name: str,
    namespace: str,
    fmt: str,
    *,
    watch: bool,
    interval: float,
    clock: Clock,
    out: TextIO,
    tty: bool,
) -> int:
    """Print the trace of CR ``name`` to ``out`` (with ``watch``: again every ``interval``
    seconds, until Ctrl-C or the CR is gone); the exit status."""
    from oper8d.trace import trace_cr

    kind = controller.resource
    where = f"{kind.kind} {namespace}/{name}" if kind.namespaced else f"{kind.kind} {name}"

    def look() -> Trace | None:
        return trace_cr(bundle, controller, reader, name, namespace, now=clock.now())

    try:
        first = look()
    except ClusterError as err:
        return _cluster_error(err)
    except KeyboardInterrupt:
        return 0
    if first is None:
        click.secho(f"error: {where} not found", fg="red", err=True)
        return EXIT_INVALID
    if not watch:
        out.write(_formatted(first, fmt))
        return 0
    try:
        _watch(first, look, fmt, where, interval=interval, clock=clock, out=out, tty=tty)
    except KeyboardInterrupt:
        out.write("\n" if tty else "")
    out.flush()
    return 0


def _watch(
    first: Trace,
    look: Callable[[], Trace | None],
    fmt: str,
    where: str,
    *,
    interval: float,
    clock: Clock,
    out: TextIO,
    tty: bool,
) -> None:
    """Frames until the CR is gone. On a terminal each frame replaces the last (ages move
    on); elsewhere a frame is printed when something but the time changed."""
    current: Trace | str | None = first
    shown: str | None = None
    while True:
        if current is None:
            out.write(f"{where} is gone\n")
            out.flush()
            return
        text = current if isinstance(current, str) else _formatted(current, fmt)
        key = current if isinstance(current, str) else _without_time(current)
        if tty:
            out.write(CLEAR + text)
        elif key != shown:
            out.write((_FRAME_SEPARATOR[fmt] if shown is not None else "") + text)
        shown = key
        out.flush()
        clock.sleep(interval)
        try:
            current = look()
        except ClusterError as err:  # shown in the frame, and tried again
            current = f"error: {err.message} (trying again every {interval:g}s)\n"


def _formatted(trace: Trace, fmt: str) -> str:
    from oper8d.cli.trace_view import format_trace

    return format_trace(trace, fmt)


def _without_time(trace: Trace) -> str:
    data = trace.to_data()
    data.pop("observedAt")
    return json.dumps(data, sort_keys=True)


def _cluster_error(err: ClusterError) -> int:
    message = err.message
    if err.status is None:
        message += "; is the cluster reachable? (check --kubeconfig)"
    elif err.status == 404:
        message += "; is the CRD installed? (oper8d manifests, or run --install-crds)"
    click.secho(f"error: {message}", fg="red", err=True)
    return EXIT_INVALID
