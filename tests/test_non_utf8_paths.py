"""Paths whose bytes are not UTF-8: a store's home, an SQLite file, a source file.

Python holds such names with surrogate escapes, which no JSON and no UTF-8
encoder takes: every command on such a home, and any import of such a
file (with every other file of the run), failed with an internal error."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentlog import Store
from cli_support import ok, ok_json
from importers_support import FIXTURES

pytestmark = pytest.mark.skipif(os.name != "posix", reason="names are bytes on POSIX")


def _name(raw: bytes) -> str:
    return os.fsdecode(raw)


def test_a_home_whose_path_is_not_utf8(tmp_path: Path) -> None:
    home = tmp_path / _name(b"home\xe9")
    sid = ok(home, "new", "--name", "x").strip()
    ok(home, "append", "x", "message", '{"content": "hello"}')
    assert [s["id"] for s in ok_json(home, "ls")] == [sid]
    assert "hello" in ok(home, "log", "x") and "hello" in ok(home, "search", "hello")
    assert "0 errors" in ok(home, "fsck")
    again = Store(Store(home).url)  # the store's own URL names it again
    assert [s.id for s in again.list()] == [sid]


def test_an_sqlite_file_whose_path_is_not_utf8(tmp_path: Path) -> None:
    url = "sqlite://" + str(tmp_path / _name(b"s\xe9.db"))
    ok(url, "new", "--name", "y")
    assert [s["title"] for s in ok_json(url, "ls")] == ["y"]
    assert (tmp_path / _name(b"s\xe9.db")).exists()


def test_a_source_file_whose_name_is_not_utf8_is_imported_with_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "proj"
    source.mkdir()
    shutil.copyfile(FIXTURES / "claude-code_v2.1.42_real_03eb5929.jsonl", source / "03eb5929.jsonl")
    shutil.copyfile(FIXTURES / "claude-code_synthetic_dag_fork.jsonl", source / _name(b"caf\xe9.jsonl"))
    home = tmp_path / "home"
    ok(home, "import", "--from", "claude", str(source))
    sessions = {s["id"]: s["event_count"] for s in ok_json(home, "ls")}
    assert "claude-03eb5929-52b3-4b13-ada3-b93ae35806b8" in sessions and "claude-s1" in sessions
    with Store(home).open("claude-s1", readonly=True) as s:
        assert {e.record["source"]["file"] for e in s.events()} == {"caf\\xe9.jsonl"}
    assert "0 new events" in ok(home, "import", "--from", "claude", str(source))  # nothing twice
