"""Regression tests from an audit of the SQLite and PostgreSQL backends.

Each test names the fault it pins down. The PostgreSQL ones need
``AGENTLOG_TEST_PG`` (as tests/test_postgres.py does) and skip without it;
each works in its own fresh schema, dropped afterwards.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agentlog import Store
from pg_support import needs_pg, pg_url, sql


# --- PostgreSQL: the row lease's renewer and the writer share one connection --------
@needs_pg
def test_row_lease_renewal_never_interleaves_with_a_commit(pg_schema: str) -> None:
    """The renewer used the writer's connection from its own thread with no
    lock: a renewal that began while a commit's transaction was open nested
    into it, and the writer failed with "transaction commit at the wrong
    nesting level" (once an acknowledged event was even rolled back)."""
    # Renews every ~330 ms: often enough to meet commits several times in
    # 1.5 s (without the lock this fails every time), and far enough from the
    # ttl that a loaded machine does not let the lease lapse (at 0.5 s it did,
    # once, with make fuzz running beside the suite: the writer's tight loop
    # kept the renewer waiting for the connection's lock for 330 ms).
    store = Store(pg_url(pg_schema, lease="row", lease_ttl="1.0"))
    writer = store.create(session_id="s")
    acknowledged: list[str] = []
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        acknowledged.append(writer.append("custom", {"n": len(acknowledged)}).id)
    writer.close()
    with store.open("s", readonly=True) as reader:
        assert [e.id for e in reader.entries()] == acknowledged
    store.close()


# --- PostgreSQL: deleting a session while another commits an event naming a shared blob
@needs_pg
def test_delete_keeps_a_blob_that_a_concurrent_commit_names(pg_schema: str) -> None:
    """Two sessions hold the same large output (one blob, deduplicated by
    digest). Deleting one while the other commits an event naming that blob
    removed the blob: the commit's ``ON CONFLICT DO NOTHING`` locked nothing,
    and the delete's ``NOT EXISTS`` judged by a snapshot without the commit.
    The acknowledged event then read back as BlobIntegrityError."""
    store = Store(pg_url(pg_schema), blob_threshold=256)
    shared = {"content": "the same tool output " * 40}
    with store.create(session_id="old") as old:
        old.append("tool_result", shared, role="tool")
    # Hold the new session's commit open (its events insert slowly) while
    # "old" is deleted.
    sql(f"""CREATE FUNCTION "{pg_schema}".slow() RETURNS trigger LANGUAGE plpgsql AS
             $$ BEGIN IF NEW.session_id = 'new' THEN PERFORM pg_sleep(0.6); END IF; RETURN NEW; END $$""")
    sql(f'CREATE TRIGGER slow BEFORE INSERT ON "{pg_schema}".events FOR EACH ROW EXECUTE FUNCTION "{pg_schema}".slow()')
    new = store.create(session_id="new")
    deleter = threading.Timer(0.2, store.delete, args=("old",))
    deleter.start()
    event = new.append("tool_result", shared, role="tool")
    deleter.join()
    new.close()
    assert not store.exists("old")
    with store.open("new", readonly=True) as reader:
        assert reader.resolve(reader.event(event.id)).record == shared
    store.close()


# --- PostgreSQL: LISTEN survives a dropped connection, and misses no early commit ----
@needs_pg
def test_wait_for_commit_listens_again_after_its_connection_is_dropped(pg_schema: str) -> None:
    """The server (or a proxy, or an operator) ending the listener's
    connection made every later ``wait_for_commit`` of that reader raise
    StorageError "the connection is lost", forever. A reader holds no lease,
    so it may simply listen again."""
    store = Store(pg_url(pg_schema))
    writer = store.create(session_id="s")
    reader = store.open("s", readonly=True)
    assert not reader.wait_for_commit(timeout=0.05)  # now listening
    sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        f"agentlog:{pg_schema}:listener",
    )
    writer.append("custom", {"n": 1})
    assert reader.wait_for_commit(timeout=2)  # "maybe changed": it was deaf for a while
    assert len(reader) == 1
    threading.Timer(0.1, writer.append, args=("custom", {"n": 2})).start()
    assert reader.wait_for_commit(timeout=5)  # told again, by the new LISTEN
    assert len(reader) == 2
    writer.close()
    reader.close()
    store.close()


@needs_pg
def test_first_wait_for_commit_sees_a_commit_made_while_it_began_listening(pg_schema: str) -> None:
    """The first call connects and LISTENs; a commit that landed in between
    was announced to nobody, and the reader slept through its whole timeout."""
    store = Store(pg_url(pg_schema))
    writer = store.create(session_id="s")
    reader = store.open("s", readonly=True)
    backend = store.backend
    connect = backend.writer_connection  # type: ignore[attr-defined]

    def connect_while_a_commit_lands(role: str = "writer") -> object:
        conn = connect(role)
        if role == "listener":
            writer.append("custom", {"landed": "before LISTEN"})
        return conn

    backend.writer_connection = connect_while_a_commit_lands  # type: ignore[attr-defined]
    started = time.monotonic()
    assert reader.wait_for_commit(timeout=3)
    assert time.monotonic() - started < 2
    assert len(reader) == 1
    writer.close()
    reader.close()
    store.close()


