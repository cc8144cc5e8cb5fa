"""The filters of text templates: what each may do with printed structure and with values.

A text template prints values as tokens (``slots``), so text that a template made from
printed values (a ``{% set x %}...{% endset %}`` block, a macro's output, the body of a
``{% filter %}`` block) holds tokens, not the values. The filters wrapped here decide
what that text means to them:

- **structure filters** (``to_yaml``, ``to_json``, ``quote``, ``squote``) serialise the
  data, so a value can never leave its own subtree: their output is :class:`YamlText`,
  printed as is;
- ``indent``/``nindent`` and ``trim`` only move the text's lines or drop the whitespace
  around it: of structure, structure (its tokens keep standing for the values);
- **every other filter** computes something *from* the text (``sha256``, ``b64encode``,
  ``trunc63``, ``length``, ``upper``, ``replace``): given text holding tokens it sees the
  values themselves, as the template author means (``checksum/config: {{ conf | sha256 }}``
  changes when the config does). Its result is then a value: printed, it is one scalar,
  however it came to be (the tenant's text it holds can never add a key, an item or an
  object). A filter that picks one of its arguments (``default``, ``first``) gives that
  argument back unchanged. ``from_json`` parses the text as written instead (tokens and
  all): a value stays inside the JSON string it was printed in. Without tokens in its
  arguments such a filter still refuses to join printed structure to a value
  (``check_joined``).

A ``{% filter %}`` block's result would be written to the text as it is (Jinja does not
finalize it); :func:`text_code_generator` routes it through ``finalize`` like any
``{{ ... }}``, so it is a token or checked structure too.

What holds for a filter holds for the template's other operations on such text
(:func:`guard_operands`): slicing or indexing it (``conf[-5:]``), calling a string method
(``conf.upper()``, ``conf.split('-')``) or comparing it (``'2.1' in conf``) sees the values,
and the result is a value. On the tokens they would cut a token or miss a value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from jinja2 import nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from markupsafe import Markup

from oper8d.template.sandbox import plain_callable
from oper8d.template.slots import SLOTS_VAR, Slots, YamlText, check_joined, fill_text

__all__ = ["filled_operand", "guard_operands", "text_code_generator", "trusted_filters"]

_G = TypeVar("_G", bound=CodeGenerator)

#: filters whose output is structure the template means to print
STRUCTURE_FILTERS = ("to_yaml", "toYaml", "to_json", "toJson", "quote", "squote")
#: Jinja's HTML filters: they return Markup (escaped for HTML, not YAML), so in text
#: templates their result is a plain value like any other
MARKUP_FILTERS = ("e", "escape", "forceescape", "urlize", "xmlattr")
#: filters that keep their input's trust (indenting structure keeps it structure)
PRESERVING_FILTERS = ("indent", "nindent")
#: filters that keep structure structure when called without arguments (``trim`` drops the
#: whitespace around the text; with characters to drop it could cut a token)
TRIMMING_FILTERS = ("trim",)
#: filters that parse their text into data: they parse it as written, tokens and all, so
#: a value stays inside the JSON string it was printed in (given the values, a tenant's
#: ``"}, "securityContext": {...`` would become keys: Helm's ``fromJson (include ...)``)
PARSING_FILTERS = ("from_json",)


def trusted_filters(filters: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """``filters`` for text templates: structure filters return :class:`YamlText`,
    ``indent``/``nindent`` keep it, ``safe`` is removed (it would print a value raw), and
    every other filter sees values where its text holds tokens (its result a value), or
    refuses to combine printed structure with a value (``check_joined``)."""
    out = dict(filters)
    for name in STRUCTURE_FILTERS:
        if name in out:
            out[name] = _marking(out[name])
    for name in PRESERVING_FILTERS:
        if name in out:
            out[name] = _preserving(out[name])
    for name in MARKUP_FILTERS:
        if name in out:
            out[name] = _plain(out[name])
    out.pop("safe", None)
    special = {*STRUCTURE_FILTERS, *PRESERVING_FILTERS, *MARKUP_FILTERS}
    for name in out.keys() - special:
        out[name] = _guarded(
            out[name], trims=name in TRIMMING_FILTERS, parses=name in PARSING_FILTERS
        )
    return out


def _prepared(args: tuple[Any, ...], nonce: str | None) -> tuple[tuple[Any, ...], bool]:
    """``args`` with iterators (``map``'s or ``select``'s output) made lists, so they can be
    checked and still be used, and whether a string among them (or directly inside a list
    or tuple of them) holds a token of the render whose nonce is ``nonce``."""
    found = False
    listed: list[Any] | None = None
    for index, value in enumerate(args):
        if isinstance(value, str):
            if nonce is not None and nonce in value:
                found = True
            continue
        if isinstance(value, Iterator):
            if listed is None:
                listed = list(args)
            value = listed[index] = list(value)
        if nonce is not None and isinstance(value, list | tuple) and not found:
            found = any(isinstance(item, str) and nonce in item for item in value)
    return (args if listed is None else tuple(listed)), found


def _guarded(
    function: Callable[..., Any], trims: bool = False, parses: bool = False
) -> Callable[..., Any]:
    """Any other filter (module docstring). Text holding tokens is given to it with the
    values in place and its text result is a value; otherwise a value may not meet
    printed structure inside it (``join`` with a macro's output as separator,
    ``m() | format(v)``, ``to_yaml | replace('x', v)``: Markup escapes the value for HTML
    and the result would print raw), checked when the result is Markup. ``trims``: the
    filter keeps structure structure when called with its value alone (``trim``);
    ``parses``: it parses its text into data, so it is given the tokens, never the values
    (``PARSING_FILTERS``)."""
    pass_arg = getattr(function, "jinja_pass_arg", None)

    @pass_context
    def guarded(context: Context, *args: Any, **kwargs: Any) -> Any:
        slots = context.parent.get(SLOTS_VAR)  # put there by TextTemplate.render_tokens
        nonce = slots.nonce if isinstance(slots, Slots) else None
        if trims and len(args) == 1 and not kwargs:
            nonce = None  # trimmed structure stays structure
        args, found = _prepared(args, nonce)
        if kwargs and nonce is not None and not found:
            found = _prepared(tuple(kwargs.values()), nonce)[1]
        if found and isinstance(slots, Slots) and not parses:
            return _over_values(function, _passed(pass_arg, context), slots, args, kwargs)
        result = function(*_passed(pass_arg, context), *args, **kwargs)
        if isinstance(result, Markup):
            check_joined((*args, *kwargs.values()))
        return result

    guarded.__name__ = getattr(function, "__name__", "filter")
    return guarded


def _passed(pass_arg: Any, context: Context) -> tuple[Any, ...]:
    """What a filter marked ``pass_arg`` (``pass_context`` and the like) takes first, as
    Jinja would have passed it."""
    if pass_arg is None:
        return ()
    name = getattr(pass_arg, "name", "")
    if name == "context":
        return (context,)
    if name == "eval_context":
        return (context.eval_ctx,)
    return (context.environment,)


def _over_values(
    function: Callable[..., Any],
    first: tuple[Any, ...],
    slots: Slots,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``function`` over ``args`` with every token replaced by its value. A text result is
    a plain string (printed, a value: one scalar); an argument given back is given back as
    it was (``default``, ``first``: still the template's text)."""
    originals: dict[int, Any] = {}

    def filled(value: Any) -> Any:
        if isinstance(value, str):
            if slots.nonce not in value:
                return value
            text = fill_text(value, slots)
            originals[id(text)] = value
            return text
        if isinstance(value, list | tuple):
            return type(value)(filled(item) for item in value)
        return value

    values = tuple(filled(a) for a in args)
    named = {key: filled(value) for key, value in kwargs.items()}
    result = function(*first, *values, **named)
    original = originals.get(id(result))
    if original is not None:
        return original
    if isinstance(result, str):
        return str.__str__(result)  # Markup of values is a value, never structure
    return result


