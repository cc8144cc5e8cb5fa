"""Values land in text templates as scalars: the YAML structure comes from the template only.

A Helm-style text template is text, and the CR author, who is not trusted, controls values
printed into it. oper8d keeps a value out of the structure by construction:

1. Every ``{{ ... }}`` goes through :func:`finalize`, which records the value in the
   render's :class:`Slots` and prints a *token*: a word of letters and digits, with a nonce
   chosen per engine, that is a plain scalar in every YAML context.
2. The rendered text is parsed (``slotloader``). Its documents, keys and items are the
   template's own text, whatever the values hold; each scalar holding tokens gets its values
   back.

Only two kinds of object print as something other than a token, and templates cannot make
either from a value:

- :class:`TemplateText`: what a macro, ``caller()``, a ``{% set %}`` or ``{% filter %}``
  block or a recursive loop printed, i.e. the template's literal text with the tokens of the
  values it printed. The generated code makes it (``textcode``); its only operations are
  printing, joining with other template text or the template's string constants, indenting
  and trimming whitespace. Anything else (a filter, a method, an operator, a test, a
  comparison) sees :attr:`TemplateText.value`, the text with the values in place, which is
  a value like any other.
- :class:`Placed`: data that ``to_yaml``, ``to_json``, ``quote`` or ``squote`` hand over,
  or a value that ``indent``/``nindent`` put after layout (a line break and spaces). It
  prints as its layout and one token, and the token says what lands where it is parsed: the
  data itself as a whole scalar, the data's keys or items where it stands alone on a line of
  a mapping or list, its text inside a longer, quoted or block scalar.

Anything else that is printed must be data (strings, numbers, booleans, null, lists and
mappings); a tuple, a namespace, a macro or a dict view is an error.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jinja2 import Undefined, pass_context
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context

from oper8d.limits import LimitExceeded, check_expanded

#: the context variable holding the render's Slots
SLOTS_VAR = "__oper8d_slots__"

#: how every nonce starts (``slotloader`` finds tokens by the whole nonce)
NONCE_PREFIX = "oper8dslot"


def new_nonce() -> str:
    """A per-engine token prefix: letters first (a plain scalar), then random hex."""
    return f"{NONCE_PREFIX}{secrets.token_hex(6)}n"


class Slots:
    """The values one render printed, in order; the token of value ``i`` names ``i``.

    Tokens come in three forms (``slotloader`` reads them): ``<nonce><i>z`` for a value,
    and, for data printed alone on a line (:meth:`splice_lines`), ``<nonce><i>m:`` where a
    mapping's keys land and ``- <nonce><i>s`` where a list's items land."""

    __slots__ = ("limit", "nonce", "pattern", "placed", "size", "spliceable", "values")

    def __init__(self, nonce: str, limit: int | None = None) -> None:
        """``limit``: the expanded size printed values may have together (``renderedBytes``)."""
        self.nonce = nonce
        self.limit = limit
        self.values: list[Any] = []
        #: the printed values' size so far (strings' characters, data as written out)
        self.size = 0
        #: the tokens that stand for :class:`Placed` data, by index
        self.placed: dict[int, Placed] = {}
        #: whether a mapping or list was placed (then lines may need :meth:`splice_lines`)
        self.spliceable = False
        self.pattern = _patterns(nonce)

    def token(self, value: Any) -> str:
        """The token of a printed value: counted first (a list or mapping as it would be
        written out, before anything walks it), then kept as data."""
        self._count(value)
        self.values.append(printable_data(value))
        return f"{self.nonce}{len(self.values) - 1}z"

    def _count(self, value: Any) -> None:
        """Add ``value`` to what this render printed, refused past ``limit`` as it grows
        (a loop printing a long value keeps every copy until the text is read)."""
        if self.limit is None:
            return
        if isinstance(value, str):
            self.size += len(value)
        elif isinstance(value, dict | list):
            left = max(self.limit - self.size, 0)
            self.size += check_expanded(value, left, "the printed values")
        else:
            self.size += 1
        if self.size > self.limit:
            raise LimitExceeded(
                "rendered_bytes", "the values this render printed are larger than the limit"
            )

    def place(self, placed: Placed) -> str:
        self._count(placed.text)
        index = len(self.values)
        self.values.append(placed.data)
        self.placed[index] = placed
        if placed.data_kind is not None:
            self.spliceable = True
        return f"{self.nonce}{index}z"

    def text_of(self, index: int) -> str:
        """The text value ``index`` stands for inside a longer scalar."""
        placed = self.placed.get(index)
        if placed is not None:
            size = len(placed.text) + placed.text.count("\n") * placed.pad
            if self.limit is not None and size > self.limit:
                raise LimitExceeded(
                    "rendered_bytes", "indented, a printed value is larger than the limit"
                )
            return placed.body()
        return _text(self.values[index])

    def fill(self, text: str) -> str:
        """``text`` with every token replaced by the text of its value, within ``limit``
        (a template may print one long value many times); a splice mark YAML did not read
        as a key or an item is an error (its data stood alone on its line but its line
        went on)."""
        if self.nonce not in text:
            return text
        parts: list[str] = []
        size, at = 0, 0
        for match in self.pattern.finditer(text):
            if match.group(4) is not None:
                raise ValueError(
                    "data printed alone on its line (`to_yaml`/`to_json` of a mapping or a "
                    "list) is continued by the next line: put nothing after it that YAML "
                    "reads as part of it"
                )
            index = match.group(1) or match.group(2) or match.group(3)
            value = self.text_of(int(index))
            parts += (text[at : match.start()], value)
            size += match.start() - at + len(value)
            at = match.end()
            if self.limit is not None and size > self.limit:
                raise LimitExceeded(
                    "rendered_bytes", "the text with its printed values is larger than the limit"
                )
        parts.append(text[at:])
        return "".join(parts)

    def repadded(self, text: str, width: int) -> str:
        """``text``, indented by ``width`` more, with each placed value's token replaced by
        one whose later lines are indented that much more too (Helm's ``indent`` of text
        indents the lines of what was printed into it)."""
        if not self.placed:
            return text

        def repad(match: re.Match[str]) -> str:
            index = match.group(3)
            placed = self.placed.get(int(index)) if index is not None else None
            if placed is None:
                return match.group(0)
            return self.place(dataclasses.replace(placed, pad=placed.pad + width))

        return self.pattern.sub(repad, text)

    def hide(self, text: str) -> str:
        """``text`` with each value shown as ``{{…}}``: rendered text quoted in an error
        without the values, which may be secrets (and without the nonce)."""
        return self.pattern.sub("{{…}}", text)

    def splice_lines(self, text: str) -> str:
        """``text`` with each token of a placed mapping or list that stands alone on its
        line written where such a line's keys or items go: ``<token>:`` for a mapping,
        ``- <token>`` for a list (``slotloader.splice`` puts the keys or items there)."""
        if not self.spliceable:
            return text
        n = re.escape(self.nonce)

        def rewrite(match: re.Match[str]) -> str:
            index = int(match.group(2))
            placed = self.placed.get(index)
            kind = placed.data_kind if placed is not None else None
            if kind == "mapping":
                return f"{match.group(1)}{self.nonce}{index}m:"
            if kind == "list":
                return f"{match.group(1)}- {self.nonce}{index}s"
            return match.group(0)

        return re.sub(rf"(?m)^([ ]*){n}(\d+)z(?=[ ]*$)", rewrite, text)


@functools.lru_cache(maxsize=16)
def _patterns(nonce: str) -> re.Pattern[str]:
    n = re.escape(nonce)
    return re.compile(rf"- {n}(\d+)s|{n}(\d+)m:|{n}(\d+)z|{n}(\d+)[ms]")


def _text(value: Any) -> str:
    """A value's text inside a longer scalar: what Jinja would print."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


