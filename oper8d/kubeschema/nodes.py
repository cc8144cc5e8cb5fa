"""Compiled schema nodes: one small object per schema, with ``check`` and ``coerce``.

``kubeschema.compile`` turns a (stripped) OpenAPI schema into a tree of these once per
kind; ``check(value, path, errors)`` then walks a rendered object appending
``(path, message)`` for every problem, and ``coerce`` turns numbers and booleans into
strings where the schema says string. Paths (``kubeschema.messages``) are built only as
deep as the walk goes, and a valid leaf costs one type lookup in its parent (its node's
``fast_types``), which keeps a Deployment near 15 µs.

Null follows the apiserver: a built-in kind's Go decoder takes ``null`` as "unset", so
``null`` is accepted there except as the value of a required field. A custom resource's
``null`` is pruned where the property has a ``default:`` (which then applies) and kept
where it is ``nullable``; anywhere else (a typed property, a map's value, a list item) it
is refused as the wrong type, as the apiserver does.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from oper8d.kubeschema.messages import (
    Allow,
    Coercions,
    Errors,
    MapKey,
    Path,
    format_path,
    show_value,
    type_error,
)


class Node:
    """Base: accepts anything. Subclasses override ``check`` and, for strings, ``coerce``."""

    __slots__ = ("extra", "null_ok")
    #: whether ``coerce`` may change a string (ports); others only change numbers and bools
    coerces_strings = False

    def __init__(self) -> None:
        self.null_ok = True
        #: value-only checks (enum, bounds, junctors) run after the type check
        self.extra: tuple[Callable[[Any, Path, Errors], None], ...] = ()

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        for extra in self.extra:
            extra(value, path, errors)

    def coerce(self, value: Any, path: Path, out: Coercions, allow: Allow | None) -> Any:
        return value

    def fast_types(self) -> frozenset[type]:
        """Exact Python types that always pass this node with nothing more to check: the
        walk skips the call for them (most leaves of a valid object)."""
        return _ANY if not self.extra and type(self) is Node else frozenset()


_NONE = type(None)
#: every type a rendered object holds
_ANY: frozenset[type] = frozenset({str, int, float, bool, dict, list, _NONE})
#: values ``coerce`` never changes, nor looks inside
_NO_COERCE = frozenset({str, _NONE})


def _null(node: Node, value: Any, path: Path, errors: Errors, expected: str) -> None:
    if not node.null_ok:
        errors.append((path, type_error(value, expected)))


class StringNode(Node):
    __slots__ = ("fmt",)

    def __init__(self, fmt: Callable[[str], str | None] | None) -> None:
        super().__init__()
        self.fmt = fmt

    def fast_types(self) -> frozenset[type]:
        plain = self.fmt is None and not self.extra
        return frozenset({str, _NONE} if self.null_ok else {str}) if plain else frozenset()

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, str):
            if self.fmt is not None:
                problem = self.fmt(value)
                if problem:
                    errors.append((path, f"Invalid value: {show_value(value)}: {problem}"))
        elif value is None:
            _null(self, value, path, errors, "string")
            return
        elif not isinstance(value, datetime.date):  # YAML timestamps serialize as strings
            errors.append((path, type_error(value, "string")))
            return
        for extra in self.extra:
            extra(value, path, errors)

    def coerce(self, value: Any, path: Path, out: Coercions, allow: Allow | None) -> Any:
        if isinstance(value, int | float) and (allow is None or allow(path)):
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            out.append((path, value, text))
            return text
        return value


class IntegerNode(Node):
    __slots__ = ("bits", "high", "low", "whole_floats")

    def __init__(self, bits: str | None, low: int, high: int, whole_floats: bool) -> None:
        super().__init__()
        self.bits, self.low, self.high, self.whole_floats = bits, low, high, whole_floats

    def fast_types(self) -> frozenset[type]:
        wide = self.low <= -(2**63) and self.high >= 2**63 - 1 and not self.extra
        return frozenset({int, _NONE} if self.null_ok else {int}) if wide else frozenset()

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            if value is None:
                _null(self, value, path, errors, "integer")
                return
            if not (self.whole_floats and isinstance(value, float) and value.is_integer()):
                errors.append((path, type_error(value, "integer")))
                return
        if not self.low <= value <= self.high:
            what = f" {self.bits}" if self.bits else ""
            limits = f"must fit in{what} ({self.low} to {self.high})"
            errors.append((path, f"Invalid value: {value}: {limits}"))
            return
        for extra in self.extra:
            extra(value, path, errors)

    def coerce(self, value: Any, path: Path, out: Coercions, allow: Allow | None) -> Any:
        # a whole float (``3.0``, a custom resource's integer as YAML gave it) is the
        # integer the apiserver stores and returns for it
        whole = isinstance(value, float) and value.is_integer()
        if whole and self.low <= value <= self.high and (allow is None or allow(path)):
            out.append((path, value, int(value)))
            return int(value)
        return value


class NumberNode(Node):
    __slots__ = ()

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            if value is None:
                _null(self, value, path, errors, "number")
            else:
                errors.append((path, type_error(value, "number")))
            return
        for extra in self.extra:
            extra(value, path, errors)


class BooleanNode(Node):
    __slots__ = ()

    def fast_types(self) -> frozenset[type]:
        if self.extra:
            return frozenset()
        return frozenset({bool, _NONE} if self.null_ok else {bool})

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if not isinstance(value, bool):
            if value is None:
                _null(self, value, path, errors, "boolean")
            else:
                errors.append((path, type_error(value, "boolean")))
            return
        for extra in self.extra:
            extra(value, path, errors)


class IntOrStringNode(Node):
    """``x-kubernetes-int-or-string`` (IntOrString): an integer or a string, not a float."""

    __slots__ = ()

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            for extra in self.extra:
                extra(value, path, errors)
        elif value is None:
            _null(self, value, path, errors, "integer or string")
        else:
            errors.append((path, type_error(value, "integer or string")))


class PortNode(IntOrStringNode):
    """A port: a number, or the name of a container port (``http``). A string of digits is
    refused by the apiserver ("must contain at least one letter"); ``coerce`` turns it into
    the number the author meant (``targetPort: "{{ port }}"``)."""

    __slots__ = ("name_problem",)
    coerces_strings = True

    def __init__(self, name_problem: Callable[[str], str | None]) -> None:
        super().__init__()
        self.name_problem = name_problem

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, str):
            problem = self.name_problem(value)
            if problem:
                errors.append((path, f"Invalid value: {show_value(value)}: {problem}"))
            return
        super().check(value, path, errors)

    def coerce(self, value: Any, path: Path, out: Coercions, allow: Allow | None) -> Any:
        digits = isinstance(value, str) and value.isascii() and value.isdigit()
        if digits and (allow is None or allow(path)):
            out.append((path, value, int(value)))
            return int(value)
        return value


class QuantityNode(Node):
    """``resource.Quantity``: a number or a string such as ``500m`` or ``1Gi``."""

    __slots__ = ("parse",)

    def __init__(self, parse: Callable[[str], str | None]) -> None:
        super().__init__()
        self.parse = parse

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if isinstance(value, str):
            problem = self.parse(value)
            if problem:
                errors.append((path, f"Invalid value: {show_value(value)}: {problem}"))
        elif value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            errors.append((path, type_error(value, "quantity (string or number)")))


class ArrayNode(Node):
    __slots__ = ("_fast", "items", "null_items_empty")

    def __init__(self, items: Node) -> None:
        super().__init__()
        self.items = items
        self._fast: frozenset[type] | None = None
        #: check a null item as ``{}`` (built-in lists of structs, as Go decodes them)
        self.null_items_empty = False

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if not isinstance(value, list):
            if value is None:
                _null(self, value, path, errors, "array")
            else:
                errors.append((path, type_error(value, "array")))
            return
        fast = self._fast
        if fast is None:
            fast = self._fast = self.items.fast_types()
        check = self.items.check
        for i, item in enumerate(value):
            if type(item) not in fast:
                if item is None and self.null_items_empty:
                    item = {}
                check(item, (*path, i), errors)
        for extra in self.extra:
            extra(value, path, errors)

    def coerce(self, value: Any, path: Path, out: Coercions, allow: Allow | None) -> Any:
        if not isinstance(value, list):
            return value
        result = value
        for i, item in enumerate(value):
            new = self.items.coerce(item, (*path, i), out, allow)
            if new is not item:
                if result is value:
                    result = list(value)
                result[i] = new
        return result


class ObjectNode(Node):
    """An object: declared ``properties``, a map's ``additional`` values, or both unknown.

    ``strict``: an undeclared field is an error (strict field validation), unless the
    schema preserves unknown fields. ``meta`` checks ``metadata`` of an embedded resource.
    """

    __slots__ = (
        "_pending",
        "_props",
        "_table",
        "additional",
        "embedded",
        "nulls_refused",
        "objects_only",
        "preserve",
        "required",
        "strict",
    )

    def __init__(self) -> None:
        super().__init__()
        self._props: dict[str, Node] = {}
        #: fills ``props`` on first use (``compile``: a built-in definition's properties)
        #: with ``fill``; None once filled
        self._pending: Callable[[], None] | None = None
        self.required: tuple[str, ...] = ()
        self.additional: Node | None = None
        self.preserve = False
        self.strict = True
        #: False for an untyped junctor branch (``required: [a]``): non-objects pass
        self.objects_only = True
        self.embedded: Callable[[dict[str, Any], Path, Errors], None] | None = None
        #: properties whose ``null`` is refused (custom resources: ``compile._null_refused``)
        self.nulls_refused: frozenset[str] = frozenset()
        self._table: tuple[dict[str, tuple[Node, frozenset[type]]], frozenset[type]] | None = None

    @property
    def props(self) -> dict[str, Node]:
        """The declared properties' nodes (built on first use when deferred)."""
        if self._pending is not None:
            self._complete()
        return self._props

    def defer(self, build: Callable[[], None]) -> None:
        """Have ``build()`` ``fill`` the properties when first asked for them: a kind's
        schema reaches hundreds of definitions (every volume source, probe, affinity
        term...) of which an object uses a few, and compiling them all up front cost
        more than checking the objects of a render."""
        self._pending = build

    def fill(self, props: dict[str, Node]) -> None:
        """Set the deferred properties (``build`` does, once, under its compiler's lock)."""
        self._props, self._pending = props, None

    @property
    def deferred(self) -> bool:
        """Whether ``props`` is still to be built."""
        return self._pending is not None

    def _complete(self) -> None:
        build = self._pending
        if build is not None:
            build()

    def _build_table(self) -> tuple[dict[str, tuple[Node, frozenset[type]]], frozenset[type]]:
        """Each property's node with its fast types, made on first use (after compile)."""
        table = {k: (n, n.fast_types()) for k, n in self.props.items()}
        extra = self.additional.fast_types() if self.additional is not None else frozenset()
        self._table = (table, extra)
        return self._table

    def check(self, value: Any, path: Path, errors: Errors) -> None:
        if not isinstance(value, dict):
            if value is None:
                _null(self, value, path, errors, "object")
            elif self.objects_only:
                errors.append((path, type_error(value, "object")))
            return
        table, add_fast = self._table or self._build_table()
        additional = self.additional
        for key, item in value.items():
            entry = table.get(key)
            if entry is not None:
                if item is None:
                    if key in self.nulls_refused:
                        entry[0].check(item, (*path, key), errors)
                elif type(item) not in entry[1]:
                    entry[0].check(item, (*path, key), errors)
            elif additional is not None:
                if type(item) not in add_fast:
                    additional.check(item, (*path, MapKey(key)), errors)
            elif self.strict and not self.preserve:
                errors.append(((*path, key), self._unknown(key, path)))
        for name in self.required:
            if value.get(name) is None:
                errors.append(((*path, name), "Required value"))
        if self.embedded is not None:
            self.embedded(value, path, errors)
        for extra in self.extra:
            extra(value, path, errors)

    def _unknown(self, key: Any, path: Path) -> str:
        message = f'unknown field "{format_path((*path, key))}"'
        import difflib  # (only for a problem: a valid object does not load it)

        close = difflib.get_close_matches(str(key), list(self.props), n=1, cutoff=0.7)
        return f'{message}; did you mean "{close[0]}"?' if close else message

    def coerce(self, value: Any, path: Path, out: Coercions, allow: Allow | None) -> Any:
        if not isinstance(value, dict):
            return value
        result = value
        props = self.props
        for key, item in value.items():
            node = props.get(key)
            if type(item) in _NO_COERCE and not (node is not None and node.coerces_strings):
                continue
            if node is not None:
                new = node.coerce(item, (*path, key), out, allow)
            elif self.additional is not None:
                new = self.additional.coerce(item, (*path, MapKey(key)), out, allow)
            else:
                continue
            if new is not item:
                if result is value:
                    result = dict(value)
                result[key] = new
        return result
