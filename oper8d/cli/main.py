"""``oper8d`` commands: validate, render, graph, run.

Every command catches oper8d's errors and prints them as ``file:line:col: message``
(or ``CR field: message``) with a non-zero exit, never a traceback. ``validate``,
``render`` and ``graph`` do not import the kubernetes client.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from oper8d.errors import BundleError, Oper8dError, Problem, ReconcileError

EXIT_INVALID = 1


def _fail(problems: list[Problem] | list[str], *, code: int = EXIT_INVALID) -> None:
    for p in problems:
        click.secho(f"error: {p}", fg="red", err=True)
    sys.exit(code)


def _load(bundle_path: str) -> Any:
    from oper8d.bundle import load_bundle

    try:
        return load_bundle(bundle_path)
    except BundleError as err:
        _fail(err.problems)


def _load_cr(path: str) -> tuple[dict[str, Any], Any]:
    from oper8d.bundle.loader import load_yaml_text

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        _fail([f"{path}: cannot read the CR file: {err.strerror}"])
    try:
        doc = load_yaml_text(text, path)
    except BundleError as err:
        _fail(err.problems)
    if not isinstance(doc.data, dict):
        _fail([f"{path}: a CR file holds one mapping (a Kubernetes object)"])
    return doc.data, doc


def _cr_problems(bundle: Any, cr: dict[str, Any], doc: Any) -> list[Problem]:
    """Schema problems of a CR, each placed at its line in the CR file."""
    from oper8d.bundle.validate import apply_defaults, validate_instance
    from oper8d.offline import controller_for

    try:
        controller = controller_for(bundle, cr)
    except ReconcileError as err:
        return [Problem(err.message, doc.pos((err.field,)) if err.field else None)]
    schema = controller.resource.schema
    spec = apply_defaults(cr.get("spec") or {}, schema)
    problems = validate_instance(spec, schema, field_prefix="spec")
    placed = []
    for p in problems:
        path = tuple(_path_parts(p.field)) if p.field else ()
        placed.append(Problem(p.message, doc.pos(path), p.field))
    return placed


def _path_parts(field: str) -> list[str | int]:
    parts: list[str | int] = []
    for part in field.replace("]", "").replace("[", ".").split("."):
        if part:
            parts.append(int(part) if part.isdigit() else part)
    return parts


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="oper8d")
def main() -> None:
    """oper8d: Kubernetes operators written as YAML bundles.

    \b
    Quick start:
      oper8d validate examples/operators/webapp
      oper8d render   examples/operators/webapp --cr examples/operators/webapp/samples/webapp.yaml
      oper8d run      examples/operators/webapp --dry-run --cr examples/operators/webapp/samples/webapp.yaml
    """


@main.command()
@click.argument("bundle", type=click.Path(exists=True))
@click.option("--cr", "cr_path", type=click.Path(), help="Also validate this CR against the bundle.")
def validate(bundle: str, cr_path: str | None) -> None:
    """Check a bundle (and optionally a CR); print every error as file:line:col."""
    b = _load(bundle)
    if cr_path:
        cr, doc = _load_cr(cr_path)
        problems = _cr_problems(b, cr, doc)
        if problems:
            _fail(problems)
    n = sum(len(c.components) for c in b.controllers)
    click.echo(f"ok: bundle '{b.name}': {len(b.controllers)} controller(s), {n} component(s)")


@main.command()
@click.argument("bundle", type=click.Path(exists=True))
@click.option("--cr", "cr_path", required=True, type=click.Path(), help="The CR to render for.")
@click.option(
    "-o", "--output-dir", type=click.Path(file_okay=False), help="Write one file per object."
)
def render(bundle: str, cr_path: str, output_dir: str | None) -> None:
    """Render every object the operator would apply for a CR, offline and deterministically.

    Runs the real reconcile against an in-memory cluster (readiness simulated) until the CR
    is stable, so live() lookups and dependency edges behave as they would in a cluster.
    """
    from oper8d import yamlio
    from oper8d.offline import reconcile_offline, would_delete

    b = _load(bundle)
    cr, doc = _load_cr(cr_path)
    problems = _cr_problems(b, cr, doc)
    if problems:
        _fail(problems)
    try:
        run = reconcile_offline(b, cr)
    except Oper8dError as err:
        _fail([str(err)])
    err = run.last.error
    if err is not None and isinstance(err, ReconcileError) and err.fatal:
        _fail([str(err)])
    deletions = would_delete(b, run)
    objects = list(run.applied.items())
    if output_dir:
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        for i, (internal, obj) in enumerate(objects):
            (out / f"{i:03d}-{internal}.yaml").write_text(yamlio.dump(obj), encoding="utf-8")
        if deletions:
            lines = [f"{c}: {_ref(o)}" for c, o in deletions]
            (out / "deletions.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        click.echo(f"wrote {len(objects)} object(s) to {out}", err=True)
        return
    text = yamlio.dump_all(obj for _i, obj in objects)
    for component, obj in deletions:
        text += f"# would delete (component '{component}' is disabled): {_ref(obj)}\n"
    if run.last.error is not None:
        text += f"# not complete: {run.last.error}\n"
    click.echo(text, nl=False)


def _ref(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    where = f"{ns}/{meta.get('name')}" if ns else meta.get("name")
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where}"


@main.command()
@click.argument("bundle", type=click.Path(exists=True))
@click.option(
    "--format", "fmt", type=click.Choice(["text", "mermaid", "dot"]), default="text",
    show_default=True,
)
def graph(bundle: str, fmt: str) -> None:
    """Show each controller's component graph (inferred edges marked)."""
    from oper8d.cli.graphs import render_graph

    b = _load(bundle)
    click.echo(render_graph(b, fmt), nl=False)


@main.command()
@click.argument("bundle", type=click.Path(exists=True))
@click.option("--cr", "cr_path", type=click.Path(), help="With --dry-run: the CR to reconcile.")
@click.option(
    "--dry-run", is_flag=True,
    help="Run the reconcile loop against the embedded in-memory cluster (simulated readiness).",
)
@click.option("--max-reconciles", default=20, show_default=True, help="Dry run: reconcile passes.")
@click.option(
    "--ready-after", default=1, show_default=True,
    help="Dry run: simulated workloads become ready after this many reconcile passes.",
)
def run(bundle: str, cr_path: str | None, dry_run: bool, max_reconciles: int, ready_after: int) -> None:
    """Run the operator. With --dry-run: reconcile a CR in memory and show the rollout."""
    if not dry_run:
        _fail(
            [
                "running against a real cluster is not available in this build yet; "
                "use --dry-run --cr FILE to run the operator on the embedded in-memory cluster"
            ],
            code=2,
        )
    if not cr_path:
        _fail(["--dry-run needs --cr FILE (the CR to reconcile)"], code=2)
    from oper8d.cli.summary import print_summary
    from oper8d.cli.progress import LineProgress
    from oper8d.cluster.simulate import DefaultSimulator
    from oper8d.offline import reconcile_offline

    b = _load(bundle)
    cr, doc = _load_cr(cr_path)
    problems = _cr_problems(b, cr, doc)
    progress = LineProgress()
    try:
        run_ = reconcile_offline(
            b,
            cr,
            max_reconciles=max_reconciles,
            progress=progress,
            max_workers=4,
            simulator=DefaultSimulator(delay_writes=max(0, ready_after)),
            on_pass=progress.start_pass,
        )
    except Oper8dError as err:
        _fail([str(err)])
    print_summary(run_, problems)
    sys.exit(0 if run_.ready else 1)


if __name__ == "__main__":  # pragma: no cover
    main()
