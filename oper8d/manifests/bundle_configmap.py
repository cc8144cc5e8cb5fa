"""A bundle folder as a ConfigMap, mounted back into the operator's Pod as the same folder.

ConfigMap keys cannot hold ``/``, so each file gets a flat key (``templates/db.yaml`` ->
``templates_db.yaml``; a hash suffix keeps keys unique and valid when flattening is
lossy) and the volume's ``items`` map every key back to its path: the kubelet recreates
the folder layout under the mount point. UTF-8 files go to ``data``, others to
``binaryData``. Hidden files and folders (``.git``, editor files) and ``__pycache__``
are left out, and so is a symlink leading outside the bundle.

``bundle_configmap`` builds the ConfigMap and the items; ``write_bundle_files`` does what
the kubelet does with them (tests load the result back with ``load_bundle``). Used by
``manifests.package`` for ``oper8d manifests --bundle-from configmap``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from oper8d.bundle.loader import read_regular_file
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.limits import Limits

#: the API server refuses a ConfigMap whose data is larger
MAX_CONFIGMAP_BYTES = 1024 * 1024
_KEY_CHARS = re.compile(r"[^-._a-zA-Z0-9]")
_MAX_KEY = 253
_SKIPPED_DIRS = frozenset({"__pycache__"})


@dataclass(frozen=True)
class BundleConfigMap:
    """The ConfigMap and the volume items that lay its keys out as the bundle folder."""

    configmap: dict[str, Any]
    #: ``[{"key": ..., "path": ...}]`` for ``volumes[].configMap.items``, sorted by path
    items: list[dict[str, str]]
    #: sha256 of every path and content: changes exactly when a bundle file changes
    digest: str


def bundle_files(root: Path) -> list[str]:
    """Relative POSIX paths of the files a bundle folder ships, sorted."""
    root = root.resolve()
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        for name in files:
            path = Path(folder, name)
            if name.startswith(".") or not path.is_file():
                continue
            if not path.resolve().is_relative_to(root):
                continue
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def configmap_keys(paths: Sequence[str]) -> dict[str, str]:
    """path -> ConfigMap key: ``/`` becomes ``_``; a path whose key would collide with
    another's or needed other characters replaced gets ``-<8 hex of its sha256>``."""
    flat = {p: _KEY_CHARS.sub("-", p.replace("/", "_")) for p in paths}
    counts: dict[str, int] = {}
    for key in flat.values():
        counts[key] = counts.get(key, 0) + 1
    keys = {}
    for path, key in flat.items():
        lossy = key != path.replace("/", "_") or counts[key] > 1 or len(key) > _MAX_KEY
        if lossy:
            suffix = "-" + hashlib.sha256(path.encode()).hexdigest()[:8]
            key = key[: _MAX_KEY - len(suffix)] + suffix
        keys[path] = key
    return keys


def bundle_configmap(
    root: Path, *, name: str, namespace: str, labels: Mapping[str, str] | None = None
) -> BundleConfigMap:
    """The ConfigMap holding every file of the bundle at ``root``.

    Raises BundleError when the files exceed what a ConfigMap can hold (1 MiB).
    """
    paths = bundle_files(root)
    keys = configmap_keys(paths)
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    digest = hashlib.sha256()
    size = 0
    max_bytes = Limits().file_bytes
    for path in paths:
        raw = read_regular_file(root / path, path, SourcePos(path), max_bytes=max_bytes)
        size += len(raw)
        digest.update(f"{len(path)}:{path}:{len(raw)}:".encode() + raw)
        try:
            data[keys[path]] = raw.decode("utf-8")
        except UnicodeDecodeError:
            binary[keys[path]] = base64.b64encode(raw).decode()
    if size > MAX_CONFIGMAP_BYTES:
        raise BundleError(
            Problem(
                f"the bundle's files ({size} bytes) do not fit in a ConfigMap (at most "
                f"{MAX_CONFIGMAP_BYTES} bytes): bake the bundle into the image and use "
                "--bundle-from image"
            )
        )
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    configmap: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    if data:
        configmap["data"] = dict(sorted(data.items()))
    if binary:
        configmap["binaryData"] = dict(sorted(binary.items()))
    items = [{"key": keys[p], "path": p} for p in paths]
    return BundleConfigMap(configmap, items, digest.hexdigest())


def write_bundle_files(
    configmap: Mapping[str, Any], items: Sequence[Mapping[str, str]], dest: Path
) -> list[Path]:
    """Lay the ConfigMap's keys out under ``dest`` as the volume ``items`` say, as the
    kubelet does. Returns the files written."""
    data = configmap.get("data") or {}
    binary = configmap.get("binaryData") or {}
    written = []
    for item in items:
        relative = PurePosixPath(item["path"])
        if relative.is_absolute() or ".." in relative.parts:
            raise BundleError(
                Problem(f"volume item path {item['path']!r} leaves the mount point {dest}")
            )
        target = dest.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        key = item["key"]
        if key in data:
            target.write_bytes(data[key].encode("utf-8"))
        else:
            target.write_bytes(base64.b64decode(binary[key]))
        written.append(target)
    return written
