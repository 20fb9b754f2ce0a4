"""Fixes from a QA pass of teams running many agents on many machines with
their sessions in PostgreSQL.

- A writer frozen in the middle of a commit (a paused VM, a network
  partition, SIGSTOP) left its transaction open, holding the lock on its
  lease row: a second writer's ``open`` then waited on that lock without
  limit, in both lease modes, instead of getting ``SessionLocked``; and in
  ``row`` mode the session never passed on after ``lease_ttl``, because the
  server kept the frozen transaction open for as long as it believed the
  connection alive (hours behind a dead peer).
- ``agentlog copy`` of many sessions stopped at the first session whose
  events differ on the target: every session sorted after it was never
  copied (a nightly copy to a cold store failed at the same place every
  night), and the refusal did not say where the two differ.

Needs ``AGENTLOG_TEST_PG`` (skipped cleanly without it)."""

from __future__ import annotations

import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentlog import LeaseLost, SessionLocked, Store
from agentlog.copying import CopyRefused, copy_sessions
from cli_support import error, run
from pg_support import needs_pg, pg_url

if TYPE_CHECKING:  # psycopg is an extra: imported only for the annotation
    from agentlog.backends.postgres.lease import PostgresLease

pytestmark = needs_pg


def _open_when_free(url: str, session_id: str) -> Store:
    """A store holding ``session_id`` for writing, once the server has ended
    the frozen writer's connection (a wait for the server, not a timing
    check: the deadline only keeps a regression from hanging the suite)."""
    deadline = time.monotonic() + 120
    while True:
        store = Store(url)
        try:
            # The backend's own open: Store.open would share this process's
            # writer, where another process takes a lease of its own.
            store.backend.open(session_id, readonly=False).close()
            return store
        except SessionLocked:
            store.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _freeze_mid_commit(lease: PostgresLease) -> None:
    """What the first round trip of a commit leaves behind when the process
    stops before the second: a transaction holding the lease row's lock,
    idle. (The caller holds ``lease.lock``: a frozen process's renewer is
    frozen too.)"""
    lease.conn.execute("BEGIN")
    lease.guard(lease.conn)
    lease.conn.execute(*lease.held_query())


@pytest.mark.parametrize("mode", ["advisory", "row"])
def test_a_second_writer_is_refused_not_kept_waiting_by_a_frozen_commit(pg_schema: str, mode: str) -> None:
    url = pg_url(pg_schema, lease=mode, lease_ttl="600")  # the server will not end it during this test
    with closing(Store(url)) as store, store.create(session_id="s") as writer:
        writer.append("message", {"content": "acknowledged"}, role="user")
        lease = writer.storage._lease  # type: ignore[attr-defined]  # the one peek: freeze it mid-commit
        with lease.lock:
            _freeze_mid_commit(lease)
            # The backend's own open: Store.open would share this process's
            # writer, where another process takes a lease of its own.
            with closing(Store(url)) as other, pytest.raises(SessionLocked, match="pid"):
                other.backend.open("s", readonly=False)  # used to wait as long as the transaction stayed open
            lease.conn.execute("ROLLBACK")  # thawed
        writer.append("message", {"content": "still the writer"}, role="user")


@pytest.mark.parametrize("mode", ["advisory", "row"])
def test_a_writer_frozen_mid_commit_passes_its_session_on_after_lease_ttl(pg_schema: str, mode: str) -> None:
    url = pg_url(pg_schema, lease=mode, lease_ttl="0.5")
    with closing(Store(url)) as store:
        writer = store.create(session_id="s")
        acknowledged = writer.append("message", {"content": "acknowledged"}, role="user")
        lease = writer.storage._lease  # type: ignore[attr-defined]  # the one peek: freeze it mid-commit
        with lease.lock:
            _freeze_mid_commit(lease)
            successor = _open_when_free(url, "s")  # used to wait for as long as the server kept it open
        with pytest.raises(LeaseLost):
            writer.append("message", {"content": "after the freeze"}, role="user")
        writer.close()
        with closing(successor), successor.open("s") as session:  # this process's writer is closed now
            assert [e.id for e in session.entries()] == [acknowledged.id]
            session.append("message", {"content": "the successor's"}, role="user")


def _sessions(store: Store, *ids: str) -> None:
    for sid in ids:
        with store.create(session_id=sid) as session:
            session.append("message", {"content": f"first of {sid}"}, role="user")


def test_a_diverged_session_does_not_stop_the_copy_of_the_others(pg_schema: str, tmp_path: Path) -> None:
    files = Store(tmp_path / "files")
    _sessions(files, "a", "b", "c")
    with closing(Store(pg_url(pg_schema))) as pg:
        copy_sessions(files, pg, ["a", "b"])
        with pg.open("b") as diverged:  # written on the target too
            only_here = diverged.append("message", {"content": "only on the target"}, role="user")
        with files.open("b") as grown:
            in_source = grown.append("message", {"content": "only in the source"}, role="user")
        with files.open("a") as grown:
            grown.append("message", {"content": "more"}, role="user")
        with pytest.raises(CopyRefused) as raised:
            copy_sessions(files, pg)
        report = raised.value.report
        assert (report.created, report.extended, report.unchanged) == (["c"], ["a"], [])
        assert list(report.refused) == ["b"]
        assert only_here.id in report.refused["b"] and in_source.id in report.refused["b"]
        assert "b" in str(raised.value)
        with pg.open("b", readonly=True) as kept:
            assert kept.head == only_here.id  # never overwritten
        with pg.open("c", readonly=True) as copied:
            assert len(copied.entries()) == 1


def test_copy_names_the_events_a_longer_target_has(pg_schema: str, tmp_path: Path) -> None:
    files = Store(tmp_path / "files")
    _sessions(files, "a")
    with closing(Store(pg_url(pg_schema))) as pg:
        copy_sessions(files, pg)
        with pg.open("a") as longer:
            extra = longer.append("message", {"content": "only on the target"}, role="user")
        with pytest.raises(CopyRefused) as raised:
            copy_sessions(files, pg)
        assert f"the target has 1 event(s) the source does not (first {extra.id})" in str(raised.value)


def test_the_copy_command_copies_the_rest_and_says_each_refusal_in_one_line(pg_schema: str, tmp_path: Path) -> None:
    home = tmp_path / "files"
    files = Store(home)
    _sessions(files, "a", "b")
    target = pg_url(pg_schema)
    with closing(Store(target)) as pg:
        copy_sessions(files, pg, ["a"])
        with pg.open("a") as diverged:
            diverged.append("message", {"content": "only on the target"}, role="user")
    result = run(home, "copy", "--to", target)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stdout.startswith("sessions: 1 created, 0 extended, 0 unchanged, 1 refused;")
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentlog: error: session 'a' differs on the target: ")
    assert "Traceback" not in result.stderr
    with closing(Store(target)) as pg:
        assert pg.exists("b")


@pytest.mark.parametrize(
    ("option", "said"),
    [("lease=bogus", "lease='bogus': use one of advisory, row"), ("lease_ttl=0", "lease_ttl=0.0: give a number")],
)
def test_a_url_with_a_bad_option_is_refused_before_any_store_exists(pg_schema: str, option: str, said: str) -> None:
    # On a schema with no store yet, `ls` said "no sessions ... there is no
    # store there" and exited 0: the typo was never named.
    key, _, value = option.partition("=")
    line = error(run(pg_url(pg_schema, **{key: value}), "ls"))
    assert said in line
