"""JSON Schema validation of bundle files, with every problem at its ``file:line:col``.

``bundle.compile`` validates ``operator.yaml`` and each included component file against the
schemas in ``schemas/`` (JSON Schema 2020-12) with :func:`validate_document`, and the user's
spec schema with :func:`check_spec_schema`. All problems are reported at once, sorted by
position; unknown keys point at the key and suggest the closest known one; a oneOf is
reported as the one branch that fits ("resource 'x': needs exactly one of 'object' or
'template'") instead of every branch's errors.

CR specs are checked by ``bundle.spec_schema``; :func:`apply_defaults` and
:func:`validate_instance` are re-exported here for the engine and the CLI.

Schemas are read from the package with :func:`load_schema`; a :class:`SchemaSet`, created by
its user, reads each one once and keeps it (there is no module-level cache).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from oper8d.bundle.loader import Document
from oper8d.bundle.schema_keywords import KEYWORDS, KUBERNETES_EXTENSIONS, unknown_keywords
from oper8d.bundle.schema_messages import (
    alternatives,
    closest,
    either,
    error_parts,
    fmt,
    one_line,
    suggest,
    value_message,
)
from oper8d.bundle.spec_schema import apply_defaults, openapi_validator, validate_instance
from oper8d.errors import Problem, SourcePos

if TYPE_CHECKING:  # imported where a check runs (~50 ms): a cached load needs none
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

__all__ = [
    "SCHEMA_BASE_URI",
    "SchemaSet",
    "apply_defaults",
    "check_spec_schema",
    "load_schema",
    "validate_document",
    "validate_instance",
]

SCHEMA_BASE_URI = "https://oper8d.io/schemas/"
SCHEMA_FILES = ("operator.schema.json", "component.schema.json")

Path = tuple[str | int, ...]


def _filename(name: str) -> str:
    return name if name.endswith(".json") else f"{name}.schema.json"


def load_schema(name: str) -> dict[str, Any]:
    """Read a schema from the package's ``schemas/`` folder, fresh on every call.

    ``name`` is ``"operator"`` or ``"operator.schema.json"`` (likewise ``component``).
    """
    import importlib.resources  # (a warm load of a valid bundle reads no schema)

    filename = _filename(name)
    resource = importlib.resources.files("oper8d") / "schemas" / filename
    try:
        text = resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"oper8d has no schema {filename!r} (it has {SCHEMA_FILES})") from None
    schema: dict[str, Any] = json.loads(text)
    return schema


class SchemaSet:
    """The bundle schemas, each read from the package on first use and kept by this object."""

    def __init__(self) -> None:
        self._schemas: dict[str, dict[str, Any]] = {}
        self._registry: Registry | None = None

    def get(self, name: str) -> dict[str, Any]:
        filename = _filename(name)
        if filename not in self._schemas:
            self._schemas[filename] = load_schema(filename)
        return self._schemas[filename]

    @property
    def operator(self) -> dict[str, Any]:
        return self.get("operator.schema.json")

    @property
    def component(self) -> dict[str, Any]:
        return self.get("component.schema.json")

    @property
    def registry(self) -> Registry:
        """Every package schema under its ``$id``, so cross-file ``$ref``s resolve."""
        if self._registry is None:
            from referencing import Registry, Resource

            self._registry = Registry().with_resources(
                (SCHEMA_BASE_URI + name, Resource.from_contents(self.get(name)))
                for name in SCHEMA_FILES
            )
        return self._registry

    def validate(self, doc: Document, name: str) -> list[Problem]:
        """:func:`validate_document` against the package schema ``name``."""
        return validate_document(doc, self.get(name), registry=self.registry)


def validate_document(
    doc: Document, schema: dict[str, Any], *, registry: Registry | None = None
) -> list[Problem]:
    """Every problem of ``doc`` under ``schema`` (JSON Schema 2020-12), sorted by position.

    ``registry`` resolves ``$ref``s into other schemas; by default the package's schemas.
    """
    from jsonschema import Draft202012Validator

    if registry is None:
        registry = SchemaSet().registry
    validator = Draft202012Validator(schema, registry=registry)
    return _problems(validator.iter_errors(doc.data), doc, ())


def check_spec_schema(
    doc: Document, path: Sequence[str | int], *, field: str = "spec", defaults: bool = True
) -> list[Problem]:
    """Problems of the OpenAPI v3 schema written at ``path`` of ``doc``
    (``controllers[i].resource.schema``, of the CR field ``field``, or ``configSchema``):
    unknown types, malformed keywords, bad regexes; with ``defaults`` False, any
    ``default:`` (``configSchema``: the API server would write it into every CR's
    ``configOverrides``, over the bundle's own ``config``).

    Run at load time so that :func:`validate_instance` never meets a broken schema.
    """
    base = tuple(path)
    schema = doc.data
    for part in base:
        schema = schema[part]
    from jsonschema import FormatChecker

    validator = openapi_validator()
    meta = validator(validator.META_SCHEMA, format_checker=FormatChecker(["regex"]))
    problems = _problems(meta.iter_errors(schema), doc, base)
    for key_path, key in unknown_keywords(schema):
        vocabulary = KEYWORDS | KUBERNETES_EXTENSIONS
        problems.append(
            Problem(
                f"unknown schema keyword {key!r}{suggest(key, vocabulary)}: JSON Schema "
                "would ignore it, and the API server refuses it in a CRD",
                doc.key_pos((*base, *key_path)),
            )
        )
    if problems:  # a broken schema cannot judge its defaults
        return problems
    return _default_problems(schema, doc, base, field, defaults)


def _default_problems(
    node: Any, doc: Document, path: Path, field: str = "spec", allowed: bool = True
) -> list[Problem]:
    """Each ``default`` that its own schema rejects, at the default's position and naming
    the CR field it fills: the API server refuses such a CRD, and a CR would otherwise be
    blamed for a value it does not hold. Unless ``allowed``, every ``default``."""
    if not isinstance(node, Mapping):
        return []
    found: list[Problem] = []
    if not allowed and "default" in node:
        found.append(
            Problem(
                f"configSchema sets a default for {field}: put it in the controller's "
                "config instead (a default here would be written into every CR)",
                doc.pos((*path, "default")),
            )
        )
    elif node.get("default") is not None and "$ref" not in node:
        own = {k: v for k, v in node.items() if k != "default"}
        for problem in validate_instance(node["default"], own, field_prefix=""):
            inner = f" at {problem.field}" if problem.field else ""
            found.append(
                Problem(
                    f"the schema's default for {field}{inner} {problem.message}: "
                    "a default must match its own schema",
                    doc.pos((*path, "default")),
                )
            )
    for key in ("properties", "patternProperties", "definitions", "$defs"):
        for name, sub in (node.get(key) or {}).items():
            sub_field = f"{field}.{name}" if key == "properties" else f"{field}[*]"
            found.extend(_default_problems(sub, doc, (*path, key, name), sub_field, allowed))
    for key, suffix in (("items", "[*]"), ("additionalProperties", "[*]"), ("not", "")):
        found.extend(_default_problems(node.get(key), doc, (*path, key), field + suffix, allowed))
    for key in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(node.get(key) or ()):
            found.extend(_default_problems(sub, doc, (*path, key, index), field, allowed))
    return found


def _problems(errors: Any, doc: Document, base: Path) -> list[Problem]:
    found: dict[tuple[SourcePos, str], Problem] = {}
    typed: set[Path] = set()
    # (position of a mapping, a key it lacks that one of its unknown keys misspells)
    misspelt: set[tuple[SourcePos, str]] = set()
    errors = list(errors)
    for error in errors:
        path = (*base, *error.absolute_path)
        if error.validator in ("additionalProperties", "unevaluatedProperties"):
            misspelt.update((doc.pos(path), meant) for meant in _misspelt(error))
    for error in errors:
        path = (*base, *error.absolute_path)
        if error.validator == "type":
            # a ``type`` list and an if/else branch may both reject the same value: say it once
            if path in typed:
                continue
            typed.add(path)
        lacks = error.validator in ("required", "oneOf", "anyOf", "minProperties")
        for problem in _explain(error, doc, path):
            if lacks and any(
                problem.pos == pos and f"{key!r}" in problem.message for pos, key in misspelt
            ):
                continue  # the unknown key's "did you mean" is the one problem
            found.setdefault((problem.pos or SourcePos(doc.file), problem.message), problem)
    return [found[key] for key in sorted(found)]


def _misspelt(error: ValidationError) -> list[str]:
    """The keys the mapping of ``error`` (unknown keys) lacks that its unknown keys
    misspell: ``resources`` for ``resourcs``."""
    _keyword, _value, instance, schema = error_parts(error)
    if not isinstance(instance, dict):
        return []
    properties = schema.get("properties", {})
    lacking = [k for k in properties if k not in instance]
    meant = (closest(str(key), lacking) for key in instance if key not in properties)
    return [key for key in meant if key is not None]


def _explain(error: ValidationError, doc: Document, path: Path) -> list[Problem]:
    keyword, value, instance, schema = error_parts(error)
    unknown_keys = keyword in ("additionalProperties", "unevaluatedProperties")
    if unknown_keys and value is False and isinstance(instance, dict):
        known = list(schema.get("properties", {}))
        patterns = list(schema.get("patternProperties", {}))
        where = _container(schema, instance, path, doc.file, preposition=True)
        return [
            Problem(f"unknown key {k!r} {where}{suggest(k, known)}", doc.key_pos((*path, k)))
            for k in instance
            if k not in known and not any(re.search(p, k) for p in patterns)
        ]
    if keyword == "required" and isinstance(instance, dict):
        noun = _container(schema, instance, path, doc.file)
        return [
            Problem(f"{noun}: missing required key {k!r}", doc.pos(path))
            for k in value
            if k not in instance
        ]
    if keyword in ("oneOf", "anyOf"):
        found = alternatives(error)
        if isinstance(found, str):
            noun = _container(schema, instance, path, doc.file)
            return [Problem(f"{noun}: {found}", doc.pos(path))]
        if found is not None:
            base = path[: len(path) - len(error.absolute_path)]
            return [p for sub in found for p in _explain(sub, doc, (*base, *sub.absolute_path))]
    if keyword == "minProperties" and schema.get("properties") and value == 1:
        noun = _container(schema, instance, path, doc.file)
        return [
            Problem(f"{noun}: needs at least one of {either(schema['properties'])}", doc.pos(path))
        ]
    if "propertyNames" in error.absolute_schema_path and isinstance(instance, str):
        # the instance is a key of the mapping at ``path``: point at the key
        message = value_message(error) or one_line(error.message)
        if not message.startswith(fmt(instance)):
            message = f"{fmt(instance)}: {message}"
        return [Problem(f"key {message}", doc.key_pos((*path, instance)))]
    message = value_message(error) or one_line(error.message)
    return [Problem(f"{_subject(path)}: {message}", doc.pos(path))]


def _container(
    schema: Mapping[str, Any], instance: Any, path: Path, file: str, *, preposition: bool = False
) -> str:
    """How to name the mapping at ``path``: "component 'app'", "the readiness rule", ..."""
    title = schema.get("title")
    name = instance.get("name") if isinstance(instance, dict) else None
    if not path and not (title and isinstance(name, str)):
        return f"at the top level of {file}" if preposition else f"top level of {file}"
    if title and isinstance(name, str):
        noun = f"{_lower_first(title)} {name!r}"
    elif title:
        noun = f"the {_lower_first(title)}"
    else:
        noun = repr(_subject(path))
    return f"in {noun}" if preposition else noun


def _subject(path: Sequence[str | int]) -> str:
    """The node at ``path`` as the user wrote it: ``method``, ``dependsOn[1]``."""
    if not path:
        return "the document"
    last = path[-1]
    if isinstance(last, int):
        parent = path[-2] if len(path) > 1 and isinstance(path[-2], str) else "item"
        return f"{parent}[{last}]"
    return str(last)


def _lower_first(title: str) -> str:
    # "Readiness rule" -> "readiness rule", but "DNS-1123 label" stays
    return title if title[1:2].isupper() else title[:1].lower() + title[1:]
