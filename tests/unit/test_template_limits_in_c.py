"""Limits that hold inside C code: a value whose shared parts expand past ``renderedBytes``
is refused before a serialiser, ``str`` or a hash walks it, and a render that never comes
back to the budget's checks ends at ``templateSeconds`` + 1 s, in any thread."""

from __future__ import annotations

import threading
import time

import pytest

from oper8d.errors import ConfigError
from oper8d.limits import Limits
from oper8d.template import TemplateEngine

#: thirty levels of [s, s]: 2**30 items once expanded, a few hundred objects in memory
DAG = "{% set s = ['x'] %}" + "{% set s = [s, s] %}" * 30


@pytest.mark.parametrize(
    "expression",
    [
        "s",
        "{'a': s}",
        "s | to_json",
        "s | to_yaml",
        "s | string",
        "s | tojson",
        "s | pprint",
        "s ~ ''",
        "'%s' % (s,)",
        "'{}'.format(s)",
        "s | join(',')",
        "[s] | first | string",
    ],
)
def test_a_value_expanding_past_the_limit_is_refused_before_it_is_walked(
    expression: str,
) -> None:
    engine = TemplateEngine()
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="renderedBytes"):
        engine.text(DAG + "a: {{ " + expression + " }}\n", "t.yaml").render({})
    with pytest.raises(ConfigError, match="renderedBytes"):
        engine.expression(DAG + "{{ " + expression + " }}-x", pos=None).evaluate({})  # type: ignore[arg-type]
    assert time.perf_counter() - started < 5


def test_a_render_stuck_in_a_filter_ends_in_a_worker_thread() -> None:
    # wordwrap's own Python loop never ticks the budget; the watchdog ends it
    engine = TemplateEngine(Limits(template_seconds=0.1, string_bytes=50_000_000))
    # wordwrap(1) of this string alone takes ten seconds on a quiet machine
    template = engine.text("a: {{ ('xy ' * 2000000) | wordwrap(1) | length }}\n", "t.yaml")
    outcome: list[BaseException | object] = []

    def render() -> None:
        try:
            outcome.append(template.render({}))
        except BaseException as exc:  # the outcome is what the test reads
            outcome.append(exc)

    started = time.perf_counter()
    worker = threading.Thread(target=render)
    worker.start()
    worker.join(timeout=30)
    elapsed = time.perf_counter() - started
    assert not worker.is_alive()
    (result,) = outcome
    assert isinstance(result, ConfigError) and "templateSeconds" in str(result), result
    assert elapsed < 6  # 1.1 s and the C step it was in, on a busy machine
