"""The benchmarks run, with tiny iteration counts, so they never rot.

Nothing here looks at a timing: the tests check that every benchmark produces results,
that the generated bundles are what the benchmarks claim to measure, and the behaviour
the benchmarks report on (a steady reconcile writes nothing, the CLI never imports
``kubernetes``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

# `benchmarks` lives at the repository root and is not installed with the package: a bare
# `pytest` (unlike `python -m pytest`) does not put the root on sys.path.
_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from benchmarks import bench_fleet, bench_reconcile, bench_render, compare, run  # noqa: E402
from benchmarks.bench_import import parse_importtime  # noqa: E402
from benchmarks.gen import OBJECTS_PER_COMPONENT, write_bundle  # noqa: E402
from benchmarks.timing import Samples, sample, sample_per_op  # noqa: E402
from oper8d.bundle import load_bundle  # noqa: E402
from oper8d.cluster.memory import MUTATING_VERBS  # noqa: E402
from oper8d.offline import controller_for  # noqa: E402


def test_generated_bundle_renders_three_objects_per_component_half_from_text_templates(
    tmp_path: Path,
) -> None:
    generated = write_bundle(tmp_path, components=4, shape="independent")
    bundle = load_bundle(generated.path)

    rendered, _text = bench_render.offline_render(bundle, generated.cr)

    assert rendered.ready
    assert len(rendered.applied) == 4 * OBJECTS_PER_COMPONENT == generated.objects
    kinds = sorted(obj["kind"] for obj in rendered.applied.values())
    assert kinds == ["ConfigMap"] * 4 + ["Deployment"] * 4 + ["Service"] * 4
    from_text = [name for name in rendered.applied if ".manifests-" in name]
    assert len(from_text) == 2 * OBJECTS_PER_COMPONENT


def test_generated_chain_makes_each_component_depend_on_the_previous(tmp_path: Path) -> None:
    generated = write_bundle(tmp_path, components=4, shape="chain")
    controller = controller_for(load_bundle(generated.path), generated.cr)

    edges = {(e.upstream, e.downstream) for e in controller.edges}

    assert edges == {("c000", "c001"), ("c001", "c002"), ("c002", "c003")}


def test_generated_independent_components_have_no_edges(tmp_path: Path) -> None:
    generated = write_bundle(tmp_path, components=3, shape="independent")

    controller = controller_for(load_bundle(generated.path), generated.cr)

    assert controller.edges == ()


def test_a_bundle_without_components_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1 component"):
        write_bundle(tmp_path, components=0)


def test_render_benchmarks_report_every_measurement() -> None:
    rows = bench_render.bench_example(repeat=1)
    rows += bench_render.bench_generated(components=2, repeat=1)
    rows += bench_render.bench_templates(number=2, repeat=1)

    names = [row.name for row in rows]
    assert names[0] == "example `notes`: full offline render"
    assert rows[0].extra["objects"] == "6"
    assert any("load + validate + compile" in n for n in names)
    assert any(n.startswith("TreeTemplate.render") for n in names)
    assert any(n.startswith("TextTemplate.render") for n in names)
    assert all(len(row.samples) >= 1 and row.samples.median > 0 for row in rows)


def test_the_render_stages_cover_a_whole_render_in_order() -> None:
    rows = bench_render.bench_stages(components=2, repeat=1)

    names = [row.name.removeprefix("render stage: ") for row in rows]
    assert names[0] == "interpreter start"
    assert names[-2:] == ["offline reconcile", "YAML output"]
    assert all(len(row.samples) == 1 and row.samples.median >= 0 for row in rows)


def test_steady_reconciles_of_generated_bundles_send_no_writes() -> None:
    rows = bench_reconcile.bench_reconcile(
        scenarios=(("chain", 3, 1024.0), ("independent", 2, None)),
        repeat_first=1,
        repeat_steady=1,
    )

    by_name = {row.name: row for row in rows}
    assert len(rows) == 2 * 2 * 2  # scenarios x runners x (first, steady)
    for runner in ("concurrent, 4 workers", "serial"):
        first = by_name[f"chain of 3, {runner}: first reconcile"]
        steady = by_name[f"chain of 3, {runner}: steady no-op reconcile"]
        assert int(first.extra["writes"]) >= 3 * OBJECTS_PER_COMPONENT
        assert steady.extra["writes"] == "0"
        assert steady.extra["oper8 (ms)"] == "1,024"
    assert by_name["independent of 2, serial: steady no-op reconcile"].extra["writes"] == "0"
    assert "oper8 (ms)" not in by_name["independent of 2, serial: first reconcile"].extra


def test_steady_reconcile_of_the_stateful_example_sends_no_writes() -> None:
    rows = bench_reconcile.bench_example(
        bench_render.EXAMPLE_BUNDLE, bench_render.EXAMPLE_CR, repeat_first=1, repeat_steady=1
    )

    steady = next(row for row in rows if "steady" in row.name)
    assert steady.extra["writes"] == "0"
    assert int(steady.extra["gets"]) > 0


def test_quick_run_prints_every_section_and_no_kubernetes_import(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run.main(["--quick", "--profile"]) == 0

    out = capsys.readouterr().out
    for heading in (
        "## Machine",
        "## 1. Render throughput",
        "### Template render cost per object",
        "## 2. In-memory reconcile",
        "## 2b. A fleet of WebApps",
        "## 3. Start-up",
        "## Hot spots (cProfile)",
    ):
        assert heading in out
    assert "- after import oper8d.cli.main: no" in out
    assert "- after oper8d validate: no" in out
    assert "- after oper8d render: no" in out
    assert "oper8d validate examples/operators/stateful" in out


def test_the_fleet_benchmark_reports_what_the_scale_targets_are_about() -> None:
    result = bench_fleet.run_fleet(3)

    # every CR of the no-op pass skipped, with no request at all
    assert result.skipped == 3
    assert sum(result.noop_requests_per_cr.values()) == 0
    # the first rollout writes each object once, the CR once, its status twice
    writes = sum(n for v, n in result.rollout_requests_per_cr.items() if v in MUTATING_VERBS)
    assert writes <= result.objects_per_cr + 3
    # without the shortcut the same pass reads everything again
    assert sum(result.noop_full_requests_per_cr.values()) > 0
    assert 0 < result.bytes_cached < result.bytes_whole


def test_a_comparison_of_a_checkout_with_itself_has_a_row_per_operation() -> None:
    root = Path(_REPO_ROOT)

    table = compare.compare(root, root, rounds=1, long=2, short=2, scale=1000)

    rows = table.splitlines()[2:]
    assert len(rows) == len(compare.OPERATIONS)
    assert rows[0].startswith("| load + validate + compile, 2 components |")
    assert all(row.count("|") == 5 for row in rows)


def test_an_unknown_section_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run.main(["--only", "render,nonsense"])

    assert "unknown section(s) nonsense" in capsys.readouterr().err


def test_importtime_output_names_who_imported_each_module() -> None:
    stderr = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            "import time:       100 |        100 |       yaml.reader",
            "import time:       300 |        400 |     yaml",
            "import time:        50 |         50 |     json",
            "import time:       200 |        650 |   oper8d.template",
            "import time:        10 |        660 | oper8d",
        ]
    )

    entries = {e.module: e for e in parse_importtime(stderr)}

    assert entries["yaml.reader"].parent == "yaml"
    assert entries["yaml"].parent == "oper8d.template"
    assert entries["json"].parent == "oper8d.template"
    assert entries["oper8d.template"].parent == "oper8d"
    assert entries["oper8d"].parent is None
    assert entries["yaml"].cumulative_us == 400


@given(st.lists(st.floats(min_value=0, max_value=1e3), min_size=1, max_size=50))
def test_p90_is_a_sample_at_or_above_the_median(seconds: list[float]) -> None:
    samples = Samples(tuple(seconds))

    assert samples.p90 in seconds
    assert samples.p90 >= samples.median
    assert sum(s <= samples.p90 for s in seconds) >= 0.9 * len(seconds)


def test_sampling_calls_the_operation_once_per_repetition_after_setup() -> None:
    calls: list[str] = []

    samples = sample(lambda: calls.append("op"), setup=lambda: calls.append("setup"), repeat=3)
    per_op = sample_per_op(lambda: calls.append("loop"), number=4, repeat=2, warmup=0)

    assert calls[:6] == ["setup", "op"] * 3
    assert calls[6:] == ["loop"] * 8
    assert len(samples) == 3 and len(samples.cpu_seconds) == 3
    assert len(per_op) == 2


def test_the_phase_breakdown_charges_a_reconcile_to_its_phases(tmp_path: Path) -> None:
    from benchmarks.bench_reconcile import Fixture
    from benchmarks.phases import OTHER, PHASES, breakdown, markdown, phase_of

    assert phase_of("/x/oper8d/engine/status.py") == "status"
    assert phase_of("/x/oper8d/kubeschema/nodes.py") == "declaration + schema checks"
    assert phase_of("/x/oper8d/engine/session.py") == OTHER
    assert phase_of("/usr/lib/python3.11/copy.py") is None
    generated = write_bundle(tmp_path / "b", components=3, shape="chain")
    bundle = load_bundle(generated.path)
    fixture = Fixture(bundle, generated.cr, 1)
    rows = breakdown(fixture.reconcile, repeat=30)
    assert rows and abs(sum(r.share for r in rows) - 1) < 1e-6
    known = {p for p, _ in PHASES} | {OTHER, "outside oper8d (benchmark harness)"}
    assert {r.phase for r in rows} <= known
    assert "| phase | ms/op | share |" in markdown("steady", rows)


def test_the_oper8_comparison_pairs_both_sides_per_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # oper8 itself is never installed in the project's environment: its child is stood
    # in for here; the oper8d child runs for real
    from benchmarks import vs_oper8

    generated = write_bundle(tmp_path / "chain-2", components=2, shape="chain")
    measured = vs_oper8.measure_oper8d(generated.path, 1, 2)
    assert measured["ready"] and len(measured["first"]) == 1 and len(measured["steady"]) == 2
    assert len(measured["first_serial"]) == 1 and len(measured["steady_serial"]) == 2

    def fake_oper8(_python: Path, shape: str, n: int, first: int, steady: int) -> dict[str, Any]:
        return {"first": [0.030] * first, "steady": [0.020] * steady}

    def fake_oper8d(_bundle: Path, first: int, steady: int) -> dict[str, Any]:
        return {
            "first": [0.005] * first,
            "steady": [0.004] * steady,
            "first_serial": [0.003] * first,
            "steady_serial": [0.001] * steady,
            "ready": True,
        }

    monkeypatch.setattr(vs_oper8, "oper8_child", fake_oper8)
    monkeypatch.setattr(vs_oper8, "oper8d_child", fake_oper8d)
    table, verdicts = vs_oper8.paired_table(
        Path("python"), tmp_path, rounds=2, first=1, steady=1, shapes=(("chain", 2),)
    )
    assert "| chain of 2 | first | 30.0 ms | 5.0 ms | 0.17 | 3.0 ms | 0.10 | ≤ 0.33: met |" in table
    row = (
        "| chain of 2 | steady no-op | 20.0 ms | 4.0 ms | 0.20 | 1.0 ms | 0.05 | ≤ 0.10: not met |"
    )
    assert row in table
    assert verdicts == ["chain of 2, first: 0.17 (met)", "chain of 2, steady no-op: 0.20 (not met)"]


def test_the_oper8_side_builds_the_objects_the_generated_bundle_renders(tmp_path: Path) -> None:
    # the comparison is fair only if both sides deploy the same objects: oper8's
    # components (dicts, or text parsed with libyaml) against oper8d's offline render
    import yaml

    from benchmarks import oper8_child
    from benchmarks.bench_render import offline_render

    generated = write_bundle(tmp_path / "b", components=2, shape="independent")
    run, _text = offline_render(load_bundle(generated.path), generated.cr)
    ours = {(o["kind"], o["metadata"]["name"]): o for o in run.applied.values()}
    for index in range(2):
        comp = f"c{index:03d}"
        values = {
            "component": comp,
            "app": f"bench-{comp}",
            "config_name": f"bench-{comp}-config",
            "version": "1.0.0",
            "image": "ghcr.io/example/app",
            "replicas": 2,
            "port": 8080,
            "log_level": "info",
        }
        built = oper8_child.objects(values)
        assert list(yaml.safe_load_all(oper8_child.TEXT.format(**values))) == built
        for theirs in built:
            mine = ours[(theirs["kind"], theirs["metadata"]["name"])]
            for key in ("data", "spec"):
                if key in theirs:
                    assert _without_defaults(mine[key], theirs[key]) == theirs[key]
            labels = theirs["metadata"].get("labels", {})
            assert labels.items() <= mine["metadata"].get("labels", {}).items()


def _without_defaults(live: Any, sent: Any) -> Any:
    """``live`` cut down to the fields ``sent`` has (the server adds defaults)."""
    if isinstance(sent, dict) and isinstance(live, dict):
        return {k: _without_defaults(live.get(k), v) for k, v in sent.items()}
    if isinstance(sent, list) and isinstance(live, list):
        return [_without_defaults(a, b) for a, b in zip(live, sent, strict=False)]
    return live
