"""Fixtures shared by the whole suite. Keep this small; helpers live in helpers.py."""

from __future__ import annotations

import pytest

from agentlog import Store
from helpers import BLOB_THRESHOLD


@pytest.fixture
def home(tmp_path):
    """A fresh store home inside the test's own temporary directory."""
    return tmp_path / "home"


@pytest.fixture
def file_store(home):
    """A file-backed store with a small blob threshold, so blobs are cheap to make."""
    return Store(home, blob_threshold=BLOB_THRESHOLD)
