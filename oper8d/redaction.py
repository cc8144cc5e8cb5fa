"""What is secret and how it is masked: by structure in objects, by value in text.

Two rules, used by the logs (``oper8d.logs``), Event notes, CR status, ``render``, the dry
run and ``diff``:

1. **By structure.** Every value of a core ``Secret``'s ``data`` and ``stringData`` is shown
   as ``***`` wherever an object is printed (:func:`mask_secret`), whatever its length.
2. **By value.** Values that come from Secrets (a rendered Secret's values, a
   ``random_string()``, a Secret read with ``lookup()``/``live()``) are registered in a
   :class:`SensitiveValues` where they enter a reconcile, and masked in text (log lines,
   Event notes, condition messages, errors, projected status fields, the strings of
   rendered objects): always where the text *is* the value, or holds it quoted (``'shop'``);
   inside longer text only when the value looks like a secret (:func:`looks_secret`), and
   there only as a *whole token*, not inside a longer name. A value ``s3cret-pw`` masks
   ``postgres://app:s3cret-pw@db``, never ``Secret default/s3cret-pw-db``; a value ``shop``
   masks a field ``shop`` and ``user 'shop' unknown``, never ``image: shop/api:1``: a short
   or plain value inside other text is an ordinary word, and masking it there would mangle
   every image path, host and sentence that has the word (docs/security.md).

Not masked in text, because masking would blank out ordinary words and numbers all over a
line and, by doing so, tell the reader the value: values shorter than
:data:`MIN_SENSITIVE_LENGTH`, numbers of fewer than :data:`MIN_SENSITIVE_DIGITS` digits,
flag words (``true``, ``no``, ...) and the names the operator prints anyway (the CR's own
name and namespace, the *public* values). They are still masked by structure.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MIN_EMBEDDED_LENGTH",
    "MIN_EMBEDDED_PLAIN_LENGTH",
    "MIN_SENSITIVE_DIGITS",
    "MIN_SENSITIVE_LENGTH",
    "REDACTED",
    "SensitiveValues",
    "is_secret",
    "looks_secret",
    "mask_secret",
    "redact_strings",
    "secret_values",
]

REDACTED = "***"
#: shorter values are not masked in text. Being longer than ``REDACTED`` also guarantees
#: that every replacement shortens the text, so masking until nothing matches terminates.
MIN_SENSITIVE_LENGTH = 4
#: a value of two kinds of characters (``looks_secret``) from this length on is masked
#: inside longer text too, at token boundaries
MIN_EMBEDDED_LENGTH = 8
#: ... and a value of one kind (a word, a number) from this length on
MIN_EMBEDDED_PLAIN_LENGTH = 16
#: numbers with fewer digits (ports, counts, replicas) are not masked in text
MIN_SENSITIVE_DIGITS = 6
#: flag values a Secret may hold: they carry a bit at most and are words of every message
_FLAG_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none"})

#: the digest of an applied object (``engine.deploy``): guessable for a weak value
_HASH = "oper8d.io/applied-hash"
#: a token goes on through letters, digits, ``_`` and ``-``, and through a ``.`` between
#: them (``notes-db``, ``db.example.com``); a value counts only when it is a whole token
_BEFORE = r"(?<![\w-])(?<![\w-]\.)"
_AFTER = r"(?![\w-])(?!\.[\w-])"


def is_secret(obj: Mapping[str, Any]) -> bool:
    """A core v1 ``Secret``."""
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def secret_values(obj: Mapping[str, Any]) -> list[str]:
    """The values a Secret holds, as sent and (``data``) base64-decoded; [] for any other
    object. A ``data`` value that is not base64 of UTF-8 text is kept as sent."""
    if not is_secret(obj):
        return []
    out: list[str] = []
    for key in ("stringData", "data"):
        values = obj.get(key)
        if not isinstance(values, Mapping):
            continue
        for value in values.values():
            if value is None:
                continue
            out.append(str(value))
            if key == "data":
                # binascii.Error, UnicodeDecodeError: binary or invalid, kept as sent
                with contextlib.suppress(ValueError):
                    out.append(base64.b64decode(str(value), validate=True).decode())
    return out


def mask_secret(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a Secret with every ``data``/``stringData`` value ``***`` (the keys stay,
    so a reader sees what it holds), and no ``oper8d.io/applied-hash`` (a digest of the
    values, which a weak value can be guessed from). Other objects: an unchanged copy."""
    out = dict(obj)
    if not is_secret(obj):
        return out
    for key in ("stringData", "data"):
        values = obj.get(key)
        if isinstance(values, Mapping):
            out[key] = {k: REDACTED for k in values}
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        annotations = meta.get("annotations")
        if isinstance(annotations, Mapping) and _HASH in annotations:
            out["metadata"] = {**meta, "annotations": {**annotations, _HASH: REDACTED}}
    return out


