"""What a new user gets from an install (a hunt of 2026-12-06): python -m
agentlog, an optional extra named when it is missing, a relative
XDG_DATA_HOME ignored, a memory: store that warns it keeps nothing, and a
license and docs that travel with the sdist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlog._extras import extra_missing
from agentlog.store.locations import default_home
from cli_support import run

ROOT = Path(__file__).resolve().parent.parent


def test_python_dash_m_agentlog_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "agentlog", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "agentlog, version" in done.stdout


def test_a_missing_extra_is_named() -> None:
    error = extra_missing(ModuleNotFoundError("No module named 'google'", name="google"), extra="adk", module="m")
    assert isinstance(error, ModuleNotFoundError) and error.name == "google"
    assert str(error) == "m needs the 'adk' extra (missing: google): pip install 'agentlog[adk]'"


@pytest.mark.parametrize(
    ("module", "extra", "blocked"),
    [
        ("agentlog.integrations.adk", "adk", "google"),
        ("agentlog.integrations.openai_agents", "openai-agents", "agents"),
        ("agentlog.integrations.langgraph", "langgraph", "langchain_core"),
        ("agentlog.server", "server", "anyio"),
    ],
)
def test_importing_a_module_without_its_extra_names_the_extra(module: str, extra: str, blocked: str) -> None:
    # A fresh interpreter where the framework's package cannot be found.
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {blocked!r} or name.startswith({blocked!r} + '.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        f"import {module}\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"needs the '{extra}' extra (missing: {blocked}): pip install 'agentlog[{extra}]'" in done.stderr


def test_a_relative_xdg_data_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AGENTLOG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")
    assert default_home() == os.path.join(str(tmp_path), ".local", "share", "agentlog")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_home() == str(tmp_path / "xdg" / "agentlog")


def test_a_memory_store_warns_that_it_keeps_nothing() -> None:
    result = run("memory:", "new", "--name", "x")
    assert result.exit_code == 0
    assert "a memory: store lives only as long as this command" in result.stderr


def test_the_sdist_carries_the_license_docs_and_tests() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text()
    for line in ("graft docs", "graft tests", "include Makefile LICENSE"):
        assert line in manifest
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert 'license-files = ["LICENSE"]' in (ROOT / "pyproject.toml").read_text()
