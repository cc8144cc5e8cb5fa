"""How ``oper8d render`` writes what it rendered: one YAML stream, or one file per object.

The stream is what golden files and CI diffs compare: the objects in rollout order, then
``# would delete ...`` comment lines for the objects of disabled components, then a
``# not complete: ...`` line when the rollout did not finish. The folder form
(``-o DIR``) writes ``NNN-<internal name>.yaml`` per object and ``deletions.txt``,
replacing the files an earlier render wrote there (and only those).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from oper8d import yamlio
from oper8d.objects import Obj

__all__ = ["object_ref", "render_stream", "write_folder"]


#: the names write_folder gives its files; earlier ones are removed before writing
_OUR_FILES = re.compile(r"^\d{3}-[a-z0-9.-]+\.yaml$|^deletions\.txt$")


def object_ref(obj: Obj) -> str:
    """``apps/v1 Deployment default/hello-app``."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    where = f"{ns}/{meta.get('name')}" if ns else meta.get("name")
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where}"


def _deletion_lines(deletions: Sequence[tuple[str, Obj]]) -> list[str]:
    return [
        f"would delete (component '{component}' is disabled): {object_ref(obj)}"
        for component, obj in deletions
    ]


def render_stream(
    objects: Sequence[Obj], deletions: Sequence[tuple[str, Obj]], incomplete: str | None
) -> str:
    text = yamlio.dump_all(objects)
    for line in _deletion_lines(deletions):
        text += f"# {line}\n"
    if incomplete:
        text += f"# not complete: {incomplete}\n"
    return text


def write_folder(
    out: Path, objects: Sequence[tuple[str, Obj]], deletions: Sequence[tuple[str, Obj]]
) -> list[Path]:
    """Write one file per (internal name, object), and deletions.txt when there are any.
    Returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file() and _OUR_FILES.match(old.name):
            old.unlink()
    written: list[Path] = []
    for i, (internal, obj) in enumerate(objects):
        path = out / f"{i:03d}-{internal}.yaml"
        path.write_text(yamlio.dump(obj), encoding="utf-8")
        written.append(path)
    if deletions:
        path = out / "deletions.txt"
        path.write_text("\n".join(_deletion_lines(deletions)) + "\n", encoding="utf-8")
        written.append(path)
    return written
