"""Fixtures shared by the whole suite. Keep this small; helpers live in helpers.py.

``BACKENDS`` is the one list of backends every backend-independent test runs
on: a new backend joins the whole suite by adding one line here. Each entry
makes a Store in a test's temporary directory, and may peek at how many
blobs a session stores (for the deduplication checks; None where the
backend shares blobs in a way a count cannot show).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from agentlog import Store
from helpers import BLOB_THRESHOLD


class BackendCase(NamedTuple):
    make: Callable[..., Store]                              # (tmp_path, **options) -> Store
    blob_count: Callable[[Store, str], int]                # blobs one session stores


def _file_blobs(store: Store, session_id: str) -> int:
    blobs = Path(store.home) / "sessions" / session_id / "blobs"
    return sum(1 for p in blobs.iterdir() if not p.name.startswith("."))


def _memory_blobs(store: Store, session_id: str) -> int:
    return len(store.backend._sessions[session_id].blobs)  # type: ignore[attr-defined]  # the one peek


def _sqlite_blobs(store: Store, session_id: str) -> int:
    with sqlite3.connect(store.url.removeprefix("sqlite://")) as db:
        return int(db.execute("SELECT count(DISTINCT digest) FROM events WHERE session_id = ?",
                              (session_id,)).fetchone()[0])


BACKENDS: dict[str, BackendCase] = {
    "file": BackendCase(lambda tmp, **o: Store(tmp / "home", **o), _file_blobs),
    "memory": BackendCase(lambda tmp, **o: Store.memory(**o), _memory_blobs),
    "sqlite": BackendCase(lambda tmp, **o: Store(f"sqlite://{tmp}/agentlog.db", **o), _sqlite_blobs),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> BackendCase:
    """Each backend in turn (the test runs once per entry of BACKENDS)."""
    return BACKENDS[request.param]


@pytest.fixture
def make_store(backend: BackendCase, tmp_path: Path) -> Callable[..., Store]:
    """Make a store on the current backend: ``make_store(blob_threshold=...)``."""
    return lambda **options: backend.make(tmp_path, **options)


@pytest.fixture
def store(make_store: Callable[..., Store]) -> Store:
    """A store on each backend with a small blob threshold, so blobs are cheap to make."""
    return make_store(blob_threshold=BLOB_THRESHOLD)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh file-store home inside the test's own temporary directory."""
    return tmp_path / "home"


@pytest.fixture
def file_store(home: Path) -> Store:
    """A file-backed store with a small blob threshold (for tests of the file format)."""
    return Store(home, blob_threshold=BLOB_THRESHOLD)
