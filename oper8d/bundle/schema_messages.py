"""Turn jsonschema's validation errors into short messages a person can act on.

Shared by ``bundle.validate`` (bundle files, problems with ``file:line:col``) and
``bundle.spec_schema`` (CR specs, problems naming the field). Messages say what the value
must be and what it is: ``must be one of 'apply', 'update' or 'replace' (got 'patch')``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # jsonschema is imported by what validates (~50 ms): not by this module
    from jsonschema.exceptions import ValidationError

_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}
_UNITS = {"Length": "characters", "Items": "items", "Properties": "keys"}


def error_parts(error: ValidationError) -> tuple[str, Any, Any, Mapping[str, Any]]:
    """``(keyword, keyword value, instance, schema)`` of a validation error. The stubs allow
    an unset keyword and a boolean schema; errors of oper8d's schemas always have a keyword
    and an object schema."""
    schema = cast(Mapping[str, Any], error.schema)
    return cast(str, error.validator), error.validator_value, error.instance, schema


def value_message(error: ValidationError) -> str | None:
    """A message for a keyword about the value itself (type, enum, bounds, pattern, ...),
    without saying where the value is; None for keywords it does not know."""
    keyword, value, instance, schema = error_parts(error)
    if keyword == "type":
        hint = _quote_hint(instance, value)
        return f"must be {type_words(as_list(value))} (got {describe(instance)}){hint}"
    if keyword == "enum":
        return f"must be one of {either(value)} (got {fmt(instance)}){_enum_hint(instance, value)}"
    if keyword == "const":
        return f"must be {fmt(value)} (got {fmt(instance)})"
    if keyword == "pattern":
        title, rule = schema.get("title"), schema.get("description", "")
        if title and isinstance(rule, str) and 0 < len(rule) <= 160:
            return f"{fmt(instance)} is not a valid {title}: {rule.rstrip('.')}"
        return f"must match the pattern {value} (got {fmt(instance)})"
    if keyword == "format":
        return f"{fmt(instance)} is not a valid {value}"
    if keyword in ("minimum", "maximum"):
        strict = schema.get(f"exclusive{keyword.capitalize()}") is True  # OpenAPI v3 / draft 4
        sign = {"minimum": ">", "maximum": "<"}[keyword] + ("" if strict else "=")
        return f"must be {sign} {value} (got {instance})"
    if keyword in ("exclusiveMinimum", "exclusiveMaximum"):
        sign = ">" if keyword == "exclusiveMinimum" else "<"
        return f"must be {sign} {value} (got {instance})"
    if keyword == "multipleOf":
        return f"must be a multiple of {value} (got {instance})"
    if keyword in ("minLength", "minItems", "minProperties"):
        if value == 1:
            return "must not be empty"
        return f"must have at least {value} {_UNITS[keyword[3:]]} (got {len(instance)})"
    if keyword in ("maxLength", "maxItems", "maxProperties"):
        return f"must have at most {value} {_UNITS[keyword[3:]]} (got {len(instance)})"
    if keyword == "uniqueItems":
        return f"must not contain the same item twice (repeated: {fmt(first_repeat(instance))})"
    return None


def alternatives(error: ValidationError) -> str | list[ValidationError] | None:
    """Make a oneOf / anyOf failure readable instead of listing every branch's errors.

    Returns a message when the branches only require one key each ("needs exactly one of
    'object' or 'template'"); else the errors of the branch that fits the value's shape (an
    empty list when another keyword already reports the failure); else None.
    """
    branches: Any = error.validator_value
    instance = error.instance
    exactly = error.validator == "oneOf"
    if all(_only_requires(b) for b in branches):
        if not isinstance(instance, dict):
            return []  # not a mapping at all: its ``type`` error says so
        keys = [b["required"][0] for b in branches]
        present = [k for k in keys if k in instance]
        if len(present) > 1 and exactly:
            return f"has {both(present)}: give exactly one of {either(keys)}"
        return f"needs {'exactly' if exactly else 'at least'} one of {either(keys)}"
    if not error.context:
        return "matches more than one of the allowed forms; make it match exactly one"
    by_branch: dict[int, list[ValidationError]] = defaultdict(list)
    for sub in error.context:
        by_branch[cast(int, sub.relative_schema_path[0])].append(sub)
    # a branch "fits" when the value has the right shape for it (no type error at its root)
    fitting = [
        i
        for i, subs in by_branch.items()
        if not any(s.validator in ("type", "const") and not s.relative_path for s in subs)
    ]
    if len(fitting) == 1:
        return by_branch[fitting[0]]
    if fitting:
        from jsonschema.exceptions import best_match

        return [best_match(s for i in fitting for s in by_branch[i])]
    types = [t for b in branches if isinstance(b, dict) for t in as_list(b.get("type"))]
    if types:
        return f"must be {type_words(types)} (got {describe(instance)})"
    return None


def _only_requires(branch: Any) -> bool:
    return (
        isinstance(branch, dict)
        and len(branch.get("required", ())) == 1
        and set(branch) <= {"required", "title", "description"}
    )


def suggest(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'name'?)`` when a candidate is close to ``word``, else ``""``."""
    close = closest(word, candidates)
    return f" (did you mean {close!r}?)" if close is not None else ""


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` misspells, if one is close to it."""
    options = list(candidates)
    folded = {c.lower(): c for c in options}
    if word.lower() in folded:
        return folded[word.lower()]
    import difflib  # (only for a problem: not loaded by a valid bundle)

    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return close[0] if close else None


def _quote_hint(instance: Any, types: Any) -> str:
    # ``version: 1.2`` is a number in YAML; the fix is quotes
    if as_list(types) == ["string"] and isinstance(instance, bool | int | float):
        return f'; put it in quotes: "{fmt(instance)}"'
    return ""


def _enum_hint(instance: Any, allowed: Sequence[Any]) -> str:
    words = [a for a in allowed if isinstance(a, str)]
    if isinstance(instance, bool | int | float):
        same = [w for w in words if w.lower() == fmt(instance).lower()]
        if same:
            return f'; put it in quotes: "{same[0]}"'
    if isinstance(instance, str):
        close = suggest(instance, words)
        return f"; {close[2:-1]}" if close else ""
    return ""


def type_words(types: Iterable[str]) -> str:
    """``["string", "null"]`` -> ``a string or null``."""
    words = [_TYPE_WORDS.get(t, t) for t in dict.fromkeys(types)]
    if len(words) > 1 and "true or false" in words:  # "true, false or a string"
        at = words.index("true or false")
        words[at : at + 1] = ["true", "false"]
    return either(words, quoted=False)


def describe(value: Any) -> str:
    """What a value is, for "(got ...)": ``a mapping``, ``the string 'x'``, ``the number 5``."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "an empty value"
    if isinstance(value, str):
        return f"the string {fmt(value)}"
    if isinstance(value, bool):
        return fmt(value)
    return f"the number {value}"


def fmt(value: Any) -> str:
    """A value the way it is written in YAML, shortened."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def either(words: Iterable[Any], *, quoted: bool = True) -> str:
    """``'a', 'b' or 'c'``."""
    items = [fmt(w) if quoted else str(w) for w in words]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def both(words: Sequence[str]) -> str:
    """``'a' and 'b'``."""
    items = [repr(w) for w in words]
    return " and ".join([", ".join(items[:-1]), items[-1]])


def first_repeat(items: Any) -> Any:
    seen: list[Any] = []
    for item in items if isinstance(items, list) else ():
        if item in seen:
            return item
        seen.append(item)
    return None


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def one_line(text: str) -> str:
    return " ".join(text.split())
