"""The text-template environment: where template text is made and what filters make of it.

This is the compile-time half of ``slots``. It decides, once per template, which code makes
:class:`~oper8d.template.slots.TemplateText` and which operations keep it:

- the generated code of a macro, ``caller()``, a recursive loop, a ``{% set %}`` block and a
  ``{% filter %}`` block returns what it printed as template text (:class:`TextCode`), and
  a ``{% call %}`` or ``{% filter %}`` block prints through ``finalize`` like ``{{ }}``;
- ``~`` joins template text with template text and the template's string constants into
  template text (:func:`concat`); with anything else it joins the values;
- filters (:func:`text_filters`): ``indent``/``nindent`` and ``trim`` keep template text,
  the structure filters hand over data (``slots.Placed``), ``from_json`` reads template
  text as the template wrote it (each value stays inside its JSON string), and every other
  filter and test is given values;
- ``{% autoescape %}`` and ``{% block %}`` are refused (:func:`refused_statements`):
  ``Markup`` means nothing here, and a block's output is reached through ``self``.

Operators, attribute and item access and calls see values too (``sandbox``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from jinja2 import nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context

from oper8d.template.filters import quote, scalar_text, squote, to_json, to_yaml
from oper8d.template.slotloader import json_data, plain_scalar
from oper8d.template.slots import (
    SLOTS_VAR,
    Placed,
    Slots,
    TemplateText,
    as_value,
    as_values,
    printable_data,
)
from oper8d.template.values import copy_result

__all__ = ["concat", "refused_statements", "template_text", "text_code_generator", "text_filters"]

_G = TypeVar("_G", bound=CodeGenerator)


_MAKE_TEXT = "environment.oper8d_template_text(context, concat({buffer}))"


def _buffer_text(buffer: str, lineno: int) -> nodes.Expr:
    """An expression node for what the block writing to ``buffer`` printed so far, as
    template text: generated code, as Jinja's parser makes its own internal names."""
    node = object.__new__(nodes.InternalName)
    nodes.Node.__init__(node, _MAKE_TEXT.format(buffer=buffer), lineno=lineno)
    return node


def _over_buffer(node: nodes.Filter, buffer: str) -> nodes.Filter:
    """A copy of a block's filter chain whose innermost filter reads the block's text."""
    chain = copy.copy(node)
    if isinstance(node.node, nodes.Filter):
        chain.node = _over_buffer(node.node, buffer)
    else:
        chain.node = _buffer_text(buffer, node.lineno)
    return chain


def text_code_generator(base: type[_G]) -> type[_G]:
    """``base`` (the sandbox's code generator) with template text made as the module
    docstring says."""

    class TextCode(base):  # type: ignore[valid-type, misc]
        def return_buffer_contents(self, frame: Frame, force_unescaped: bool = False) -> None:
            # macros, caller() and recursive loops
            self.writeline("return " + _MAKE_TEXT.format(buffer=frame.buffer))

        def visit_AssignBlock(self, node: nodes.AssignBlock, frame: Frame) -> None:
            # Jinja's, the block's text made template text before any filter sees it
            self.push_assign_tracking()
            block_frame = frame.inner()
            block_frame.require_output_check = False
            block_frame.symbols.analyze_node(node)
            self.enter_frame(block_frame)
            self.buffer(block_frame)
            self.blockvisit(node.body, block_frame)
            self.newline(node)
            self.visit(node.target, frame)
            self.write(" = ")
            if node.filter is not None:
                self.visit_Filter(_over_buffer(node.filter, str(block_frame.buffer)), block_frame)
            else:
                self.write(_MAKE_TEXT.format(buffer=block_frame.buffer))
            self.pop_assign_tracking(frame)
            self.leave_frame(block_frame)

        def visit_FilterBlock(self, node: nodes.FilterBlock, frame: Frame) -> None:
            filter_frame = frame.inner()
            filter_frame.symbols.analyze_node(node)
            self.enter_frame(filter_frame)
            self.buffer(filter_frame)
            self.blockvisit(node.body, filter_frame)
            self.start_write(frame, node)
            self.write("environment.finalize(context, ")
            self.visit_Filter(_over_buffer(node.filter, str(filter_frame.buffer)), filter_frame)
            self.write(")")
            self.end_write(frame)
            self.leave_frame(filter_frame)

        def visit_CallBlock(self, node: nodes.CallBlock, frame: Frame) -> None:
            call_frame, macro_ref = self.macro_body(node, frame)
            self.writeline("caller = ")
            self.macro_def(macro_ref, call_frame)
            self.start_write(frame, node)
            self.write("environment.finalize(context, ")
            self.visit_Call(node.call, frame, forward_caller=True)
            self.write(")")
            self.end_write(frame)

        def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
            constants = tuple(
                isinstance(part, nodes.Const) and isinstance(part.value, str) for part in node.nodes
            )
            self.write("environment.oper8d_concat(context, (")
            for part in node.nodes:
                self.visit(part, frame)
                self.write(", ")
            self.write(f"), {constants!r})")

    return TextCode


