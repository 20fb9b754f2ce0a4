"""Fixtures shared by the whole suite. Keep this small; helpers live in helpers.py.

``BACKENDS`` is the one list of backends every backend-independent test runs
on: a new backend joins the whole suite by adding one line here. Each entry
makes a Store in a test's temporary directory, and can count how many blobs
a session stores (for the deduplication checks).

PostgreSQL joins when ``AGENTLOG_TEST_PG`` names a server (``make test`` and
CI set it); each test then gets a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from agentlog import Store
from helpers import BLOB_THRESHOLD

# Imported by tests and loaded as a plugin (its browser and page fixtures):
# marked here, before either, so that its asserts are rewritten both ways.
pytest.register_assert_rewrite("browser_support")

PG_DSN = os.environ.get("AGENTLOG_TEST_PG")
_pg_schemas: list[str] = []


class BackendCase(NamedTuple):
    make: Callable[..., Store]  # (tmp_path, **options) -> Store
    blob_count: Callable[[Store, str], int]  # blobs one session stores


def _file_blobs(store: Store, session_id: str) -> int:
    blobs = Path(store.home) / "sessions" / session_id / "blobs"
    return sum(1 for p in blobs.iterdir() if not p.name.startswith("."))


def _memory_blobs(store: Store, session_id: str) -> int:
    return len(store.backend._sessions[session_id].blobs)  # type: ignore[attr-defined]  # the one peek


def _sqlite_blobs(store: Store, session_id: str) -> int:
    with sqlite3.connect(store.url.removeprefix("sqlite://")) as db:
        row = db.execute("SELECT count(DISTINCT digest) FROM events WHERE session_id = ?", (session_id,))
        return int(row.fetchone()[0])


def _new_pg_schema() -> str:
    """A fresh schema name, dropped by ``drop_pg_schemas``."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    _pg_schemas.append(schema)
    return schema


def _pg_store(tmp: Path, **options: object) -> Store:
    schema = _new_pg_schema()
    sep = "&" if "?" in (PG_DSN or "") else "?"
    return Store(f"{PG_DSN}{sep}schema={schema}", **options)  # type: ignore[arg-type]


def _pg_blobs(store: Store, session_id: str) -> int:
    row = store.backend.query(  # type: ignore[attr-defined]  # the one peek
        "SELECT count(DISTINCT digest) FROM events WHERE session_id = %s", (session_id,), one=True
    )
    return int(row[0])


BACKENDS: dict[str, BackendCase] = {
    "file": BackendCase(lambda tmp, **o: Store(tmp / "home", **o), _file_blobs),
    "memory": BackendCase(lambda tmp, **o: Store.memory(**o), _memory_blobs),
    "sqlite": BackendCase(lambda tmp, **o: Store(f"sqlite://{tmp}/agentlog.db", **o), _sqlite_blobs),
    **({"postgresql": BackendCase(_pg_store, _pg_blobs)} if PG_DSN else {}),
}


def drop_pg_schemas() -> None:
    """Drop the schemas this test made, ending the connections still on them."""
    if not _pg_schemas or not PG_DSN:
        return
    gc.collect()  # stores the test dropped close their pools
    import psycopg  # only when PostgreSQL is under test: the extra may be absent

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        for schema in _pg_schemas:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE %s",
                (f"agentlog:{schema}%",),
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    _pg_schemas.clear()


def pytest_report_header(config: pytest.Config) -> str:
    if PG_DSN:
        return f"postgresql: every backend test also runs on {PG_DSN} (a fresh schema per test)"
    return (
        "postgresql: NOT TESTED - set AGENTLOG_TEST_PG=postgresql://user@host/db to run every "
        "backend test on PostgreSQL too (make test and CI set it)"
    )


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[BackendCase]:
    """Each backend in turn (the test runs once per entry of BACKENDS)."""
    yield BACKENDS[request.param]
    drop_pg_schemas()


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema of its own for a test that needs raw SQL
    beside a store (``pg_support``); dropped, its connections ended, after."""
    yield _new_pg_schema()
    drop_pg_schemas()


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
