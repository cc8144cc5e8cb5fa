"""The ``oper8d`` command group and its small commands: validate, render, graph.

Every command prints what is wrong with its input as ``file:line:col: message`` (for a
CR: ``file:line:col: spec.field: message``) on stderr and exits 1, never with a
traceback; usage errors exit 2. ``validate``, ``render`` and ``graph`` do not import the
kubernetes client (a test checks ``sys.modules``), so they start fast and run anywhere;
each command imports what it needs when it runs.
"""

from __future__ import annotations

import gc
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from oper8d import __version__
from oper8d.cli.inputs import (
    CR_FILE,
    bundle_argument,
    bundle_dir,
    cr_problems,
    fail,
    load_bundle_or_exit,
    load_cr_or_exit,
    load_objects_or_exit,
    locate,
    warn,
)
from oper8d.cli.process import BOUNDED_COMMANDS, ProcessRun
from oper8d.cli.schemas import schema_options
from oper8d.errors import Oper8dError, ReconcileError
from oper8d.limits import bounded_work

if TYPE_CHECKING:
    from oper8d.bundle.model import Bundle
    from oper8d.offline import OfflineRun

#: commands kept in their own modules, imported the first time they are looked up (a
#: render does not load the controller's options, the test runner or the scaffolding)
_LAZY_COMMANDS = {
    "run": "oper8d.cli.run_cmd:run",
    "diff": "oper8d.cli.diff_cmd:diff",
    "trace": "oper8d.cli.trace_cmd:trace",
    "test": "oper8d.cli.test_cmd:test",
    "init": "oper8d.cli.init_cmd:init",
    "manifests": "oper8d.cli.manifests_cmd:manifests",
}


