"""Parsing the rendered text of a text template into Kubernetes objects.

Used by ``TextTemplate.render``. Parsing is the one YAML parse left on the reconcile
path (libyaml: ~340 µs per Deployment-sized document, ten times the render itself), so
each text template keeps a small LRU of parses keyed by the sha256 of the rendered text:
an unchanged render (the common case between reconciles) skips the parse. Parses are
stored marshalled, and every call returns freshly built objects the caller may mutate.
"""

from __future__ import annotations

import hashlib
import marshal
import re
import threading
from collections import OrderedDict
from typing import Any

import yaml

from oper8d.errors import ConfigError, SourcePos
from oper8d.template.failures import excerpt

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"

#: a document of the rendered text is a Secret (its lines are not quoted in errors)
_SECRET_KIND = re.compile(r"^kind:[ \t]*[\"']?Secret[\"']?[ \t]*(#.*)?$", re.MULTILINE)

#: rendered texts remembered per text template (one per CR that renders it differently)
DEFAULT_CACHE_SIZE = 128


class _KubernetesLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader without YAML 1.1 timestamps: ``2024-01-01`` stays a string, as
    Kubernetes (JSON) and Helm see it, instead of becoming a ``datetime``."""


_KubernetesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


class DocumentCache:
    """Parses rendered multi-document YAML, remembering the last ``size`` distinct texts."""

    def __init__(self, file: str, size: int = DEFAULT_CACHE_SIZE) -> None:
        self.file = file
        self._size = size
        self._parsed: OrderedDict[bytes, bytes] = OrderedDict()
        # the runtime may reconcile several CRs at once; OrderedDict moves are not atomic
        self._lock = threading.Lock()

    def parse(self, text: str) -> list[dict[str, Any]]:
        """The non-empty documents of ``text``, each a mapping."""
        key = hashlib.sha256(text.encode("utf-8")).digest()
        with self._lock:
            blob = self._parsed.get(key)
            if blob is not None:
                self._parsed.move_to_end(key)
        if blob is not None:
            return marshal.loads(blob)  # type: ignore[no-any-return]
        documents = self._load(text)
        try:
            blob = marshal.dumps(documents)
        except ValueError:  # an explicit !!timestamp or similar: correct, just not cached
            return documents
        with self._lock:
            self._parsed[key] = blob
            while len(self._parsed) > self._size:
                self._parsed.popitem(last=False)
        return documents

    def _load(self, text: str) -> list[dict[str, Any]]:
        documents: list[dict[str, Any]] = []
        try:
            for index, document in enumerate(yaml.load_all(text, Loader=_KubernetesLoader), 1):
                if document is None:
                    continue  # empty document, e.g. a disabled {% if %} between '---'
                if not isinstance(document, dict):
                    raise ConfigError(
                        f"document {index} of the rendered template is a "
                        f"{type(document).__name__}, not a mapping; every document must be "
                        "a Kubernetes object (run `oper8d render` to see the rendered text)",
                        pos=SourcePos(self.file),
                    )
                documents.append(document)
        except yaml.YAMLError as exc:
            raise self._yaml_error(exc, text) from exc
        return documents

    def _yaml_error(self, exc: yaml.YAMLError, text: str) -> ConfigError:
        # positions are in the rendered text, not the template: quote the lines instead,
        # unless the text renders a Secret, whose values must not reach a message
        lines = text.splitlines()
        secret = _SECRET_KIND.search(text) is not None

        def at(mark: Any) -> str:
            if mark is None:
                return ""
            line_text = lines[mark.line].strip() if mark.line < len(lines) else ""
            quoted = f": {excerpt(line_text)!r}" if line_text else " (end of text)"
            if secret and line_text:
                quoted = " (not quoted: the text renders a Secret)"
            return f" at line {mark.line + 1} of the rendered text{quoted}"

        message = f"{getattr(exc, 'problem', None) or exc}{at(getattr(exc, 'problem_mark', None))}"
        context = getattr(exc, "context", None)
        if context:
            message += f", {context}{at(getattr(exc, 'context_mark', None))}"
        return ConfigError(
            f"the rendered template is not valid YAML: {message} "
            "(run `oper8d render` to see the rendered text)",
            pos=SourcePos(self.file),
        )
