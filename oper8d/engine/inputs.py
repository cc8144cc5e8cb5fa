"""What a reconcile renders with, from a CR: its spec validated against the bundle's schema
with the schema's defaults applied, and its config (bundle defaults < the ConfigMap named by
``oper8.org/config-defaults`` < the CR's ``configOverrides``).

One pure function, :func:`resolve_inputs`, so that ``oper8d validate`` (``cli.inputs``),
the reconciler and ``offline.would_delete`` cannot disagree about a CR. A spec field the
schema does not declare is a problem ("did you mean"): the API server prunes such fields
from the bundle's structural CRD, so a live reconcile never meets one, while a CR file
given to ``validate --cr``, ``render`` or ``test`` is read as written. Reading the
ConfigMap is I/O and stays with the caller (:func:`read_config_maps`); a caller without a
cluster passes ``None`` and the reference is not checked.

The config a CR brings (``configOverrides``, and the ConfigMap it names: whoever writes the
CR chooses both) may hold only what the bundle's ``resource.configSchema`` declares, with
its types (:func:`override_problems`); without that schema it may hold nothing. Otherwise
``enabled: "{{ config.networkPolicy }}"`` would let a tenant switch off, and prune, a
component the bundle author meant to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oper8d.bundle.model import ControllerSpec
from oper8d.bundle.spec_schema import apply_defaults, unknown_fields, validate_instance
from oper8d.cluster.base import ClusterReader
from oper8d.engine.config import (
    CONFIG_DEFAULTS_ANNOTATION,
    CONFIG_OVERRIDES_KEY,
    get_path,
    merge_configs,
)
from oper8d.errors import ConfigError, Problem
from oper8d.kinds import is_dns_subdomain
from oper8d.limits import Limits, nests_deeper

__all__ = ["CrInputs", "config_map_name", "read_config_maps", "resolve_inputs"]

#: the CR field a missing config-defaults ConfigMap is reported at
CONFIG_DEFAULTS_FIELD = f"metadata.annotations[{CONFIG_DEFAULTS_ANNOTATION}]"


@dataclass(frozen=True)
class CrInputs:
    """A CR's resolved inputs. ``spec`` has the schema defaults applied; ``config`` is the
    merged config; the problems say why the CR cannot be reconciled (both empty: it can)."""

    spec: Any
    config: dict[str, Any]
    #: the spec's schema violations, each naming its field
    spec_problems: tuple[Problem, ...] = ()
    #: a missing config-defaults ConfigMap, config a CR may not override (not declared by
    #: ``resource.configSchema``, or of the wrong type)
    config_problems: tuple[Problem, ...] = ()

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self.spec_problems + self.config_problems

    def error(self) -> ConfigError | None:
        """The error a reconcile reports for these inputs: the spec's violations (the first
        five, one message) before a config problem; None when there is none."""
        if self.spec_problems:
            first, *rest = self.spec_problems
            shown = [first.message, *(str(p) for p in rest[:4])]  # the error names first's field
            more = f" (and {len(rest) - 4} more)" if len(rest) > 4 else ""
            return ConfigError("; ".join(shown) + more, field=first.field or "spec")
        if self.config_problems:
            first = self.config_problems[0]
            return ConfigError(first.message, field=first.field)
        return None


def config_map_name(cr: Mapping[str, Any]) -> str | None:
    """The ConfigMap the CR names for its config defaults, if any."""
    name = get_path(cr, ["metadata", "annotations", CONFIG_DEFAULTS_ANNOTATION])
    return str(name) if name else None


def read_config_maps(cluster: ClusterReader, cr: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The ConfigMap ``cr`` names, read from ``cluster``, as ``{name: data}`` (empty when it
    names none or the ConfigMap does not exist) for :func:`resolve_inputs`."""
    name = config_map_name(cr)
    if name is None or not is_dns_subdomain(name):  # resolve_inputs reports a bad name
        return {}
    meta = cr.get("metadata") or {}
    cm = cluster.get("v1", "ConfigMap", name, meta.get("namespace"))
    return {} if cm is None else {name: cm.get("data") or {}}


