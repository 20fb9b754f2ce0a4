"""Search finds the words of a tool's coloured output: a terminal's escape
codes (``ESC[31m``) are not part of the text that is indexed, on every
backend, and indexes written before are brought up to date in place."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.recordtext import TERMINAL_CODES, strip_terminal_codes
from agentlog.search import catch_up, search
from agentlog.search.index import SCHEMA_VERSION, index_location
from pg_support import needs_pg, pg_url, sql

PYTEST_OUTPUT = (
    "\x1b[1m\x1b[31mFAILED\x1b[0m tests/x.py::test_add - AssertionError\n"
    "\x1b[32m1 passed\x1b[0m, \x1b]8;;https://example.com\x1b\\docs\x1b]8;;\x1b\\ \x1b]0;title\x07ok"
)


def test_the_migration_keeps_the_pattern_it_was_released_with() -> None:
    pytest.importorskip("psycopg")  # the postgres extra
    from agentlog.backends.postgres.schema import _TERMINAL_CODES_0009, MIGRATIONS

    assert _TERMINAL_CODES_0009 == TERMINAL_CODES
    assert "0009_text_without_terminal_codes" in [name for name, _ in MIGRATIONS]


def test_escape_codes_are_taken_out_and_nothing_else() -> None:
    assert strip_terminal_codes(PYTEST_OUTPUT) == ("FAILED tests/x.py::test_add - AssertionError\n1 passed, docs ok")
    plain = "no codes here: [31m is text, and so is ESC alone \x1b"
    assert strip_terminal_codes(plain) == plain


def test_search_finds_the_words_of_coloured_output_on_every_backend(store: Store) -> None:
    with store.create(session_id="c") as s:
        hit = s.append("tool_result", {"tool_call_id": "c1", "content": PYTEST_OUTPUT}, role="tool").id
    for word in ("FAILED", "passed", "docs", "ok"):
        assert [h.event_id for h in store.search(word)] == [hit], word
    [found] = store.search("FAILED")
    assert "\x1b" not in found.snippet and found.snippet.startswith("FAILED tests/x.py")


def test_an_index_of_version_3_is_upgraded_in_place(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        coloured = s.append("tool_result", {"tool_call_id": "c", "content": PYTEST_OUTPUT}, role="tool").id
        s.append("message", {"content": "数据库连接失败"}, role="user")
    catch_up(store)
    path = index_location(store.home)
    assert path is not None
    conn = sqlite3.connect(path)
    with conn:  # what version 3 wrote: the codes glued to the words
        conn.execute(
            "UPDATE fts SET text = ? WHERE rowid = (SELECT rowid FROM events WHERE event_id = ?)",
            (PYTEST_OUTPUT, coloured),
        )
        conn.execute("UPDATE info SET value = '3' WHERE key = 'schema'")
    assert conn.execute("SELECT count(*) FROM fts WHERE fts MATCH 'FAILED'").fetchone()[0] == 0
    conn.close()

    stats = catch_up(store)
    assert (stats.sessions_indexed, stats.events_added) == (0, 0)  # upgraded, not rebuilt
    assert [h.event_id for h in search(store, "FAILED", refresh=False)] == [coloured]
    assert len(search(store, "连接", refresh=False)) == 1  # what 3 split stays split
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM info WHERE key = 'schema'").fetchone() == (SCHEMA_VERSION,)
    conn.close()


_PIECES = st.sampled_from(
    ["\x1b", "[", "]", "31", ";", "m", "?", "25h", "\x07", "\\", "0", "M", "word", " ", "é", "连", "~", "@", "/"]
)


@needs_pg
@settings(max_examples=60, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_postgresql_takes_the_codes_out_as_python_does(text: str) -> None:
    [(stripped,)] = sql(f"SELECT regexp_replace(%s, '{TERMINAL_CODES}', '', 'g')", text)
    assert stripped == re.sub(TERMINAL_CODES, "", text)


@needs_pg
def test_the_postgresql_migration_strips_the_codes_already_stored(pg_schema: str) -> None:
    store = Store(pg_url(pg_schema))
    with store.create(session_id="c") as s:
        hit = s.append("tool_result", {"tool_call_id": "c1", "content": "plain"}, role="tool").id
    # What a build before 0009 stored, and 0009 not yet applied.
    sql(f"UPDATE {pg_schema}.events SET search_text = %s WHERE id = %s", PYTEST_OUTPUT, hit)
    sql(f"DELETE FROM {pg_schema}.schema_migrations WHERE name = '0009_text_without_terminal_codes'")
    assert store.search("FAILED") == []
    store.close()
    store = Store(pg_url(pg_schema))  # opening migrates
    assert [h.event_id for h in store.search("FAILED")] == [hit]
    store.close()


PROGRESS = "Compiling crate 1/2\x1b[2K\x1b[1GCompiling crate 2/2\x1b[K\x1b[1Afinished\x1b[?25h"


def test_a_code_that_moves_the_cursor_reads_as_a_space() -> None:
    # Taken out whole, it glued the line before to the line after: "2Compiling".
    assert strip_terminal_codes(PROGRESS) == "Compiling crate 1/2  Compiling crate 2/2  finished"


def test_search_finds_the_words_on_either_side_of_a_cursor_move(store: Store) -> None:
    with store.create(session_id="p") as s:
        hit = s.append("tool_result", {"tool_call_id": "c1", "content": PROGRESS}, role="tool").id
    assert [h.event_id for h in store.search('"2 compiling"')] == [hit]
    assert [h.event_id for h in store.search("finished")] == [hit]
    assert store.search("2Compiling") == store.search("2finished") == []