# --- PostgreSQL: URL options are checked, typed ------------------------------------
@needs_pg
@pytest.mark.parametrize("ttl", ["abc", "0", "-1", "nan"])
def test_a_bad_lease_ttl_is_refused_typed(pg_schema: str, ttl: str) -> None:
    """``lease_ttl=abc`` escaped as a bare ValueError; ``0`` or less was
    taken, and a row lease then refused every commit (it expired the moment
    it was taken) while its renewer spun without pause."""
    from agentlog.errors import UnknownBackend

    with pytest.raises(UnknownBackend, match="lease_ttl"):
        Store(pg_url(pg_schema, lease="row", lease_ttl=ttl))


# --- SQLite: one lease per database file, whatever name reaches it ------------------
def test_sqlite_lease_holds_across_a_symlinked_name(tmp_path: Path) -> None:
    """The lock files sat beside the database *name*: a writer in another
    process that opened the same file through a symlink got its own lock
    directory, took "the" lease too, and appended; the first writer's next
    commit failed with HeadConflict instead of the second one being refused."""
    import subprocess
    import sys

    real = tmp_path / "real.db"
    link = tmp_path / "link.db"
    link.symlink_to(real)
    store = Store(f"sqlite://{real}")
    writer = store.create(session_id="s")
    writer.append("custom", {"by": "first"})
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from agentlog import Store, SessionLocked\n"
            "try:\n"
            "    s = Store(sys.argv[1]).open('s')\n"
            "except SessionLocked:\n"
            "    print('locked')\n"
            "else:\n"
            "    s.append('custom', {'by': 'second'})\n"
            "    print('wrote')\n",
            f"sqlite://{link}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other.stdout.strip() == "locked", other.stderr
    writer.append("custom", {"by": "first"})
    writer.close()
    with store.open("s", readonly=True) as reader:
        assert [e.record for e in reader.path()] == [{"by": "first"}, {"by": "first"}]
    store.close()


# --- PostgreSQL: metadata holds what every other backend holds ----------------------
@needs_pg
def test_postgres_metadata_keeps_nul_characters_and_key_order(pg_schema: str, tmp_path: Path) -> None:
    """Metadata lived in a jsonb column only: a NUL in any string (valid JSON,
    kept by files, SQLite and memory) failed create/update_meta with
    StorageError "unsupported Unicode escape sequence", so such a session
    could not be created, or copied from files; and keys came back reordered."""
    from agentlog.copying import copy_sessions

    files = Store(tmp_path / "home")
    files.create(session_id="s", name="title\x00with a NUL", working_dir="/w").close()
    files.update_meta("s", zeta={"b\x00": ["\x00"]}, alpha=1)
    pg = Store(pg_url(pg_schema))
    assert copy_sessions(files, pg).created == ["s"]
    assert pg.meta("s") == files.meta("s")
    assert list(pg.meta("s")) == list(files.meta("s"))  # the order written
    assert pg.info("s").name == "title\x00with a NUL"
    # queries still read the jsonb copy (search by working directory)
    rows = sql(f"""SELECT meta->>'working_dir', meta->>'name' FROM "{pg_schema}".sessions""")
    assert rows == [("/w", "titlewith a NUL")]
    pg.close()


@needs_pg
def test_metadata_written_before_migration_0004_still_reads(pg_schema: str) -> None:
    store = Store(pg_url(pg_schema))
    store.create(session_id="old", name="from before").close()
    sql(f'UPDATE "{pg_schema}".sessions SET meta_text = NULL')  # as 0001-0003 left it
    assert store.meta("old")["name"] == "from before"
    assert [i.name for i in store.list()] == ["from before"]
    store.close()


# --- PostgreSQL: reads survive the server ending every pooled connection -----------
@needs_pg
def test_reads_survive_every_pooled_connection_being_ended(pg_schema: str) -> None:
    """A restart ends every pooled connection at once. The read path retried
    once only, so the first reads afterwards met dead connections twice and
    failed with StorageError "terminating connection" although the server
    was up again."""
    store = Store(pg_url(pg_schema))
    store.create(session_id="s").close()
    pool = store.backend._pool  # type: ignore[attr-defined]  # the one peek: fill the pool
    ready = threading.Barrier(pool.max_size)

    def hold() -> None:
        with pool.connection():
            ready.wait(timeout=10)

    holders = [threading.Thread(target=hold) for _ in range(pool.max_size)]
    for t in holders:
        t.start()
    for t in holders:
        t.join()
    ended = sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
        f"agentlog:{pg_schema}",
    )
    assert ended == [(pool.max_size,)]
    time.sleep(0.1)  # the terminations land
    for _ in range(3):
        assert [info.id for info in store.list()] == ["s"]
    store.close()
