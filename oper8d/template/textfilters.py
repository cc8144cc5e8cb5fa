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
  argument back unchanged. Without tokens in its arguments such a filter still refuses
  to join printed structure to a value (``check_joined``). Only text holds tokens: a
  plain string spelling one is a value (a CR author who learned the nonce), never filled;
- ``from_json`` parses the text as written instead (tokens and all), so a value stays
  inside the JSON string it was printed in, then gives each string of the data its values
  back. It refuses a value, and text printing a structure filter's output (YAML for the
  document, which inside JSON a value could end).

A ``{% filter %}`` block's result would be written to the text as it is (Jinja does not
finalize it); :func:`text_code_generator` routes it through ``finalize`` like any
``{{ ... }}``, so it is a token or checked structure too.

What holds for a filter holds for the template's other operations on such text
(:func:`guard_operands`): slicing or indexing it (``conf[-5:]``), calling a string method
(``conf.upper()``, ``conf.split('-')``), iterating it, comparing it (``'2.1' in conf``) and
testing it (``{% if conf %}``, ``conf is eq 'x'``, ``not conf``, ``conf or 'none'``) see the
values; the result of an operation is a value. On the tokens they would cut a token, miss a
value, or find a block printing an empty value true.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from jinja2 import nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from oper8d.template.layout import marks_in, strip_marks
from oper8d.template.sandbox import plain_callable
from oper8d.template.slots import (
    NONCE_PREFIX,
    PARSING_FILTERS,
    SLOTS_VAR,
    Literal,
    Slots,
    YamlText,
    check_joined,
    fill_text,
    filled_data,
    holds_tokens,
    keep_structure,
    spelled_token,
)

__all__ = [
    "filled_operand",
    "guard_operands",
    "template_literal",
    "text_code_generator",
    "trusted_filters",
]

_G = TypeVar("_G", bound=CodeGenerator)

#: filters whose output is structure the template means to print
#: (and Jinja's ``tojson``: JSON, escaped for HTML, which YAML reads as the same data)
STRUCTURE_FILTERS = ("to_yaml", "toYaml", "to_json", "toJson", "tojson", "quote", "squote")
#: Jinja's HTML filters: they return Markup (escaped for HTML, not YAML), so in text
#: templates their result is a plain value like any other
MARKUP_FILTERS = ("e", "escape", "forceescape", "urlize", "xmlattr")
#: filters that keep their input's trust (indenting structure keeps it structure)
PRESERVING_FILTERS = ("indent", "nindent")
#: filters that keep structure structure when called without arguments (``trim`` drops the
#: whitespace around the text; with characters to drop it could cut a token)
TRIMMING_FILTERS = ("trim",)


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
        if name in out:  # (over text holding tokens, the values: ``_guarded``)
            out[name] = _guarded(_plain(out[name]))
    out.pop("safe", None)
    special = {*STRUCTURE_FILTERS, *PRESERVING_FILTERS, *MARKUP_FILTERS}
    for name in PARSING_FILTERS:
        if name in out:
            out[name] = _parsing(out[name])
    special |= {*PARSING_FILTERS}
    for name in out.keys() - special:
        out[name] = _guarded(out[name], trims=name in TRIMMING_FILTERS)
    return out


def _prepared(args: tuple[Any, ...], nonce: str | None) -> tuple[tuple[Any, ...], bool]:
    """``args`` with iterators (``map``'s or ``select``'s output) made lists, so they can be
    checked and still be used, and whether a string among them (or directly inside a list
    or tuple of them) holds a token of the render whose nonce is ``nonce``."""
    found = False
    listed: list[Any] | None = None
    for index, value in enumerate(args):
        if isinstance(value, str):
            if nonce is not None and isinstance(value, Markup) and nonce in value:
                found = True  # (a plain string spelling a token is a value: never filled)
            continue
        if isinstance(value, Iterator):
            if listed is None:
                listed = list(args)
            value = listed[index] = list(value)
        if nonce is not None and isinstance(value, list | tuple) and not found:
            found = any(isinstance(item, Markup) and nonce in item for item in value)
    return (args if listed is None else tuple(listed)), found


def _guarded(function: Callable[..., Any], trims: bool = False) -> Callable[..., Any]:
    """Any other filter (module docstring). Text holding tokens is given to it with the
    values in place and its text result is a value; otherwise a value may not meet
    printed structure inside it (``join`` with a macro's output as separator,
    ``m() | format(v)``, ``to_yaml | replace('x', v)``: Markup escapes the value for HTML
    and the result would print raw), checked when the result is Markup. ``trims``: the
    filter keeps structure structure when called with its value alone (``trim``)."""
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
        if found and isinstance(slots, Slots):
            return _over_values(function, _passed(pass_arg, context), slots, args, kwargs)
        result = function(*_passed(pass_arg, context), *args, **kwargs)
        if isinstance(result, Markup):
            check_joined((*args, *kwargs.values()))
            result = keep_structure((*args, *kwargs.values()), result)
        return result

    guarded.__name__ = getattr(function, "__name__", "filter")
    return guarded


