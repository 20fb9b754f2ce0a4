"""Search reads texts and queries composed (Unicode NFC; search/composed.py),
on every backend: a Korean file name as macOS writes it (each syllable as
its letters) is found by the word as a person types it, and a query typed
with a decomposed accent finds the word. An index of version 7 and a
PostgreSQL schema before migration 0014 are brought to it in place."""

from __future__ import annotations

import importlib
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.recordtext import strip_terminal_codes
from agentlog.search import search
from agentlog.search import upgrade as upgrade_module
from agentlog.search.composed import composed, uncomposed_ranges
from agentlog.search.query import highlight_words, parse_query, to_match
from agentlog.search.scripts import split
from conftest import PG_DSN
from index_support import as_older_index, assert_upgraded_in_place, matches
from pg_support import needs_pg, pg_url, sql


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


KOREAN = "보고서 한글.txt 파일을 열었습니다"  # "opened the file 보고서 한글.txt"
LATIN = "résumé.pdf is in Téléchargements"


def _shown(snippet: str, spans: tuple[tuple[int, int], ...]) -> list[str]:
    return [snippet[a:b] for a, b in spans]


def test_composed_is_the_text_itself_where_it_is_composed() -> None:
    text = "한글 and café"
    assert composed(text) is text
    assert composed(nfd(text)) == text
    assert nfd("한") == "\u1112\u1161\u11ab"  # three letters, as macOS names a file
    assert split(nfd(KOREAN)) == split(KOREAN)
    assert parse_query(nfd("한글 résumé")) == parse_query("한글 résumé")
    assert highlight_words(nfd("résumé")) == [("résumé", False)]


def test_a_decomposed_text_is_found_by_the_word_as_typed_on_every_backend(store: Store) -> None:
    with store.create(session_id="s") as s:
        korean = s.append("tool_result", {"tool_call_id": "c1", "content": nfd(KOREAN)}, role="tool").id
        latin = s.append("message", {"content": LATIN}, role="user").id
        s.append("message", {"content": "nothing of either here"}, role="user")
    assert [h.event_id for h in search(store, "한글")] == [korean]
    assert [h.event_id for h in search(store, "보고서 한글")] == [korean]
    assert [h.event_id for h in search(store, '"한글.txt"')] == [korean]
    (hit,) = search(store, "한글")
    assert _shown(hit.snippet, hit.highlights) == ["한글"]  # shown composed
    # a query typed decomposed finds the composed text (and the word without accents does too)
    for query in (nfd("résumé"), "resume", "résumé", nfd("Téléchargements")):
        assert [h.event_id for h in search(store, query)] == [latin], query
    (hit,) = search(store, nfd("résumé"))
    assert _shown(hit.snippet, hit.highlights) == ["résumé"]
    store.close()


def test_uncomposed_ranges_hold_every_character_a_decomposed_text_needs() -> None:
    held = {code for lo, hi in uncomposed_ranges() for code in range(lo, hi + 1)}
    for text in (KOREAN, LATIN, "ガギグ", "Å Ω ﬁ", "ผมชอบกินข้าว", "हिन्दी"):
        decomposed = nfd(text)
        if decomposed != composed(decomposed):
            assert any(ord(ch) in held for ch in decomposed), text
    assert not any(ord(ch) in held for ch in "한글 café 数据 🤖")  # composed text is sent nowhere


@contextmanager
def as_version_7() -> Iterator[None]:
    """``split`` as version 7 made it: the text not composed first."""
    with mock.patch("agentlog.search.scripts.composed", lambda text: text):
        yield