def refused_statements(ast: nodes.Template) -> list[tuple[nodes.Node, str]]:
    """The statements a text template may not use, with why."""
    refused: list[tuple[nodes.Node, str]] = []
    for modifier in ast.find_all((nodes.ScopedEvalContextModifier, nodes.EvalContextModifier)):
        refused.append(
            (
                modifier,
                "{% autoescape %} is not supported in text templates: they print YAML, and "
                "every printed value is one scalar already",
            )
        )
    for loop in ast.find_all(nodes.For):
        if loop.recursive:
            refused.append(
                (
                    loop,
                    "recursive loops are not supported in text templates: use a macro that "
                    "calls itself",
                )
            )
    for block in ast.find_all(nodes.Block):
        refused.append(
            (
                block,
                "{% block %} is not supported in text templates (there is no `extends`): "
                "use a macro",
            )
        )
    return refused


def _slots(context: Context) -> Slots | None:
    slots = context.parent.get(SLOTS_VAR)  # put there by TextTemplate.render_tokens
    return slots if isinstance(slots, Slots) else None


def template_text(context: Context, text: str) -> Any:
    """What generated code makes of a block's printed text."""
    slots = _slots(context)
    return TemplateText(text, slots) if slots is not None else text


def concat(
    context: Context, parts: tuple[Any, ...], constants: tuple[bool, ...], bound: Any, check: Any
) -> Any:
    """``~``: template text joined with template text and the template's string constants
    stays template text; any other join is of the values. ``bound`` and ``check``: the
    sandbox's size checks of a part and of the result."""
    for part in parts:
        bound(part, "a value joined with ~")
    texts = [type(part) is TemplateText for part in parts]
    if any(texts) and all(t or c for t, c in zip(texts, constants, strict=True)):
        slots = _slots(context)
        if slots is not None:
            joined = "".join(
                part.printed_in(slots) if is_text else part
                for part, is_text in zip(parts, texts, strict=True)
            )
            check(joined)
            return TemplateText(joined, slots)
    joined = "".join(str(as_value(part)) for part in parts)
    check(joined)
    return joined


def text_filters(
    filters: Mapping[str, Callable[..., Any]], check_width: Callable[[int, str], None]
) -> dict[str, Callable[..., Any]]:
    """``filters`` for text templates (module docstring). ``check_width``: the sandbox's
    string-size check, for the widths ``indent`` and ``nindent`` are given."""
    out = {name: _valued(function) for name, function in filters.items()}
    out["indent"] = _indenting(filters["indent"], check_width, newline=False)
    out["nindent"] = _indenting(filters["nindent"], check_width, newline=True)
    out["trim"] = _trimming(filters["trim"])
    out["to_yaml"] = _placing(to_yaml, lambda data: data)
    out["to_json"] = out["tojson"] = _placing(to_json, lambda data: data)
    out["quote"] = _placing(quote, scalar_text)
    out["squote"] = _placing(squote, scalar_text)
    out["from_json"] = _reading_json(filters["from_json"])
    # ``default`` gives back its input or its argument, computing nothing from either
    out["default"] = out["d"] = filters["default"]
    return out