def resolve_inputs(
    controller: ControllerSpec,
    cr: Mapping[str, Any],
    config_maps: Mapping[str, Mapping[str, Any]] | None,
) -> CrInputs:
    """Validate and default ``cr``'s spec and merge its config, without I/O.

    ``config_maps`` holds the ConfigMaps the CR may name (``read_config_maps``); ``None``
    means there is no cluster to look in (``oper8d validate``): a named ConfigMap is then
    neither checked nor merged. Schema defaults are applied before validation, the order
    the API server uses. ``cr`` is not changed."""
    depth = Limits().nesting_depth
    for part in ("spec", CONFIG_OVERRIDES_KEY):
        # the API server takes 10,000 levels; every walk below would recurse that deep
        if nests_deeper(cr.get(part), depth):
            deep = Problem(f"nests more than {depth} levels deep", field=part)
            return CrInputs({}, {}, spec_problems=(deep,))
    schema = controller.resource.schema
    spec = apply_defaults(cr.get("spec") or {}, schema)
    spec_problems = validate_instance(spec, schema, field_prefix="spec")
    # the API server prunes these from a structural CRD, so live they never arrive; a CR
    # file given to validate/render/test holds them as written: a typo, said offline
    spec_problems += unknown_fields(cr.get("spec") or {}, schema, field_prefix="spec")
    spec_problems.sort(key=lambda p: p.field or "")
    config_problems: list[Problem] = []
    config = dict(controller.config_defaults)
    name = config_map_name(cr)
    config_schema = controller.resource.config_schema
    if name is not None and not is_dns_subdomain(name):
        # the CR author is not trusted: '../../kube-system/secrets/x' would be another path
        config_problems.append(
            Problem(
                f"annotation {CONFIG_DEFAULTS_ANNOTATION} must name a ConfigMap in the CR's "
                f"namespace (a DNS-1123 subdomain), not {name!r}",
                field=CONFIG_DEFAULTS_FIELD,
            )
        )
    elif name is not None and config_maps is not None:
        if name in config_maps:
            data = config_maps[name]
            config_problems += [
                Problem(f"ConfigMap '{name}': {p}", field=CONFIG_DEFAULTS_FIELD)
                for p in override_problems(data, config_schema, field="data")
            ]
            config = merge_configs(config, data)
        else:
            config_problems.append(
                Problem(
                    f"ConfigMap '{name}' named by annotation {CONFIG_DEFAULTS_ANNOTATION} "
                    "does not exist",
                    field=CONFIG_DEFAULTS_FIELD,
                )
            )
    overrides = cr.get(CONFIG_OVERRIDES_KEY) or {}
    if isinstance(overrides, Mapping):
        config_problems += override_problems(overrides, config_schema, field=CONFIG_OVERRIDES_KEY)
        config = merge_configs(config, overrides)
    else:
        config_problems.append(
            Problem("configOverrides must be a mapping", field=CONFIG_OVERRIDES_KEY)
        )
    return CrInputs(spec, config, tuple(spec_problems), tuple(config_problems))


def override_problems(
    values: Mapping[str, Any], schema: Mapping[str, Any] | None, *, field: str
) -> list[Problem]:
    """Why a CR may not override the config with ``values`` (its ``configOverrides``, or
    the data of its config-defaults ConfigMap; ``field`` names where they are): a key
    ``schema`` (``resource.configSchema``) does not declare, a value of the wrong type,
    anything at all when there is no schema. No defaults are filled in: the bundle's
    ``config`` holds those."""
    if not values:
        return []
    if schema is None:
        keys = ", ".join(sorted(map(str, values)))
        return [
            Problem(
                f"this operator lets a CR override no config (its bundle declares no "
                f"resource.configSchema), got {keys}",
                field=field,
            )
        ]
    problems = validate_instance(values, schema, field_prefix=field)
    problems += unknown_fields(values, schema, field_prefix=field)
    return sorted(problems, key=lambda p: p.field or "")
