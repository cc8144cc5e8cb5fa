"""Value checks of custom resource schemas: bounds, lengths, patterns, list types, junctors.

Used by ``kubeschema.compile`` for CRD schemas only (built-in kinds carry none of these in
their OpenAPI). Each function takes the schema and returns zero or more checks
``(value, path, errors) -> None`` that run after the node's type check passed. Messages
follow kube-openapi's ("should be less than or equal to 10", "Duplicate value: ...").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sized
from typing import TYPE_CHECKING, Any, cast

from oper8d.kubeschema.messages import Errors, Path, pattern_check, show_value

if TYPE_CHECKING:
    from oper8d.kubeschema.compile import Compiler

Check = Callable[[Any, Path, Errors], None]


def _number_checks(schema: Mapping[str, Any]) -> list[Check]:
    checks: list[Check] = []
    low, high = schema.get("minimum"), schema.get("maximum")
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    multiple = schema.get("multipleOf")
    if low is None and high is None and not multiple:
        return checks

    def check(value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return
        if low is not None and (value <= low if ex_low else value < low):
            rel = "greater than" if ex_low else "greater than or equal to"
            errors.append((path, f"Invalid value: {value}: should be {rel} {low}"))
        if high is not None and (value >= high if ex_high else value > high):
            rel = "less than" if ex_high else "less than or equal to"
            errors.append((path, f"Invalid value: {value}: should be {rel} {high}"))
        if multiple and (value / multiple) % 1:
            errors.append((path, f"Invalid value: {value}: should be a multiple of {multiple}"))

    checks.append(check)
    return checks


def _size_checks(schema: Mapping[str, Any]) -> list[Check]:
    checks: list[Check] = []
    for key, kind, unit, low in (
        ("minLength", str, "chars long", True),
        ("maxLength", str, "chars long", False),
        ("minItems", list, "items", True),
        ("maxItems", list, "items", False),
        ("minProperties", dict, "properties", True),
        ("maxProperties", dict, "properties", False),
    ):
        bound = schema.get(key)
        if isinstance(bound, int):
            checks.append(_size_check(kind, bound, unit, low))
    return checks


def _size_check(kind: type, bound: int, unit: str, low: bool) -> Check:
    def check(value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, kind):
            size = len(cast(Sized, value))
            if low and size < bound:
                errors.append((path, f"Invalid value: {size}: should have at least {bound} {unit}"))
            elif not low and size > bound:
                errors.append((path, f"Too many: {size}: must have at most {bound} {unit}"))

    return check


def _unique_checks(schema: Mapping[str, Any]) -> list[Check]:
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys")
    if list_type == "map" and isinstance(keys, list) and keys:

        def key_of(item: Any) -> Any:
            if not isinstance(item, dict):
                return None
            return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)

    elif list_type == "set" or schema.get("uniqueItems"):

        def key_of(item: Any) -> Any:
            return json.dumps(item, sort_keys=True, default=str)

    else:
        return []

    def check(value: Any, path: Path, errors: Errors) -> None:
        if not isinstance(value, list):
            return
        seen: set[Any] = set()
        for i, item in enumerate(value):
            key = key_of(item)
            if key is None:
                continue
            if key in seen:
                errors.append(((*path, i), f"Duplicate value: {show_value(item)}"))
            seen.add(key)

    return [check]


#: map keys the apiserver defaults before it compares items (a port's protocol)
_KEY_DEFAULTS = {"protocol": "TCP"}


def list_map_check(schema: Mapping[str, Any]) -> Check | None:
    """A built-in list of type ``map``: server-side apply refuses two items with the same
    map keys ("duplicate entries for key [name=\"web\"]"), although a POST takes some
    (env vars, container ports). A missing key field counts as its default (a port's
    protocol: TCP), else as unset."""
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(keys, list) or not keys:
        return None

    def key_of(item: Any) -> tuple[Any, ...] | None:
        if not isinstance(item, dict):
            return None
        found = tuple(item.get(k, _KEY_DEFAULTS.get(k)) for k in keys)
        try:
            hash(found)
        except TypeError:  # a list or map as a key value: the schema check reports it
            return None
        return found

    def shown(found: tuple[Any, ...]) -> str:
        pairs = zip(keys, found, strict=True)
        return ",".join(f"{k}={json.dumps(v)}" for k, v in pairs if v is not None)

    return _duplicates_check(key_of, shown)


def list_set_check(schema: Mapping[str, Any]) -> Check | None:
    """A built-in list of type ``set`` (an object's ``finalizers``, a flow schema's
    ``verbs``): server-side apply refuses a value given twice ("duplicate entries for key
    [=\"example.com/a\"]"), although a POST takes it."""
    if schema.get("x-kubernetes-list-type") != "set":
        return None

    def key_of(item: Any) -> Any:
        if item is None or isinstance(item, dict | list):
            return None  # a null or malformed item: the type check reports it
        return item

    return _duplicates_check(key_of, lambda item: "=" + json.dumps(item, default=str))


def _duplicates_check(key_of: Callable[[Any], Any], shown: Callable[[Any], str]) -> Check:
    """The check that refuses an item of a list whose key (``key_of``; None: the item is
    not compared) an earlier item has, as server-side apply refuses it."""

    def check(value: Any, path: Path, errors: Errors) -> None:
        if not isinstance(value, list) or len(value) < 2:
            return
        seen: set[Any] = set()
        for i, item in enumerate(value):
            key = key_of(item)
            if key is None:
                continue
            if key in seen:
                refused = f"duplicate entries for key [{shown(key)}]"
                errors.append(
                    ((*path, i), f"Duplicate value: {refused} (server-side apply refuses them)")
                )
            seen.add(key)

    return check


def _junctor_checks(schema: Mapping[str, Any], compiler: Compiler) -> list[Check]:
    checks: list[Check] = []
    for branch in schema.get("allOf") or ():
        node = compiler.node(branch, strict=False)
        checks.append(node.check)
    for word, exactly_one in (("anyOf", False), ("oneOf", True)):
        branches = [compiler.node(b, strict=False) for b in schema.get(word) or ()]
        if branches:
            checks.append(_one_of(branches, word, exactly_one))
    if isinstance(schema.get("not"), Mapping):
        negated = compiler.node(schema["not"], strict=False)

        def check_not(value: Any, path: Path, errors: Errors) -> None:
            found: Errors = []
            negated.check(value, path, found)
            if not found:
                errors.append((path, "Forbidden: must not validate the schema (not)"))

        checks.append(check_not)
    return checks


def _one_of(branches: list[Any], word: str, exactly_one: bool) -> Check:
    def check(value: Any, path: Path, errors: Errors) -> None:
        passed = 0
        for branch in branches:
            found: Errors = []
            branch.check(value, path, found)
            passed += not found
        if passed == 0:
            what = "one and only one" if exactly_one else "at least one"
            message = f"must validate {what} schema ({word})"
            errors.append((path, f"Invalid value: {show_value(value)}: {message}"))
        elif exactly_one and passed > 1:
            message = "must validate one and only one schema (oneOf)"
            errors.append((path, f"Invalid value: {show_value(value)}: {message}"))

    return check


def value_checks(schema: Mapping[str, Any], compiler: Compiler) -> list[Check]:
    """All checks a custom resource schema adds beyond type, properties and enum."""
    checks = [*_number_checks(schema), *_size_checks(schema), *_unique_checks(schema)]
    if isinstance(schema.get("pattern"), str):
        checks.append(pattern_check(schema["pattern"]))
    checks.extend(_junctor_checks(schema, compiler))
    return checks
