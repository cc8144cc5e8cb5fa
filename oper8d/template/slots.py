"""Values land in text templates as scalars: the YAML structure comes from the template only.

A Helm-style text template is text, so a value printed into it (``storage: {{ x }}``) could
carry YAML of its own: a newline and ``---`` start a new object, ``: `` adds a key, ``&``/``*``
anchors and aliases, ``!`` tags. The CR author, who is not trusted, controls such values.
oper8d therefore never lets a printed value reach the YAML parser:

1. While the template renders, every ``{{ ... }}`` output goes through :func:`finalize`, which
   records the value in the render's :class:`Slots` and prints a *token* instead: a word of
   letters and digits, with a nonce chosen per process, that is a plain scalar in every
   YAML context.
2. The rendered text, tokens in place of values, is parsed. Its structure (documents, keys,
   lists) is therefore the template's own, whatever the values hold.
3. Each parsed scalar holding tokens gets its values back (:class:`SlotLoader`):

   - a token that is a whole plain scalar (``replicas: {{ n }}``) takes the value itself: a
     number, boolean, null, list or mapping keeps its type; a string is typed the way YAML
     types a plain scalar (``"3"`` -> ``3``, ``"true"`` -> ``true``) when it is one line, as
     Helm output would be, and stays a string otherwise;
   - a token inside a longer or quoted scalar (``name: app-{{ x }}``, ``"{{ x }}"``) is
     replaced by ``str(value)``: the result is a string, escapes in the value are not read;
   - in a ``|`` or ``>`` block scalar the values are put back into the block's text and the
     block alone is read again, so ``{{ conf | indent(4) }}`` keeps YAML's block semantics;
     a value whose lines would end the block is an error.

Structure that a template means to print comes from trusted filters, whose output is
:class:`YamlText` and printed as is: ``to_yaml``, ``to_json`` (the data serialised, so a
value can never leave its own subtree), ``quote``/``squote``, and ``indent``/``nindent``
of those. Macro bodies, ``{% set %}`` blocks and ``caller()`` are template text and print
as they render (their own values are tokens already). ``| safe`` is not available. What
every filter does with such text (another filter sees the values) is ``textfilters``.
"""

from __future__ import annotations

import math
import operator
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from jinja2 import pass_context
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, markup_join
from markupsafe import Markup

from oper8d.objects import json_key_text
from oper8d.template.layout import mark, strip_marks
from oper8d.template.values import copy_result

#: filters that parse their text into data: given the text a template wrote, they parse it
#: with its tokens, so a value stays inside the JSON string it was printed in
#: (``textfilters``); given a value they refuse it
PARSING_FILTERS = ("from_json",)

#: the context variable holding the render's Slots
SLOTS_VAR = "__oper8d_slots__"

#: values that land as themselves; anything else lands as the text Jinja would print
_DATA_TYPES = (str, int, float, bool, type(None), dict, list)


class YamlText(Markup):
    """Text a trusted filter produced: printed into a text template as it is."""

    __slots__ = ()


class Literal(str):
    """A string the template itself writes (``'-svc'`` in ``{{ fullname() ~ '-svc' }}``),
    joined to printed structure as the template's text; alone it is a value like any."""

    __slots__ = ()


class Slots:
    """The values one render printed, in order; the token of value ``i`` names ``i``."""

    def __init__(self, nonce: str, parses: bool = False) -> None:
        """``parses``: the template may parse text it printed (``PARSING_FILTERS``)."""
        self.nonce = nonce
        self.values: list[Any] = []
        self.pattern = re.compile(re.escape(nonce) + r"(\d+)z")
        #: the multi-line Markup printed, by mark (``layout``): how many lines follow
        self.marks: list[int] = []
        #: the marks of printed structure filters' output (``YamlText``), which is YAML for
        #: the document, never JSON for ``from_json``; None: not marked (a template that
        #: parses nothing, where marking every ``quote`` costs ~1% of a render)
        self.structures: set[int] | None = set() if parses else None

    def token(self, value: Any) -> str:
        self.values.append(value)
        return f"{self.nonce}{len(self.values) - 1}z"


