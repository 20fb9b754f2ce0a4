"""Indexes written before the text of thinking parts was searched (SQLite
index version 4 and earlier, PostgreSQL before migration 0010) held the
word "[thinking]" in its place. They are brought up to date in place,
without a rebuild, so that an upgrade never leaves the reasoning of old
sessions silently unsearchable."""

from __future__ import annotations

import contextlib
import sqlite3
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlog import Store
from agentlog.backends.base import DEFAULT_BLOB_THRESHOLD
from agentlog.recordtext import readable_content, strip_terminal_codes
from agentlog.search import SearchWarning, catch_up, search
from agentlog.search import index as search_index
from agentlog.search.index import SCHEMA_VERSION, index_location
from agentlog.search.scripts import split
from pg_support import needs_pg, pg_url, sql

SIGNED = "c2lnbmF0dXJl"


def thinking(text: str) -> dict[str, str]:
    return {"type": "thinking", "thinking": text, "signature": SIGNED}


def old_text(record: dict) -> str:
    """The text version 4 indexed for a message: its content as read, with
    a thinking part as the word "[thinking]", and its reasoning field."""
    parts = [readable_content(record.get("content")), record.get("reasoning") or ""]
    return "\n".join(p for p in parts if p)


def fill(store: Store) -> dict[str, str]:
    """Replies with thinking (inline, and large enough for a blob), and a
    message that merely says the word; their ids by name."""
    big = "ledger " * (DEFAULT_BLOB_THRESHOLD // 6)
    records = {
        "inline": {"content": [thinking("weigh the zebra option first"), {"type": "text", "text": "Done."}]},
        "blob": {"content": [thinking("the quokka path"), {"type": "text", "text": big}]},
        "both": {"content": [thinking("narwhal"), {"type": "text", "text": "ok"}], "reasoning": "walrus"},
        "word": {"content": "I was thinking of lunch"},
    }
    ids = {}
    with store.create(session_id="s") as s:
        s.append("message", {"content": "plan it"}, role="user")
        for name, record in records.items():
            ids[name] = s.append("message", record, role="user" if name == "word" else "assistant").id
    ids["records"] = records  # type: ignore[assignment]
    return ids


def found(store: Store, word: str) -> list[str]:
    return [hit.event_id for hit in search(store, word, refresh=False)]


def make_old(path: str, ids: dict, version: str) -> None:
    """Rewrite the index as a build of ``version`` left it."""
    conn = sqlite3.connect(path)
    with conn:
        for name, record in ids["records"].items():
            conn.execute(
                "UPDATE fts SET text = ? WHERE rowid = (SELECT rowid FROM events WHERE event_id = ?)",
                (split(strip_terminal_codes(old_text(record))), ids[name]),
            )
        conn.execute("UPDATE info SET value = ? WHERE key = 'schema'", (version,))
    conn.close()


def filled_as_version_4(store: Store) -> tuple[dict, str]:
    """``fill`` the store, index it, and leave the index as version 4
    wrote it: (the ids, the index's path)."""
    ids = fill(store)
    catch_up(store)
    path = index_location(store.home)
    assert path is not None
    make_old(path, ids, "4")
    return ids, path


@contextlib.contextmanager
def search_warnings() -> Iterator[list[str]]:
    """The text of each SearchWarning given inside the block."""
    said: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield said
    said += [str(w.message) for w in caught if issubclass(w.category, SearchWarning)]


@pytest.mark.parametrize("version", ["4", "3", "2"])
@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_an_older_index_gets_the_text_of_thinking_in_place(tmp_path: Path, kind: str, version: str) -> None:
    store = Store(tmp_path / "home") if kind == "files" else Store(f"sqlite:///{tmp_path}/store.db")
    ids = fill(store)
    catch_up(store)
    path = index_location(store.home)
    assert path is not None
    assert found(store, "zebra") == [ids["inline"]]  # indexed as a new build indexes it
    fresh = sqlite3.connect(path).execute("SELECT rowid, text FROM fts ORDER BY rowid").fetchall()
    make_old(path, ids, version)

    stats = catch_up(store)
    assert (stats.sessions_indexed, stats.events_added) == (0, 0)  # upgraded, not rebuilt
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM info WHERE key = 'schema'").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("SELECT rowid, text FROM fts ORDER BY rowid").fetchall() == fresh
    conn.close()
    assert found(store, "zebra") == [ids["inline"]]
    assert found(store, "quokka") == [ids["blob"]]
    assert found(store, "narwhal") == found(store, "walrus") == [ids["both"]]
    assert found(store, "lunch") == [ids["word"]]
    store.close()


def test_a_session_that_cannot_be_read_keeps_its_old_text_and_says_so(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    ids, path = filled_as_version_4(store)
    chunk = next((tmp_path / "home" / "sessions" / "s" / "chunks").iterdir())
    data = chunk.read_bytes()
    at = data.index(b"zebra")
    chunk.write_bytes(data[:at] + b"zebrA" + data[at + 5 :])  # the line's checksum no longer holds

    with search_warnings() as said:
        catch_up(store)
    assert any("could not read session s to index the text of its thinking" in m and "fsck s" in m for m in said)
    assert found(store, "zebra") == []  # not found, as before the upgrade; and said
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM info WHERE key = 'schema'").fetchone() == (SCHEMA_VERSION,)
    conn.close()


@needs_pg
def test_the_postgresql_migration_gives_old_records_the_text_of_thinking(pg_schema: str) -> None:
    store = Store(pg_url(pg_schema))
    ids = fill(store)
    fresh = sql(f"SELECT id::text, search_text FROM {pg_schema}.events ORDER BY id")
    fresh_blobs = sql(f"SELECT digest, search_text FROM {pg_schema}.blobs ORDER BY digest")
    assert [hit.event_id for hit in store.search("zebra")] == [ids["inline"]]
    # What a build before 0010 stored, and 0010 not yet applied (nor 0011,
    # which keeps the blob's text, a word used past 255 times, in parts).
    sql(f"DELETE FROM {pg_schema}.blob_parts")
    for name, record in ids["records"].items():
        if name == "blob":  # the event row holds no text: its blob does
            sql(f"UPDATE {pg_schema}.blobs SET search_text = %s", old_text(record))
        else:
            sql(f"UPDATE {pg_schema}.events SET search_text = %s WHERE id = %s", old_text(record), ids[name])
    assert store.search("zebra") == [] and store.search("quokka") == []
    store.close()
    sql(f"DROP TABLE {pg_schema}.event_parts, {pg_schema}.blob_parts")
    sql(f"DELETE FROM {pg_schema}.schema_migrations WHERE name IN ('0010_thinking_text', '0011_long_texts_in_parts')")

    store = Store(pg_url(pg_schema))  # opening migrates
    assert sql(f"SELECT id::text, search_text FROM {pg_schema}.events ORDER BY id") == fresh
    assert sql(f"SELECT digest, search_text FROM {pg_schema}.blobs ORDER BY digest") == fresh_blobs
    assert [hit.event_id for hit in store.search("zebra")] == [ids["inline"]]
    assert [hit.event_id for hit in store.search("quokka")] == [ids["blob"]]
    assert [hit.event_id for hit in store.search("lunch")] == [ids["word"]]
    store.close()


def test_a_lost_blob_keeps_its_old_text_and_the_rest_are_upgraded(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    ids, _ = filled_as_version_4(store)
    for blob in (tmp_path / "home" / "sessions" / "s" / "blobs").rglob("*"):
        if blob.is_file():
            blob.unlink()

    with search_warnings() as said:
        catch_up(store)
    assert any(f"could not read event {ids['blob']} of session s to index the text of its thinking" in m for m in said)
    assert found(store, "zebra") == [ids["inline"]]  # the others have their text
    assert found(store, "quokka") == []


def test_an_older_index_that_cannot_be_written_is_searched_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not rebuilt in memory on every search of a read-only copy: searched
    as it is, with a warning that says it lacks some text."""
    store = Store(tmp_path / "home")
    ids, _ = filled_as_version_4(store)

    def refused(where: str) -> None:
        raise PermissionError(13, "Permission denied", where)

    monkeypatch.setattr(search_index, "_connect", refused)
    with search_warnings() as said:
        assert found(store, "lunch") == [ids["word"]]
        assert found(store, "zebra") == []  # the text version 4 lacks
    assert said and all("searching it as it is" in m and "earlier version (4)" in m for m in said)


@needs_pg
def test_a_record_the_postgresql_migration_cannot_parse_keeps_its_text_and_the_store_opens(pg_schema: str) -> None:
    store = Store(pg_url(pg_schema))
    ids = fill(store)
    [(digest,)] = sql(f"SELECT digest FROM {pg_schema}.blobs")
    sql(f"UPDATE {pg_schema}.blobs SET data = %s, search_text = %s", b"\xff not json", "[thinking]\nold")
    sql(
        f"UPDATE {pg_schema}.events SET search_text = %s WHERE id = %s",
        old_text(ids["records"]["inline"]),
        ids["inline"],
    )
    sql(f"DELETE FROM {pg_schema}.schema_migrations WHERE name = '0010_thinking_text'")
    store.close()

    with search_warnings() as said:
        store = Store(pg_url(pg_schema))  # opening migrates; the bad blob does not stop it
    assert any(f"left the search text of blob {digest} as it was" in m for m in said), said
    assert sql(f"SELECT search_text FROM {pg_schema}.blobs") == [("[thinking]\nold",)]
    assert [hit.event_id for hit in store.search("zebra")] == [ids["inline"]]
    store.close()
