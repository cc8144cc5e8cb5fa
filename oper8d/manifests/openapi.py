"""Vocabulary shared by the structural-schema conversion: which OpenAPI keywords a
CustomResourceDefinition keeps, how a JSON Schema ``type`` maps onto one CRD type, and
how a place in the bundle's spec schema is named in messages.

Used by ``manifests.structural``, ``manifests.junctors`` and ``manifests.defaults``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from oper8d.kubeschema.messages import json_type

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"

#: the types a structural schema may name (``null`` is spelled ``nullable: true``)
TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")

#: value validations the API server stores as they are
VALUE_KEYWORDS = frozenset(
    {
        "format",
        "maximum",
        "minimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
    }
)
#: annotations a structural node keeps; inside allOf/anyOf/oneOf/not they are dropped
ANNOTATIONS = frozenset({"description", "title", "example", "externalDocs"})
#: x-kubernetes-* extensions kept on structural nodes (never inside junctors)
EXTENSIONS = frozenset(
    {
        EMBEDDED,
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)
#: JSON Schema annotations a CRD cannot hold; dropping them changes no validation
DROPPED_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "id",
        "$anchor",
        "$comment",
        "examples",
        "definitions",
        "$defs",
        "deprecated",
        "readOnly",
        "writeOnly",
        "xml",
        "discriminator",
        "contentMediaType",
        "contentEncoding",
    }
)
#: JSON Schema validations the API server does not support; oper8d still checks them
UNSUPPORTED_VALIDATIONS = frozenset(
    {
        "if",
        "then",
        "else",
        "contains",
        "minContains",
        "maxContains",
        "propertyNames",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "additionalItems",
        "unevaluatedProperties",
        "unevaluatedItems",
    }
)

# Go's RE2 (the API server's regexp engine) has no look-around and no back-references.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")

SchemaPath = tuple[str | int, ...]


@dataclass(frozen=True)
class TypeSpec:
    """What a JSON Schema ``type`` (or a union of branch types) becomes in a CRD.

    ``name`` is one of TYPES, or None when the value may be of any type (``any_type``)
    or is an int-or-string.
    """

    name: str | None
    nullable: bool = False
    int_or_string: bool = False
    any_type: bool = False


def type_union(names: Iterable[str]) -> TypeSpec | str:
    """The CRD type of "a value of one of these JSON types"; a str is why it has none."""
    wanted = set(names)
    unknown = sorted(n for n in wanted if n not in TYPES and n != "null")
    if unknown:
        return f"has an unknown type {unknown[0]!r} (use one of {', '.join(sorted(TYPES))})"
    nullable = "null" in wanted
    wanted.discard("null")
    if not wanted:
        return "has type null, which a CRD cannot express; mark the field `nullable: true`"
    if len(wanted) == 1:
        return TypeSpec(wanted.pop(), nullable=nullable)
    if wanted == {"integer", "number"}:
        return TypeSpec("number", nullable=nullable)
    if wanted == {"integer", "string"}:
        return TypeSpec(None, nullable=nullable, int_or_string=True)
    return TypeSpec(None, nullable=nullable, any_type=True)


def parse_type(value: Any) -> TypeSpec | str:
    """The CRD type of a ``type`` keyword's value (a name or a list of names)."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return f"has a `type` that is not a type name or a list of them (got {value!r})"
    return type_union(names)


def infer_type(schema: Mapping[str, Any]) -> TypeSpec | None:
    """The type a schema without ``type`` evidently means, from the keywords it uses
    (``properties`` → object, ``items`` → array, ``pattern`` → string, ...) or from the
    values its ``enum``, ``const`` or ``default`` name; None when nothing tells."""
    by_keyword = (
        ("object", ("properties", "additionalProperties", "patternProperties", "required")),
        ("object", ("minProperties", "maxProperties")),
        ("array", ("items", "minItems", "maxItems", "uniqueItems")),
        ("string", ("pattern", "minLength", "maxLength")),
        ("number", ("minimum", "maximum", "multipleOf", "exclusiveMinimum", "exclusiveMaximum")),
    )
    for name, keywords in by_keyword:
        if any(k in schema for k in keywords):
            return TypeSpec(name)
    values: list[Any] = []
    if isinstance(schema.get("enum"), list):
        values = list(schema["enum"])
    elif "const" in schema:
        values = [schema["const"]]
    elif schema.get("default") is not None:
        values = [schema["default"]]
    if not values:
        return None
    found = type_union(json_type(v, integral_floats=True) for v in values)
    return found if isinstance(found, TypeSpec) else None


def convert_bounds(schema: Mapping[str, Any], out: dict[str, Any]) -> None:
    """Copy ``exclusiveMinimum``/``exclusiveMaximum`` into ``out`` in OpenAPI 3.0 form.

    JSON Schema draft 6+ writes ``exclusiveMinimum: 5``; OpenAPI 3.0 (and so a CRD) writes
    ``minimum: 5, exclusiveMinimum: true``. When both a bound and a numeric exclusive bound
    are given, the stricter one is kept.
    """
    stricter_bounds: tuple[tuple[str, str, Callable[[float, float], bool]], ...] = (
        ("minimum", "exclusiveMinimum", lambda new, old: new >= old),
        ("maximum", "exclusiveMaximum", lambda new, old: new <= old),
    )
    for bound, exclusive, stricter in stricter_bounds:
        value = schema.get(exclusive)
        if isinstance(value, bool):
            if value:
                out[exclusive] = True
            continue
        if not isinstance(value, int | float):
            continue
        current = schema.get(bound)
        if not isinstance(current, int | float) or stricter(value, current):
            out[bound] = value
            out[exclusive] = True


def pattern_problem(pattern: Any) -> str | None:
    """Why the API server would refuse ``pattern``, or None."""
    if not isinstance(pattern, str):
        return f"has a `pattern` that is not a string (got {pattern!r})"
    if _NOT_RE2.search(pattern):
        return (
            f"has the pattern {pattern!r}, which uses look-around or a back-reference; the API "
            "server's regular expressions (RE2) support neither: rewrite the pattern"
        )
    try:
        re.compile(pattern)
    except re.error as err:
        return f"has an invalid pattern {pattern!r} ({err})"
    return None


def schema_path(where: str, path: SchemaPath) -> str:
    """``resource.schema`` + ``("properties", "workers", "items")`` ->
    ``resource.schema.properties.workers.items``: where the node is in operator.yaml."""
    out = where
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def field_path(path: SchemaPath, prefix: str = "spec") -> str:
    """The CR field a schema node describes: ``spec.workers[*].name`` (``.*`` for any key
    of a map); the parts inside allOf/anyOf/oneOf/not name no field and are skipped."""
    out, parts = prefix, list(path)
    index = 0
    while index < len(parts):
        part = parts[index]
        if part == "properties" and index + 1 < len(parts):
            out += f".{parts[index + 1]}"
            index += 2
            continue
        if part == "items":
            out += "[*]"
        elif part == "additionalProperties":
            out += ".*"
        elif part == "patternProperties":
            out += ".*"
            index += 1  # skip the pattern too
        elif part in JUNCTORS and index + 1 < len(parts) and isinstance(parts[index + 1], int):
            index += 1  # skip the branch index too
        index += 1
    return out
