"""Keywords a bundle's CR or config schema may use: a misspelt one is a problem at its line.

JSON Schema ignores a keyword it does not know, so ``propertes:`` in a CR schema switched
off every check and default below it, and the generated CRD then accepted anything. The API
server refuses such a CRD (strict field validation of ``openAPIV3Schema``). Known here: the
keywords of JSON Schema drafts 4 to 2020-12, OpenAPI 3.0's, and the ``x-kubernetes-*``
extensions a CRD accepts; any other ``x-`` extension is the bundle author's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["unknown_keywords"]

KEYWORDS = frozenset(
    {
        "$schema", "$id", "id", "$ref", "$defs", "definitions", "$comment", "$anchor",
        "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary",
        "title", "description", "default", "examples", "example", "deprecated", "readOnly",
        "writeOnly", "type", "enum", "const", "format", "multipleOf", "maximum",
        "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength",
        "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
        "contains", "items", "prefixItems", "additionalItems", "unevaluatedItems",
        "maxProperties", "minProperties", "required", "dependentRequired",
        "dependentSchemas", "dependencies", "properties", "patternProperties",
        "additionalProperties", "unevaluatedProperties", "propertyNames", "allOf", "anyOf",
        "oneOf", "not", "if", "then", "else", "contentEncoding", "contentMediaType",
        "contentSchema", "nullable", "discriminator", "externalDocs", "xml",
    }
)  # fmt: skip

#: the extensions of apiextensions.k8s.io/v1 JSONSchemaProps
KUBERNETES_EXTENSIONS = frozenset(
    {
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations",
    }
)  # fmt: skip

#: keywords whose value is a mapping of names to schemas, or one schema, or schemas
_NAMED = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas")
_ONE = ("items", "additionalProperties", "additionalItems", "not", "if", "then", "else",
        "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")


def unknown_keywords(node: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[Any, str]]:
    """``(path of the key, the key)`` of each keyword no schema vocabulary above knows, in
    ``node`` and the schemas below it (never in the data of ``enum``, ``default``...)."""
    if not isinstance(node, Mapping):
        return
    for key in node:
        if not isinstance(key, str):
            continue
        known = key in KEYWORDS or key in KUBERNETES_EXTENSIONS
        if not known and (not key.startswith("x-") or key.startswith("x-kubernetes-")):
            yield (*path, key), key
    for key in _NAMED:
        named = node.get(key)
        if isinstance(named, Mapping):
            for name, sub in named.items():
                yield from unknown_keywords(sub, (*path, key, name))
    for key in _ONE:
        yield from unknown_keywords(node.get(key), (*path, key))
    for key in _MANY:
        subs = node.get(key)
        if isinstance(subs, list):
            for index, sub in enumerate(subs):
                yield from unknown_keywords(sub, (*path, key, index))
