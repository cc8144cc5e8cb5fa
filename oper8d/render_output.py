"""How ``oper8d render`` writes what it rendered: one YAML stream, or one file per object.

The stream is what golden files and CI diffs compare: the objects in rollout order, then
``# masked ...`` lines naming the objects whose Secret values are shown as ``***``, then
``# would delete ...`` comment lines for the objects of disabled components, then a
``# not complete: ...`` line when the rollout did not finish. The folder form
(``-o DIR``) writes ``NNN-<internal name>.yaml`` per object and ``deletions.txt``,
replacing the files an earlier render wrote there (and only those).

Secrets are masked unless ``show_secrets`` (``oper8d render --show-secrets``): a Secret's
``data``/``stringData`` values by structure, and values from Secrets wherever else they
appear (``oper8d.redaction``). A file that holds a Secret, or a value from one, is created
with mode 0600: never readable by others, not even for a moment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from oper8d import yamlio
from oper8d.objects import DELETION_POLICY_ANNOTATION, Deletion, Obj
from oper8d.redaction import SensitiveValues, is_secret, mask_secret, redact_strings

__all__ = ["MASKED_HINT", "mask_objects", "object_ref", "render_stream", "write_folder"]


#: the names write_folder gives its files; earlier ones are removed before writing
_OUR_FILES = re.compile(r"^\d{3}-[a-z0-9.-]+\.yaml$|^deletions\.txt$")
#: what to do to see the masked values
MASKED_HINT = "oper8d render --show-secrets prints them"
#: the mode of a file that holds a Secret (before the umask, which can only narrow it)
_PRIVATE = 0o600
_SHARED = 0o666


def object_ref(obj: Obj) -> str:
    """``apps/v1 Deployment default/hello-app``."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    where = f"{ns}/{meta.get('name')}" if ns else meta.get("name")
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where}"


def mask_objects(
    objects: Sequence[Obj], sensitive: SensitiveValues | None = None
) -> tuple[list[Obj], list[str]]:
    """``objects`` as printed without secrets (Secrets masked by structure, values from
    Secrets masked in other objects), and what was masked (``the values of v1 Secret
    default/db``), one entry per object changed."""
    out: list[Obj] = []
    refs: list[str] = []
    for obj in objects:
        shown = mask_secret(obj) if is_secret(obj) else obj
        if sensitive:
            shown = redact_strings(shown, sensitive)
        out.append(shown)
        if shown != obj:
            what = "the values of" if is_secret(obj) else "values from Secrets in"
            refs.append(f"{what} {object_ref(obj)}")
    return out, refs


def _masked_lines(refs: Sequence[str]) -> list[str]:
    return [f"masked: {ref} ({MASKED_HINT})" for ref in refs]


def _deletion_lines(deletions: Sequence[Deletion]) -> list[str]:
    return [
        f"{_verb(what)} (component '{component}' is disabled): "
        + (what if isinstance(what, str) else object_ref(what))
        for component, what in deletions
    ]


def _verb(what: Obj | str) -> str:
    """An object of a ``deletionPolicy: Orphan`` resource is released, not deleted (a
    Retain one is not listed at all)."""
    if isinstance(what, str):
        return "would delete"
    annotations = (what.get("metadata") or {}).get("annotations") or {}
    orphan = annotations.get(DELETION_POLICY_ANNOTATION) == "Orphan"
    return "would release" if orphan else "would delete"


def render_stream(
    objects: Sequence[Obj],
    deletions: Sequence[Deletion],
    incomplete: str | None,
    *,
    sensitive: SensitiveValues | None = None,
    show_secrets: bool = False,
) -> str:
    """The YAML stream; Secret values masked unless ``show_secrets`` (``sensitive``: the
    values from Secrets the render saw, masked in the other objects)."""
    refs: list[str] = []
    if not show_secrets:
        objects, refs = mask_objects(objects, sensitive)
    text = yamlio.dump_all(objects)
    for line in [*_masked_lines(refs), *_deletion_lines(deletions)]:
        text += f"# {line}\n"
    if incomplete:
        text += f"# not complete: {incomplete}\n"
    return text


def _file_name(internal: str) -> str:
    """``internal`` as one file name that ``_OUR_FILES`` matches: a forEach key may hold
    ``/``, capitals or anything else, and be longer than a file name may be."""
    name = re.sub(r"[^a-z0-9.-]", "-", internal.lower())
    return name if len(name) <= 200 else name[:200]


def write_folder(
    out: Path,
    objects: Sequence[tuple[str, Obj]],
    deletions: Sequence[Deletion],
    *,
    sensitive: SensitiveValues | None = None,
    show_secrets: bool = False,
) -> tuple[list[Path], list[str]]:
    """Write one file per (internal name, object), and deletions.txt when there are any;
    Secret values masked unless ``show_secrets``. Returns the files written and the refs
    of the objects whose values were masked."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file() and _OUR_FILES.match(old.name):
            old.unlink()
    masked, refs = mask_objects([obj for _name, obj in objects], sensitive)
    written: list[Path] = []
    for i, ((internal, obj), safe) in enumerate(zip(objects, masked, strict=True)):
        path = out / f"{i:03d}-{_file_name(internal)}.yaml"
        # a Secret, or an object holding a value from one (shown or masked): private
        private = is_secret(obj) or safe != obj
        _create(path, yamlio.dump(obj if show_secrets else safe), _PRIVATE if private else _SHARED)
        written.append(path)
    if deletions:
        path = out / "deletions.txt"
        _create(path, "\n".join(_deletion_lines(deletions)) + "\n", _SHARED)
        written.append(path)
    return written, [] if show_secrets else refs


def _create(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to a new file created with ``mode``: a file left at that path is
    removed first, as opening it would keep its old mode."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(text)
