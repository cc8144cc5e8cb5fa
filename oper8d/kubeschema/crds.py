"""Custom kinds from CustomResourceDefinition objects, and CRD files read from a folder.

Used by ``kubeschema.catalog.KubeSchemas.with_crds``: the bundle's own CRDs (the dicts
``oper8d.manifests.crd`` builds) and the files a user gives (``--crds DIR``, read by
``load_crd_dir``). Only served versions become kinds; a version without a schema is
served but unchecked (a warning, like an unknown kind).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from oper8d.fileio import FileRefused, FileTooLarge, read_bounded
from oper8d.kubeyaml import KubernetesLoader
from oper8d.limits import LimitExceeded, Limits

CRD_KIND = "CustomResourceDefinition"


class CRDError(ValueError):
    """A CRD file cannot be read or a CRD object is malformed; the message names the file."""


@dataclass(frozen=True)
class CustomKind:
    """One served version of a custom kind, with its ``openAPIV3Schema`` (or None)."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    schema: Mapping[str, Any] | None


def custom_kinds(crd: Mapping[str, Any], where: str = "CRD") -> list[CustomKind]:
    """The served versions of one CRD object. Raises CRDError naming ``where``."""
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        raise CRDError(f"{where}: a CustomResourceDefinition needs a spec")
    group, names = spec.get("group"), spec.get("names")
    if not isinstance(group, str) or not isinstance(names, Mapping) or "kind" not in names:
        raise CRDError(f"{where}: spec.group and spec.names.kind are required")
    shared = (spec.get("validation") or {}).get("openAPIV3Schema")  # v1beta1 CRDs
    versions = spec.get("versions") or ()
    if not versions and isinstance(spec.get("version"), str):  # v1beta1: one version
        versions = [{"name": spec["version"], "served": True}]
    out = []
    for version in versions:
        if not isinstance(version, Mapping) or not version.get("served", True):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema", shared)
        out.append(
            CustomKind(
                api_version=f"{group}/{version.get('name')}",
                kind=str(names["kind"]),
                plural=str(names.get("plural") or names["kind"].lower() + "s"),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                schema=schema if isinstance(schema, Mapping) else None,
            )
        )
    return out


def load_crd_dir(folder: Path, limits: Limits | None = None) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in the ``.yaml``/``.yml``/``.json`` files under
    ``folder`` (recursively, sorted); other documents are skipped.

    Raises CRDError with ``file:line`` for a file that is not YAML, and for one larger
    than ``fileBytes`` (refused before it is read).
    """
    max_bytes = (limits if limits is not None else Limits()).file_bytes
    if not folder.is_dir():
        raise CRDError(f"{folder}: not a directory of CRD files")
    crds: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        try:
            text = read_bounded(path, max_bytes).decode("utf-8")
            docs = list(yaml.load_all(text, Loader=KubernetesLoader))
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark
            line = f":{mark.line + 1}" if mark is not None else ""
            raise CRDError(f"{path}{line}: not valid YAML: {e.problem}") from None
        except FileTooLarge as e:
            too_large = LimitExceeded("file_bytes", f"{path} holds {e.size} bytes")
            raise CRDError(f"{path}: {too_large}") from None
        except (OSError, FileRefused, UnicodeDecodeError, yaml.YAMLError) as e:
            raise CRDError(f"{path}: cannot be read: {e}") from None
        crds.extend(_crds_in(docs))
    return crds


def _crds_in(docs: Iterable[Any]) -> Iterable[dict[str, Any]]:
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if doc.get("kind") == CRD_KIND:
            yield doc
        elif doc.get("kind") == "List":
            yield from _crds_in(doc.get("items") or ())