#: how every nonce starts: a value holding it is refused where its text would be read as
#: the template's (joined to structure, in a structure filter's output), so a CR author who
#: learned a nonce cannot spell a token there and read another printed value
NONCE_PREFIX = "oper8dslot"


def new_nonce() -> str:
    """A per-engine token prefix: letters first (a plain scalar), then random hex."""
    return f"{NONCE_PREFIX}{secrets.token_hex(6)}n"


@pass_context
def finalize(context: Context, value: Any) -> Any:
    """Jinja's ``finalize`` for text templates: values become tokens, trusted text stays
    (its lines checked where it lands: ``layout``)."""
    slots = context.get(SLOTS_VAR)
    if not isinstance(slots, Slots):  # rendered outside TextTemplate.render: plain output
        return value
    if isinstance(value, YamlText) and slots.structures is not None:
        marked = mark(slots.nonce, slots.marks, str(value))  # even one line: ``structures``
        slots.structures.add(len(slots.marks) - 1)
        return Markup(marked)
    if isinstance(value, Markup):
        if "\n" in value:
            return Markup(mark(slots.nonce, slots.marks, str(value)))
        return value
    if not isinstance(value, _DATA_TYPES):
        value = str(value)  # as Jinja prints it; an Undefined raises its error here
    elif isinstance(value, dict | list):
        value = filled_data(value, slots)  # ``{{ {'a': block} }}``: its strings are values
    return Markup(slots.token(value))


#: characters a value joined into printed structure could use to make structure of its own
_STRUCTURE = re.compile(r"[\n\r\x85\u2028\u2029#:?{}\[\],&*!|>'\"%@`-]")


def check_joined(parts: Iterable[Any]) -> None:
    """Refuse to join template-made structure (Markup: a macro's or ``to_yaml``'s output)
    with a value that could carry YAML structure: Markup escapes for HTML, not YAML, so such
    a value would be printed raw. Plain words still join (``{{ m() ~ 'suffix' }}``)."""
    items = list(_strings(parts))
    if not any(isinstance(p, Markup) for p in items):
        return
    for part in items:
        if isinstance(part, Markup | Literal):
            continue
        if NONCE_PREFIX in part:
            raise spelled_token(part)
        if _STRUCTURE.search(part):
            raise SecurityError(
                f"a value ({part[:40]!r}) is joined to printed structure (a macro's or a "
                "filter's output); print the value on its own with {{ ... }} so it stays "
                "one scalar"
            )


def _strings(parts: Iterable[Any], depth: int = 0) -> Iterable[str]:
    """The strings among ``parts`` and inside their lists, tuples and mappings (a few
    levels: ``[m(), v] | join`` hands the filter a list)."""
    for part in parts:
        if isinstance(part, str):
            yield part
        elif depth < 4 and isinstance(part, list | tuple | set | frozenset):
            yield from _strings(part, depth + 1)
        elif depth < 4 and isinstance(part, Mapping):
            yield from _strings(part.keys(), depth + 1)
            yield from _strings(part.values(), depth + 1)


def spelled_token(value: str | None = None) -> SecurityError:
    """The error for a value holding the token prefix, quoting it when it is the value
    itself (not data it sits in, whose other values may be secrets)."""
    shown = f" ({value[:40]!r})" if value is not None else ""
    return SecurityError(
        f"a value{shown} holds {NONCE_PREFIX!r}, the text oper8d prints in place of "
        "values: it cannot be printed as part of the template's text"
    )


def keep_structure(parts: Iterable[Any], result: Any) -> Any:
    """``result`` of joining ``parts`` (``~``, ``+``, ``%``, ``join``, ``format``): still a
    structure filter's output (:class:`YamlText`) when one is among them, so that
    ``from_json`` knows it for YAML, not JSON the template wrote."""
    structured = any(isinstance(part, YamlText) for part in _strings(parts))
    if structured and isinstance(result, Markup) and not isinstance(result, YamlText):
        return YamlText(result)
    return result


