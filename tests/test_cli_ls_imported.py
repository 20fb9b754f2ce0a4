"""``agentlog ls`` shows where an imported session was recorded, without
giving it a working directory (which --continue would then open)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlog import Store
from cli_support import error, ok, ok_json, run


def _store(home: Path) -> None:
    store = Store(home)
    with store.create(session_id="imported", meta={"source_cwd": "/work/project-a"}) as s:
        s.append("message", {"content": "hi"}, role="user")
    with store.create(session_id="native", working_dir="/work/project-b") as s:
        s.append("message", {"content": "hi"}, role="user")
    store.close()


def test_ls_marks_the_recorded_directory_of_an_imported_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _store(home)
    lines = {line.split()[0]: line for line in ok(home, "ls").splitlines()[1:]}
    assert "/work/project-a (imported)" in lines["imported"]
    assert "/work/project-b" in lines["native"] and "(imported)" not in lines["native"]
    rows = {r["id"]: r for r in ok_json(home, "ls")}
    assert rows["imported"]["working_dir"] is None
    assert rows["imported"]["source_cwd"] == "/work/project-a"
    assert rows["native"]["source_cwd"] is None


def test_continue_still_never_opens_an_imported_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _store(home)
    assert "no session to continue" in error(run(home, "continue", "/work/project-a"))
    assert ok(home, "continue", "/work/project-b").strip() == "native"


@pytest.mark.parametrize("terminal", [True, False])
def test_ls_columns_line_up_after_wide_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    """A title in Chinese or Japanese takes two columns a character: every
    column after it was shifted (found listing imported pi sessions). On a
    terminal a long title is cut to its column; piped, it is whole."""
    home = tmp_path / "home"
    store = Store(home)
    for sid, name in (("wide", "检查测试是否通过"), ("narrow", "plain title"), ("long", "长" * 60)):
        with store.create(session_id=sid, name=name) as s:
            s.append("message", {"content": "hi"}, role="user")
    store.close()
    monkeypatch.setattr("agentlog.cli.render._on_terminal", lambda: terminal)
    lines = ok(home, "ls").splitlines()
    from rich.cells import cell_len

    starts = {cell_len(line[: line.index("active")]) for line in lines[1:]}
    assert len(starts) == 1  # the STATUS column starts at one place on every row
    (long_row,) = [line for line in lines if line.startswith("long")]
    assert ("…" in long_row) is terminal and ("长" * 60 in long_row) is not terminal
