"""The filters templates get beside Jinja's own.

``TemplateEngine`` registers :func:`template_filters` in its environment; the functions
are pure and can be called directly. They follow Helm's sprig functions where a
user migrating Helm charts would expect them to:

- ``indent(n)`` **replaces Jinja's** ``indent``: like Helm it pads every line, the first one
  included, with ``n`` spaces (Jinja's leaves the first line alone). ``nindent(n)`` is a
  newline followed by ``indent(n)``, for ``{{ x | to_yaml | nindent(4) }}``.
- ``to_yaml`` drops the trailing newline, as Helm's ``toYaml`` does, so it composes with
  ``nindent`` (unless the text ends with a block scalar that needs it: Helm would change
  the value there); multi-line strings come out as ``|`` block scalars.
- ``quote`` / ``squote`` write ``none`` as an empty string and booleans as ``true`` / ``false``.

Jinja's ``default`` is kept: ``spec.x | default(3)`` is how a template tolerates a missing
value under ``StrictUndefined``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, cast

import yaml
from jinja2 import Undefined
from jinja2.exceptions import UndefinedError

from oper8d.errors import ConfigError
from oper8d.template.names import truncate_name

_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


#: never fold long lines: a folded scalar re-indented with ``indent`` could stop parsing
_NO_LINE_WRAP = 2**31 - 1


#: characters JSON leaves literal that a YAML 1.1 reader would not read back as themselves:
#: DEL and C1 controls (U+0085 is a line break), U+2028/U+2029 (line breaks), the BOM,
#: non-characters and lone surrogates. JSON already escapes the C0 controls.
_YAML_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


class MissingRequiredValue(ConfigError):
    """Raised by the ``required`` filter. A ``ConfigError``; the template engine re-raises
    it with the position of the template that called ``required``."""


class _BlockStyleDumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """A safe dumper that writes multi-line strings as ``|`` block scalars, as Helm does,
    and never writes anchors/aliases (Kubernetes manifests do not use them)."""

    #: whether the last scalar written is a block scalar whose value ends with a newline:
    #: then the output's final newline belongs to the value and must not be trimmed
    ends_with_block_newline = False

    def represent_scalar(self, tag: str, value: str, style: str | None = None) -> yaml.ScalarNode:
        self.ends_with_block_newline = False
        return cast(yaml.ScalarNode, super().represent_scalar(tag, value, style))

    def ignore_aliases(self, data: Any) -> bool:
        return True


#: PyYAML's line breaks, and the first characters for which it writes ``|2``
_LINE_BREAKS = "\n\x85\u2028\u2029"
_BLOCK_INDICATED = " \t" + _LINE_BREAKS


def _represent_str(dumper: _BlockStyleDumper, value: str) -> yaml.ScalarNode:
    # the emitter falls back to a quoted style when a block scalar cannot hold the value;
    # one it writes with an indentation indicator (``|2``: the text starts with a space or
    # a line break) or keeping its final line breaks (``|+``) would change meaning once
    # ``nindent`` moves the block or the template adds a line break after it
    lines = "\n" in value
    block = (
        lines
        and value[0] not in _BLOCK_INDICATED
        and not (value[-1] in _LINE_BREAKS and value[-2] in _LINE_BREAKS)
    )
    if block:
        style: str | None = "|"
    elif lines or _plain_in_block_only(value):
        # plain in a block, but printed inside ``{...}`` or ``[...]`` (a key or a value of
        # ``{{ x | to_yaml }}``) its commas would split it into keys or items, a ``?``
        # start a key: quoted, it is this one string in any place
        style = '"'
    else:
        style = None
    node = dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)
    dumper.ends_with_block_newline = block and value.endswith("\n")
    return node


_BlockStyleDumper.add_representer(str, _represent_str)


def _require_defined(value: Any, filter_name: str) -> None:
    """Fail with Jinja's own message (it names the missing attribute) on an undefined value."""
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises UndefinedError here
        raise UndefinedError(f"{filter_name}: the value is undefined")


def scalar_text(value: Any) -> str:
    """The text of a scalar as YAML and Helm spell it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _yaml_safe_json(value: Any, separators: tuple[str, str] | None = None) -> str:
    """JSON that is also YAML reading back as the same value.

    Not ``ensure_ascii``: it writes characters beyond U+FFFF as surrogate pairs
    (``\\ud83d\\ude00``), which YAML reads as two broken characters.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=separators)
    except TypeError:  # keys of mixed types cannot be sorted: as JSON, they are strings
        text = json.dumps(
            _text_keys(value), ensure_ascii=False, sort_keys=True, separators=separators
        )
    return _YAML_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _text_keys(value: Any) -> Any:
    """``value`` with every mapping key the text JSON writes for it (``1`` -> ``"1"``,
    ``True`` -> ``"true"``); two keys with one text are an error, not a silent choice."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        keys: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str | int | float | bool | None):  # JSON's own error
                raise TypeError(f"keys must be str, int, float, bool or None, not {key!r}")
            text = key if isinstance(key, str) else json.dumps(key)
            if text in out:
                raise ValueError(
                    f"to_json: the keys {keys[text]!r} and {key!r} are both {text!r} in JSON"
                )
            out[text], keys[text] = _text_keys(item), key
        return out
    if isinstance(value, list | tuple):
        return [_text_keys(item) for item in value]
    return value


def _as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def to_yaml(value: Any) -> str:
    """YAML block style, keys sorted (as Helm's ``toYaml``: the same data gives the same
    text whatever order the API server returned it in), no ``...``; the trailing newline
    is dropped unless it ends a final block scalar's value (see the module docstring)."""
    _require_defined(value, "to_yaml")
    stream = io.StringIO()
    dumper = _BlockStyleDumper(
        stream,
        default_flow_style=False,
        sort_keys=True,
        allow_unicode=True,
        width=_NO_LINE_WRAP,
    )
    try:
        dumper.open()
        dumper.represent(value)
        dumper.close()
    finally:
        dumper.dispose()
    text = stream.getvalue()
    if text.endswith("\n...\n"):  # the document end marker the emitter puts after a scalar
        text = text[:-4]
    if dumper.ends_with_block_newline:
        return text  # trimming would drop the newline at the end of the string itself
    return text.removesuffix("\n")


