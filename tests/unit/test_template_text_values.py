"""Values in text templates as the author and the tenant see them: filters over set blocks
and filter blocks compute from the values, a CR string keeps its text, and keys are the
strings Kubernetes reads."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from oper8d.errors import ConfigError
from oper8d.template import TemplateEngine
from oper8d.template.filters import trunc63

CONF = "{% set conf %}\nlevel: {{ level }}\n{% endset %}"


def render(source: str, **context: Any) -> list[dict[str, Any]]:
    """``source`` rendered by an engine of its own (a process of its own: its own nonce)."""
    return TemplateEngine().text(source, "t.yaml").render(context)


def test_a_checksum_of_a_set_block_follows_the_values_and_not_the_process() -> None:
    source = CONF + "checksum: {{ conf | sha256 }}\n"
    info = hashlib.sha256(b"\nlevel: info\n").hexdigest()
    assert render(source, level="info") == [{"checksum": info}]
    assert render(source, level="info") == [{"checksum": info}]  # another nonce, same sum
    assert render(source, level="debug") != [{"checksum": info}]


def test_filters_over_a_set_block_see_its_text_with_the_values() -> None:
    source = CONF + "b64: {{ conf | b64encode }}\nsize: {{ conf | length }}\n"
    (obj,) = render(source, level="debug")
    assert base64.b64decode(obj["b64"]).decode() == "\nlevel: debug\n"
    assert obj["size"] == len("\nlevel: debug\n")


def test_a_filter_block_sees_the_values() -> None:
    source = "name: {% filter trunc63 %}{{ a }}-{{ b }}{% endfilter %}\n"
    (obj,) = render(source, a="app", b="x" * 70)
    assert obj == {"name": trunc63("app-" + "x" * 70)}
    assert "oper8d" not in obj["name"]


HOSTILE = "v\nhostNetwork: true\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}"


@pytest.mark.parametrize(
    "line",
    [
        "k: {{ conf | replace('level', 'lvl') }}",
        "k: {{ conf | upper }}",
        "k: {% filter upper %}{{ level }}{% endfilter %}",
        "k: {% filter replace('level', 'l') %}level: {{ level }}{% endfilter %}",
        "k: {{ [conf, 'x'] | join(', ') }}",
    ],
)
def test_what_a_filter_makes_of_a_cr_value_is_one_scalar(line: str) -> None:
    (obj,) = render(CONF + line + "\n", level=HOSTILE)
    assert list(obj) == ["k"]
    assert isinstance(obj["k"], str)
    assert "hostnetwork: true\n---\napiversion" in obj["k"].lower()


def test_a_set_block_printed_as_structure_stays_structure() -> None:
    source = (
        "{% set labels %}\na: {{ a }}\nb: x\n{% endset %}"
        "one:\n{{ labels | trim | indent(2) }}\n"
        "two:{{ labels | default('') | nindent(2) }}\n"
    )
    (obj,) = render(source, a="1")
    assert obj == {"one": {"a": 1, "b": "x"}, "two": {"a": 1, "b": "x"}}
