"""Fixes from a QA pass of the team scenario on PostgreSQL (many writer
processes, a server following them live, failures injected).

- A writer process holds one server connection, its lease's: reading the
  session's metadata or its sidecars' names went through the read pool and
  kept a second connection open (idle for a minute) per agent.
- A store whose schema is up to date opens without creating anything:
  ``CREATE SCHEMA IF NOT EXISTS`` is refused on a read-only server (a
  streaming replica, which docs/scale.md points readers at) and to a role
  without ``CREATE`` on the database, even when the schema exists.
- libpq parameters of the URL reach libpq as written: a space in one
  (``options=-c%20name%3Dvalue``) was re-encoded as ``+``, which libpq
  does not decode, and every connection was refused.

Needs ``AGENTLOG_TEST_PG`` (skipped cleanly without it)."""

from __future__ import annotations

from contextlib import closing

import pytest

from agentlog import Store
from agentlog.errors import StorageError
from pg_support import needs_pg, pg_url, sql

pytestmark = needs_pg


def _pooled_connections(schema: str) -> int:
    """Server connections of the read pools of ``schema`` (not writers, not listeners)."""
    rows = sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", f"agentlog:{schema}")
    return int(str(rows[0][0]))


def test_a_writer_process_holds_only_its_lease_connection(pg_schema: str) -> None:
    with closing(Store(pg_url(pg_schema))) as setup:
        with setup.create(session_id="agent", name="agent") as session:
            session.storage.write_sidecar("draft", b"text")
    store = Store(pg_url(pg_schema))
    try:
        assert _pooled_connections(pg_schema) == 0
        with store.open("agent") as writer:
            writer.append("message", {"content": "hello"}, role="user")
            assert writer.meta["name"] == "agent"
            assert writer.storage.read_meta()["name"] == "agent"
            assert writer.storage.sidecar_names() == ["draft"]
            assert [e.kind for e in writer.path()] == ["message"]
            assert _pooled_connections(pg_schema) == 0
        assert _pooled_connections(pg_schema) == 0
    finally:
        store.close()


def test_a_read_only_server_opens_a_migrated_store_for_reading(pg_schema: str) -> None:
    with closing(Store(pg_url(pg_schema))) as setup, setup.create(session_id="s", name="s") as session:
        event = session.append("message", {"content": "replicated words"}, role="user")
    # A hot standby refuses every write; so does this session setting.
    read_only = pg_url(pg_schema) + "&options=-c%20default_transaction_read_only%3Don"
    with closing(Store(read_only)) as replica:
        assert [info.id for info in replica.list()] == ["s"]
        with replica.open("s", readonly=True) as reader:
            assert [e.id for e in reader.path()] == [event.id]
        assert [hit.event_id for hit in replica.search("replicated")] == [event.id]
        with pytest.raises(StorageError), replica.open("s") as writer:
            writer.append("message", {"content": "refused"}, role="user")
    with closing(Store(pg_url(pg_schema))) as store, store.open("s", readonly=True) as reader:
        assert [e.id for e in reader.path()] == [event.id]


def test_a_new_schema_on_a_read_only_server_is_a_typed_error(pg_schema: str) -> None:
    with pytest.raises(StorageError, match="read-only"):
        Store(pg_url(pg_schema) + "&options=-c%20default_transaction_read_only%3Don")


def test_libpq_parameters_with_spaces_reach_libpq(pg_schema: str) -> None:
    url = pg_url(pg_schema) + "&options=-c%20statement_timeout%3D54321&application_name=qa%20team"
    with closing(Store(url)) as store:
        row = store.backend.query("SHOW statement_timeout", one=True)  # type: ignore[attr-defined]
        assert row[0] == "54321ms"
        with store.create(session_id="s") as session:
            session.append("message", {"content": "x"}, role="user")
            assert session.storage._lease.conn.execute("SHOW statement_timeout").fetchone()[0] == "54321ms"  # type: ignore[attr-defined]


def test_a_nul_in_a_record_keeps_the_words_apart_in_postgres_search(pg_schema: str) -> None:
    """PostgreSQL text holds no NUL: it used to be dropped from the indexed
    text, gluing "hello" and "nul" into one word no query finds."""
    store = Store(pg_url(pg_schema))
    with store.create() as session:
        session.append("message", {"content": "hello\x00nul"}, role="user")
    hits = store.search("nul")
    assert len(hits) == 1 and "\u2400" in hits[0].snippet
    store.close()