def text_tests(tests: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Jinja's tests for text templates: each given values."""
    return {name: _valued(function) for name, function in tests.items()}


def _skip(function: Callable[..., Any]) -> int:
    """How many arguments Jinja passes before the value (``pass_context`` and the like)."""
    return 1 if getattr(function, "jinja_pass_arg", None) is not None else 0


def _valued(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` given values where it is given template text or placed data."""
    skip = _skip(function)

    def valued(*args: Any, **kwargs: Any) -> Any:
        given, kwargs = as_values(args[skip:], kwargs)
        return function(*args[:skip], *given, **kwargs)

    if skip:
        valued.jinja_pass_arg = function.jinja_pass_arg  # type: ignore[attr-defined]
    valued.__name__ = getattr(function, "__name__", "filter")
    valued.__doc__ = function.__doc__
    return valued


def _indenting(
    function: Callable[..., Any], check_width: Callable[[int, str], None], *, newline: bool
) -> Callable[..., Any]:
    """``indent``/``nindent``: template text stays template text; data and values become
    :class:`Placed` behind the layout, so the layout is text and the rest one token."""
    name = "nindent" if newline else "indent"

    def indenting(value: Any, width: int = 4, *more: Any, **named: Any) -> Any:
        if more or named:
            raise TypeError(
                f"{name} takes one argument, the width: it indents every line, the first too "
                "(Helm's)"
            )
        if not isinstance(width, int) or isinstance(width, bool):
            return function(as_value(value), width)  # its own error
        if width < 0:
            raise ValueError(f"{name} takes a width of 0 or more, not {width}")
        check_width(width, name)
        if type(value) is TemplateText:
            lines = value.raw.count("\n") + 1
            check_width(len(value.raw) + lines * width, name)
            return value.indented(width, newline)
        if type(value) is not Placed:
            function(value, 0)  # an undefined value fails as the filter fails
            text = str(value)
            value = Placed(text, text, typed=True)
        check_width(len(value.text) + (value.text.count("\n") + 1) * (value.pad + width), name)
        return value.indented(width, newline)

    indenting.__name__ = name
    return indenting


def _trimming(function: Callable[..., Any]) -> Callable[..., Any]:
    """``trim`` of template text, without characters to drop, drops the whitespace around
    it (never part of a token): template text still."""

    def trimming(value: Any, *args: Any, **kwargs: Any) -> Any:
        if type(value) is TemplateText and not args and not kwargs:
            return value.trimmed()
        if type(value) is Placed and not value.typed and not args and not kwargs:
            # Helm's `toYaml x | trim | nindent n`: the data, without the layout around it
            return dataclasses.replace(value, prefix="", text=value.text.strip())
        return function(as_value(value), *args, **kwargs)

    trimming.__name__ = "trim"
    return trimming


def _placing(serialise: Callable[..., str], landing: Callable[[Any], Any]) -> Callable[..., Any]:
    """A structure filter: the data, serialised for where it lands inside a scalar."""

    @pass_context
    def placing(context: Context, value: Any, *args: Any, **kwargs: Any) -> Placed:
        slots = _slots(context)
        data = printable_data(value, slots.limit if slots is not None else None)
        return Placed(landing(data), serialise(data, *args, **kwargs))

    placing.__name__ = getattr(serialise, "__name__", "filter")
    return placing


def _reading_json(function: Callable[..., Any]) -> Callable[..., Any]:
    """``from_json``: template text is read as the template wrote it, each printed value a
    token inside its JSON string, and the strings of the data then get their values (once:
    a value's own text is never read for tokens); a value is parsed as it is."""

    def reading(value: Any, *args: Any, **kwargs: Any) -> Any:
        if type(value) is not TemplateText:
            return function(as_value(value), *args, **kwargs)
        slots = value.slots
        return _filled_json(json.loads(_quoted_tokens(value.raw, slots)), slots)

    reading.__name__ = "from_json"
    return reading


#: a JSON string, or anything else (where a token printed bare stands for a JSON value)
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
#: the mark a bare token is quoted with: no JSON text the template wrote starts with it
_BARE = "\u0000"


def _quoted_tokens(text: str, slots: Slots) -> str:
    """``text`` with each token printed outside a JSON string written as a string holding
    that token behind :data:`_BARE` (``{"port": {{ p }}}``): its value is put there as
    data, never read as JSON text."""
    if slots.nonce not in text:
        return text
    pattern = re.compile(rf"({_JSON_STRING})|{re.escape(slots.nonce)}(\d+)z")

    def quote(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        return json.dumps(f"{_BARE}{match.group(2)}")

    return pattern.sub(quote, text)


def _bare_value(text: str, slots: Slots) -> Any:
    """The data of a token printed bare into JSON: placed data as it is, a value typed as
    a whole YAML scalar would be (``80`` for ``"80"``)."""
    index = int(text[len(_BARE) :])
    placed = slots.placed.get(index)
    if placed is not None and not placed.typed:
        return json_data(copy_result(slots.values[index]))
    return plain_scalar(placed.body() if placed is not None else slots.values[index])


def _filled_json(data: Any, slots: Slots) -> Any:
    if isinstance(data, str):
        if data.startswith(_BARE) and data[len(_BARE) :].isdigit():
            return _bare_value(data, slots)
        return slots.fill(data)
    if isinstance(data, list):
        return [_filled_json(item, slots) for item in data]
    if isinstance(data, dict):
        filled: dict[str, Any] = {}
        for key, value in data.items():
            bare = key.startswith(_BARE) and key[len(_BARE) :].isdigit()
            name = slots.text_of(int(key[len(_BARE) :])) if bare else slots.fill(key)
            if name in filled:
                raise ValueError(
                    f"from_json: the key {name[:40]!r} appears twice once the values are in "
                    "place: each key may appear once in a mapping"
                )
            filled[name] = _filled_json(value, slots)
        return filled
    return data
