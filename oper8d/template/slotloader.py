"""Reading a text template's rendered text: its structure parsed, its values put back.

The rendered text holds a token where each value was printed (``slots``). :class:`SlotLoader`
parses it as ``kubectl`` reads YAML (``kubeyaml``), so documents, keys and items are the
template's own text, and gives each scalar holding tokens its values:

- a token that is a whole plain scalar (``replicas: {{ n }}``) takes the value itself: a
  number, boolean, null, list or mapping keeps its type; a string is typed the way YAML types
  a plain scalar (``"3"`` -> ``3``, ``"true"`` -> ``true``) when it is one line, as Helm
  output would be, and stays a string otherwise. Data a structure filter placed there is
  that data, never retyped;
- a token inside a longer or quoted scalar, or a key, is its value's text; escapes in it
  are not read;
- in a ``|`` or ``>`` block scalar the values' text is put back into the block's text and
  the block alone is read again, so ``{{ conf | indent(4) }}`` keeps YAML's block semantics;
  a value whose lines would end the block is an error;
- a placed mapping or list alone on its line (``{{ x | to_yaml | nindent(4) }}``) was
  written as a key or an item (``Slots.splice_lines``): :func:`splice` puts its keys or
  items there.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any

import yaml

from oper8d.kubeyaml import KubernetesLoader
from oper8d.objects import json_key_text
from oper8d.template.slots import Slots
from oper8d.template.values import copy_result

__all__ = ["SlotLoader", "json_data", "plain_scalar", "splice"]

_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_NODE, _MAPPING_NODE, _SEQUENCE_NODE = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
_KEY_TAG = "tag:oper8d,2024:key"  # a mapping key holding tokens: filled, never typed
_SCALAR_TAGS_KEPT = 4096
#: the tags a printed string may take (``_typed``): never null, never a timestamp
_TYPED_TAGS = frozenset(f"tag:yaml.org,2002:{tag}" for tag in ("int", "float", "bool"))


class SlotLoader(KubernetesLoader):
    """Parses rendered text whose values are tokens, putting each value back as a scalar.

    ``scalar_tags``, when set, remembers the tag each plain scalar's text resolved to
    (``resolve``): libyaml asks for every scalar, rendered texts repeat theirs (keys, the
    tokens of one process), and resolving in Python was a third of composing the nodes."""

    #: plain scalar text -> its tag; bounded (cleared when full); None: not remembered
    scalar_tags: dict[str, str] | None = None

    def __init__(self, text: str, slots: Slots) -> None:
        super().__init__(text)
        self._text = text
        self.slots = slots

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

    def value_made(self, node: Any) -> bool:
        return self.slots.nonce in node.value

    def shown_key(self, node: Any, key: str) -> str:
        return self.slots.hide(node.value) if self.slots.nonce in node.value else key

    def construct_key(self, node: Any) -> str:
        value = self.construct_scalar(node)
        if node.style in ("|", ">"):
            return self._block(node)
        return key_text(value, node.style, self.slots)

    def filled(self, node: Any, value: str) -> Any:
        """The value of a string scalar ``value`` that holds tokens."""
        style = node.style
        if style in ("|", ">"):
            return self._block(node)
        slots = self.slots
        if not style and value.startswith(slots.nonce):  # (libyaml says "", PyYAML None)
            index = value[len(slots.nonce) : -1]
            if index.isdigit() and value[-1] == "z":  # a whole plain scalar
                return self._whole(int(index))
            if index.isdigit() and value[-1] == "s" and slots.spliceable:
                return SpliceMark(value)  # ``- <token>``: a list's items go here
        return slots.fill(value)

    def _whole(self, index: int) -> Any:
        """What value ``index`` is as a whole plain scalar."""
        placed = self.slots.placed.get(index)
        value = self.slots.values[index]
        if placed is not None and not placed.typed:
            return json_data(copy_result(value))
        if placed is not None:
            value = self.slots.text_of(index)
        return self._typed(value)

    def _typed(self, value: Any) -> Any:
        return plain_scalar(value, self)

    def _block(self, node: Any) -> str:
        """A block scalar holding tokens: its text with the values put back, read again alone."""
        start, end = node.start_mark.index, node.end_mark.index
        found = _LINE_BREAK.search(self._text, start, end)
        header_end = found.start() if found else end
        header = self._text[start:header_end]
        body = self._text[header_end:end]
        filled = self.slots.fill(body)
        # the lines keep their columns, all right of the parent's: a block under ``v`` at
        # the parent's column, which an indentation indicator (``|2``) counts from
        source = f"{' ' * _parent_column(self._text, start)}v: {header}{filled}"
        try:
            parsed = yaml.load(source, Loader=KubernetesLoader)
        except UnicodeEncodeError:  # a lone surrogate: no text YAML (or the API) holds
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "a value printed into this block scalar holds a lone surrogate (an invalid "
                "character), which UTF-8 cannot hold",
                node.start_mark,
            ) from None
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


def plain_scalar(value: Any, loader: SlotLoader | None = None) -> Any:
    """A value as a whole plain scalar; a string that is a number's or a boolean's own text
    (``3``, ``1.5``, ``true``) is that number or boolean, as Helm output would be, and any
    other string stays exactly itself: ``01234``, ``0x1F``, ``1_000``, ``yes``, ``~`` or
    ``null`` are not read as YAML 1.1 would read them (668, 31, 1000, true, null). Where
    Kubernetes wants a string, a number or boolean is made its text again
    (``engine.kubecheck``), so the CR's string arrives unchanged. ``loader``: one whose
    remembered tags to use."""
    if not isinstance(value, str):
        return json_data(copy_result(value))
    if "\n" in value:
        return value
    reader = loader if loader is not None else SlotLoader("", Slots(""))
    tag = reader.resolve(yaml.ScalarNode, value, (True, False))
    if tag not in _TYPED_TAGS:
        return value
    try:
        typed = reader.yaml_constructors[tag](reader, yaml.ScalarNode(tag, value))
    except (ValueError, yaml.YAMLError):
        return value
    return typed if _json_text(typed) == value else value


#: what stands before a block scalar's header on its line: the parent's column is that of
#: the key (after any ``- `` of the items it is in), or of the last ``-`` of a bare item
_HEADER_PREFIX = re.compile(r"([ ]*(?:-[ ]+)*)(.*)")


#: what YAML reads as a line break (a template may hold any of them)
_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def _parent_column(text: str, start: int) -> int:
    breaks = [m.end() for m in _LINE_BREAK.finditer(text, 0, start)]
    line = text[breaks[-1] if breaks else 0 : start]
    match = _HEADER_PREFIX.match(line)
    lead, rest = (match.group(1), match.group(2)) if match else ("", line)
    if rest.strip():
        return len(lead)
    return lead.rstrip().rfind("-") if "-" in lead else len(lead)


SlotLoader.add_constructor(_STR_TAG, SlotLoader.construct_yaml_str)
SlotLoader.add_constructor(_KEY_TAG, SlotLoader.construct_key)


class SpliceMark(str):
    """Where :func:`splice` puts a placed mapping's keys or list's items: made only from
    the template's rendered text, never from a value (whose text is a plain string)."""

    __slots__ = ()