def test_an_index_of_version_7_composes_its_texts_in_place(tmp_path: Path) -> None:
    """Version 7 put a MARK between each two Korean letters and before a
    kana voicing mark, so composing its stored text mends nothing: the
    upgrade takes out a MARK before a character that composes first."""
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        korean = s.append("message", {"content": nfd(KOREAN)}, role="user").id
        kana = s.append("message", {"content": nfd("ガイド.md を読む")}, role="user").id
        s.append("message", {"content": "plain words"}, role="user")
    with as_version_7():
        path = as_older_index(store, "7", lambda text: text)
    assert matches(path, to_match("한글")) == 0 and matches(path, to_match("ガイド")) == 0
    assert_upgraded_in_place(store, path)
    assert matches(path, to_match("한글")) == 1 and matches(path, to_match("ガイド")) == 1
    assert [h.event_id for h in search(store, "한글", refresh=False)] == [korean]
    assert [h.event_id for h in search(store, "ガイド", refresh=False)] == [kana]
    store.close()


PIECES = st.sampled_from(
    [
        nfd("한글"),
        "한",
        nfd("ガイド"),
        "ガ",
        "e\u0301",
        "é",
        "数据",
        "กิน",
        "🤖",
        "agent",
        " ",
        "-",
        "1",
        "\u0301",
        "\u3099",
        "\u1161",
        "\u11ab",
        "\u0e34",
        "\u094d",
        "\uf900",
        "\u212b",
        "Å",
        "ग",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=20))
def test_the_upgrade_gives_each_text_what_a_new_index_holds(pieces: list[str]) -> None:
    text = "".join(pieces)
    with as_version_7():
        old = split(text)
    assert split(strip_terminal_codes(upgrade_module._joined(old))) == split(text)


@needs_pg
def test_an_older_postgres_schema_composes_its_texts_once_opened(pg_schema: str) -> None:
    """As 0013 left a store: texts written decomposed held as written, one
    whole in its row, one of a blob in parts. Opening applies 0014: each is
    held as a write holds it now, and found."""
    psycopg = pytest.importorskip("psycopg")
    store = Store(pg_url(pg_schema), blob_threshold=64 * 1024)
    # a blob long enough for parts (more words than one tsvector keeps)
    long_text = " ".join(f"줄{i}" for i in range(9000)) + " 보고서 한글.txt"
    with store.create(session_id="s") as s:
        short = s.append("message", {"content": nfd(KOREAN)}, role="user")
        blob = s.append("tool_result", {"tool_call_id": "c1", "content": nfd(long_text)}, role="tool")
        plain = s.append("message", {"content": "plain words"}, role="user")
    store.close()
    assert blob.digest is not None
    rows = f"SELECT id::text, search_text, search_words FROM {pg_schema}.events ORDER BY id"
    blob_parts = f"SELECT digest, part, search_text, search_words FROM {pg_schema}.blob_parts ORDER BY digest, part"
    fresh = (sql(rows), sql(blob_parts))
    assert len(fresh[1]) > 1

    words = importlib.import_module("agentlog.search.diacritics").index_words
    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute(f"SET search_path TO {pg_schema}")
        conn.execute(
            "UPDATE events SET search_text = %s, search_words = %s WHERE id = %s",
            (nfd(KOREAN), words(nfd(KOREAN)), short.id),
        )
        conn.execute("DELETE FROM blob_parts")
        half = len(long_text) // 2
        for i, piece in enumerate((long_text[: half + 50], long_text[half:])):
            conn.execute(
                "INSERT INTO blob_parts (digest, part, search_text, search_words) VALUES (%s, %s, %s, %s)",
                (blob.digest, i, nfd(piece), words(nfd(piece))),
            )
    sql(f"DELETE FROM {pg_schema}.schema_migrations WHERE name = '0014_texts_composed'")
    found = f"SELECT search @@ to_tsquery('simple', '한 <-> 글') FROM {pg_schema}.events WHERE id = %s"
    assert sql(found, short.id) == [(False,)]

    store = Store(pg_url(pg_schema), blob_threshold=64 * 1024)  # opening migrates
    assert sql(found, short.id) == [(True,)]
    assert (sql(rows), sql(blob_parts)) == fresh
    assert {hit.event_id for hit in search(store, "한글")} == {short.id, blob.id}
    assert [hit.event_id for hit in search(store, "plain")] == [plain.id]
    store.close()
