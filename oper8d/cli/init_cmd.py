"""``oper8d init NAME``: scaffold a new bundle that validates and passes its own tests.

The click command object ``init`` is registered on the ``oper8d`` group by
``cli/main.py``. Bad names exit 2 (usage), a folder that is not empty exits 1; nothing is
written in either case. Imports nothing from the kubernetes client.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from oper8d.cli.inputs import fail

__all__ = ["init"]

Callback = Callable[[click.Context, click.Parameter, str | None], str | None]


def _checked(check_name: str) -> Callback:
    """A click callback running ``scaffold.create.<check_name>`` on the value."""

    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        from oper8d.scaffold import create

        if value is None:
            return None
        problem = getattr(create, check_name)(value)
        if problem:
            raise click.BadParameter(problem)
        return value

    return callback


@click.command(short_help="Create a new bundle: operator.yaml, a sample, tests, README.")
@click.argument("name", callback=_checked("check_name"))
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    metavar="PATH",
    help="The folder to create (default: ./NAME). It must not exist or be empty.",
)
@click.option(
    "--group",
    default="example.com",
    show_default=True,
    callback=_checked("check_group"),
    metavar="G",
    help="API group of the custom resource (a domain you own).",
)
@click.option(
    "--kind",
    default=None,
    callback=_checked("check_kind"),
    metavar="K",
    help="Kind of the custom resource (default: NAME in CamelCase, my-app -> MyApp).",
)
def init(name: str, directory: str | None, group: str, kind: str | None) -> None:
    """Create the bundle NAME: an operator.yaml whose one component deploys a ConfigMap
    and a Deployment, a sample CR, test cases with their golden file, and a README.

    The result passes `oper8d validate` and `oper8d test` as it is; edit from there.
    Refuses to write into a folder that already holds anything.
    """
    from oper8d.errors import Oper8dError
    from oper8d.scaffold import ScaffoldOptions, default_kind, scaffold
    from oper8d.scaffold.create import check_kind

    if kind is None and check_kind(default_kind(name)):
        raise click.BadParameter(
            f"the kind derived from {name!r} would be {default_kind(name)!r}, which is not a "
            "valid kind: pass --kind",
            param_hint="'--kind'",
        )
    target = Path(directory) if directory else Path(name)
    options = ScaffoldOptions(name=name, group=group, kind=kind)
    try:
        files = scaffold(target, options)
    except Oper8dError as err:
        fail([str(err)])
    click.echo(
        f"created bundle '{name}' ({options.group}/{options.version} {options.resolved_kind}) "
        f"in {target}:"
    )
    for rel in files:
        click.echo(f"  {rel.as_posix()}")
    sample = next((f for f in files if f.parts[0] == "samples"), None)
    click.echo("next:")
    click.echo(f"  oper8d validate {target}")
    click.echo(f"  oper8d test {target}")
    if sample is not None:
        click.echo(f"  oper8d run {target} --dry-run --cr {target / sample}")