class _Commands(dict[str, click.Command]):
    """The group's commands by name; those of ``_LAZY_COMMANDS`` imported on lookup."""

    def __missing__(self, name: str) -> click.Command:
        if name not in _LAZY_COMMANDS:
            raise KeyError(name)
        module, attribute = _LAZY_COMMANDS[name].split(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        self[name] = command
        return command


class _Group(click.Group):
    """A command group whose ``--help`` lists the lazy commands too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        try:
            return self.commands[cmd_name]
        except KeyError:
            return None


@click.group(
    cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
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

    if isinstance(ctx.obj, ProcessRun):  # the process entry: tell it what runs
        ctx.obj.command = ctx.invoked_subcommand
    if ctx.invoked_subcommand in BOUNDED_COMMANDS:
        # No GC passes while it works, and the collector stays as it was on entry: off
        # when ``python -m oper8d`` loaded the commands without it (the process then ends
        # without turning it on, since a pass over every imported object, ~8 ms, would
        # free nothing), on in-process runs (tests).
        ctx.with_resource(bounded_work())
    else:
        gc.enable()  # (``python -m oper8d`` loads the commands without it)
    try:
        ctx.obj = parse_limit_overrides(limits, Limits())
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--limit") from None


@main.command()
@bundle_argument
@click.option(
    "--cr",
    "cr_path",
    type=CR_FILE,
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
        from oper8d.cli.schemas import schemas_for

        cr = load_cr_or_exit(cr_path)
        problems, _fatal = cr_problems(b, cr, schemas_for(b))
        if problems:
            fail(problems, hint=f"{_plural(len(problems), 'problem')} in CR {cr_path}")
        summary += f"; CR {cr.data['metadata']['name']} matches the {cr.data['kind']} schema"
    click.echo(summary)


@main.command()
@bundle_argument
@click.option(
    "--cr", "cr_path", required=True, type=CR_FILE, metavar="FILE", help="The CR to render for."
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write one file per object (NNN-<internal name>.yaml) and deletions.txt into DIR, "
    "replacing those an earlier render wrote there, instead of one YAML stream on stdout.",
)
@click.option(
    "--show-secrets",
    is_flag=True,
    help="Print Secret values (and values from Secrets in other objects) instead of ***. "
    "Offline random_string() values are fakes derived from the CR's name (from 12 "
    "characters on they start with 'offline').",
)
@click.option(
    "--previous",
    "previous_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The objects as they are now (an earlier render's output, or `kubectl get -o yaml`'s "
    "with their status): a change of a field the API server keeps once an object exists is "
    "an error (onImmutableChange: fail) or a warning (recreate).",
)
@schema_options
def render(
    bundle: str,
    cr_path: str,
    output_dir: str | None,
    show_secrets: bool,
    previous_path: str | None,
    crd_dirs: tuple[str, ...],
    kube_schemas: str | None,
) -> None:
    """Print every object the operator would apply for a CR: offline, deterministic.

    Runs the real reconcile against an in-memory cluster (readiness simulated) until the
    CR is stable, so live() lookups and dependency edges behave as in a cluster. The same
    input always gives byte-identical output: commit it and diff it in CI. Objects of
    disabled components are listed as `# would delete ...` lines at the end.

    Secret values, and values from Secrets wherever they appear, are shown as *** unless
    --show-secrets is given; with -o, files that hold a Secret are created mode 0600.
    """
    import dataclasses

    from oper8d.cachefiles import cache_dir
    from oper8d.cli.schemas import schemas_for
    from oper8d.kubeschema import KubeSchemas
    from oper8d.offline import reconcile_offline, why_incomplete, would_delete
    from oper8d.render_output import MASKED_HINT, render_stream, write_folder

    # one load serves the bundle's checks and the objects'
    builtin = KubeSchemas.builtin(cache=cache_dir())
    b = load_bundle_or_exit(bundle, builtin)
    cr = load_cr_or_exit(cr_path)
    schemas = schemas_for(b, crd_dirs, kube_schemas, builtin)
    problems, _fatal = cr_problems(b, cr, schemas)
    if problems:
        fail(problems, hint=f"fix the CR ({cr_path}) and render again")
    try:
        run = reconcile_offline(b, cr.data, schemas=schemas)
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
        # an error may quote a value read from a Secret
        problem = locate(run.fatal_error, bundle, cr)
        fail([dataclasses.replace(problem, message=run.redact(problem.message))], hint=hint)
    if previous_path:
        _check_previous(b, run, previous_path)
    deletions = would_delete(b, run)
    incomplete = None if run.stable else why_incomplete(run)
    # references that cannot resolve: on stderr, never in the stream, never a failure
    warnings = [dataclasses.replace(w, message=run.redact(w.message)) for w in run.warnings]
    if output_dir:
        try:
            written, masked = write_folder(
                Path(output_dir),
                list(run.applied.items()),
                deletions,
                sensitive=run.sensitive,
                show_secrets=show_secrets,
            )
        except OSError as err:
            fail([f"cannot write into {output_dir}: {err.strerror or err} ({err.filename})"])
        click.echo(f"wrote {_plural(len(written), 'file')} to {output_dir}", err=True)
        if masked:
            click.echo(
                f"values from Secrets are shown as *** in {_plural(len(masked), 'object')} "
                f"({MASKED_HINT})",
                err=True,
            )
        if incomplete:
            click.secho(f"warning: not complete: {incomplete}", fg="yellow", err=True)
        warn(warnings, bundle_dir(bundle))
        return
    text = render_stream(
        list(run.applied.values()),
        deletions,
        incomplete,
        sensitive=run.sensitive,
        show_secrets=show_secrets,
    )
    click.echo(text, nl=False)
    warn(warnings, bundle_dir(bundle))


@main.command()
@bundle_argument
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


def _check_previous(bundle: Bundle, run: OfflineRun, previous_path: str) -> None:
    """Warn of the objects ``render --previous`` finds the operator would recreate; fail
    (exit 1) naming those whose immutable change would fail."""
    from oper8d.offline import immutable_since

    planned = immutable_since(bundle, run, load_objects_or_exit(previous_path))
    for recreated in (p for p in planned if p.recreate):
        click.secho(f"warning: {run.redact(recreated.message)}", fg="yellow", err=True)
    refused = [run.redact(p.message) for p in planned if not p.recreate]
    if refused:
        fail(refused, hint=f"compared with the objects in {previous_path}")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


if __name__ == "__main__":  # pragma: no cover
    main()
