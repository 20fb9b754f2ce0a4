"""Regressions found in the second read of one day's fixes (docs/../notes/review-python.md).

PostgreSQL tests take the server from ``AGENTLOG_TEST_PG`` (as
tests/test_postgres.py does) and are skipped, loudly, without it."""

from __future__ import annotations

from pathlib import Path

from agentlog import Store
from agentlog.copying import copy_sessions
from conftest import PG_DSN
from pg_support import needs_pg, pg_url, sql


# --- copy: the artifacts directory holds more than sidecars -------------------------
def test_copy_skips_what_in_the_artifacts_directory_is_not_a_sidecar(tmp_path: Path) -> None:
    """``session.artifacts_dir`` is the session's own directory: an agent may
    keep a subdirectory or a file named with a space there. Copy, which now
    carries sidecars, read each listed name as a sidecar and failed the whole
    session (StorageError "Is a directory", or InvalidName)."""
    src = Store(str(tmp_path / "files"))
    with src.create(session_id="s") as s:
        s.append("message", {"content": "hi"}, role="user")
        s.set_draft("unsent")
        directory = s.artifacts_dir
        assert directory is not None
        (Path(directory) / "images").mkdir()
        (Path(directory) / "my notes.md").write_text("mine")
    dst = Store(f"sqlite:///{tmp_path / 'copy.db'}")
    assert copy_sessions(src, dst).created == ["s"]
    with dst.open("s", readonly=True) as copied:
        assert copied.draft() == "unsent"
    src.close()
    dst.close()


# --- PostgreSQL: metadata written by an agentlog from before migration 0004 -------
@needs_pg
def test_metadata_an_older_writer_updates_is_not_hidden_by_meta_text(pg_schema: str) -> None:
    """Reads prefer ``meta_text`` (0004); an agentlog still running the
    version before it updates ``meta`` alone (a rename, an archive). Its
    change was invisible to every newer reader, which kept reading the stale
    ``meta_text``."""
    store = Store(pg_url(pg_schema))
    store.create(session_id="s", name="before").close()
    # What the previous release's write_meta runs:
    sql(f"""UPDATE "{pg_schema}".sessions SET meta = meta || '{{"name": "renamed"}}'::jsonb WHERE id = 's'""")
    assert store.meta("s")["name"] == "renamed"
    assert [i.name for i in store.list()] == ["renamed"]
    # and this version's own writes still keep the exact text
    with store.open("s") as s:
        s.storage.write_meta({**s.meta, "name": "nul\x00kept"})
    assert store.meta("s")["name"] == "nul\x00kept"
    store.close()


def test_a_record_cut_in_the_middle_is_reported_as_quarantined_not_also_as_lost(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "home"))
    with store.create(session_id="s") as s:
        for n in range(3):
            s.append("message", {"content": f"event {n}"}, role="user")
        last = s.head
    chunk = tmp_path / "home" / "sessions" / "s" / "chunks" / "000000.jsonl"
    data = chunk.read_bytes()
    chunk.write_bytes(data[: len(data) - 40])  # the last record cut in its middle
    actions = store.repair("s")
    assert any("quarantine" in a for a in actions), actions
    assert not any(last in a and "lost" in a for a in actions), actions


@needs_pg
def test_deletes_check_for_other_users_of_a_blob_through_an_index(pg_schema: str) -> None:
    store = Store(pg_url(pg_schema), blob_threshold=256)
    with store.create(session_id="s") as s:
        s.append("tool_result", {"content": "x" * 2000}, role="tool")  # a blob
    with store.create(session_id="t") as t:
        t.append("tool_result", {"content": "x" * 2000}, role="tool")  # the same blob, shared
    store.delete("s")
    with store.open("t", readonly=True) as t:
        assert t.resolve(t.path()[-1]).record == {"content": "x" * 2000}  # kept: t still names it
    store.close()
    import psycopg

    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"')
        conn.execute("SET enable_seqscan = off")  # whatever the table's size: can the index answer?
        plan = "\n".join(
            str(r[0]) for r in conn.execute("EXPLAIN SELECT 1 FROM events e WHERE e.digest = 'sha256:00'").fetchall()
        )
    assert "events_by_digest" in plan, plan
