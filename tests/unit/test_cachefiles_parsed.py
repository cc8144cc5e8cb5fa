"""What a parser made, kept between processes (``cachefiles.parsed_once``): the same data as
parsing afresh, and never data kept for another source, another Python or another writer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from oper8d.cachefiles import parsed_once, write_private
from oper8d.kubeschema import KubeSchemas

SOURCE = json.dumps({"defs": {"a": {"type": "string", "enum": ["x", "y"]}}, "n": [1, 2.5, None]})


class Parser:
    """``json.loads`` of one source, counting its calls."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        return json.loads(self.source)


def test_kept_data_equals_a_fresh_parse_and_the_second_call_does_not_parse(tmp_path: Path) -> None:
    parse = Parser(SOURCE)
    first = parsed_once(tmp_path, "s.marshal", SOURCE.encode(), parse)
    second = parsed_once(tmp_path, "s.marshal", SOURCE.encode(), parse)
    assert first == second == json.loads(SOURCE)
    assert parse.calls == 1


def test_data_kept_for_another_source_is_parsed_again_and_replaced(tmp_path: Path) -> None:
    parsed_once(tmp_path, "s.marshal", SOURCE.encode(), Parser(SOURCE))
    changed = SOURCE.replace('"x"', '"z"')
    parse = Parser(changed)
    assert parsed_once(tmp_path, "s.marshal", changed.encode(), parse) == json.loads(changed)
    assert parsed_once(tmp_path, "s.marshal", changed.encode(), parse) == json.loads(changed)
    assert parse.calls == 1


def test_a_foreign_or_broken_file_in_its_place_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "s.marshal"
    write_private(path, b"another-store 1\n", b"\x00")  # a trusted file of another kind
    parse = Parser(SOURCE)
    assert parsed_once(tmp_path, "s.marshal", SOURCE.encode(), parse) == json.loads(SOURCE)
    body = path.read_bytes()
    path.write_bytes(body[:-3])  # cut short: its checksum no longer matches
    assert parsed_once(tmp_path, "s.marshal", SOURCE.encode(), parse) == json.loads(SOURCE)
    assert parse.calls == 2
    os.chmod(path, 0o622)  # writable by others: not trusted
    assert parsed_once(tmp_path, "s.marshal", SOURCE.encode(), parse) == json.loads(SOURCE)
    assert parse.calls == 3


def test_without_a_folder_nothing_is_kept(tmp_path: Path) -> None:
    parse = Parser(SOURCE)
    parsed_once(None, "s.marshal", SOURCE.encode(), parse)
    parsed_once(None, "s.marshal", SOURCE.encode(), parse)
    assert parse.calls == 2


def test_kept_builtin_schemas_equal_the_shipped_ones_parsed_afresh(tmp_path: Path) -> None:
    fresh = KubeSchemas.builtin()
    for _ in range(2):  # the first call keeps them, the second reads what it kept
        kept = KubeSchemas.builtin(cache=tmp_path)
        assert kept.definitions == fresh.definitions
        assert kept.served_kinds() == fresh.served_kinds()
        assert kept.kubernetes_version == fresh.kubernetes_version
    assert [p.name for p in tmp_path.iterdir()] == ["k8s-v1.34.4.json.gz.marshal"]


def test_a_folder_others_can_enter_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "oper8d"
    parsed_once(folder, "s.marshal", SOURCE.encode(), Parser(SOURCE))  # kept, folder 0700
    os.chmod(folder, 0o755)
    parse = Parser(SOURCE)
    assert parsed_once(folder, "s.marshal", SOURCE.encode(), parse) == json.loads(SOURCE)
    assert parse.calls == 1
