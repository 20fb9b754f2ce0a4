"""Damaged rows in the SQL stores (a hand edit, a bad restore): each is
reported with its session and event, by the commands that meet it and by
fsck, and never takes the rest of the store down with it."""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentlog import CorruptionError, SearchWarning, Store
from pg_support import needs_pg, pg_url, sql

Edit = Callable[[str, tuple[object, ...]], None]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_pg)])
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Edit]]:
    """A store with two sessions, and how to run raw SQL on its tables."""
    if request.param == "sqlite":
        path = tmp_path / "store.db"
        store = Store(f"sqlite:///{path}")

        def edit(statement: str, args: tuple[object, ...]) -> None:
            with sqlite3.connect(path) as db:
                db.execute(statement.replace("%s", "?"), args)

    else:
        schema = request.getfixturevalue("pg_schema")
        store = Store(pg_url(schema))

        def edit(statement: str, args: tuple[object, ...]) -> None:
            sql(statement.replace("UPDATE ", f"UPDATE {schema}.", 1), *args)

    for sid in ("hurt", "fine"):
        with store.create(session_id=sid, name=sid) as s:
            s.append("message", {"content": f"{sid} quokka one"}, role="user")
            s.append("message", {"content": f"{sid} quokka two"}, role="assistant")
    yield store, edit
    store.close()


def _problems(store: Store) -> list[str]:
    return [p.message for p in store.fsck() if p.session_id == "hurt"]


def test_metadata_that_is_not_an_object_breaks_only_its_session(damaged: tuple[Store, Edit]) -> None:
    store, edit = damaged
    postgres = "postgresql" in store.url
    # PostgreSQL's json column takes JSON only: there, JSON that is no object.
    for bad in ("[1]", '"x"') if postgres else ("garbage", "[1]"):
        column = "meta_text" if postgres else "meta"
        edit(f"UPDATE sessions SET {column} = %s WHERE id = %s", (bad, "hurt"))
        rows, broken = store.scan()
        assert [r.id for r in rows] == ["fine"] and [b.id for b in broken] == ["hurt"]
        with pytest.raises(CorruptionError, match="metadata of session hurt"):
            store.meta("hurt")
        assert any("metadata of session hurt" in m for m in _problems(store))


def test_a_record_that_is_not_json_names_its_event_and_search_goes_on(damaged: tuple[Store, Edit]) -> None:
    store, edit = damaged
    if "postgresql" in store.url:
        pytest.skip("PostgreSQL's record column takes JSON only: no such row can be stored")
    with store.open("hurt", readonly=True) as s:
        victim = s.entries()[0].id
    edit("UPDATE events SET record = %s WHERE id = %s", ("{not json", victim))
    with store.open("hurt", readonly=True) as s, pytest.raises(CorruptionError, match=f"event {victim}"):
        s.transcript()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        hits = store.search("quokka")
    assert {h.session_id for h in hits} == {"fine"}
    assert any(isinstance(w.message, SearchWarning) and "hurt" in str(w.message) for w in seen)
    assert any(victim in m and "not JSON" in m for m in _problems(store))


def test_fsck_reads_every_row_a_sql_store_keeps(damaged: tuple[Store, Edit]) -> None:
    store, edit = damaged
    with store.open("hurt", readonly=True) as s:
        first, second = (e.id for e in s.entries())
    edit("UPDATE events SET parent_id = %s WHERE id = %s", (second, first))  # a loop: first <-> second
    edit("UPDATE events SET kind = %s, role = %s WHERE id = %s", ("Bad Kind!", "x y", second))
    time_column = "ts" if "postgresql" in store.url else "timestamp"
    edit(f"UPDATE events SET {time_column} = %s WHERE id = %s", ("yesterday", second))
    edit("UPDATE sessions SET event_count = %s WHERE id = %s", (5, "hurt"))
    found = "\n".join(_problems(store))
    for expected in ("parent links loop", "malformed kind", "malformed role", "malformed time", "event count says 5"):
        assert expected in found, (expected, found)
    assert [p for p in store.fsck() if p.session_id == "fine"] == []


def test_a_newest_id_that_is_no_event_id_is_refused_on_open(damaged: tuple[Store, Edit]) -> None:
    store, edit = damaged
    if "postgresql" in store.url:
        pytest.skip("PostgreSQL keeps ids in uuid columns: a malformed one cannot be stored")
    edit("UPDATE sessions SET last_id = %s WHERE id = %s", ("zzz", "hurt"))
    with pytest.raises(CorruptionError, match="newest event id 'zzz' is not an event id"):
        store.open("hurt")
    assert any("newest event id is kept as 'zzz'" in m for m in _problems(store))
    with store.open("fine") as s:
        s.append("message", {"content": "still writable"}, role="user")


def test_an_export_of_a_broken_active_path_is_refused_not_written_short(damaged: tuple[Store, Edit]) -> None:
    import io

    from agentlog.export import export_session

    store, edit = damaged
    with store.open("hurt", readonly=True) as s:
        second = s.entries()[1].id
    missing = "01a23d3f-0000-7000-8000-000000000000"
    edit("UPDATE events SET parent_id = %s WHERE id = %s", (missing, second))
    with store.open("hurt", readonly=True) as s:
        for fmt in ("md", "html"):
            with pytest.raises(CorruptionError, match=f"active path is broken: it names a missing event, {missing}"):
                export_session(s, fmt, io.BytesIO())


def test_a_sqlite_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    from agentlog import UnknownBackend

    path = tmp_path / "store.db"
    Store(f"sqlite:///{path}").create(session_id="s").close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE schema_version SET version = 999")
    with pytest.raises(UnknownBackend, match="schema version is 999"):
        Store(f"sqlite:///{path}")