class _SeenAsValue:
    """What Python does with template text or placed data (Jinja's filters, ``in``, ``==``,
    ``if``, ``x[1:]``) sees its :attr:`value`, the text plain Jinja would have printed."""

    __slots__ = ()

    @property
    def value(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __getitem__(self, key: Any) -> str:
        return self.value[key]

    def __contains__(self, item: object) -> bool:
        return str(item) in self.value

    def __eq__(self, other: object) -> bool:
        return bool(self.value == as_value(other))

    def __lt__(self, other: object) -> bool:
        return bool(self.value < as_value(other))

    def __hash__(self) -> int:
        return hash(self.value)


class TemplateText(_SeenAsValue):
    """The template's own text with the tokens of the values it printed (module docstring).
    Only generated code makes one (``textcode``)."""

    __slots__ = ("_slots", "_text")

    def __init__(self, text: str, slots: Slots) -> None:
        self._text = text
        self._slots = slots

    def printed_in(self, slots: Slots) -> str:
        """The text to print into the render of ``slots``."""
        if slots is not self._slots:
            raise SecurityError("template text of another render cannot be printed here")
        return self._text

    def trimmed(self) -> TemplateText:
        """Without the whitespace around it (never part of a token)."""
        return TemplateText(self._text.strip(), self._slots)

    def indented(self, width: int, newline: bool) -> TemplateText:
        """Helm's ``indent``/``nindent``: every line, and every later line of a value
        placed in it (``Slots.repadded``), ``width`` columns further right."""
        pad = " " * width
        text = ("\n" if newline else "") + pad + self._text.replace("\n", "\n" + pad)
        return TemplateText(self._slots.repadded(text, width), self._slots)

    @property
    def slots(self) -> Slots:
        return self._slots

    @property
    def raw(self) -> str:
        """The text with its tokens (for ``from_json``, which fills what it parses)."""
        return self._text

    @property
    def value(self) -> str:
        return self._slots.fill(self._text)


@dataclass(frozen=True, eq=False)
class Placed(_SeenAsValue):
    """Data handed over by a structure filter, or a value behind ``indent``/``nindent``
    layout (module docstring).

    ``data``: what lands as a whole scalar; ``text``: its text inside a longer scalar (the
    serialisation); ``typed``: a whole scalar's string is typed as Helm output would be (a
    value, not serialised data); ``prefix``: the layout printed before the token (line
    breaks and spaces only); ``pad``: the spaces ``indent`` put before each later line."""

    data: Any
    text: str
    typed: bool = False
    prefix: str = ""
    pad: int = 0

    @property
    def data_kind(self) -> str | None:
        if self.typed:
            return None
        if isinstance(self.data, dict):
            return "mapping"
        return "list" if isinstance(self.data, list) else None

    def body(self) -> str:
        """The text after the layout, each later line indented by ``pad``."""
        return self.text.replace("\n", "\n" + " " * self.pad) if self.pad else self.text

    def indented(self, width: int, newline: bool) -> Placed:
        """Helm's ``indent``/``nindent`` of the text this prints."""
        pad = " " * width
        prefix = ("\n" if newline else "") + pad + self.prefix.replace("\n", "\n" + pad)
        return Placed(self.data, self.text, self.typed, prefix, self.pad + width)

    @property
    def value(self) -> str:
        return self.prefix + self.body()

    __hash__ = _SeenAsValue.__hash__


#: what is printed as itself (everything else a template prints is refused)
_SCALARS = (str, int, float, bool, type(None))


def as_values(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A call's arguments as :func:`as_value` sees them, copied only when one changes."""
    if any(type(arg) is TemplateText or type(arg) is Placed for arg in args):
        args = tuple(as_value(arg) for arg in args)
    if kwargs and any(type(v) is TemplateText or type(v) is Placed for v in kwargs.values()):
        kwargs = {key: as_value(value) for key, value in kwargs.items()}
    return args, kwargs


def as_value(value: Any) -> Any:
    """``value`` as the operations of a template see it: template text and placed data
    as their text, anything else as it is."""
    if type(value) is TemplateText or type(value) is Placed:
        return value.value
    return value


@pass_context
def finalize(context: Context, value: Any) -> str:
    """Jinja's ``finalize`` for text templates: what ``{{ ... }}`` prints (module docstring)."""
    slots = context.get(SLOTS_VAR)
    if not isinstance(slots, Slots):  # rendered outside TextTemplate.render: plain output
        return str(as_value(value))
    kind = type(value)
    if kind is TemplateText:
        return value.printed_in(slots)  # type: ignore[no-any-return]
    if kind is Placed:
        return value.prefix + slots.place(value)  # type: ignore[no-any-return]
    return slots.token(value)


def printable_data(value: Any, limit: int | None = None) -> Any:
    """``value`` as data that can be printed or serialised: template text and placed data
    inside it as their values (a copy only where something changed); an error for anything
    that is not data, and for data larger than ``limit`` written out (``limits``)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if limit is not None:
        check_expanded(value, limit, "the printed value")
    return _data(value, 0)


_DEPTH = 200


def _data(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is TemplateText or kind is Placed:
        return value.value
    if depth > _DEPTH:
        raise LimitExceeded("nesting_depth", "the printed value nests too deep")
    if kind is dict:
        out = {}
        changed = False
        for key, item in value.items():
            new_key, new_item = _data(key, depth + 1), _data(item, depth + 1)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if kind is list:
        items = [_data(item, depth + 1) for item in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return items if changed else value
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises here, naming what is missing
    if isinstance(value, str):  # Markup and other str subclasses: plain text
        return str.__str__(value)
    raise TypeError(
        f"a {type(value).__name__} cannot be printed: a text template prints data (strings, "
        "numbers, booleans, null, lists and mappings) or template text (macros, set blocks)"
    )
