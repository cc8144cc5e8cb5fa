"""Convert a bundle's spec schema (OpenAPI v3 / JSON Schema) into a Kubernetes structural
schema, the form the ``openAPIV3Schema`` of an apiextensions.k8s.io/v1
CustomResourceDefinition must have. Used by ``manifests.crd``.

A structural schema gives every node a ``type`` (unless it is
``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields``), keeps
allOf/anyOf/oneOf/not to value validation over fields declared outside them, and holds no
``$ref``, ``definitions``, ``patternProperties``, ``additionalProperties: false`` or
``uniqueItems: true``. What the conversion does:

- a ``$ref`` to ``#/...`` inside the schema is inlined (its siblings win); ``$defs`` and
  ``definitions`` go;
- annotations a CRD cannot hold (``$schema``, ``$id``, ``examples``, ``$comment``,
  ``readOnly``, ...) are dropped; ``example`` (singular) stays;
- ``const: x`` becomes ``enum: [x]``; a numeric ``exclusiveMinimum: n`` (JSON Schema
  draft 6+) becomes ``minimum: n, exclusiveMinimum: true``;
- ``type: [t, 'null']`` becomes ``type: t, nullable: true``; ``[integer, string]``
  becomes ``x-kubernetes-int-or-string: true``; ``[integer, number]`` becomes number;
- a node without ``type`` gets the one its keywords imply (``properties`` → object,
  ``items`` → array, ``pattern`` → string, its ``enum`` values' type, its typed
  anyOf/oneOf branches...); a node that says nothing about its type (``{}``), or allows
  several unrelated types, accepts any value: ``x-kubernetes-preserve-unknown-fields``
  without a type;
- ``additionalProperties: false`` is dropped: the API server prunes undeclared fields
  anyway. ``additionalProperties: true``, an object with no properties, and
  ``patternProperties`` or ``additionalProperties`` beside ``properties`` (forbidden in
  a CRD) keep unknown fields (``x-kubernetes-preserve-unknown-fields``);
- ``uniqueItems: true`` (forbidden: quadratic) becomes ``x-kubernetes-list-type: set``
  on a list of scalars and is dropped otherwise; an array without ``items`` gets items
  that accept anything;
- allOf/anyOf/oneOf/not stay as value validation when ``manifests.junctors`` can make
  them structural (it removes branch types equal to the node's own, annotations and
  defaults, and declares on the node the properties a branch names). A junctor whose
  branches carry other types, ``nullable``, ``additionalProperties`` or extensions, and
  any junctor but the exact int-or-string ``anyOf`` under int-or-string, is dropped;
- validations the API server lacks (``if``/``then``/``else``, ``dependencies``,
  ``propertyNames``, ``contains``, ...) are dropped.

Dropping never makes the API server reject a CR the bundle accepts; it moves a check from
admission to reconcile: the engine validates every CR against the bundle's original schema
(``bundle.spec_schema``) and reports failures in the CR's status. Each drop is listed in
:attr:`StructuralSchema.notes`.

What cannot be converted raises BundleError, one Problem per place, naming the schema
path: a ``$ref`` that is remote, dangling or recursive; a ``false`` schema; tuple
``items``; ``type: null`` or an unknown type; a pattern RE2 cannot run; a ``default``
the API server would refuse (see ``manifests.defaults``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from oper8d.bundle.schema_messages import fmt
from oper8d.errors import BundleError, Problem, SourcePos
from oper8d.manifests.defaults import default_problems
from oper8d.manifests.junctors import add_junctors, implied_type
from oper8d.manifests.openapi import (
    ANNOTATIONS,
    DROPPED_ANNOTATIONS,
    EXTENSIONS,
    INT_OR_STRING,
    JUNCTORS,
    PRESERVE,
    UNSUPPORTED_VALIDATIONS,
    VALUE_KEYWORDS,
    SchemaPath,
    TypeSpec,
    convert_bounds,
    field_path,
    infer_type,
    parse_type,
    pattern_problem,
    schema_path,
)
from oper8d.manifests.refs import child_pointer, inline, quiet_inline

_HANDLED = frozenset(
    {
        "type",
        "nullable",
        "default",
        "const",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "properties",
        "additionalProperties",
        "patternProperties",
        "items",
        "uniqueItems",
        "$ref",
        PRESERVE,
        INT_OR_STRING,
        *JUNCTORS,
        *ANNOTATIONS,
        *VALUE_KEYWORDS,
        *EXTENSIONS,
        *DROPPED_ANNOTATIONS,
    }
)
_SCALARS = frozenset({"string", "integer", "number", "boolean"})
# the order keys are written in, for a CRD a person can read; others follow
_KEY_ORDER = {
    key: rank
    for rank, key in enumerate(
        (
            "type",
            "format",
            "description",
            "title",
            "nullable",
            "default",
            "enum",
            INT_OR_STRING,
            PRESERVE,
            "required",
            "properties",
            "additionalProperties",
            "items",
        )
    )
}


@dataclass(frozen=True)
class StructuralSchema:
    """A structural schema, and what the conversion left out (one line each)."""

    schema: dict[str, Any]
    notes: tuple[str, ...] = ()


def structural_schema(
    schema: Mapping[str, Any] | bool,
    *,
    where: str = "resource.schema",
    pos: SourcePos | None = None,
    field_prefix: str = "spec",
) -> StructuralSchema:
    """Convert ``schema`` (the bundle's ``resource.schema``) into a structural schema.

    ``where`` names the schema in messages (``resource.schema.properties.replicas ...``),
    ``pos`` is where the bundle declares it, ``field_prefix`` the CR field it describes.
    Raises BundleError listing every part that cannot be converted.
    """
    converter = _Converter(root=schema, where=where, pos=pos, field_prefix=field_prefix)
    result = converter.node(schema, ())
    if converter.problems:
        raise BundleError(converter.problems)
    return StructuralSchema(result, tuple(converter.notes))


@dataclass
class _Converter:
    """Turns one bundle schema into a structural one, collecting problems and notes."""

    root: Any
    where: str
    pos: SourcePos | None
    field_prefix: str
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: (schema path, JSON pointer in the bundle schema) of the nodes being converted, root
    #: first: a $ref to one of these pointers is recursion
    ancestors: list[tuple[SchemaPath, str]] = field(default_factory=list)

    def problem(self, path: SchemaPath, message: str) -> None:
        where = schema_path(self.where, path)
        field_name = field_path(path, self.field_prefix)
        self.problems.append(Problem(f"{where} {message}", pos=self.pos, field=field_name))

    def note(self, path: SchemaPath, message: str) -> None:
        self.notes.append(f"{schema_path(self.where, path)}: {message}")

    # -- $ref ------------------------------------------------------------------------------

    def node(self, raw: Any, path: SchemaPath) -> dict[str, Any]:
        """The structural form of the schema node ``raw`` found at ``path``."""
        pointer = "#"
        if self.ancestors:
            parent_path, parent_pointer = self.ancestors[-1]
            pointer = child_pointer(parent_pointer, path[len(parent_path) :])
        above = {p for _, p in self.ancestors}
        schema, pointer, why = inline(self.root, raw, pointer, above)
        if why is not None:
            self.problem(path, why)
        self.ancestors.append((path, pointer))
        try:
            return _ordered(self._convert(schema, path))
        finally:
            self.ancestors.pop()

    def quiet_resolve(self, schema: Any) -> Any:
        """``schema`` with its ``$ref`` chain inlined, or None; reports nothing (the
        junctor that holds it is dropped instead)."""
        return quiet_inline(self.root, schema)

    # -- one node --------------------------------------------------------------------------

    def _convert(self, schema: Any, path: SchemaPath) -> dict[str, Any]:
        if schema is None:  # a problem was reported
            return {PRESERVE: True}
        if schema is True:
            return {PRESERVE: True}
        if schema is False:
            self.problem(path, "is `false`, which no value satisfies: remove the field")
            return {PRESERVE: True}
        if not isinstance(schema, Mapping):
            self.problem(path, f"is not a schema (a mapping); got {fmt(schema)}")
            return {PRESERVE: True}
        out: dict[str, Any] = {
            key: copy.deepcopy(value)
            for key, value in schema.items()
            if key in ANNOTATIONS or key in VALUE_KEYWORDS or key in EXTENSIONS
        }
        self._enum(schema, out, path)
        convert_bounds(schema, out)
        if "pattern" in out and (why := pattern_problem(out["pattern"])):
            self.problem(path, why)
        closed = self._object(schema, out, path)
        self._array(schema, out, path)
        self._type(schema, out, path, closed)
        add_junctors(schema, out, self.quiet_resolve, lambda text: self.note(path, text))
        for key in schema:
            if key in UNSUPPORTED_VALIDATIONS:
                self.note(path, f"`{key}` is left out: the API server does not support it")
            elif key not in _HANDLED and key.startswith("x-kubernetes-"):
                self.note(path, f"`{key}` is left out: the API server does not know it")
        if schema.get("default") is not None:
            out["default"] = copy.deepcopy(schema["default"])
            for message in default_problems(out):
                self.problem(path, message)
        return out

    def _enum(self, schema: Mapping[str, Any], out: dict[str, Any], path: SchemaPath) -> None:
        if "const" not in schema:
            return
        const = schema["const"]
        if not isinstance(schema.get("enum"), list):
            out["enum"] = [copy.deepcopy(const)]
            return
        kept = [v for v in schema["enum"] if v == const and type(v) is type(const)]
        if not kept:
            self.problem(path, f"has `const` {fmt(const)}, which its `enum` does not list")
        out["enum"] = kept or [copy.deepcopy(const)]

    def _object(self, schema: Mapping[str, Any], out: dict[str, Any], path: SchemaPath) -> bool:
        """Properties and additionalProperties; True when the object admits no other keys
        (``additionalProperties: false`` and nothing else)."""
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            out["properties"] = {
                name: self.node(sub, (*path, "properties", name))
                for name, sub in properties.items()
            }
        elif properties is not None:
            self.problem(path, "has `properties` that is not a mapping of field schemas")
        extra = schema.get("additionalProperties")
        if extra is True:
            out[PRESERVE] = True
        elif isinstance(extra, Mapping):
            if out.get("properties"):
                self.note(
                    path,
                    "`additionalProperties` beside `properties` is left out (a CRD allows only "
                    "one): undeclared fields are kept as they are",
                )
                out[PRESERVE] = True
            else:
                out["additionalProperties"] = self.node(extra, (*path, "additionalProperties"))
        elif extra not in (None, False):
            self.problem(path, "has `additionalProperties` that is not a schema, true or false")
        if "patternProperties" in schema:
            self.note(
                path,
                "`patternProperties` is left out (the API server does not support it): "
                "undeclared fields are kept as they are",
            )
            out[PRESERVE] = True
            return False
        return extra is False

    def _array(self, schema: Mapping[str, Any], out: dict[str, Any], path: SchemaPath) -> None:
        items = schema.get("items")
        if isinstance(items, list):
            if items and all(item == items[0] for item in items):
                out["items"] = self.node(items[0], (*path, "items"))
            elif items:
                self.problem(
                    path,
                    "has `items` as a list of schemas (a tuple), which a CRD cannot hold: "
                    "give one schema for every item",
                )
        elif items is not None:
            out["items"] = self.node(items, (*path, "items"))
        if schema.get("uniqueItems") is not True or "x-kubernetes-list-type" in out:
            return
        item = out.get("items") or {}
        if item.get("type") in _SCALARS and not item.get("nullable"):
            out["x-kubernetes-list-type"] = "set"
        else:
            self.note(
                path,
                "`uniqueItems` is left out: the API server forbids it, and "
                "x-kubernetes-list-type: set only takes lists of scalars",
            )

    def _type(
        self, schema: Mapping[str, Any], out: dict[str, Any], path: SchemaPath, closed: bool
    ) -> None:
        found: TypeSpec | str | None = None
        if schema.get(INT_OR_STRING) is True:
            found = TypeSpec(None, int_or_string=True)
        elif "type" in schema:
            found = parse_type(schema["type"])
        if isinstance(found, str):
            self.problem(path, found)
            found = TypeSpec(None, any_type=True)
        found = found or implied_type(schema, self.quiet_resolve) or infer_type(schema)
        if found is not None and schema.get("nullable") is True:
            found = replace(found, nullable=True)
        if found is None or found.any_type:
            out.pop("x-kubernetes-list-type", None)  # needs type: array
            out[PRESERVE] = True
            if schema.get("nullable") is True or (found is not None and found.nullable):
                out["nullable"] = True
            return
        if found.nullable:
            out["nullable"] = True
        if found.int_or_string:
            out[INT_OR_STRING] = True
            out.pop(PRESERVE, None)  # the API server refuses both together
            return
        out["type"] = found.name
        if schema.get(PRESERVE) is True:
            out[PRESERVE] = True
        if found.name == "array" and "items" not in out:
            out["items"] = {PRESERVE: True}
        no_fields = "properties" not in out and "additionalProperties" not in out
        if found.name == "object" and no_fields and not closed:
            out[PRESERVE] = True  # JSON Schema's bare object admits any keys


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    last = len(_KEY_ORDER)
    return dict(sorted(node.items(), key=lambda item: _KEY_ORDER.get(item[0], last)))
