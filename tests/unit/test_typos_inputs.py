"""Typos in a CR or in a bundle's spec schema are said offline, at their position: an
optional CR field spelled wrong (``enableCach``) and a schema default of the wrong type."""

from __future__ import annotations

import re
from pathlib import Path

from bundles import configmap, write_bundle
from click.testing import CliRunner, Result

from oper8d.cli.main import main

SCHEMA = {
    "type": "object",
    "properties": {
        "enableCache": {"type": "boolean"},
        "cache": {"type": "object", "properties": {"size": {"type": "integer"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "anything": {"type": "object"},
        "tenants": {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    },
}


def validate(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["validate", *map(str, args)])


def write_cr(tmp_path: Path, spec: str) -> Path:
    cr = tmp_path / "cr.yaml"
    cr.write_text(
        "apiVersion: demo.oper8d.io/v1alpha1\nkind: Demo\nmetadata:\n  name: demo\nspec:\n" + spec
    )
    return cr


def test_a_misspelled_optional_cr_field_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", "components:\n" + configmap("c"), schema=SCHEMA)
    cr = write_cr(
        tmp_path,
        "  enableCach: true\n  cache: {siz: 3}\n  tenants:\n    - {nme: a}\n",
    )
    result = validate(bundle, "--cr", cr)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[:3] == [
        f"{cr}:6:15: spec.enableCach: unknown field (did you mean 'enableCache'?)",
        f"{cr}:7:16: spec.cache.siz: unknown field (did you mean 'size'?)",
        f"{cr}:9:13: spec.tenants[0].nme: unknown field (did you mean 'name'?)",
    ]


def test_maps_and_preserved_objects_keep_fields_the_schema_does_not_name(
    tmp_path: Path,
) -> None:
    bundle = write_bundle(tmp_path / "b", "components:\n" + configmap("c"), schema=SCHEMA)
    cr = write_cr(
        tmp_path,
        "  labels: {team: a}\n  extra: {any: {deep: 1}}\n  anything: {x: 1}\n",
    )
    result = validate(bundle, "--cr", cr)
    assert result.exit_code == 0, result.output
    assert "matches the Demo schema" in result.stdout


def test_a_schema_default_of_the_wrong_type_is_an_error_at_the_default(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "default": "2"},
            "db": {
                "type": "object",
                "properties": {"port": {"type": "integer", "minimum": 1, "default": 0}},
            },
        },
    }
    bundle = write_bundle(tmp_path / "b", "components:\n" + configmap("c"), schema=schema)
    result = validate(bundle)
    assert result.exit_code == 1, result.output
    operator = bundle / "operator.yaml"
    (line,) = [n for n, t in enumerate(operator.read_text().splitlines(), 1) if "schema:" in t]
    text = operator.read_text().splitlines()[line - 1]

    # each default's value, 1-based columns, in schema order: replicas, then db.port
    replicas, port = (f"{operator}:{line}:{m.end() + 1}" for m in re.finditer('"default": ', text))
    assert result.stderr.splitlines()[:2] == [
        f"{replicas}: the schema's default for spec.replicas must be an "
        "integer (got the string '2'): a default must match its own schema",
        f"{port}: the schema's default for spec.db.port must be >= 1 "
        "(got 0): a default must match its own schema",
    ]