def _plain(function: Callable[..., Any]) -> Callable[..., Any]:
    """An HTML filter whose Markup result would print raw: its text becomes a value."""

    def plain(value: Any, *args: Any, **kwargs: Any) -> str:
        return str.__str__(function(value, *args, **kwargs))

    plain.__name__ = getattr(function, "__name__", "filter")
    if hasattr(function, "jinja_pass_arg"):  # urlize, xmlattr take Jinja's eval context
        plain.jinja_pass_arg = function.jinja_pass_arg  # type: ignore[attr-defined]
    return plain


def _marking(function: Callable[..., Any]) -> Callable[..., Any]:
    def trusted(value: Any, *args: Any, **kwargs: Any) -> YamlText:
        return YamlText(function(value, *args, **kwargs))

    trusted.__name__ = getattr(function, "__name__", "filter")
    return trusted


def _preserving(function: Callable[..., Any]) -> Callable[..., Any]:
    """``indent``/``nindent``: of trusted text, trusted text; of a value, the newline and
    padding in front stay layout (``conf: |{{ x | nindent(4) }}``) and the rest is a value."""

    @pass_context
    def keeping(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        result = function(value, *args, **kwargs)
        if isinstance(value, Markup):
            return YamlText(result)
        slots = context.get(SLOTS_VAR)
        if not isinstance(slots, Slots):
            return result
        text = str(result)
        rest = text.lstrip("\n ")
        return YamlText(text[: len(text) - len(rest)] + slots.token(rest))

    keeping.__name__ = getattr(function, "__name__", "filter")
    return keeping


def text_code_generator(base: type[_G]) -> type[_G]:
    """``base`` (the sandbox's code generator) with ``{% filter %}`` blocks finalized: their
    result is printed as ``{{ ... }}`` prints a value (``slots.finalize``), not raw."""

    class TextCodeGenerator(base):  # type: ignore[valid-type, misc]
        def visit_FilterBlock(self, node: nodes.FilterBlock, frame: Frame) -> None:
            # Jinja's visit_FilterBlock, the filter's result passed through finalize
            filter_frame = frame.inner()
            filter_frame.symbols.analyze_node(node)
            self.enter_frame(filter_frame)
            self.buffer(filter_frame)
            self.blockvisit(node.body, filter_frame)
            self.start_write(frame, node)
            self.write("str(environment.finalize(context, ")
            self.visit_Filter(node.filter, filter_frame)
            self.write("))")
            self.end_write(frame)
            self.leave_frame(filter_frame)

    return TextCodeGenerator


#: the attributes of a string: reading one of them from text holding tokens reads it
#: from the text with the values (``conf.upper``); any other name is no string's
_STR_ATTRIBUTES = frozenset(name for name in dir(str) if not name.startswith("_"))


@plain_callable
def filled_operand(context: Context, value: Any) -> Any:
    """Called by a text template's code (:func:`guard_operands`) with what it slices,
    indexes, compares or calls a string method of: text holding the render's tokens as a
    plain string with the values in place (a value), anything else as it is."""
    if isinstance(value, str):
        slots = context.parent.get(SLOTS_VAR)  # put there by TextTemplate.render_tokens
        if isinstance(slots, Slots) and slots.nonce in value:
            return str.__str__(fill_text(value, slots))
    return value


def guard_operands(ast: nodes.Template) -> nodes.Template:
    """Route (in place) what ``ast`` slices or indexes (``x[...]``), the string whose
    method it reads (``x.upper``) and both sides of every comparison through
    ``environment.filled_operand``, so that they see values, not tokens."""

    def filled(node: nodes.Expr) -> nodes.Expr:
        function = nodes.EnvironmentAttribute("filled_operand", lineno=node.lineno)
        context = nodes.ContextReference(lineno=node.lineno)
        return nodes.Call(function, [context, node], [], None, None, lineno=node.lineno)

    for item in ast.find_all(nodes.Getitem):
        if not (isinstance(item.arg, nodes.Const) and isinstance(item.arg.value, str)):
            item.node = filled(item.node)  # a string's index is a number or a slice
    for attribute in ast.find_all(nodes.Getattr):
        if attribute.attr in _STR_ATTRIBUTES:
            attribute.node = filled(attribute.node)
    for compare in ast.find_all(nodes.Compare):
        compare.expr = filled(compare.expr)
        for operand in compare.ops:
            operand.expr = filled(operand.expr)
    return ast
