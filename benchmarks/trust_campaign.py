"""A differential campaign over text-template printing sites: a tenant value is never structure.

Every case is a printing site (plain, quoted, flow, block scalar, key, alone on a line, list
item, behind a comment; inside a macro, a set block, a loop or a conditional; behind zero to
three filters) rendered twice: with a benign value and with a hostile one (quote breakers,
indicators, every kind of line break, document markers, tags, anchors, YAML 1.1 words, the
token prefix). The hostile render must be refused with a ConfigError or have exactly the
benign render's documents, keys and list lengths, and no token text. Any other exception is
a failure too.

``tests/unit/test_trust_campaign.py`` runs it under hypothesis in the test command; run the
long campaign recorded in docs/security.md with::

    python -m benchmarks.trust_campaign --renders 100000 --seed 1
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from oper8d.errors import ConfigError
from oper8d.template import TemplateEngine
from oper8d.template.slots import NONCE_PREFIX

#: where a printed expression ``E`` stands; each line is a document's ``data`` entries
SITES: tuple[str, ...] = (
    "k: {{E}}",
    "k: '{{E}}'",
    'k: "{{E}}"',
    "k: '--opt={{E}}'",
    'k: "--opt={{E}} end"',
    "k: pre-{{E}}-post",
    "k: {{E}} # a comment",
    "k: {a: {{E}}, b: 1}",
    "k: {a: '{{E}}', b: 1}",
    'k: {a: "{{E}}", b: 1}',
    "k: [{{E}}, z]",
    "k: ['{{E}}', z]",
    'k: ["--x={{E}}", z]',
    "k: |\n    {{E}}",
    "k: |\n    line\n    {{E}}",
    "k: >\n    {{E}}",
    "k:\n    - {{E}}\n    - z",
    "k:\n    a: 1\n    b: {{E}}",
    "k: {{E | nindent(4)}}",
    "k: |{{E | nindent(4)}}",
    "{{E}}: 1",
    "'{{E}}': 1",
    "k: '{{E}}''s'",
    'k: "a\\n{{E}}"',
)

#: the expressions: a value behind zero to three filters
FILTERS: tuple[str, ...] = (
    "to_yaml",
    "to_json",
    "quote",
    "squote",
    "tojson",
    "upper",
    "trim",
    "string",
    "indent(2)",
    "replace('a', 'b')",
    "default('')",
    "e",
    "lower",
    "trunc63",
)

#: the template around the site
WRAPPERS: tuple[str, ...] = (
    "{site}",
    "{{% macro m() %}}{site}{{% endmacro %}}{{{{ m() }}}}",
    "{{% set b %}}{site}{{% endset %}}{{{{ b }}}}",
    "{{% for i in [1] %}}{site}{{% endfor %}}",
    "{{% if true %}}{site}{{% endif %}}",
)

#: hostile parts (joined into values)
PARTS: tuple[str, ...] = (
    "'",
    '"',
    "x', hostNetwork: 'y",
    'x", "hostNetwork": "y',
    ": ",
    "- ",
    "? ",
    " #",
    "#",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&a",
    "*a",
    "!!str",
    "!tag ",
    "%YAML",
    "@",
    "`",
    "|",
    ">",
    "\n",
    "\r",
    "\r\n",
    "\x85",
    "\u2028",
    "\u2029",
    "\t",
    "---",
    "...",
    "\n---\nkind: Secret\n",
    "\nhostNetwork: true",
    "\n    hostNetwork: true",
    "\n- item",
    "\n  - item",
    "yes",
    "no",
    "on",
    "~",
    "null",
    "0x1F",
    "012",
    "1e3",
    ".inf",
    "<<",
    "\\",
    "\\n",
    NONCE_PREFIX,
    "oper8dslot0z",
    " ",
    "a",
)

BENIGN = "benign"


@dataclass(frozen=True)
class Case:
    site: str
    filters: tuple[str, ...]
    wrapper: str
    value: str

    def source(self) -> str:
        expression = " | ".join(("v", *self.filters))
        site = self.site.replace("{{E}}", "{{ " + expression + " }}").replace(
            "{{E | ", "{{ " + expression + " | "
        )
        body = self.wrapper.format(site=site)
        return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  {body}\n"


def same_structure(benign: Any, hostile: Any) -> bool:
    """Whether ``hostile`` has ``benign``'s documents, keys and list lengths: the keys both
    have hold the same structure, and a key only one has is one the value made (its benign
    form holds the benign value)."""
    if isinstance(benign, dict):
        if not isinstance(hostile, dict) or len(hostile) != len(benign):
            return False
        made = [key for key in benign if key not in hostile]
        if any(BENIGN not in key.lower() for key in made):
            return False
        hostile_made = [key for key in hostile if key not in benign]
        pairs = [(benign[key], hostile[key]) for key in benign if key in hostile]
        pairs += [(benign[b], hostile[h]) for b, h in zip(made, hostile_made, strict=True)]
        return all(same_structure(b, h) for b, h in pairs)
    if isinstance(benign, list):
        return (
            isinstance(hostile, list)
            and len(hostile) == len(benign)
            and all(same_structure(b, h) for b, h in zip(benign, hostile, strict=True))
        )
    return not isinstance(hostile, dict | list)


class Campaign:
    """Renders cases with one engine per site source (compiled once)."""

    def __init__(self) -> None:
        self._engine = TemplateEngine()
        self._templates: dict[str, Any] = {}

    def render(self, source: str, value: str) -> list[dict[str, Any]]:
        template = self._templates.get(source)
        if template is None:
            template = self._templates[source] = self._engine.text(source, "t.yaml")
        return template.render({"v": value})  # type: ignore[no-any-return]

    def check(self, case: Case) -> str:
        """``"same"``, ``"refused"``, ``"skipped"`` (the benign render is refused: not a
        site for that expression), or raises AssertionError on a broken rule."""
        source = case.source()
        try:
            benign = self.render(source, BENIGN)
        except ConfigError:
            return "skipped"
        try:
            hostile = self.render(source, case.value)
        except ConfigError:
            return "refused"
        if not same_structure(benign, hostile):
            raise AssertionError(f"structure changed: {case!r}\n{benign!r}\n{hostile!r}")
        if NONCE_PREFIX not in case.value and self._engine._nonce[:12] in repr(hostile):
            raise AssertionError(f"token text reached an object: {case!r}\n{hostile!r}")
        return "same"


def random_case(rng: random.Random) -> Case:
    value = "".join(rng.choice(PARTS) for _ in range(rng.randint(1, 4)))
    filters = tuple(rng.choice(FILTERS) for _ in range(rng.randint(0, 3)))
    return Case(rng.choice(SITES), filters, rng.choice(WRAPPERS), value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--renders", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    campaign = Campaign()
    outcomes: Counter[str] = Counter()
    failures = 0
    started = time.perf_counter()
    renders = 0
    while renders < args.renders:
        case = random_case(rng)
        try:
            outcome = campaign.check(case)
        except AssertionError as exc:
            failures += 1
            outcome = "broken"
            print(exc, file=sys.stderr)
        except Exception as exc:  # a crash is a failure of the rule "never a traceback"
            failures += 1
            outcome = "crashed"
            print(f"crash {type(exc).__name__}: {exc}: {case!r}", file=sys.stderr)
        outcomes[outcome] += 1
        renders += 1 if outcome == "skipped" else 2
    elapsed = time.perf_counter() - started
    print(
        f"{renders} renders of {sum(outcomes.values())} cases in {elapsed:.1f} s (seed "
        f"{args.seed}): " + ", ".join(f"{name} {count}" for name, count in sorted(outcomes.items()))
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
