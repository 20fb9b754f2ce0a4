"""A leading "~" in a store location is the home directory. Where no shell
expanded it (an env file's AGENTLOG_HOME=~/agentlog, Store("~/x")) it
used to make a directory named "~" in the current one."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlog import Store
from cli_support import run


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.mark.parametrize(
    ("location", "made"),
    [("~/store", "store"), ("file:~/files", "files"), ("sqlite:~/rows.db", "rows.db")],
)
def test_library_locations(fake_home: Path, location: str, made: str) -> None:
    store = Store(location)
    with store.create() as s:
        s.append("message", {"content": "hi"}, role="user")
    assert (fake_home / made).exists()
    assert not (fake_home.parent / "~").exists()
    store.close()


def test_a_dot_slash_tilde_is_a_directory_called_tilde(fake_home: Path) -> None:
    Store("./~").create().close()
    assert (fake_home.parent / "~").is_dir()


def test_the_home_variable(fake_home: Path) -> None:
    result = run(None, "new", "--name", "x", env={"AGENTLOG_HOME": "~/agentlog", "HOME": str(fake_home)})
    assert result.exit_code == 0, result.stderr
    assert (fake_home / "agentlog").is_dir()
    assert not (fake_home.parent / "~").exists()
