"""What only PostgreSQL shows: migrations, the lease across processes, a
killed connection mid-commit, LISTEN/NOTIFY, and copying between stores.

The backend-independent suite runs on PostgreSQL through conftest.BACKENDS;
this module needs AGENTLOG_TEST_PG too and is skipped (with that reason)
without it. Each test works in its own fresh schema.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from agentlog import HeadConflict, LeaseLost, StorageError, Store
from agentlog.copying import CopyDiverged, copy_sessions
from conftest import PG_DSN

pytestmark = pytest.mark.skipif(not PG_DSN, reason="AGENTLOG_TEST_PG is not set: no PostgreSQL to test against")

if PG_DSN:
    import psycopg

    from agentlog.backends.postgres.schema import MIGRATIONS, apply_step, migrate, pending


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE %s",
            (f"agentlog:{name}%",),
        )
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def url(schema: str, **params: str) -> str:
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    return f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}schema={schema}{extra}"


def sql(statement: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else []


# --- migrations --------------------------------------------------------------------
def test_migrations_apply_from_an_empty_database_in_order(schema):
    Store(url(schema)).close()
    rows = sql(f'SELECT name FROM "{schema}".schema_migrations ORDER BY name')
    assert [r[0] for r in rows] == [name for name, _ in MIGRATIONS]


@pytest.mark.parametrize("done", range(1, len(MIGRATIONS)) if PG_DSN else [1])
def test_migrations_apply_from_every_earlier_version(schema, done):
    """A database left at an earlier version (only the first ``done``
    migrations) is brought up to date on first use, and keeps its data."""
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute("CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz DEFAULT now())")
        for name, statements in MIGRATIONS[:done]:
            for step in statements:
                apply_step(conn, step)
            conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
        assert pending(conn) == [name for name, _ in MIGRATIONS[done:]]
    store = Store(url(schema))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "after the upgrade"}, role="user")
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        assert pending(conn) == []
    store.close()


def test_concurrent_first_uses_apply_each_migration_once(schema):
    applied: list[list[str]] = []

    def first_use() -> None:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            applied.append(migrate(conn, schema))

    threads = [threading.Thread(target=first_use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(name for names in applied for name in names) == sorted(name for name, _ in MIGRATIONS)


# --- the lease ---------------------------------------------------------------------
WRITER = textwrap.dedent("""
    import sys, time
    from agentlog import Store, SessionLocked
    store = Store(sys.argv[1])
    if sys.argv[3] == "wait":  # a barrier: "ready", then wait for "go"
        print("ready", flush=True)
        sys.stdin.readline()
    try:
        s = store.open(sys.argv[2])
    except SessionLocked as exc:
        print("locked", exc.holder, flush=True)
        sys.exit(0)
    s.append("custom", {"writer": sys.argv[4]})
    print("won", flush=True)
    if sys.argv[3] == "wait":
        sys.stdin.readline()  # hold the lease until told
    s.close()
