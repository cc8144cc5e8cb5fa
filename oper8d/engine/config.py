"""Config merging and nested dict helpers (oper8's utils), used by the session and reconciler."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

ANNOTATION_PREFIX = "oper8.org/"
PAUSE_ANNOTATION = "oper8.org/pause-execution"
CONFIG_DEFAULTS_ANNOTATION = "oper8.org/config-defaults"
TEMPORARY_PATCHES_ANNOTATION = "oper8.org/temporary-patches"
INTERNAL_NAME_ANNOTATION = "oper8.org/internal-name"
LOG_ANNOTATIONS = (
    "oper8.org/log-default-level",
    "oper8.org/log-filters",
    "oper8.org/log-json",
    "oper8.org/log-thread-id",
)
#: copied from the CR onto every object it deploys (oper8's passthrough set)
PASSTHROUGH_ANNOTATIONS = (CONFIG_DEFAULTS_ANNOTATION, PAUSE_ANNOTATION, *LOG_ANNOTATIONS)
CONFIG_OVERRIDES_KEY = "configOverrides"


def merge_configs(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """oper8's merge: dicts recurse, anything else in ``override`` replaces. Inputs untouched."""
    out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in base.items()}
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_configs(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def get_path(obj: Any, path: str | list[str], default: Any = None) -> Any:
    """``get_path(cr, "spec.version")``; missing keys or non-dicts on the way give ``default``."""
    parts = path.split(".") if isinstance(path, str) else path
    cur = obj
    for part in parts:
        if not isinstance(cur, Mapping) or part not in cur:
            return default
        cur = cur[part]
    return cur


def set_path(obj: dict[str, Any], path: str | list[str], value: Any) -> None:
    """Set a dotted path, creating dicts on the way."""
    parts = path.split(".") if isinstance(path, str) else path
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[parts[-1]] = value


def is_paused(cr: Mapping[str, Any]) -> bool:
    value = get_path(cr, ["metadata", "annotations", PAUSE_ANNOTATION])
    return isinstance(value, str) and value.strip().lower() == "true"


def passthrough_annotations(cr: Mapping[str, Any]) -> dict[str, str]:
    annotations = get_path(cr, ["metadata", "annotations"], {}) or {}
    return {k: v for k, v in annotations.items() if k in PASSTHROUGH_ANNOTATIONS}