def _parsing(function: Callable[..., Any]) -> Callable[..., Any]:
    """``from_json`` (``PARSING_FILTERS``): the JSON a template wrote is parsed with its
    tokens, so its structure is the template's, then each string of the data gets its values
    back (``(block | from_json).name`` is the value). Text with a structure filter's output
    in it is refused: ``to_yaml``, ``quote``, ``to_json`` print YAML for the document, which
    inside JSON a value could end (``{"a": "{{ x | to_yaml }}"}``). Any other argument goes
    to the filter itself, which refuses a value."""

    @pass_context
    def parsing(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        slots = context.parent.get(SLOTS_VAR)  # put there by TextTemplate.render_tokens
        if not isinstance(slots, Slots) or not isinstance(value, Markup):
            return function(value, *args, **kwargs)
        structures = slots.structures or ()
        if isinstance(value, YamlText) or any(
            index in structures for index in marks_in(slots.nonce, value)
        ):
            raise SecurityError(
                f"{getattr(function, '__name__', 'the filter')} cannot parse text that prints "
                "a structure filter's output (to_yaml, to_json, tojson, quote, squote): that "
                "is YAML for the document, and in JSON a value could end it and add keys; print "
                'values as "{{ x }}" inside JSON strings, or build the data and use to_json'
            )
        data = function(Markup(strip_marks(slots.nonce, value)), *args, **kwargs)
        return _filled_json(data, slots)

    parsing.__name__ = getattr(function, "__name__", "filter")
    return parsing


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
            if not holds_tokens(value, slots):
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


def _filled_json(data: Any, slots: Slots) -> Any:
    """What ``from_json`` parsed from a template's text, each string with its values (once:
    a value's own text is never read for tokens); a key that a value makes the same as
    another key of its mapping is an error, as a duplicate key in the YAML is."""
    if isinstance(data, str):
        return fill_text(data, slots) if slots.nonce in data else data
    if isinstance(data, list):
        return [_filled_json(item, slots) for item in data]
    if isinstance(data, dict):
        filled: dict[str, Any] = {}
        for key, value in data.items():
            name = _filled_json(key, slots)
            if name in filled:
                raise SecurityError(
                    f"from_json: the key {name[:40]!r} appears twice once the values are in "
                    "place: each key may appear once in a mapping"
                )
            filled[name] = _filled_json(value, slots)
        return filled
    return data


def _marking(function: Callable[..., Any]) -> Callable[..., Any]:
    """A structure filter: its output is :class:`YamlText`, printed as it is. Text holding
    tokens in its data is given as the text with the values (``{'n': block} | to_yaml``);
    an output holding the token prefix otherwise holds a value spelling a token, which
    printed as is would be read as one (and give another printed value): refused."""
    pass_arg = getattr(function, "jinja_pass_arg", None)  # Jinja's tojson: eval context

    @pass_context
    def trusted(context: Context, value: Any, *args: Any, **kwargs: Any) -> YamlText:
        slots = context.parent.get(SLOTS_VAR)  # put there by TextTemplate.render_tokens
        if isinstance(slots, Slots):
            value = filled_data(value, slots)
        result = function(*_passed(pass_arg, context), value, *args, **kwargs)
        if NONCE_PREFIX in result:
            raise spelled_token()  # (``value`` may be a mapping holding secrets)
        return YamlText(result)

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


#: the attributes of a string (and of Markup: ``striptags``, ``unescape``): reading one of
#: them from text holding tokens reads it from the text with the values (``conf.upper``)
_STR_ATTRIBUTES = frozenset(name for name in dir(Markup) if not name.startswith("_"))


@plain_callable
def template_literal(text: str) -> Literal:
    """Called by a text template's code with a string constant (:func:`guard_operands`)."""
    return Literal(text)


@plain_callable
def filled_operand(context: Context, value: Any) -> Any:
    """Called by a text template's code (:func:`guard_operands`) with what it tests,
    slices, indexes, iterates, compares or calls a string method of: text holding the
    render's tokens as a plain string with the values in place (a value), anything else as
    it is."""
    if isinstance(value, Markup | list | tuple | dict):
        slots = context.parent.get(SLOTS_VAR)  # put there by TextTemplate.render_tokens
        if isinstance(slots, Slots):
            if isinstance(value, Markup):
                return fill_text(value, slots) if holds_tokens(value, slots) else value
            if any(holds_tokens(item, slots) for item in _shallow(value)):  # ``'x' in [b]``
                return filled_data(value, slots)
    return value


def _shallow(value: list[Any] | tuple[Any, ...] | dict[Any, Any]) -> Iterator[Any]:
    if isinstance(value, dict):
        yield from value.keys()
        yield from value.values()
    else:
        yield from value


def guard_operands(ast: nodes.Template) -> nodes.Template:
    """Route what ``ast`` slices or indexes (``x[...]``), the string whose method it reads
    (``x.upper``), what it iterates, both sides of a comparison, the operand of a test
    (``x is in y``, ``{% if x %}``, ``not x``, ``x or y``) through
    ``environment.filled_operand``, so that they see values, not tokens."""
    transformed: nodes.Template = _OperandGuard().visit(ast)
    return transformed


#: filters that join their input with their text arguments
_JOINING_FILTERS = frozenset({"join", "format"})


def _literal(node: nodes.Expr) -> nodes.Expr:
    """A string constant of the template as :class:`Literal` (the template's own text when
    joined to structure); any other node as it is."""
    if not (isinstance(node, nodes.Const) and isinstance(node.value, str)):
        return node
    function = nodes.EnvironmentAttribute("template_literal", lineno=node.lineno)
    return nodes.Call(function, [node], [], None, None, lineno=node.lineno)


def _filled(node: nodes.Node) -> nodes.Expr:
    function = nodes.EnvironmentAttribute("filled_operand", lineno=node.lineno)
    context = nodes.ContextReference(lineno=node.lineno)
    return nodes.Call(function, [context, node], [], None, None, lineno=node.lineno)


class _OperandGuard(NodeTransformer):
    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Node:
        self.generic_visit(node)
        if not isinstance(node.arg, nodes.Const | nodes.Slice):
            node.arg = _filled(node.arg)  # ``d[block]``: the key is the block's text
        node.node = _filled(node.node)  # (``block['split']`` is its method, as in Jinja)
        return node

    def visit_Call(self, node: nodes.Call) -> nodes.Node:
        # the arguments of a method (``d.get(block)``, ``'{}'.format(block)``) are its
        # values; a macro's (``m(block)``, a name) stay what they are
        self.generic_visit(node)
        if isinstance(node.node, nodes.Getattr):
            node.args = [_filled(arg) for arg in node.args]
            for keyword in node.kwargs:
                keyword.value = _filled(keyword.value)
        return node

    def visit_Getattr(self, node: nodes.Getattr) -> nodes.Node:
        self.generic_visit(node)
        if node.attr in _STR_ATTRIBUTES:
            node.node = _filled(node.node)
        return node

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        self.generic_visit(node)
        node.expr = _filled(node.expr)
        for operand in node.ops:
            operand.expr = _filled(operand.expr)
        return node

    def visit_Test(self, node: nodes.Test) -> nodes.Node:
        self.generic_visit(node)
        node.node = _filled(node.node)
        node.args = [_filled(arg) for arg in node.args]
        return node

    def visit_Not(self, node: nodes.Not) -> nodes.Node:
        self.generic_visit(node)
        node.node = _filled(node.node)
        return node

    def visit_If(self, node: nodes.If) -> nodes.Node:
        self.generic_visit(node)
        node.test = _filled(node.test)
        return node

    def visit_CondExpr(self, node: nodes.CondExpr) -> nodes.Node:
        self.generic_visit(node)
        node.test = _filled(node.test)
        return node

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _filled(node.iter)
        if node.test is not None:
            node.test = _filled(node.test)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [_literal(part) for part in node.nodes]
        return node

    def visit_Add(self, node: nodes.Add) -> nodes.Node:
        self.generic_visit(node)
        node.left, node.right = _literal(node.left), _literal(node.right)
        return node

    def visit_Filter(self, node: nodes.Filter) -> nodes.Node:
        self.generic_visit(node)
        if node.name in _JOINING_FILTERS:  # ``[m(), 'svc'] | join('-')``
            node.args = [_literal(arg) for arg in node.args]
        return node

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        node.items = [_literal(item) for item in node.items]
        return node

    def visit_Or(self, node: nodes.Or) -> nodes.Node:
        # ``a or b``: ``a`` when its values make it true (it stays what it is: structure
        # prints as structure), else ``b``
        self.generic_visit(node)
        return nodes.CondExpr(_filled(node.left), node.left, node.right, lineno=node.lineno)

    def visit_And(self, node: nodes.And) -> nodes.Node:
        self.generic_visit(node)
        return nodes.CondExpr(_filled(node.left), node.right, node.left, lineno=node.lineno)