def _plain_in_block_only(text: str) -> bool:
    """Whether the emitter would write ``text`` plain, which reads back as itself in a
    block but not inside a flow collection (PyYAML's own analysis, that the emitter uses
    to choose a style; where plain is not allowed at all it quotes the text itself).
    Text without the flow indicators reads the same in both."""
    if _FLOW_SENSITIVE.search(text) is None:
        return False
    analysis = yaml.emitter.Emitter(io.StringIO()).analyze_scalar(text)
    return bool(analysis.allow_block_plain and not analysis.allow_flow_plain)


#: the characters that make PyYAML's flow-plain analysis differ from its block-plain one
_FLOW_SENSITIVE = re.compile(r"[,?\[\]{}:]")


def to_json(value: Any, compact: bool = False) -> str:
    """JSON with keys sorted (as Helm's ``toJson``, so a hash of live data is the same on
    every cluster); ``compact=True`` drops the spaces after ``,`` and ``:``.
    The text is also valid YAML (flow style) for the same value."""
    _require_defined(value, "to_json")
    return _yaml_safe_json(value, (",", ":") if compact else None)


def from_json(value: str) -> Any:
    """Parse JSON text into data. The data is a value: where it is printed it is one node,
    whatever its text held. (A text template's own text, a ``{% set %}`` block or a macro's
    output, is read as the template wrote it: ``textcode``.)"""
    _require_defined(value, "from_json")
    return json.loads(str(value))


def b64encode(value: str | bytes) -> str:
    """Standard base64 of the UTF-8 bytes of ``value`` (Secret ``data``)."""
    _require_defined(value, "b64encode")
    return base64.b64encode(_as_bytes(value)).decode("ascii")


def b64decode(value: str | bytes) -> str:
    """Decode standard base64 into UTF-8 text; invalid base64 or non-UTF-8 bytes are errors."""
    _require_defined(value, "b64decode")
    raw = base64.b64decode(value, validate=True)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("b64decode: the decoded bytes are not UTF-8 text") from exc


def sha256(value: str | bytes) -> str:
    """Hex sha256 of the UTF-8 bytes of ``value`` (e.g. a checksum annotation)."""
    _require_defined(value, "sha256")
    return hashlib.sha256(_as_bytes(value)).hexdigest()


def indent(value: Any, width: int) -> str:
    """Helm's ``indent``: every line, the first included, starts with ``width`` spaces."""
    _require_defined(value, "indent")
    pad = " " * width
    return pad + str(value).replace("\n", "\n" + pad)


def nindent(value: Any, width: int) -> str:
    """Helm's ``nindent``: a newline, then ``indent(width)``."""
    return "\n" + indent(value, width)


def quote(value: Any) -> str:
    """A YAML double-quoted scalar (JSON escapes, which YAML reads back exactly)."""
    _require_defined(value, "quote")
    return _yaml_safe_json(scalar_text(value))


def squote(value: Any) -> str:
    """A YAML single-quoted scalar (``'`` doubled). This style has no escapes: line breaks
    fold into spaces and control characters are not allowed; use ``quote`` for such text."""
    _require_defined(value, "squote")
    return "'" + scalar_text(value).replace("'", "''") + "'"


def required(value: Any, message: str = "a required value is missing") -> Any:
    """Return ``value``; fail the rollout with ``message`` (a ConfigError) when it is
    undefined, none or an empty string."""
    if value is None or isinstance(value, Undefined) or value == "":
        raise MissingRequiredValue(message)
    return value


def trunc63(value: Any) -> str:
    """oper8's name truncation: at most 63 characters (59 + 4 hex digits of sha256)."""
    _require_defined(value, "trunc63")
    return truncate_name(str(value))


def template_filters() -> dict[str, Callable[..., Any]]:
    """A fresh name -> filter mapping for one environment."""
    return {
        "to_yaml": to_yaml,
        "to_json": to_json,
        "from_json": from_json,
        "b64encode": b64encode,
        "b64decode": b64decode,
        "sha256": sha256,
        "indent": indent,  # overrides Jinja's indent on purpose (Helm semantics)
        "nindent": nindent,
        "quote": quote,
        "squote": squote,
        "required": required,
        "trunc63": trunc63,
    }
