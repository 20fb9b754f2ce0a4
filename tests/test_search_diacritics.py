"""PostgreSQL folds the diacritics the SQLite index folds, and only those:
the table it applies (``agentlog.search.diacritics``) is read off FTS5
again here, and an older schema is brought to it when opened."""

from __future__ import annotations

import importlib
import sqlite3
import unicodedata

import pytest

from agentlog import Store
from agentlog.search import search
from agentlog.search.diacritics import (
    ACCENTED,
    BASES,
    DROPPED_MARKS,
    SEPARATING_MARK_RANGES,
    index_words,
    strip_diacritics,
)
from conftest import PG_DSN
from pg_support import needs_pg, pg_url, sql


def _fts5_terms(texts: list[str]) -> list[list[str]]:
    """The terms FTS5 (as the SQLite index configures it) makes of each text."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(texts))
    terms: list[list[str]] = [[] for _ in texts]
    for term, doc in conn.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        terms[doc].append(term)
    conn.close()
    return terms


def test_the_table_is_what_fts5_folds() -> None:
    chars = [chr(cp) for cp in range(0xA0, 0x30000) if not 0xD800 <= cp < 0xE000]
    marks = [ch for ch in chars if unicodedata.combining(ch)]
    letters = [ch for ch in chars if not unicodedata.combining(ch)]
    dropped = [m for m, terms in zip(marks, _fts5_terms([f"za{m}z" for m in marks]), strict=True) if terms == ["zaz"]]
    folded = {}
    for ch, terms in zip(letters, _fts5_terms([f"z{ch}z" for ch in letters]), strict=True):
        # Folded to a Latin letter: a diacritic gone. (Its other differences
        # from Python's lower() are case folds, µ to μ or ς to σ.)
        if len(terms) == 1 and len(terms[0]) == 3 and terms[0][1] != ch.lower() and terms[0][1].isascii():
            folded[ch] = terms[0][1]
    assert dict(zip(ACCENTED, BASES, strict=True)) == folded
    assert DROPPED_MARKS == "".join(dropped)


def test_the_marks_that_end_a_word_are_those_fts5_ends_one_at() -> None:
    marks = [
        chr(cp)
        for cp in range(0xA0, 0x30000)
        if not 0xD800 <= cp < 0xE000 and unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me")
    ]
    ending = {
        m for m, terms in zip(marks, _fts5_terms([f"za{m}z" for m in marks]), strict=True) if terms == ["za", "z"]
    }
    table = {chr(cp) for lo, hi in SEPARATING_MARK_RANGES for cp in range(lo, hi + 1)}
    assert {m for m in marks if m in table} == ending
    assert all(unicodedata.category(ch) == "Cn" for ch in table - ending)  # only unassigned code points between


def test_a_text_is_given_the_words_fts5_reads_in_it() -> None:
    assert index_words("plain ASCII, always itself") is None
    assert index_words("数据库 and Ωμέγα: nothing to change") is None
    assert index_words("the Café") == "the Cafe"
    assert index_words("हिन्दी") == "ह न द "


def test_a_word_loses_the_diacritics_fts5_drops_and_keeps_the_rest() -> None:
    assert strip_diacritics("Café") == "Cafe"  # the server lowercases
    assert strip_diacritics("re\u0301sume\u0301") == "resume"
    assert strip_diacritics("Ωμέγα") == "Ωμέγα"
    assert strip_diacritics("Straße") == "Straße"


@needs_pg
def test_an_older_schema_reads_them_so_once_opened(pg_schema: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    store = Store(pg_url(pg_schema))
    with store.create(session_id="s") as s:
        cafe = s.append("message", {"content": "the Café reopened"}, role="user")
        hindi = s.append("message", {"content": "हिन्दी भाषा"}, role="user")
        plain = s.append("message", {"content": "plain words"}, role="user")
    store.close()
    assert sql(f"SELECT id::text FROM {pg_schema}.events WHERE search_words IS NOT NULL ORDER BY id") == [
        (cafe.id,),
        (hindi.id,),
    ]
    # As a build before 0012 left it: no words column, the text indexed as stored.
    schema = importlib.import_module("agentlog.backends.postgres.schema")
    tables = ("events", "blobs", "event_parts", "blob_parts")
    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute(f"SET search_path TO {pg_schema}")
        for statement in schema._search_columns(schema._SEARCH_WORDS, tables):
            conn.execute(statement)
        for table in tables:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN search_words")
    sql(f"DELETE FROM {pg_schema}.schema_migrations WHERE name = '0012_words_as_sqlite_reads_them'")
    matches = f"SELECT search @@ to_tsquery('simple', %s) FROM {pg_schema}.events WHERE id = %s"
    assert sql(matches, "cafe", cafe.id) == sql(matches, "ह <-> न", hindi.id) == [(False,)]

    store = Store(pg_url(pg_schema))  # opening migrates
    assert sql(matches, "cafe", cafe.id) == sql(matches, "ह <-> न", hindi.id) == [(True,)]
    assert [hit.event_id for hit in search(store, "cafe")] == [cafe.id]
    assert [hit.event_id for hit in search(store, "हिन्दी")] == [hindi.id]
    assert sql(f"SELECT search_words FROM {pg_schema}.events WHERE id = %s", plain.id) == [(None,)]
    store.close()
