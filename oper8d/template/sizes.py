"""The size checks of the sandbox (``sandbox.LimitedSandbox``): what an operation would
build, checked before it builds it, against ``stringBytes``, ``sequenceItems``, ``intBits``
and ``renderedBytes`` (``limits``)."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

from oper8d.limits import LimitExceeded, Limits, check_expanded

__all__ = ["CONTAINERS", "SizeChecks", "checked_filter", "checked_lipsum"]

#: the values whose expanded size ``SizeChecks.bound`` checks
CONTAINERS = frozenset({list, tuple, dict, set, frozenset})

#: ``%`` conversion specifications (their widths are checked before formatting)
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[a-zA-Z%]")


class SizeChecks:
    """The checks, for an environment with ``limits``."""

    limits: Limits

    def bound(self, value: Any, what: str) -> None:
        """Refuse a list or mapping that expands past ``renderedBytes`` before C code (a
        serialiser, ``str``, a hash) walks it: shared parts count every time they are
        reached, so a value built of ``[s, s]`` thirty times over cannot hang a worker."""
        if type(value) in CONTAINERS:
            check_expanded(value, self.limits.rendered_bytes, what)

    def check_string_size(self, size: int, what: str) -> None:
        if size > self.limits.string_bytes:
            raise LimitExceeded(
                "string_bytes",
                f"{what} would build a string of {size} characters "
                f"(at most {self.limits.string_bytes})",
            )

    def _check_items(self, count: int, what: str) -> None:
        if count > self.limits.sequence_items:
            raise LimitExceeded(
                "sequence_items",
                f"{what} would build a list of {count} items "
                f"(at most {self.limits.sequence_items})",
            )

    def _check_bits(self, bits: int, what: str) -> None:
        if bits > self.limits.int_bits:
            raise LimitExceeded(
                "int_bits",
                f"{what} would compute an integer of about {bits} bits "
                f"(at most {self.limits.int_bits})",
            )

    def check_result(self, value: Any, what: str) -> None:
        """A value just built: strings, lists and integers within their limits."""
        if isinstance(value, str):
            self.check_string_size(len(value), what)
        elif isinstance(value, list | tuple):
            self._check_items(len(value), what)
        elif isinstance(value, int) and not isinstance(value, bool):
            self._check_bits(value.bit_length(), what)

    def _check_power(self, base: Any, exponent: Any) -> None:
        if _is_int(base) and _is_int(exponent) and exponent > 0 and abs(base) > 1:
            self._check_bits(exponent * abs(base).bit_length(), "the power")

    def _check_product(self, left: Any, right: Any) -> None:
        if _is_int(left) and _is_int(right):
            self._check_bits(left.bit_length() + right.bit_length(), "the product")
            return
        for seq, times in ((left, right), (right, left)):
            if not _is_int(times) or times <= 0:
                continue
            if isinstance(seq, str):
                self.check_string_size(len(seq) * times, "repeating a string")
            elif isinstance(seq, list | tuple):
                self._check_items(len(seq) * times, "repeating a list")

    def _check_percent(self, text: str, args: Any) -> None:
        values = args if isinstance(args, tuple) else (args,)
        for match in _PERCENT_SPEC.finditer(text):
            self._check_widths((match.group(1), match.group(2)), values, "'%' formatting")

    def _check_widths(
        self, specs: tuple[str | None, ...], values: tuple[Any, ...], what: str
    ) -> None:
        """Widths and precisions written in ``specs`` (``*``: taken from ``values``)."""
        widths = [int(s) for s in specs if s and s.isdigit()]
        if any(s == "*" for s in specs):
            widths += [abs(v) for v in values if _is_int(v)]
        for width in widths:
            self.check_string_size(width, f"{what} with a width of {width}")

    def _check_str_method(
        self, text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        ints = [abs(v) for v in (*args, *kwargs.values()) if _is_int(v)]
        if name in ("ljust", "rjust", "center", "zfill"):
            for width in ints:
                self.check_string_size(width, f"str.{name}({width})")
        elif name == "expandtabs":
            tab = max(ints, default=8)
            self.check_string_size(len(text) + text.count("\t") * tab, "str.expandtabs")
        elif name == "replace" and len(args) >= 2:
            self.check_string_size(_replaced_size(text, args[0], args[1]), "str.replace")
        elif name in ("format", "format_map"):
            self._check_format_string(text, (*args, *kwargs.values()))
        elif name == "join" and args:
            self.check_string_size(_joined_size(text, args[0]), "str.join")

    def _check_format_string(self, text: str, values: tuple[Any, ...]) -> None:
        try:
            fields = list(string.Formatter().parse(text))
        except ValueError:
            return  # format() raises its own error
        for _literal, _name, spec, _conversion in fields:
            if not spec:
                continue
            digits = re.findall(r"\d+", spec)
            nested = "{" in spec
            self._check_widths((*digits, "*" if nested else None), values, "str.format")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _replaced_size(text: Any, old: Any, new: Any) -> int:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return 0
    count = len(text) + 1 if old == "" else text.count(old)
    return len(text) + count * max(0, len(new) - len(old))


def _joined_size(separator: Any, items: Any) -> int:
    if not isinstance(items, list | tuple):
        return 0
    parts = [len(x) for x in items if isinstance(x, str)]
    return sum(parts) + len(str(separator)) * max(0, len(items) - 1)


def checked_filter(env: SizeChecks, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` with its arguments checked before it runs and its result after."""

    def check_args(value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ints = [abs(v) for v in (*args, *kwargs.values()) if _is_int(v)]
        if name == "format" and isinstance(value, str):
            env._check_percent(value, args)
        elif name in ("center", "indent", "nindent"):
            for width in ints:
                env.check_string_size(width, f"the {name} filter with a width of {width}")
            if name in ("indent", "nindent") and isinstance(value, str) and ints:
                env.check_string_size(len(value) + (value.count("\n") + 1) * max(ints), name)
        elif name == "replace" and len(args) >= 2:
            env.check_string_size(_replaced_size(value, args[0], args[1]), "the replace filter")
        elif name == "slice":
            for count in ints:
                env._check_items(count, "the slice filter")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # pass_context / pass_environment filters get that first: the value follows it
        skip = 1 if getattr(original, "jinja_pass_arg", None) is not None else 0
        for arg in (*args[skip:], *kwargs.values()):
            env.bound(arg, f"the {name} filter's input")
        if len(args) > skip:
            check_args(args[skip], args[skip + 1 :], kwargs)
        if name == "join" and len(args) > skip:
            items = args[skip]
            items = list(items) if not isinstance(items, str) else items
            env.check_string_size(
                sum(len(str(x)) for x in items) if not isinstance(items, str) else len(items),
                "the join filter",
            )
            args = (*args[:skip], items, *args[skip + 1 :])
        result = original(*args, **kwargs)
        env.check_result(result, f"the {name} filter")
        return result

    for attr in ("jinja_pass_arg",):
        if hasattr(original, attr):
            setattr(wrapper, attr, getattr(original, attr))
    wrapper.oper8d_checked = True  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(original, "__name__", name)
    wrapper.__doc__ = original.__doc__
    return wrapper


def checked_lipsum(env: SizeChecks, original: Callable[..., str]) -> Callable[..., str]:
    """Jinja's ``lipsum(n, html, min, max)`` with ``n * max`` words bounded by ``stringBytes``."""

    def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
        if _is_int(n) and _is_int(max):
            env.check_string_size(abs(n) * abs(max) * 12, "lipsum")
        return original(n, html, min, max)

    return lipsum
