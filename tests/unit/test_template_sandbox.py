"""Templates run sandboxed: no way out to Python internals, files or unbounded ranges."""

from __future__ import annotations

from typing import Any

import pytest

from oper8d.errors import BundleError, ConfigError, SourcePos
from oper8d.template import TemplateEngine

POS = SourcePos("operator.yaml", 7, 3)


def live(ref: str) -> dict[str, Any]:
    return {"metadata": {"name": ref}}


CONTEXT: dict[str, Any] = {"spec": {"replicas": 1}, "live": live}

ESCAPES_TO_PYTHON_INTERNALS = [
    "''.__class__",
    "''.__class__.__mro__[1].__subclasses__()",
    "{}.__class__.__base__.__subclasses__()",
    "spec.__class__",
    "spec | attr('__class__')",
    "lipsum.__globals__",
    "lipsum | attr('__globals__')",
    "cycler.__init__.__globals__",
    "live.__globals__",
    "live.__code__",
    "self._TemplateReference__context",
    "'{0.__class__}'.format(spec)",
]


@pytest.mark.parametrize("source", ESCAPES_TO_PYTHON_INTERNALS)
def test_python_internals_are_out_of_reach_of_expressions(source: str) -> None:
    expr = TemplateEngine().expression(source, POS)
    with pytest.raises(ConfigError, match="blocked by the template sandbox") as info:
        expr.evaluate(CONTEXT)
    assert info.value.pos == POS


@pytest.mark.parametrize("source", ESCAPES_TO_PYTHON_INTERNALS)
def test_python_internals_are_out_of_reach_of_text_templates(source: str) -> None:
    template = TemplateEngine().text(f"a: 1\nb: {{{{ {source} }}}}\n", "templates/t.yaml")
    with pytest.raises(ConfigError, match="blocked by the template sandbox") as info:
        template.render(CONTEXT)
    assert info.value.pos == SourcePos("templates/t.yaml", 2)


@pytest.mark.parametrize(
    "source", ["os.system('id')", "open('/etc/passwd').read()", "__import__('os')", "import"]
)
def test_modules_files_and_imports_are_not_available(source: str) -> None:
    tree = TemplateEngine().tree({"value": f"x-{{{{ {source} }}}}"}, POS)
    with pytest.raises(ConfigError, match="undefined variable"):
        tree.render(CONTEXT)


def test_ranges_are_capped_by_the_sandbox() -> None:
    expr = TemplateEngine().expression("range(10**9) | list | length", POS)
    with pytest.raises(ConfigError, match="Range too big"):
        expr.evaluate(CONTEXT)


def test_ranges_within_the_cap_work() -> None:
    assert TemplateEngine().expression("range(3) | list", POS).evaluate(CONTEXT) == [0, 1, 2]


@pytest.mark.parametrize(
    ("statement", "name"),
    [
        ("{% include 'secrets.yaml' %}", "include"),
        ("{% include spec.file %}", "include"),
        ("{% import 'macros.j2' as m %}", "import"),
        ("{% from 'macros.j2' import m %}", "from ... import"),
        ("{% extends 'base.yaml' %}", "extends"),
    ],
)
def test_text_templates_cannot_include_files(statement: str, name: str) -> None:
    with pytest.raises(BundleError) as info:
        TemplateEngine().text(f"a: 1\n{statement}\n", "templates/t.yaml")
    [problem] = info.value.problems
    assert problem.pos == SourcePos("templates/t.yaml", 2)
    assert problem.message.startswith(
        f"templates cannot include files: {{% {name} %}} is not supported"
    )


def test_inline_strings_cannot_include_files() -> None:
    with pytest.raises(BundleError, match="templates cannot include files") as info:
        TemplateEngine().tree({"data": {"x": "{% include 'x' %}"}}, POS)
    assert info.value.problems[0].pos == POS


def test_macros_defined_in_the_same_template_work() -> None:
    template = TemplateEngine().text(
        "{% macro label(k, v) %}{{ k }}: {{ v | quote }}{% endmacro %}\n"
        "labels:\n  {{ label('app', 'web') }}\n",
        "templates/t.yaml",
    )
    assert template.render(CONTEXT) == [{"labels": {"app": "web"}}]


def test_a_template_cannot_change_the_context_other_templates_read():
    from oper8d.errors import ConfigError, SourcePos
    from oper8d.template import TemplateEngine

    engine = TemplateEngine()
    spec = {"replicas": 1, "labels": {}}
    tree = engine.tree({"x": "{{ spec.labels.update({'evil': 1}) }}"}, SourcePos("t.yaml", 1, 1))
    with pytest.raises(ConfigError):
        tree.render({"spec": spec})
    assert spec == {"replicas": 1, "labels": {}}


def outcome(source: str, function: Any, limits: Any = None) -> str:
    """What an expression calling ``f`` gives: its value, or the error's type and text."""
    from oper8d.limits import Limits

    engine = TemplateEngine(limits or Limits())
    try:
        return repr(engine.expression(source, POS).evaluate({"f": function, "items": [1, 2]}))
    except ConfigError as err:
        return f"{type(err).__name__}: {err.message}"


def stops() -> None:
    raise StopIteration


CALLS = [
    ("f(2)", lambda n: n * 3),
    ("f(n=4)", lambda n: [n] * n),
    ("[1, 2] | map('string') | list | join(f('-'))", lambda s: s),
    ("items | map('string') | join(',') ~ f('x')", lambda s: s),
    ("f()", stops),
    ("f() ~ 'x'", stops),
    ("f(1, 2)", lambda n: n),
    ("f('x' * 50)", lambda s: s * 1000),
    ("{% for i in items %}{{ f(i) }},{% endfor %}", lambda n: n + 1),
]


@pytest.mark.parametrize(("source", "function"), CALLS)
def test_a_plain_callable_is_called_as_any_other_callable(source: str, function: Any) -> None:
    """oper8d's own functions (``plain_callable``) skip checks that cannot apply to them;
    what a template gets from them (values, undefined, errors, limits) is the same."""
    from types import FunctionType

    from oper8d.limits import Limits
    from oper8d.template.sandbox import plain_callable

    twin = FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    plain_callable(twin)
    for limits in (Limits(), Limits(string_bytes=1000)):
        assert outcome(source, twin, limits) == outcome(source, function, limits)
