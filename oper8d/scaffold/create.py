"""Write a new, working bundle: what ``oper8d init`` does.

Used by ``cli/init_cmd.py``. :func:`scaffold` checks the names (the same rules the bundle
schema applies, checked first so that nothing is written for a bad name), refuses a
folder that already holds anything, fills in the templates of ``scaffold.templates``,
then runs the bundle's own render cases with ``--update`` semantics to write their golden
files, so the result passes ``oper8d validate`` and ``oper8d test`` as it stands.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from oper8d.errors import Oper8dError

__all__ = [
    "SCHEMA_BASE_URL",
    "ScaffoldOptions",
    "check_group",
    "check_kind",
    "check_name",
    "default_kind",
    "fill",
    "scaffold",
]

#: where the modelines point; the schemas' ``$id`` prefix
SCHEMA_BASE_URL = "https://oper8d.io/schemas/"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GROUP = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_PLACEHOLDER = re.compile(r"\[\[(\w+)\]\]")


@dataclass(frozen=True)
class ScaffoldOptions:
    """What to scaffold. ``kind`` None: derived from ``name`` (``my-app`` -> ``MyApp``)."""

    name: str
    group: str = "example.com"
    kind: str | None = None
    version: str = "v1alpha1"
    sample: str = "example"

    @property
    def resolved_kind(self) -> str:
        return self.kind or default_kind(self.name)


def default_kind(name: str) -> str:
    """``my-app`` -> ``MyApp``: the name's words, capitalised and joined."""
    return "".join(word[:1].upper() + word[1:] for word in name.split("-"))


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name an operator, or None. It becomes the operator's name: a
    label value, field manager and Lease name, so a DNS-1123 label."""
    if len(name) > 63 or not _DNS_LABEL.match(name):
        return (
            f"{name!r} is not a valid operator name: use lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters"
        )
    return None


def check_group(group: str) -> str | None:
    """Why ``group`` cannot be an API group, or None (a DNS subdomain with a dot)."""
    if len(group) > 253 or not _GROUP.match(group):
        return (
            f"{group!r} is not a valid API group: use a DNS name with at least one dot, "
            "usually a domain you own (e.g. apps.example.com)"
        )
    return None


def check_kind(kind: str) -> str | None:
    """Why ``kind`` cannot name a kind, or None (CamelCase: a capital, letters, digits)."""
    if not _KIND.match(kind):
        return f"{kind!r} is not a valid kind: use a capital letter followed by letters and digits"
    return None


def fill(template: str, values: Mapping[str, str]) -> str:
    """Replace each ``[[key]]`` of ``template``; a key without a value is a KeyError."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def scaffold(target: Path, options: ScaffoldOptions) -> list[Path]:
    """Write a new bundle into ``target`` (created if missing, refused if not empty) and
    return the files written, bundle-relative, sorted.

    Raises ``Oper8dError`` with a message saying what to change for a bad name, group or
    kind, or a ``target`` that exists and is not an empty folder.
    """
    from oper8d.scaffold.templates import FILES

    kind = options.resolved_kind
    kind_problem = check_kind(kind)
    if kind_problem and options.kind is None:
        kind_problem += " (it is derived from the name: pass --kind)"
    problems = [
        p for p in (check_name(options.name), check_group(options.group), kind_problem) if p
    ]
    if problems:
        raise Oper8dError("; ".join(problems))
    _check_target(target)
    values = {
        "name": options.name,
        "kind": kind,
        "group": options.group,
        "version": options.version,
        "sample": options.sample,
        "schema_base": SCHEMA_BASE_URL,
    }
    written: list[Path] = []
    for rel_template, template in FILES.items():
        rel = Path(fill(rel_template, values))
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fill(template, values), encoding="utf-8")
        written.append(rel)
    written += _write_goldens(target)
    return sorted(written)


def _check_target(target: Path) -> None:
    if target.is_dir():
        if any(target.iterdir()):
            raise Oper8dError(
                f"{target} already exists and is not empty: oper8d init never overwrites "
                "files; choose another --dir or remove the folder first"
            )
    elif target.exists():
        raise Oper8dError(f"{target} exists and is not a folder: choose another --dir")


def _write_goldens(target: Path) -> list[Path]:
    """Run the new bundle's render cases, writing their golden files; every case must pass
    (a failure here is a bug in the templates)."""
    from oper8d.bundletest import BundleCache, load_suite, run_case

    suite = load_suite(target)
    bundles = BundleCache()
    written: list[Path] = []
    for case in suite.cases:
        result = run_case(case, root=target, bundles=bundles, update=True)
        if not result.passed:
            details = "; ".join(str(p) for p in result.failures)
            raise Oper8dError(f"the scaffolded bundle fails its test {case.id!r}: {details}")
        golden = getattr(case.check, "golden", None)
        if result.golden_updated and golden:
            written.append(Path(golden))
    return written
