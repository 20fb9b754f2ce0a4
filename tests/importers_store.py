"""The importer tests' store fixture (a plugin module: test modules name it
in ``pytest_plugins`` instead of importing it, so pytest can rewrite its asserts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlog import Store


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """Every importer test runs on the file store and the memory store."""
    if request.param == "files":
        return Store(tmp_path / "home")
    return Store.memory()
