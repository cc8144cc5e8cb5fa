"""The store of compiled dataclass methods (``oper8d.cli.startup_code``): a class made
with stored code is the class Python makes without it, code is stored and reused only for
its exact text, and a store file is trusted by the cache's rules."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from oper8d.cli.startup_code import reused_startup_code

REPO = Path(__file__).resolve().parents[2]

#: classes of every kind of field and option ``dataclass`` writes other code for
CLASSES = """
import dataclasses
import importlib.util
import re
from dataclasses import InitVar, KW_ONLY, dataclass, field
from typing import ClassVar

@dataclass(frozen=True)
class Frozen:
    name: str
    items: tuple[int, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, repr=False)
    counter: ClassVar[int] = 0

@dataclass
class Mutable:
    a: int
    b: "list[str]" = field(default_factory=list)
    seed: InitVar[int] = 0
    _: KW_ONLY
    flag: bool = False

    def __post_init__(self, seed):
        self.a += seed

@dataclass(frozen=True, order=True, slots=True)
class Ordered:
    x: int
    y: int = 0

@dataclass(frozen=True, eq=False)
class Identity:
    value: object = None
"""


def written_methods(cls: type) -> dict[str, types.CodeType]:
    """The code of each method ``dataclass`` wrote for ``cls`` (compiled from text, so
    its file is ``<string>``), by name."""
    out = {}
    for name, value in vars(cls).items():
        function = getattr(value, "__wrapped__", value)  # __repr__ is wrapped
        code = getattr(function, "__code__", None)
        if isinstance(function, types.FunctionType) and code.co_filename == "<string>":
            out[name] = code
    return out


def _methods(namespace: dict[str, Any]) -> dict[str, types.CodeType]:
    """The code of every method ``dataclass`` wrote, by ``Class.method``."""
    return {
        f"{cls.__qualname__}.{name}": code
        for cls in namespace.values()
        if isinstance(cls, type) and dataclasses.is_dataclass(cls)
        for name, code in written_methods(cls).items()
    }


def _make(module: str, future: bool = False, classes: str = CLASSES) -> dict[str, Any]:
    """Run ``classes`` as the module ``module`` (``dataclass`` hands a class's methods the
    globals of its module in ``sys.modules``)."""
    source = ("from __future__ import annotations\n" if future else "") + classes
    made = types.ModuleType(module)
    sys.modules[module] = made
    try:
        exec(compile(source, f"<{module}>", "exec", dont_inherit=True), vars(made))
    finally:
        del sys.modules[module]
    return vars(made)


def _store_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("startup-*.code"))


@pytest.mark.parametrize("future", [False, True], ids=["plain", "future-annotations"])
def test_classes_made_with_stored_code_are_the_classes_python_makes(
    tmp_path: Path, future: bool
) -> None:
    stock = _methods(_make("oper8d.sample", future))
    with reused_startup_code(tmp_path) as first:  # cold: compiles and stores
        cold = _make("oper8d.sample", future)
    with reused_startup_code(tmp_path) as second:  # warm: every method from the store
        warm = _make("oper8d.sample", future)
    assert len(stock) >= 15
    assert (first.stored, second.compiled) == (0, 0)
    assert first.compiled == second.stored > 0
    assert _methods(cold) == stock
    assert _methods(warm) == stock
    # and they behave as such
    frozen = warm["Frozen"]("n", (1, 2), {"k": 1})
    assert frozen == warm["Frozen"]("n", (1, 2), {"other": 2})  # extra: compare=False
    assert repr(frozen) == "Frozen(name='n', items=(1, 2))"
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.name = "m"
    assert warm["Mutable"](1, seed=2, flag=True).a == 3
    assert sorted([warm["Ordered"](2), warm["Ordered"](1, 5)]) == [
        warm["Ordered"](1, 5),
        warm["Ordered"](2),
    ]


def test_a_warm_block_compiles_nothing_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with reused_startup_code(tmp_path):
        _make("oper8d.sample")
    [store] = _store_files(tmp_path)
    written = store.stat().st_mtime_ns
    compiled: list[str] = []
    real_compile = compile

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, str) and source.startswith("def __create_fn__"):
            compiled.append(source)  # the text of a class's method (not the class's module)
        return real_compile(source, *args, **kwargs)

    monkeypatch.setattr("builtins.compile", counting)
    with reused_startup_code(tmp_path):
        _make("oper8d.sample")
    monkeypatch.undo()
    assert compiled == []
    assert store.stat().st_mtime_ns == written


def test_changed_text_is_compiled_afresh(tmp_path: Path) -> None:
    with reused_startup_code(tmp_path):
        _make("oper8d.sample")
    changed = CLASSES.replace("y: int = 0", "y: int = 0\n    z: str = 'z'")
    with reused_startup_code(tmp_path):
        namespace = _make("oper8d.sample", classes=changed)
    assert namespace["Ordered"](1) == namespace["Ordered"](1, 0, "z")
    assert repr(namespace["Ordered"](1)) == "Ordered(x=1, y=0, z='z')"


def test_classes_of_other_packages_are_not_stored(tmp_path: Path) -> None:
    with reused_startup_code(tmp_path):
        made = _make("someone_else")
    assert _methods(made) == _methods(_make("someone_else"))
    assert _store_files(tmp_path) == []


def test_the_hook_is_gone_after_the_block_even_when_it_raises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), reused_startup_code(tmp_path):
        assert hasattr(dataclasses, "exec")
        raise RuntimeError("boom")
    assert not hasattr(dataclasses, "exec")
    with reused_startup_code(None):  # no cache folder: nothing changes
        assert not hasattr(dataclasses, "exec")


@pytest.mark.parametrize(
    "damage",
    ["group-writable", "garbage", "flipped-byte", "symlink"],
)
def test_a_store_file_that_cannot_be_trusted_is_ignored(tmp_path: Path, damage: str) -> None:
    with reused_startup_code(tmp_path):
        _make("oper8d.sample")
    [store] = _store_files(tmp_path)
    if damage == "group-writable":
        os.chmod(store, 0o620)
    elif damage == "garbage":
        store.write_bytes(b"not a store")
    elif damage == "flipped-byte":
        data = bytearray(store.read_bytes())
        data[-1] ^= 1
        store.write_bytes(bytes(data))
    else:
        target = tmp_path / "elsewhere.code"
        store.rename(target)
        store.symlink_to(target)
    with reused_startup_code(tmp_path) as reused:
        made = _make("oper8d.sample")
    assert reused.stored == 0  # nothing was taken from the file
    assert _methods(made) == _methods(_make("oper8d.sample"))


#: run in a fresh interpreter: the code of every method of every dataclass of oper8d
_DUMP = textwrap.dedent(
    """
    import dataclasses, importlib, json, pkgutil, sys, types
    import oper8d
    from oper8d.cachefiles import cache_dir
    from oper8d.cli.startup_code import reused_startup_code
    from tests.unit.test_startup_code import signature, written_methods

    out = {}
    with reused_startup_code(cache_dir()):
        for info in pkgutil.walk_packages(oper8d.__path__, "oper8d."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for cls in vars(module).values():
                if isinstance(cls, type) and dataclasses.is_dataclass(cls):
                    if cls.__module__ == info.name:
                        for name, code in written_methods(cls).items():
                            out[f"{info.name}.{cls.__qualname__}.{name}"] = signature(code)
    json.dump(out, sys.stdout)
    """
)


def signature(code: types.CodeType) -> list[Any]:
    """What makes two code objects the same code, as JSON (nested code too)."""
    consts = [signature(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return [
        code.co_code.hex(),
        consts,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_flags,
        code.co_argcount,
        code.co_kwonlyargcount,
        code.co_posonlyargcount,
        code.co_linetable.hex(),
        code.co_qualname,
    ]


def _dump(env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, "-c", _DUMP]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_every_oper8d_dataclass_is_the_same_made_from_the_store(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPER8D_NO_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    stock = _dump({**env, "OPER8D_NO_CACHE": "1"})
    cold = _dump(env)  # fills the store
    assert _store_files(tmp_path / "oper8d")
    warm = _dump(env)  # every method from the store
    assert len(stock) > 300  # ~95 classes, several methods each
    assert cold == stock
    assert warm == stock


#: patterns of every kind of construct, text and bytes, with flags
PATTERNS: list[tuple[str | bytes, int]] = [
    (r"\s+", 0),
    (r"^(?P<key>[A-Za-z_][\w.-]*)\s*=\s*(?P<value>.*)$", re.MULTILINE),
    (r"(?i)[a-z]+(?=\d)|(?<!x)y{2,5}?", 0),
    (r"[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]", 0),
    (r"(a)(b)?(?(2)c|d)\1", re.IGNORECASE),
    (r"\d+ # digits", re.VERBOSE),
    (r"[\w-]+", re.ASCII),
    (rb"[^\x00-\x7f]+|(?P<word>\w+)", 0),
    (rb"(?L)\w+", 0),
    (r"(?s).*?(?:end|fin)\Z", 0),
]


def _compile_all(folder: Path) -> list[re.Pattern[Any]]:
    """``PATTERNS`` compiled by a module as it is imported (the patterns the store keeps)."""
    re.purge()  # (re keeps compiled patterns in its own cache within a process)
    source = f"import re\nMADE = [re.compile(p, f) for p, f in {PATTERNS!r}]\n"
    path = folder / f"patterns_{len(list(folder.glob('patterns_*.py')))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made: list[re.Pattern[Any]] = module.MADE
    return made


def test_patterns_built_from_stored_programs_are_the_patterns_python_compiles(
    tmp_path: Path,
) -> None:
    store = tmp_path / "cache"
    stock = _compile_all(tmp_path)
    with reused_startup_code(store) as first:
        cold = _compile_all(tmp_path)
    with reused_startup_code(store) as second:
        warm = _compile_all(tmp_path)
    re.purge()
    assert first.compiled == second.stored == len(PATTERNS)
    assert second.compiled == 0
    for made in (cold, warm):
        # equal patterns: the same text, flags and program
        assert made == stock
        assert [p.groupindex for p in made] == [p.groupindex for p in stock]
        assert [p.groups for p in made] == [p.groups for p in stock]
    samples = ["key = value\nx=1", "ABC1 yyy", "é\u2028x", "abcab", "12 # digits", b"caf\xc3\xa9 w"]
    for made, ours in zip(stock, warm, strict=True):
        for sample in samples:
            if isinstance(sample, bytes) == isinstance(made.pattern, bytes):
                expected = [m.span() for m in made.finditer(sample)]  # type: ignore[arg-type]
                assert [m.span() for m in ours.finditer(sample)] == expected  # type: ignore[arg-type]


_PATTERNS_OF_A_RENDER = textwrap.dedent(
    """
    import re, sys
    from oper8d.cachefiles import cache_dir
    from oper8d.cli.startup_code import reused_startup_code

    re.purge()
    with reused_startup_code(cache_dir()) as store:
        import click, jinja2, yaml
        import oper8d.cli.main, oper8d.offline, oper8d.render_output
    made = dict(re._cache)
    stock = re._compiler.compile  # (the hook is gone after the block)
    def same(key, pattern):
        again = stock(key[1], key[2])
        return (pattern, pattern.groupindex) == (again, again.groupindex)

    wrong = [key for key, pattern in made.items() if not same(key, pattern)]
    print(len(made), store.stored, store.compiled, wrong)
    """
)


def test_every_pattern_a_render_compiles_is_the_same_from_the_store(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPER8D_NO_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    command = [sys.executable, "-c", _PATTERNS_OF_A_RENDER]
    runs = []
    for _ in range(2):  # cold, then warm
        proc = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stderr
        runs.append(proc.stdout.split(maxsplit=3))
    (patterns, _, cold_compiled, cold_wrong), (same, warm_stored, warm_compiled, warm_wrong) = runs
    assert int(patterns) > 50 and same == patterns
    assert int(warm_stored) > int(patterns) and warm_compiled == "0"  # (and ~300 methods)
    assert int(cold_compiled) > 0
    assert cold_wrong.strip() == warm_wrong.strip() == "[]"


def test_a_pattern_compiled_by_running_code_is_made_as_usual_and_not_kept(tmp_path: Path) -> None:
    nonce = "n0nce"  # as a render makes one from a fresh nonce each time
    re.purge()
    with reused_startup_code(tmp_path) as store:
        made = re.compile(re.escape(nonce) + r"(\d+)z")
    re.purge()
    assert made == re.compile(re.escape(nonce) + r"(\d+)z")
    assert (store.stored, store.compiled) == (0, 0)
    assert list(tmp_path.glob("startup-*.code")) == []


def test_a_warm_render_does_not_write_the_store(tmp_path: Path) -> None:
    """Text templates compile patterns from a fresh nonce on every render."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPER8D_NO_CACHE", "PYTHONDONTWRITEBYTECODE")
    }
    env["XDG_CACHE_HOME"] = str(tmp_path)
    bundle = REPO / "examples" / "operators" / "webapp"
    (cr,) = sorted((bundle / "samples").glob("*.yaml"))[:1]
    command = [sys.executable, "-m", "oper8d", "render", str(bundle), "--cr", str(cr)]
    written = []
    for _ in range(3):
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, check=False)
        assert proc.returncode == 0, proc.stderr
        (store,) = (tmp_path / "oper8d").glob("startup-*.code")
        written.append((store.stat().st_mtime_ns, store.stat().st_size))
    assert written[1] == written[2]