def guarded_markup_join(seq: Iterable[Any]) -> Any:
    """Jinja's ``~`` in text templates (``markup_join``), with :func:`check_joined`."""
    items = list(seq)
    check_joined(items)
    return keep_structure(items, markup_join(items))


def fill_text(text: str, slots: Slots) -> str:
    """``text`` with every token replaced by ``str(value)``: what the template would have
    printed without slots (for showing rendered text, never for parsing)."""
    text = str.__str__(strip_marks(slots.nonce, text))  # a plain string, even of Markup
    if not slots.values:
        return text
    return slots.pattern.sub(lambda m: str(slots.values[int(m.group(1))]), text)


def holds_tokens(value: Any, slots: Slots) -> bool:
    """Whether ``value`` is template text holding values printed by this render. Only
    Markup can: a plain string with the token text in it is a value that spells it (a CR
    author who learned the nonce), never to be filled with other values."""
    return isinstance(value, Markup) and slots.nonce in value


def filled_data(value: Any, slots: Slots) -> Any:
    """``value`` (data) with every string holding tokens made the text with the values in
    place: a plain string, a value. Data without such a string is given back as it is (no
    copy: most printed mappings and lists hold none)."""
    if isinstance(value, str):
        return fill_text(value, slots) if holds_tokens(value, slots) else value
    if isinstance(value, dict):
        pairs = [(filled_data(k, slots), filled_data(v, slots)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [filled_data(item, slots) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items
    return value


def hide_values(text: str, slots: Slots) -> str:
    """``text`` with each printed value shown as ``{{…}}``: for quoting rendered text in
    errors without the values, which may be secrets the text does not mark as such."""
    return slots.pattern.sub("{{…}}", strip_marks(slots.nonce, text))


_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_NODE, _MAPPING_NODE, _SEQUENCE_NODE = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


_KEY_TAG = "tag:oper8d,2024:key"  # a mapping key holding tokens: filled, never typed
_SCALAR_TAGS_KEPT = 4096


class KubernetesLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader read the way ``kubectl apply`` reads YAML (sigs.k8s.io/yaml, which
    is go-yaml v2's YAML 1.1 and then JSON):

    - no YAML 1.1 timestamps: ``2024-01-01`` stays a string (go-yaml keeps it one too);
    - go-yaml's numbers beside PyYAML's: ``0o17`` is an octal integer, ``1e3`` and ``08``
      floats; base-60 forms (``12:30``) stay strings. Unlike go-yaml, ``y`` and ``n`` stay
      strings (a key ``y:`` becoming ``"true"`` is a known kubectl trap, kubernetes#34146;
      where a boolean is wanted, the schema check says so offline);
    - keys are JSON's strings: an integer or boolean key becomes its text (``1: a`` is
      ``"1"``), as sigs.k8s.io/yaml converts it; a null or float key is an error;
    - duplicate keys (after that conversion) are an error, as the API server's strict
      field validation has it."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]
        merges = any(key.tag == _MERGE_TAG for key, _value in node.value)
        if merges:
            self.flatten_mapping(node)  # merged keys first: the mapping's own ones win
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if type(key) is not str:
                key = json_key(key, key_node)
            if key in mapping and not merges:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found the key {key!r} twice",
                    key_node.start_mark,
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


_MERGE_TAG = "tag:yaml.org,2002:merge"


def json_key(key: Any, node: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it to JSON (``objects.json_key_text``)."""
    text = json_key_text(key)
    if text is not None:
        return text
    what = "null" if key is None else f"a {type(key).__name__}"
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"the key {key!r} is {what}: a Kubernetes object's keys are strings; quote the key",
        node.start_mark,
    )


def _not_json(loader: KubernetesLoader, node: Any) -> Any:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"the tag {node.tag!r} has no JSON form: a Kubernetes object cannot hold it",
        node.start_mark,
    )


def _number_or_text(tag: str) -> Any:
    """YAML 1.1's int/float constructor, except for base-60 forms: ``12:30:00`` stays the
    string it is for Helm's YAML library and for a Kubernetes reader (PyYAML would make it
    the number 45000)."""
    base = _BaseLoader.yaml_constructors[tag]

    def construct(loader: KubernetesLoader, node: Any) -> Any:
        if ":" in str(node.value):
            return loader.construct_scalar(node)
        return base(loader, node)

    return construct


for _tag in ("int", "float"):
    KubernetesLoader.add_constructor(
        f"tag:yaml.org,2002:{_tag}", _number_or_text(f"tag:yaml.org,2002:{_tag}")
    )

# tags the safe loader knows that build Python values JSON cannot carry (sets, bytes, ...)
for _tag in ("set", "omap", "pairs", "binary", "timestamp"):
    KubernetesLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_json)

KubernetesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
# go-yaml v2's scalars that PyYAML reads as strings; checked after PyYAML's own resolvers
KubernetesLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?0[oO][0-7_]+$"), list("-+0")
)
KubernetesLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9_]+)?$"),
    list("-+.0123456789"),
)


class SlotLoader(KubernetesLoader):
    """Parses rendered text whose values are tokens, putting each value back as a scalar.

    ``scalar_tags``, when set, remembers the tag each plain scalar's text resolved to
    (``resolve``): libyaml asks for every scalar, rendered texts repeat theirs (keys, the
    tokens of one process), and resolving in Python was a third of composing the nodes."""

    #: plain scalar text -> its tag; bounded (cleared when full); None: not remembered
    scalar_tags: dict[str, str] | None = None

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        tag = node.tag
        if (
            type(node) is yaml.ScalarNode
            and tag != _STR_TAG
            and tag != _KEY_TAG
            and self.slots.nonce in node.value
        ):  # (a plain scalar holding a token resolves to a string: this tag is written)
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"the tag {tag!r} is written before a printed value, which is put back only "
                "after the text is read: convert the value in the template instead "
                "(`| int`, `| float`, `| bool`)",
                node.start_mark,
            )
        return super().construct_object(node, deep=deep)

    def __init__(self, text: str, slots: Slots) -> None:
        super().__init__(text)
        self._text = text
        self.slots = slots

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        # libyaml's composer asks this of every node. With no path resolvers (none are
        # added), a quoted scalar, a list and a mapping take their kind's default tag and a
        # plain scalar's tag depends on its text alone, so it is remembered by text
        # (``tests/unit/test_template_slot_resolve.py`` holds this to PyYAML's resolver)
        if self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        if kind is _SCALAR_NODE:
            if not implicit[0]:
                return _STR_TAG
            tags = self.scalar_tags
            if tags is None:
                return super().resolve(kind, value, implicit)
            tag = tags.get(value)
            if tag is None:
                if len(tags) >= _SCALAR_TAGS_KEPT:
                    tags.clear()
                tag = tags[value] = super().resolve(kind, value, implicit)
            return tag
        if kind is _MAPPING_NODE:
            return _MAP_TAG
        if kind is _SEQUENCE_NODE:
            return _SEQ_TAG
        return super().resolve(kind, value, implicit)

    # Path resolvers track where the composer is; with none added there is nothing to
    # track, and libyaml's composer calls these around every node: C callables of the
    # same arity that do nothing spare it two Python calls per node (``resolve`` above
    # takes PyYAML's path when path resolvers exist, but these would not track them)
    descend_resolver = staticmethod(operator.is_)  # (parent, index) -> ignored
    ascend_resolver = staticmethod(tuple)  # () -> ignored

    def construct_yaml_str(self, node: Any) -> Any:
        value = self.construct_scalar(node)
        if self.slots.nonce not in value:
            return value
        return self.filled(node, value)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        for key_node, _value in node.value:  # a key holding a value is its text, untyped
            if key_node.tag == _STR_TAG and self.slots.nonce in key_node.value:
                key_node.tag = _KEY_TAG
        return super().construct_mapping(node, deep=deep)

    def construct_key(self, node: Any) -> str:
        value = self.construct_scalar(node)
        if node.style in ("|", ">"):
            return self._block(node)
        return fill_text(value, self.slots)

    def filled(self, node: Any, value: str) -> Any:
        """The value of a string scalar ``value`` that holds tokens."""
        style = node.style
        if style in ("|", ">"):
            return self._block(node)
        whole = self.slots.pattern.fullmatch(value)
        if whole is not None and not style:  # plain (libyaml says "", PyYAML None)
            return self._typed(self.slots.values[int(whole.group(1))])
        return fill_text(value, self.slots)

    def _typed(self, value: Any) -> Any:
        """A whole plain scalar: the value; a string that is a number's or a boolean's own
        text (``3``, ``1.5``, ``true``) is that number or boolean, as Helm output would be,
        and any other string stays exactly itself: ``01234``, ``0x1F``, ``1_000``, ``yes``,
        ``~`` or ``null`` are not read as YAML 1.1 would read them (668, 31, 1000, true,
        null). Where Kubernetes wants a string, a number or boolean is made its text again
        (``engine.kubecheck``), so the CR's string arrives unchanged."""
        if not isinstance(value, str):
            return _json_data(copy_result(value))
        tag = self.resolve(yaml.ScalarNode, value, (True, False))
        if tag not in _TYPED_TAGS or "\n" in value:
            return value
        try:
            typed = self.yaml_constructors[tag](self, yaml.ScalarNode(tag, value))
        except (ValueError, yaml.YAMLError):
            return value
        return typed if _json_text(typed) == value else value

    def _block(self, node: Any) -> str:
        """A block scalar holding tokens: its text with the values put back, read again alone."""
        start, end = node.start_mark.index, node.end_mark.index
        header_end = self._text.find("\n", start)
        if header_end < 0 or header_end >= end:
            header_end = end
        header = self._text[start:header_end]
        body = self._text[header_end:end]
        filled = fill_text(body, self.slots)
        # the lines keep their columns, all right of the parent key's: a block under ``v``
        source = f"v: {header}{filled}"
        try:
            parsed = yaml.load(source, Loader=KubernetesLoader)
        except yaml.YAMLError:
            parsed = None
        whole = isinstance(parsed, dict) and list(parsed) == ["v"]
        if not (whole and isinstance(parsed["v"], str)):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "a value printed into this block scalar would end the block (a line of it is "
                "indented less than the block's first line). `indent(n)` indents every line, "
                "the first too, so write `{{ x | indent(n) }}` at the start of its line, or "
                "`key: |{{ x | nindent(n) }}` on the key's line",
                node.start_mark,
            )
        return parsed["v"]


SlotLoader.add_constructor(_STR_TAG, SlotLoader.construct_yaml_str)
SlotLoader.add_constructor(_KEY_TAG, SlotLoader.construct_key)

#: the tags a printed string may take (``_typed``): never null, never a timestamp
_TYPED_TAGS = frozenset(f"tag:yaml.org,2002:{tag}" for tag in ("int", "float", "bool"))


def _json_data(value: Any) -> Any:
    """A printed list or mapping (a copy) with its number and boolean keys as their text,
    as the template's own keys are (a CR's keys are strings already: JSON)."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = _json_data(item)
    elif isinstance(value, dict):
        keys = {key if type(key) is str else _value_key(key) for key in value}
        if len(keys) != len(value):
            raise TypeError("a printed mapping holds a key twice once its keys are text")
        return {
            (key if type(key) is str else _value_key(key)): _json_data(item)
            for key, item in value.items()
        }
    return value


def _value_key(key: Any) -> str:
    if isinstance(key, bool | int):
        return _json_text(key) or str(key)
    raise TypeError(
        f"a printed mapping has the key {key!r}: a Kubernetes object's keys are strings"
    )


def _json_text(value: Any) -> str | None:
    """The text JSON writes for a number or boolean (None for infinities and NaN)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return None