def redact_strings(value: Any, sensitive: SensitiveValues) -> Any:
    """``value`` (a string, or lists and maps of them) with sensitive values masked in every
    string; map keys and other scalars are kept."""
    if isinstance(value, str):
        return sensitive.redact(value)
    if isinstance(value, Mapping):
        return {k: redact_strings(v, sensitive) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_strings(v, sensitive) for v in value]
    return value


class SensitiveValues:
    """Values that must not be shown in text, with the forms they take there (JSON and
    Python escapes, base64, single lines of multi-line values); ``public`` values are never
    masked. Thread-safe: components render on several threads."""

    def __init__(self, public: Iterable[str] = ()) -> None:
        self._public = frozenset(p for p in public if p)
        self._values: set[str] = set()
        #: (masked inside text: values that look like secrets, masked quoted: all values)
        self._patterns: tuple[re.Pattern[str] | None, re.Pattern[str]] | None = None
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._values)

    def add(self, value: str) -> None:
        """Mask ``value`` from now on (unless it is too short, public or a flag word)."""
        if not _maskable(value) or value in self._public:
            return
        forms = {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            repr(value)[1:-1],
            base64.b64encode(value.encode()).decode(),
            *(line.strip() for line in value.splitlines()),
        }
        with self._lock:
            new = {f for f in forms if _maskable(f) and f not in self._public} - self._values
            if new:
                self._values |= new
                self._patterns = None  # compiled again on the next redact

    def redact(self, text: str) -> str:
        """``text`` as shown: ``***`` when it is a sensitive value as a whole; else with
        each quoted sensitive value (``'shop'``), each whole-token occurrence of a value that
        looks like a secret (:func:`looks_secret`), and every overlap of them, replaced by
        ``***``."""
        patterns = self._compiled()
        if patterns is None:
            return text
        while True:
            with self._lock:
                if text in self._values:
                    return REDACTED
            spans = _merged_spans(patterns, text)
            if not spans:
                return text
            out, last = [], 0
            for start, end in spans:
                out += [text[last:start], REDACTED]
                last = end
            text = "".join([*out, text[last:]])

    def _compiled(self) -> tuple[re.Pattern[str] | None, re.Pattern[str]] | None:
        with self._lock:
            if self._patterns is None and self._values:
                # longest first: at each position the alternation reports the longest value
                # that matches there; inside a lookahead so that overlapping occurrences are
                # all found
                alternatives = sorted(self._values, key=lambda v: (-len(v), v))
                inside = [v for v in alternatives if looks_secret(v)]
                self._patterns = (
                    re.compile(
                        f"(?={_BEFORE}(" + "|".join(map(re.escape, inside)) + f"){_AFTER})",
                        re.DOTALL,
                    )
                    if inside
                    else None,
                    re.compile(
                        "(?<=([\"']))(?=(" + "|".join(map(re.escape, alternatives)) + ")\\1)",
                        re.DOTALL,
                    ),
                )
            return self._patterns


def looks_secret(value: str) -> bool:
    """``value`` is masked inside longer text, not only as a whole value: it is at least
    :data:`MIN_EMBEDDED_LENGTH` characters of at least two kinds (lower-case, upper-case,
    digits, others: ``s3cret-pw``, ``Hunter22``), or :data:`MIN_EMBEDDED_PLAIN_LENGTH` of
    one. A shorter or plainer value is a word or a number that ordinary text holds too
    (``shop``, ``postgres``, ``123456``): masked inside text, it would mangle image paths,
    hosts and sentences."""
    if len(value) < MIN_EMBEDDED_LENGTH:
        return False
    kinds = {
        "lower" if c.islower() else "upper" if c.isupper() else "digit" if c.isdigit() else "other"
        for c in value
    }
    return len(kinds) >= 2 or len(value) >= MIN_EMBEDDED_PLAIN_LENGTH


def _maskable(value: str) -> bool:
    if len(value) < MIN_SENSITIVE_LENGTH or value.lower() in _FLAG_WORDS:
        return False
    return not (value.isdecimal() and len(value) < MIN_SENSITIVE_DIGITS)


def _merged_spans(
    patterns: tuple[re.Pattern[str] | None, re.Pattern[str]], text: str
) -> list[tuple[int, int]]:
    inside, quoted = patterns
    found = [m.span(2) for m in quoted.finditer(text)]
    if inside is not None:
        found += [m.span(1) for m in inside.finditer(text)]
    found.sort()
    spans: list[tuple[int, int]] = []
    for start, end in found:
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans
