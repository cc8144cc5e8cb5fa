"""A CR's spec against the bundle's OpenAPI v3 spec schema: defaults, then validation.

``engine.reconcile`` and ``oper8d validate`` call :func:`apply_defaults` and then
:func:`validate_instance`, the order the API server uses, so a CR behaves the same whether
the API server or oper8d saw it first. Both are re-exported by ``bundle.validate``.

The schema dialect is what Kubernetes accepts in a CustomResourceDefinition: OpenAPI v3.0
(JSON Schema draft 4 with boolean ``exclusiveMinimum``/``exclusiveMaximum``) plus
``nullable`` and the ``x-kubernetes-*`` extensions. ``x-kubernetes-int-or-string`` and
``x-kubernetes-list-type`` (``set``, ``map``) are checked; ``format`` and the other
extensions (``preserve-unknown-fields``, ``embedded-resource``, ``validations``) are
annotations here. ``2.0`` counts as an integer, as it does for the API server.

``pattern`` (and ``patternProperties``) run on RE2, the engine of Go's ``regexp`` that the
API server uses: matching takes time linear in the value (Python's ``re`` backtracks, and
``^([a-z0-9]+-?)+$`` took 19 s on a 28-character CR value), and the semantics are Go's
(``$`` matches only at the end of the text, not before a final newline; look-around and
back-references are not patterns at all, as the API server refuses them).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from oper8d.bundle.plain_schema import plainly_valid
from oper8d.bundle.schema_messages import (
    alternatives,
    describe,
    error_parts,
    fmt,
    one_line,
    suggest,
    value_message,
)
from oper8d.errors import Problem

if TYPE_CHECKING:  # imported by the first check that needs jsonschema (~50 ms of start-up)
    from jsonschema.exceptions import ValidationError

Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], "Iterable[ValidationError] | None"]


def _nullable_guard(keyword: Keyword) -> Keyword:
    """OpenAPI ``nullable: true``: null passes every keyword of that schema."""

    def check(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
        if instance is None and schema.get("nullable") is True:
            return
        yield from keyword(validator, value, instance, schema) or ()

    return check


def _int_or_string(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if value is True and (isinstance(instance, bool) or not isinstance(instance, int | str)):
        yield _error(f"must be an integer or a string (got {describe(instance)})")


def _list_type(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not isinstance(instance, list) or value not in ("set", "map"):
        return
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if value == "map" and keys:
        seen = [
            ", ".join(f"{k}={fmt(i.get(k))}" for k in keys) if isinstance(i, dict) else fmt(i)
            for i in instance
        ]
        what = "key (" + ", ".join(keys) + ")"
    else:
        seen, what = [fmt(i) for i in instance], "item"
    for n, item in enumerate(seen):
        if item in seen[:n]:
            yield _error(f"must not contain the same {what} twice (repeated: {item})")
            return


class PatternError(ValueError):
    """A ``pattern`` that Go's regexp (RE2) cannot compile."""


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (a pure memo: the same pattern always compiles the same).
    RE2 is imported here, by the first schema that has a pattern (~5 ms of start-up)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print every syntax error on stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as err:
        detail = err.args[0] if err.args else err
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        message = f"the pattern {pattern!r} is not a valid RE2 pattern: {detail}"
        raise PatternError(message) from None


def pattern_matches(pattern: str, text: str) -> bool:
    """Whether ``text`` contains a match of ``pattern``, as Go's ``regexp.MatchString`` says.
    Raises :class:`PatternError` for a pattern RE2 cannot compile."""
    return _compiled(pattern).search(text) is not None


def _pattern(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not (isinstance(instance, str) and isinstance(value, str)):
        return
    if not pattern_matches(value, instance):
        yield _error(f"{instance!r} does not match {value!r}")


def _pattern_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not isinstance(instance, dict) or not isinstance(value, Mapping):
        return
    for pattern, subschema in value.items():
        for key, item in instance.items():
            if isinstance(key, str) and pattern_matches(pattern, key):
                yield from validator.descend(item, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    """jsonschema's keyword, with ``patternProperties`` matched by RE2 (jsonschema's own
    uses Python's ``re`` on every key of the CR)."""
    if not isinstance(instance, dict):
        return
    properties = schema.get("properties") or {}
    patterns = schema.get("patternProperties") or {}
    extras = [
        key
        for key in instance
        if key not in properties and not any(pattern_matches(p, str(key)) for p in patterns)
    ]
    if isinstance(value, Mapping):
        for key in extras:
            yield from validator.descend(instance[key], value, path=key)
    elif value is False and extras:
        unexpected = ", ".join(repr(key) for key in sorted(map(str, extras)))
        yield _error(f"Additional properties are not allowed ({unexpected} unexpected)")


def _error(message: str) -> ValidationError:
    from jsonschema.exceptions import ValidationError

    return ValidationError(message)


@functools.cache
def openapi_validator() -> Any:
    """The jsonschema validator class of the dialect: built once, on first use, like a class
    statement (it holds no state), so that importing this module does not import jsonschema."""
    from jsonschema import Draft4Validator, Draft6Validator, validators

    return validators.extend(  # type: ignore[no-untyped-call]
        Draft4Validator,
        validators={
            **{k: _nullable_guard(fn) for k, fn in Draft4Validator.VALIDATORS.items()},
            "x-kubernetes-int-or-string": _nullable_guard(_int_or_string),
            "x-kubernetes-list-type": _nullable_guard(_list_type),
            "pattern": _nullable_guard(_pattern),
            "patternProperties": _nullable_guard(_pattern_properties),
            "additionalProperties": _nullable_guard(_additional_properties),
        },
        type_checker=Draft6Validator.TYPE_CHECKER,  # draft 6+: 2.0 is an integer
    )


def validate_instance(
    instance: Any, schema: Mapping[str, Any], *, field_prefix: str = "spec"
) -> list[Problem]:
    """Every problem of ``instance`` (a CR's spec) under the OpenAPI v3 ``schema``.

    Call :func:`apply_defaults` first: it also drops the nulls the schema does not allow,
    which the API server drops too (they are not errors). Each Problem has ``field`` set
    (``spec.replicas``) and a message such as ``must be >= 1 (got 0)``; ``str(problem)``
    is ``spec.replicas: must be >= 1 (got 0)``. Sorted by field.
    """
    if plainly_valid(instance, schema):
        return []  # certainly no problem: jsonschema is not even imported
    from jsonschema.exceptions import UnknownType
    from referencing.exceptions import Unresolvable

    found: list[tuple[tuple[Any, ...], Problem]] = []
    try:
        for error in openapi_validator()(schema).iter_errors(instance):
            found.extend(_field_problems(error, field_prefix))
    except UnknownType as err:
        message = f"cannot be checked: the bundle's spec schema has an unknown type {err.type!r}"
        return [Problem(message, field=field_prefix)]
    except (Unresolvable, re.error, PatternError) as err:
        message = f"cannot be checked: the bundle's spec schema is invalid ({one_line(str(err))})"
        return [Problem(message, field=field_prefix)]
    found.sort(key=lambda item: (item[0], item[1].message))
    return list(dict.fromkeys(problem for _, problem in found))


def _field_problems(error: ValidationError, prefix: str) -> list[tuple[tuple[Any, ...], Problem]]:
    path = tuple(error.absolute_path)
    keyword, value, instance, schema = error_parts(error)
    if keyword == "required" and isinstance(instance, dict):
        return [
            _at(prefix, (*path, k), "required field is missing") for k in value if k not in instance
        ]
    if keyword == "additionalProperties" and value is False:
        known = list(schema.get("properties", {}))
        patterns = list(schema.get("patternProperties", {}))
        return [
            _at(prefix, (*path, k), "unknown field" + suggest(k, known))
            for k in instance
            if k not in known and not any(pattern_matches(p, k) for p in patterns)
        ]
    if keyword in ("oneOf", "anyOf"):
        found = alternatives(error)
        if isinstance(found, str):
            return [_at(prefix, path, found)]
        if found is not None:
            return [p for sub in found for p in _field_problems(sub, prefix)]
    return [_at(prefix, path, value_message(error) or one_line(error.message))]


def _at(prefix: str, path: tuple[Any, ...], message: str) -> tuple[tuple[Any, ...], Problem]:
    order = tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in path)
    return order, Problem(message, field=field_path(prefix, path))


def field_path(prefix: str, path: Iterable[str | int]) -> str:
    """``spec`` + ``("workers", 0, "name")`` -> ``spec.workers[0].name``; odd keys in brackets."""
    out = prefix
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out


# -- unknown fields --------------------------------------------------------------------------


def unknown_fields(
    instance: Any, schema: Mapping[str, Any], *, field_prefix: str = "spec"
) -> list[Problem]:
    """The fields of ``instance`` that the API server would prune under ``schema``, at any
    depth: each ``unknown field`` with the closest declared name (``spec.enableCach:
    unknown field (did you mean 'enableCache'?)``).

    A node keeps unknown fields when it declares no properties (the structural conversion,
    ``manifests.structural``, preserves them there), has
    ``x-kubernetes-preserve-unknown-fields``, ``patternProperties`` or
    ``additionalProperties`` true or a schema. ``additionalProperties: false`` is left to
    :func:`validate_instance`, which reports it already. Properties an allOf/anyOf/oneOf
    branch declares count as declared, and ``#/...`` references are followed."""
    found: list[Problem] = []
    _unknown(instance, schema, schema, (), field_prefix, found)
    return found


def _resolved(node: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    ref = node.get("$ref") if isinstance(node, Mapping) else None
    if not isinstance(ref, str) or not ref.startswith("#/") or depth > 20:
        return node
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, Mapping) else None
    if not isinstance(target, Mapping):
        return node
    merged = {**_resolved(target, root, depth + 1), **node}
    merged.pop("$ref", None)
    return merged


def _declared(node: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """A node's properties with those its junctor branches declare (its own win)."""
    out: dict[str, Any] = {}
    for junctor in ("allOf", "anyOf", "oneOf"):
        for branch in node.get(junctor) or ():
            branch = _resolved(branch, root)
            if isinstance(branch, Mapping):
                out.update(_declared(branch, root))
    out.update(node.get("properties") or {})
    return out


def _unknown(
    value: Any,
    node: Any,
    root: Mapping[str, Any],
    path: tuple[str | int, ...],
    prefix: str,
    found: list[Problem],
) -> None:
    node = _resolved(node, root)
    if not isinstance(node, Mapping):
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _unknown(item, node.get("items"), root, (*path, index), prefix, found)
        return
    if not isinstance(value, dict):
        return
    declared = _declared(node, root)
    extra = node.get("additionalProperties")
    keeps = (
        not declared
        or node.get("x-kubernetes-preserve-unknown-fields") is True
        or bool(node.get("patternProperties"))
        or extra is not None
    )
    for key, sub in value.items():
        if key in declared:
            _unknown(sub, declared[key], root, (*path, key), prefix, found)
        elif isinstance(extra, Mapping):
            _unknown(sub, extra, root, (*path, key), prefix, found)
        elif not keeps and isinstance(key, str):
            message = "unknown field" + suggest(key, declared)
            found.append(Problem(message, field=field_path(prefix, (*path, key))))


def declares(schema: Any, path: tuple[str | int, ...]) -> tuple[bool | None, tuple[str, ...]]:
    """Whether the bundle's spec ``schema`` declares the CR's field at ``path``
    (``("spec", "db", "port")``): True, False with the names declared where the path
    left the schema (for a "did you mean"), or None when it cannot tell (not under
    ``spec``, a node that keeps unknown fields or uses junctors or references)."""
    if not path or path[0] != "spec" or not isinstance(schema, Mapping):
        return None, ()
    node: Any = schema
    for part in path[1:]:
        if not isinstance(node, Mapping):
            return None, ()
        if isinstance(part, int):
            node = node.get("items")
            continue
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        if part in props:
            node = props[part]
        elif isinstance(extra, Mapping):
            node = extra
        elif (
            not props
            or extra is True
            or node.get("x-kubernetes-preserve-unknown-fields")
            or node.get("patternProperties")
            or any(node.get(j) for j in ("allOf", "anyOf", "oneOf", "$ref"))
        ):
            return None, ()
        else:
            return False, tuple(props)
    return True, ()


# -- defaulting ------------------------------------------------------------------------------


def apply_defaults(instance: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of ``instance`` with the schema's ``default``s filled in, as the API server does.

    The rules of Kubernetes structural-schema defaulting (apiextensions-apiserver
    ``schema/defaulting``):

    - first, a null whose schema is not ``nullable`` and has no default is dropped;
    - a property's default applies when the key is absent, or null and not ``nullable``;
      ``additionalProperties`` and ``items`` defaults replace such nulls in maps and lists;
    - defaulting goes top-down and then descends into every value, defaulted ones included,
      so a ``default: {}`` on an object lets the defaults of its own properties apply;
    - ``default: null`` counts as no default; defaults are deep-copied, never shared.

    ``instance`` None (no spec at all) becomes the root schema's default, if it has one.
    """
    result = copy.deepcopy(instance)
    if result is None and _default_of(schema) is not None and not schema.get("nullable"):
        result = copy.deepcopy(schema["default"])
    _prune_nulls(result, schema)
    _fill_defaults(result, schema)
    return result


def _default_of(schema: Any) -> Any:
    return schema.get("default") if isinstance(schema, Mapping) else None


def _schema_of(key: str, schema: Any) -> Mapping[str, Any] | None:
    if not isinstance(schema, Mapping):
        return None
    properties = schema.get("properties") or {}
    if key in properties:
        return cast(Mapping[str, Any], properties[key])
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _non_nullable_null(value: Any, schema: Any) -> bool:
    return value is None and isinstance(schema, Mapping) and not schema.get("nullable")


def _prune_nulls(value: Any, schema: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            sub = _schema_of(key, schema)
            if _non_nullable_null(value[key], sub) and _default_of(sub) is None:
                del value[key]
            else:
                _prune_nulls(value[key], sub)
    elif isinstance(value, list):
        items = schema.get("items") if isinstance(schema, Mapping) else None
        for item in value:
            _prune_nulls(item, items)


def _fill_defaults(value: Any, schema: Any) -> None:
    if not isinstance(schema, Mapping):
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            default = _default_of(sub)
            if default is not None and (key not in value or _non_nullable_null(value[key], sub)):
                value[key] = copy.deepcopy(default)
        for key in list(value):
            sub = _schema_of(key, schema)
            if key not in properties:
                _replace_null(value, key, sub)
            _fill_defaults(value[key], sub)
    elif isinstance(value, list):
        items = schema.get("items")
        for index in range(len(value)):
            _replace_null(value, index, items)
            _fill_defaults(value[index], items)


def _replace_null(container: Any, key: Any, schema: Any) -> None:
    if _non_nullable_null(container[key], schema) and _default_of(schema) is not None:
        container[key] = copy.deepcopy(schema["default"])