def key_text(raw: str, style: str | None, slots: Slots) -> str:
    """A mapping key holding tokens: its text; a placed string alone in it is that string
    (``{{ k | quote }}: v`` is the key ``k``, as Helm's output reads); a
    :class:`SpliceMark` where ``Slots.splice_lines`` wrote one."""
    index = raw[len(slots.nonce) : -1]
    if style or not raw.startswith(slots.nonce) or not index.isdigit():
        return slots.fill(raw)
    if raw[-1] == "m" and slots.spliceable:
        return SpliceMark(raw)
    placed = slots.placed.get(int(index))
    if raw[-1] == "z" and placed is not None and not placed.typed:
        text = placed.data if isinstance(placed.data, str) else json_key_text(placed.data)
        if text is None:
            raise ValueError(
                f"a {type(placed.data).__name__} printed as a key: a key is one string"
            )
        return text
    return slots.fill(raw)


def splice(document: Any, slots: Slots) -> Any:
    """``document`` with the keys or items of each placed mapping or list that stood alone
    on its line (``Slots.splice_lines``) where it stood; a key it brings that the mapping
    has already is an error, as a duplicate key in the text is."""
    if isinstance(document, dict):
        out: dict[str, Any] = {}
        for key, item in document.items():
            index = _splice_index(key, slots, "m")
            if index is None:
                _add(out, key, splice(item, slots))
                continue
            if item is not None:
                raise ValueError(
                    "nothing may be nested under data printed alone on its line (a "
                    "`to_yaml`/`to_json` mapping): indent the following lines as its siblings"
                )
            for spliced_key, spliced in json_data(copy_result(slots.values[index])).items():
                _add(out, spliced_key, spliced)
        return out
    if isinstance(document, list):
        items: list[Any] = []
        for item in document:
            index = _splice_index(item, slots, "s")
            if index is None:
                items.append(splice(item, slots))
            else:
                items.extend(json_data(copy_result(slots.values[index])))
        return items
    return document


def _splice_index(value: Any, slots: Slots, form: str) -> int | None:
    if type(value) is not SpliceMark or not value.endswith(form):
        return None
    index = value[len(slots.nonce) : -1]
    if not index.isdigit() or int(index) not in slots.placed:
        return None
    return int(index)


def _add(mapping: dict[str, Any], key: str, value: Any) -> None:
    if key in mapping:
        raise ValueError(
            f"the key {key[:60]!r} appears twice in a mapping once the data printed into it "
            "is in place: each key may appear once"
        )
    mapping[key] = value


def json_data(value: Any) -> Any:
    """A printed list or mapping (a copy) with its number and boolean keys as their text,
    as the template's own keys are (a CR's keys are strings already: JSON)."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = json_data(item)
    elif isinstance(value, dict):
        keys = {key if type(key) is str else _value_key(key) for key in value}
        if len(keys) != len(value):
            raise TypeError("a printed mapping holds a key twice once its keys are text")
        return {
            (key if type(key) is str else _value_key(key)): json_data(item)
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