""")


@pytest.mark.parametrize("mode", ["advisory", "row"])
def test_two_writer_processes_exactly_one_wins_every_round(schema, mode):
    store_url = url(schema, lease=mode)
    store = Store(store_url)
    store.create(session_id="race").close()
    rounds = int(os.environ.get("AGENTLOG_PG_RACE_ROUNDS", "6"))
    for r in range(rounds):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, store_url, "race", "wait", f"{r}-{i}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        for p in procs:  # both race for the lease at once
            p.stdin.write("go\n")
            p.stdin.flush()
        firsts = [p.stdout.readline().split() for p in procs]  # won, or locked naming the holder
        outs = [firsts[i] + p.communicate("done\n", timeout=60)[0].split() for i, p in enumerate(procs)]
        assert sorted(o[0] for o in outs) == ["locked", "won"], outs
        loser = outs[0] if outs[0][0] == "locked" else outs[1]
        assert "pid" in loser  # the holder is named
    with store.open("race", readonly=True) as s:
        writers = [e.record["writer"] for e in s.path()]
    assert len(writers) == rounds  # one record per round: the loser never wrote
    store.close()


def test_adk_style_interleaving_cannot_happen(schema):
    """Two service instances appending to one session (google/adk-python
    #4751 interleaves their events in one history): here the second is
    refused before it writes anything."""
    store_url = url(schema)
    store = Store(store_url)
    with store.create(session_id="shared") as first:
        first.append("message", {"content": "instance one"}, role="user")
        proc = subprocess.run(
            [sys.executable, "-c", WRITER, store_url, "shared", "now", "two"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.stdout.startswith("locked"), proc.stderr
        first.append("message", {"content": "instance one again"}, role="assistant")
        assert [e.record["content"] for e in first.path()] == ["instance one", "instance one again"]
    store.close()


def test_a_killed_connection_loses_the_lease_and_the_next_writer_takes_over(schema):
    store = Store(url(schema))
    writer = store.create(session_id="s")
    kept = writer.append("message", {"content": "acknowledged"}, role="user")
    sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        f"agentlog:{schema}:writer:s",
    )
    with pytest.raises(LeaseLost):
        writer.append("message", {"content": "after the kill"}, role="user")
    with pytest.raises(LeaseLost):  # it stays lost: no silent reconnect
        writer.append("message", {"content": "again"}, role="user")
    writer.close()
    other = Store(url(schema))
    with other.open("s") as s:
        assert [e.id for e in s.path()] == [kept.id]
        s.append("message", {"content": "the next writer"}, role="user")
    store.close()
    other.close()


def test_row_lease_expires_and_the_old_writer_cannot_commit(schema):
    """Behind a transaction pooler only the row lease holds: a writer cut off
    from the server (its connection ended) stops renewing, its lease lapses
    after the TTL, a successor takes it, and the old writer commits nothing."""
    store_url = url(schema, lease="row", lease_ttl="1")
    store = Store(store_url)
    writer = store.create(session_id="s")
    writer.append("custom", {"n": 1})
    refused = subprocess.run(
        [sys.executable, "-c", WRITER, store_url, "s", "now", "too-early"], capture_output=True, text=True, timeout=60
    )
    assert refused.stdout.startswith("locked"), refused.stderr  # a live row lease holds
    sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        f"agentlog:{schema}:writer:s",
    )
    time.sleep(1.5)  # the TTL passes with no renewal
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, store_url, "s", "now", "successor"], capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.startswith("won"), proc.stderr
    with pytest.raises(LeaseLost):
        writer.append("custom", {"n": 2})
    writer.close()
    with store.open("s", readonly=True) as s:
        assert [e.record for e in s.path()] == [{"n": 1}, {"writer": "successor"}]
    store.close()


# --- a connection terminated in the middle of a commit ------------------------------
def test_terminating_the_writer_mid_commit_keeps_batches_whole(schema):
    """The server ends the writer's connection at many points of a slow
    commit (a trigger makes each row take a few ms). Every time: a typed
    error or success; acknowledged events kept; the batch all or nothing;
    the session reopens and the next append works."""
    store_url = url(schema)
    store = Store(store_url)
    store.create(session_id="s").close()
    sql(f"""CREATE FUNCTION "{schema}".slow() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN PERFORM pg_sleep(0.004); RETURN NEW; END $$""")
    sql(f'CREATE TRIGGER slow BEFORE INSERT ON "{schema}".events FOR EACH ROW EXECUTE FUNCTION "{schema}".slow()')
    rng = random.Random(4751)
    acknowledged: list[str] = []
    outcomes = {"ok": 0, "killed": 0}
    rounds = int(os.environ.get("AGENTLOG_PG_KILL_ROUNDS", "12"))
    for r in range(rounds):
        session = Store(store_url).open("s")
        delay = rng.uniform(0.0, 0.05)
        killer = threading.Timer(
            delay,
            sql,
            args=(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                f"agentlog:{schema}:writer:s",
            ),
        )
        killer.start()
        try:
            batch = session.append_many([("custom", {"round": r, "i": i}) for i in range(8)])
            acknowledged += [e.id for e in batch]
            outcomes["ok"] += 1
        except (LeaseLost, StorageError, HeadConflict):
            outcomes["killed"] += 1
        finally:
            killer.join()
            session.close()
        with Store(store_url).open("s", readonly=True) as reader:
            records = [e.record for e in reader.path()]
            ids = {e.id for e in reader.entries()}
        assert set(acknowledged) <= ids  # nothing acknowledged is lost
        counts: dict[int, int] = {}
        for rec in records:
            counts[rec["round"]] = counts.get(rec["round"], 0) + 1
        assert set(counts.values()) <= {8}  # every batch whole or absent
    assert outcomes["killed"] > 0, outcomes  # the kills did land mid-commit
    with Store(store_url).open("s") as s:
        s.append("custom", {"after": "all the kills"})
    store.close()


# --- LISTEN / NOTIFY ---------------------------------------------------------------
def test_a_reader_is_told_of_each_commit_without_polling(schema):
    store = Store(url(schema))
    writer = store.create(session_id="live")
    reader = Store(url(schema)).open("live", readonly=True)
    seen: list[float] = []

    def follow() -> None:
        for _ in range(3):
            if reader.wait_for_commit(timeout=10):
                seen.append(time.monotonic())

    listener = threading.Thread(target=follow)
    listener.start()
    time.sleep(0.3)  # the reader is listening
    sent = []
    for i in range(3):
        sent.append(time.monotonic())
        writer.append("custom", {"i": i})
        time.sleep(0.2)
    listener.join(30)
    assert len(seen) == 3
    assert len(reader) == 3
    assert not reader.wait_for_commit(timeout=0.2)  # nothing more: it waits, it does not invent
    writer.close()
    reader.close()
    store.close()


# --- copying between stores -----------------------------------------------------------
def test_copy_files_to_postgres_and_back_is_exact_and_idempotent(schema, tmp_path):
    files = Store(tmp_path / "home", blob_threshold=256)
    with files.create(session_id="a", name="copied", working_dir=str(tmp_path)) as s:
        first = s.append("message", {"content": "hello"}, role="user")
        s.append("tool_result", {"content": "x" * 5000}, role="tool")
        s.select(first.id)
        s.append("message", {"content": "a branch"}, role="assistant")
        s.set_draft("unsent")
    pg = Store(url(schema))
    report = copy_sessions(files, pg)
    assert report.created == ["a"] and report.events == 3
    assert copy_sessions(files, pg).unchanged == ["a"]  # idempotent
    back = Store(tmp_path / "back")
    copy_sessions(pg, back)
    for store in (pg, back):
        with store.open("a", readonly=True) as c, files.open("a", readonly=True) as o:
            assert [(e.id, e.parent_id, e.branch_from, e.timestamp) for e in c.entries()] == [
                (e.id, e.parent_id, e.branch_from, e.timestamp) for e in o.entries()
            ]
            assert c.head == o.head and c.meta == o.meta
            assert c.draft() == o.draft() == "unsent"
            assert [c.resolve(e).record for e in c.path()] == [o.resolve(e).record for e in o.path()]
    with files.open("a") as s:
        s.append("message", {"content": "later"}, role="user")
    assert copy_sessions(files, pg).extended == ["a"]
    with pg.open("a") as s:
        s.append("message", {"content": "only on postgres"}, role="user")
    with files.open("a") as s:
        s.append("message", {"content": "only on files"}, role="user")
    with pytest.raises(CopyDiverged):
        copy_sessions(files, pg)
    pg.close()


# --- search through PostgreSQL's own index ---------------------------------------------
def test_search_uses_postgres_full_text_index_across_branches_compactions_and_blobs(schema):
    store = Store(url(schema), blob_threshold=256)
    with store.create(session_id="s", working_dir="/work/project") as s:
        first = s.append("message", {"content": "the flamingo migration plan"}, role="user")
        s.append("tool_result", {"content": "zebra " + "log line " * 100}, role="tool")  # a blob
        s.append("message", {"content": "abandoned idea about pelicans"}, role="assistant")
        s.select(first.id)
        s.append("message", {"content": "the kept branch"}, role="assistant")
        s.compact(keep_tokens=1)
    hits = store.search("flamingo")
    assert [h.event_id for h in hits] == [first.id]
    assert hits[0].snippet[hits[0].highlights[0][0] : hits[0].highlights[0][1]] == "flamingo"
    assert "content" not in hits[0].snippet  # record text, not its JSON
    assert [h.kind for h in store.search("pelicans")] == ["message"]  # an abandoned branch
    assert [h.kind for h in store.search("zebra")] == ["tool_result"]  # inside a blob
    assert store.search("flamin*")[0].event_id == first.id
    assert store.search("flamingo", kind="tool_result") == []
    assert store.search("flamingo", cwd="/work") and not store.search("flamingo", cwd="/elsewhere")
    store.close()
