"""What a PostgreSQL database was created with, and agentlog cannot change:
its encoding and its LC_CTYPE. A database not encoded in UTF-8 is refused
before anything is written to it. One whose LC_CTYPE is C lowercases ASCII
letters only, so its search tells ``Ошибка`` from ``ошибка``; the first
search of a store on it says so (a SearchWarning, one line in the CLI),
and a database with a UTF-8 LC_CTYPE says nothing. Real databases are
created for it."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import pytest

from agentlog import Store
from agentlog.errors import SearchWarning, StorageError
from agentlog.search import search
from conftest import PG_DSN
from pg_support import needs_pg, pg_url

pytestmark = needs_pg

DATABASE = "agentlog_test_ctype_c"
ASCII_DATABASE = "agentlog_test_sql_ascii"


def _on_database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{name}"))


@contextmanager
def _database(name: str, encoding: str, extra: str = "") -> Iterator[str]:
    """A new database with ``encoding`` and LC_CTYPE C, dropped after; its DSN."""
    psycopg = pytest.importorskip("psycopg")
    assert PG_DSN
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(
            f"CREATE DATABASE {name} TEMPLATE template0 ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C'{extra}"
        )
    try:
        yield _on_database(PG_DSN, name)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["libc", "icu"])
def c_database(request: pytest.FixtureRequest) -> Iterator[str]:
    """LC_CTYPE C, with libc's collations or ICU's (whose lower() folds
    every letter, though text search still reads words by LC_CTYPE)."""
    icu = " LOCALE_PROVIDER icu ICU_LOCALE 'und'" if request.param == "icu" else ""
    with _database(DATABASE, "UTF8", icu) as dsn:
        yield dsn


def _searched(store: Store, query: str) -> tuple[int, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hits = search(store, query)
    return len(hits), [str(w.message) for w in caught if issubclass(w.category, SearchWarning)]


def test_a_database_with_lc_ctype_c_says_its_search_keeps_case(c_database: str) -> None:
    store = Store(f"{c_database}?schema=s")
    with store.create(session_id="s") as s:
        s.append("message", {"content": "Ошибка подключения"}, role="user")
    count, said = _searched(store, "ошибка")
    assert count == 0  # what the warning is about
    (message,) = said
    assert "LC_CTYPE is C" in message and "C.UTF-8" in message
    assert _searched(store, "Ошибка") == (1, [])  # once per store
    store.close()


def test_a_database_with_a_utf8_lc_ctype_says_nothing(pg_schema: str) -> None:
    store = Store(pg_url(pg_schema))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "Ошибка подключения"}, role="user")
    assert _searched(store, "ошибка") == (1, [])
    store.close()


def test_a_database_not_encoded_in_utf8_is_refused_before_anything_is_written() -> None:
    """Was: the store opened, created its schema, and its first write failed
    with "operator does not exist: uuid = bytea"."""
    psycopg = pytest.importorskip("psycopg")
    with _database(ASCII_DATABASE, "SQL_ASCII") as dsn:
        with pytest.raises(StorageError, match="encoded SQL_ASCII.*ENCODING 'UTF8'"):
            Store(f"{dsn}?schema=s")
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 's'").fetchone() == (0,)
