"""Each limit of oper8d.limits stops its exhaustion case with a clear error naming the limit.

The cases are the ones found by trying to exhaust the operator as a CR author (or a careless
bundle author) would: constant folding at compile time, huge powers and repetitions, nested
loops, YAML alias bombs and deep nesting, a backtracking CRD pattern, a forEach over a huge
CR list, a huge CR, a FIFO in the bundle. ``test_limits_memory.py`` runs the heavy ones in a
subprocess to measure time and peak memory.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from oper8d.bundle import load_bundle
from oper8d.bundle.loader import load_cr_file, load_yaml_text
from oper8d.bundle.spec_schema import validate_instance
from oper8d.clock import FakeClock
from oper8d.errors import BundleError, ConfigError, SourcePos
from oper8d.limits import Limits, parse_limit_overrides
from oper8d.template import TemplateEngine

POS = SourcePos("operator.yaml", 3, 5)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"


def evaluate(source: str, limits: Limits | None = None, **context: object) -> object:
    return TemplateEngine(limits).expression(source, POS).evaluate(context)


def alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


# -- template arithmetic and repetition -----------------------------------------------------


@pytest.mark.parametrize(
    ("source", "limit"),
    [
        ("'a' * 10**9", "stringBytes"),
        ("10 ** 10000000", "intBits"),
        ("10 ** 100000000", "intBits"),
        ("'%0*d' | format(10**9, 1)", "stringBytes"),
        ("'%0999999999d' % 1", "stringBytes"),
        ("'{:>999999999}'.format(1)", "stringBytes"),
        ("'{:>{}}'.format(1, 999999999)", "stringBytes"),
        ("'x'.ljust(10**9)", "stringBytes"),
        ("'x' | center(10**9)", "stringBytes"),
        ("'x' | indent(10**9)", "stringBytes"),
        ("[1] * 10**9", "sequenceItems"),
        ("('a' * 1000000) | replace('a', 'aa')", "stringBytes"),
        ("('a' * 1000000) ~ ('a' * 1000000)", "stringBytes"),
        ("range(100000) | slice(10**9) | list", "sequenceItems"),
        ("lipsum(10**7)", "stringBytes"),
    ],
)
def test_arithmetic_and_repetition_stop_at_their_limit(source: str, limit: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError, match=f"limit {limit} exceeded") as info:
        evaluate(source)
    assert time.monotonic() - started < 2
    assert info.value.pos == POS  # the error says where the expression is
    assert f"--limit {limit}=" in str(info.value)  # and how to raise the limit


def test_raising_a_limit_lets_the_expression_through() -> None:
    limits = Limits().replace(string_bytes=2_000_000, rendered_bytes=2_000_000)
    assert evaluate("('a' * 1000000) ~ ('a' * 1000000)", limits) == "a" * 2_000_000


def test_constant_expressions_are_not_evaluated_while_compiling() -> None:
    started = time.monotonic()
    engine = TemplateEngine()
    engine.expression("'a' * 10**9", POS)
    engine.text("x: {{ 10 ** 100000000 }}\n", "templates/x.yaml")
    engine.tree({"a": "{{ '%0*d' | format(10**9, 1) }}"}, POS)
    assert time.monotonic() - started < 2


def test_normal_arithmetic_still_works() -> None:
    assert evaluate("2 ** 10 * 3 + 1") == 3073
    assert evaluate("'ab' * 3 ~ '%03d' % 7") == "ababab007"
    assert evaluate("[0] * 3 + [1]") == [0, 0, 0, 1]
    assert evaluate("'{:>5}'.format(x)", x="a") == "    a"


# -- loops and time -------------------------------------------------------------------------


def test_nested_loops_stop_at_the_iteration_limit() -> None:
    source = "x: {% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n"
    template = TemplateEngine().text(source, "templates/loops.yaml")
    started = time.monotonic()
    with pytest.raises(ConfigError, match="limit loopIterations exceeded") as info:
        template.render({})
    assert time.monotonic() - started < 5
    assert info.value.pos == SourcePos("templates/loops.yaml", 1)


class TickingClock(FakeClock):
    """A clock that moves on by a second every time it is read."""

    def monotonic(self) -> float:
        self.advance(1)
        return super().monotonic()


def test_a_render_stops_at_its_deadline_read_from_the_injected_clock() -> None:
    limits = Limits().replace(template_seconds=10)
    engine = TemplateEngine(limits, TickingClock())
    tree = engine.tree({"data": {"x": "{% for i in range(50000) %}{{ i }}{% endfor %}"}}, POS)
    with pytest.raises(ConfigError, match="limit templateSeconds exceeded"):
        tree.render({})


def test_the_strings_of_one_inline_object_share_one_deadline() -> None:
    limits = Limits().replace(template_seconds=10)
    loop = "{% for i in range(200) %}{% endfor %}"  # reads the clock about 3 times
    one = TemplateEngine(limits, TickingClock()).tree({"data": {"a": loop}}, POS)
    assert one.render({}) == {"data": {"a": ""}}
    strings = {f"k{i}": loop for i in range(20)}
    many = TemplateEngine(limits, TickingClock()).tree({"data": strings}, POS)
    with pytest.raises(ConfigError, match="limit templateSeconds exceeded"):
        many.render({})


def test_the_rendered_size_of_a_resource_is_bounded() -> None:
    source = "x: {% for i in range(90000) %}{{ 'abcdefghijklmnop' }}{% endfor %}\n"
    template = TemplateEngine().text(source, "templates/big.yaml")
    with pytest.raises(ConfigError, match="limit renderedBytes exceeded"):
        template.render({})


# -- nesting ----------------------------------------------------------------------------------


def test_a_deeply_nested_template_is_a_bundle_error() -> None:
    with pytest.raises(BundleError, match="limit nestingDepth exceeded"):
        TemplateEngine().expression("(" * 300 + "1" + ")" * 300, POS)


def test_a_deeply_nested_cr_is_refused_with_its_position(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text("spec:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(250)))
    with pytest.raises(BundleError, match="limit nestingDepth exceeded") as info:
        load_cr_file(str(cr))
    assert info.value.problems[0].pos is not None and info.value.problems[0].pos.line > 90


def test_a_nesting_within_the_limit_loads() -> None:
    doc = load_yaml_text("a: " + "[" * 50 + "1" + "]" * 50 + "\n", "cr.yaml")
    assert doc.data["a"] is not None


# -- YAML aliases -----------------------------------------------------------------------------


def test_an_alias_bomb_in_a_cr_file_is_refused(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text(alias_bomb())
    with pytest.raises(BundleError, match="limit yamlAliasNodes exceeded"):
        load_cr_file(str(cr))


def test_an_alias_bomb_in_operator_yaml_is_refused(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "webapp", bundle)
    operator = bundle / "operator.yaml"
    operator.write_text(operator.read_text() + "x-bomb:\n" + _indented(alias_bomb()))
    with pytest.raises(BundleError, match="limit yamlAliasNodes exceeded"):
        load_bundle(bundle)


def test_a_repeated_long_string_alias_counts_its_length(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text("a: &s " + "x" * 100_000 + "\nb: [" + ", ".join(["*s"] * 100) + "]\n")
    with pytest.raises(BundleError, match="limit yamlAliasNodes exceeded"):
        load_cr_file(str(cr))


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text("base: &b {a: 1}\nx: *b\ny: *b\n")
    assert load_cr_file(str(cr)).data == {"base": {"a": 1}, "x": {"a": 1}, "y": {"a": 1}}


def test_an_alias_bomb_in_a_text_template_is_refused_when_rendered() -> None:
    template = TemplateEngine().text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nbomb:\n" + _indented(alias_bomb()),
        "templates/bomb.yaml",
    )
    with pytest.raises(ConfigError, match="limit yamlAliasNodes exceeded"):
        template.render({})


def _indented(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


# -- CR input ---------------------------------------------------------------------------------


def test_a_cr_larger_than_the_api_server_takes_is_refused(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text("spec:\n  x: " + "a" * (1536 * 1024) + "\n")
    with pytest.raises(BundleError, match="limit crBytes exceeded"):
        load_cr_file(str(cr))
    limits = parse_limit_overrides(["crBytes=2Mi"], Limits())
    assert len(load_cr_file(str(cr), limits).data["spec"]["x"]) == 1536 * 1024


def test_a_backtracking_pattern_is_checked_in_linear_time() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    schema["properties"]["name"]["pattern"] = "^([a-z0-9]+-?)+$"
    started = time.monotonic()
    problems = validate_instance({"name": "a" * 5000 + "!"}, schema)
    assert time.monotonic() - started < 1
    assert [p.field for p in problems] == ["spec.name"]


def test_patterns_have_go_semantics() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^a$"}}}
    assert validate_instance({"v": "a"}, schema) == []
    # Python's $ also matches before a final newline; Go's (and the API server's) does not
    assert [p.field for p in validate_instance({"v": "a\n"}, schema)] == ["spec.v"]


# -- bundle files -----------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_the_bundle_is_refused_not_read(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "stateful", bundle)
    template = bundle / "templates" / "database.yaml"
    template.unlink()
    os.mkfifo(template)
    started = time.monotonic()
    with pytest.raises(BundleError, match="not a regular file"):
        load_bundle(bundle)
    assert time.monotonic() - started < 5


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_the_cr_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "cr.yaml"
    os.mkfifo(fifo)
    with pytest.raises(BundleError, match="not a regular file"):
        load_cr_file(str(fifo))


# -- the flags --------------------------------------------------------------------------------


def test_limit_overrides_are_parsed_with_names_and_units() -> None:
    limits = parse_limit_overrides(["templateSeconds=30", "cr_bytes=3Mi"], Limits())
    assert limits.template_seconds == 30.0
    assert limits.cr_bytes == 3 * 1024 * 1024
    with pytest.raises(ValueError, match="unknown limit 'nope'"):
        parse_limit_overrides(["nope=1"], Limits())
    with pytest.raises(ValueError, match="positive number"):
        parse_limit_overrides(["intBits=-1"], Limits())


# -- reconcile --------------------------------------------------------------------------------


def test_a_limit_hit_while_reconciling_is_named_in_the_crs_condition() -> None:
    from oper8d.offline import reconcile_offline

    bundle = load_bundle(EXAMPLES / "fanout", Limits().replace(for_each_items=5))
    cr = {
        "apiVersion": "demo.oper8d.io/v1alpha1",
        "kind": "WorkerPool",
        "metadata": {"name": "pool", "namespace": "default"},
        "spec": {"workers": [{"name": f"w{i}"} for i in range(6)]},
    }
    run = reconcile_offline(bundle, cr, max_reconciles=2)
    ready = run.condition("Ready")
    assert ready is not None and ready["status"] == "False"
    assert "limit forEachItems exceeded" in ready["message"]
    assert not any(obj["kind"] == "Deployment" for obj in run.applied.values())


def test_the_cli_flag_and_the_environment_set_the_limits(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from oper8d.cli.main import main

    bundle = str(EXAMPLES / "fanout")
    cr = str(EXAMPLES / "fanout" / "samples" / "pool.yaml")
    runner = CliRunner()
    assert runner.invoke(main, ["render", bundle, "--cr", cr]).exit_code == 0
    lowered = runner.invoke(main, ["--limit", "forEachItems=2", "render", bundle, "--cr", cr])
    assert lowered.exit_code == 1
    assert "limit forEachItems exceeded" in lowered.output
    by_env = runner.invoke(main, ["render", bundle, "--cr", cr], env={"OPER8D_LIMIT": "crBytes=10"})
    assert by_env.exit_code == 1
    assert "limit crBytes exceeded" in by_env.output
    unknown = runner.invoke(main, ["--limit", "speed=3", "validate", bundle])
    assert unknown.exit_code == 2
    assert "unknown limit 'speed'" in unknown.output


def test_renders_inside_an_engine_budget_share_it() -> None:
    engine = TemplateEngine(Limits().replace(loop_iterations=8))
    loop = engine.text("x: {% for i in range(5) %}{% endfor %}\n", "templates/t.yaml")
    loop.render({})
    loop.render({})  # each render has its own budget outside a block
    with engine.budget(), pytest.raises(ConfigError, match="limit loopIterations exceeded"):
        loop.render({})
        loop.render({})
