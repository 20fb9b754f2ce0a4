"""Thai, Lao, Myanmar and Khmer are written without spaces between words,
so each of their characters is a word to every index (``search.scripts``),
as Chinese ones are: a word is found inside a sentence. An index or a
schema written before that is brought to it when opened, and a text that
now has more words than one PostgreSQL ``tsvector`` keeps is cut into
parts as a new write cuts it."""

from __future__ import annotations

import importlib
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.search import search
from agentlog.search.query import parse_query
from agentlog.search.scripts import SOUTHEAST_ASIAN_RANGES, split, unspaced, unsplit
from conftest import PG_DSN
from index_support import as_older_index, assert_upgraded_in_place, matches
from pg_support import needs_pg, pg_url, sql

SENTENCE = "ผมชอบกินข้าวผัดมาก"
#: Thai words, each with a vowel sign or tone mark, glued into long runs.
THAI_WORDS = ["กิน", "ข้าว", "ผัด", "น้ำ", "ไก่", "บ้าน", "เมือง", "ใหม่", "ดี", "ร้อน"]


def _thai(words: int, seed: int) -> str:
    """``words`` Thai words, a space after every fifth, as a paragraph."""
    rng = random.Random(seed)
    return "".join(rng.choice(THAI_WORDS) + (" " if i % 5 == 4 else "") for i in range(words))


def test_each_letter_of_these_scripts_is_a_word() -> None:
    assert all(unspaced(chr(lo)) and unspaced(chr(hi)) for lo, hi in SOUTHEAST_ASIAN_RANGES)
    assert parse_query("ข้าวผัด") == (("ข", "า", "ว", "ผ", "ด"), False)  # the marks are no words
    assert unsplit(split(SENTENCE)) == SENTENCE
    assert split("abc") == "abc" and not unspaced("a") and not unspaced("क")


def test_a_word_inside_a_thai_sentence_is_found_and_highlighted_whole() -> None:
    store = Store.memory()
    with store.create(session_id="s") as s:
        hit_id = s.append("message", {"content": f"note: {SENTENCE}"}, role="user").id
        s.append("message", {"content": "ภาษาไทย"}, role="user")
    (hit,) = search(store, "ข้าวผัด")
    assert hit.event_id == hit_id
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["ข้าวผัด"]
    assert search(store, "ผัดข้าว") == []  # its words out of order
    store.close()


def test_an_index_of_version_5_is_upgraded_in_place(tmp_path: Path) -> None:
    """Version 5 indexed a Thai sentence as pieces cut at its vowel signs:
    opening it splits the texts that hold these scripts, without reading a
    session again."""
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        thai = s.append("message", {"content": SENTENCE}, role="user").id
        s.append("message", {"content": "plain english text"}, role="assistant")
    path = as_older_index(store, "5")
    assert matches(path, '"ข"') == 0
    assert_upgraded_in_place(store, path)
    assert [h.event_id for h in search(store, "กิน", refresh=False)] == [thai]
    assert [h.event_id for h in search(store, "กิน", session="s", role="user", refresh=False)] == [thai]
    store.close()


@needs_pg
def test_an_older_postgres_schema_reads_them_by_character_once_opened(pg_schema: str) -> None:
    """As 0012 left a store: the Thai run indexed as pieces, a long Thai
    text whole in its row (it had few words then), and one held in parts
    cut otherwise. Opening applies 0013: the words are found, and every
    text is held as a write holds it now."""
    psycopg = pytest.importorskip("psycopg")
    store = Store(pg_url(pg_schema), blob_threshold=256 * 1024)
    long_inline, long_blob = _thai(9000, 1) + " ปลายทาง", _thai(30000, 2)
    with store.create(session_id="s") as s:
        short = s.append("message", {"content": SENTENCE}, role="user")
        inline = s.append("tool_result", {"tool_call_id": "c1", "content": long_inline}, role="tool")
        blob = s.append("tool_result", {"tool_call_id": "c2", "content": long_blob}, role="tool")
        plain = s.append("message", {"content": "plain words"}, role="user")
    store.close()
    assert blob.digest is not None and inline.digest is None
    event_parts = f"SELECT id::text, part, search_text, search_words FROM {pg_schema}.event_parts ORDER BY id, part"
    blob_parts = f"SELECT digest, part, search_text, search_words FROM {pg_schema}.blob_parts ORDER BY digest, part"
    fresh = (sql(event_parts), sql(blob_parts))
    assert len(fresh[0]) > 1 and len(fresh[1]) > 1  # each has more words than a part holds

    # As 0012 left it: the words of the Chinese scripts by character alone;
    # the inline text whole (its row's text), the blob's in two other parts.
    schema = importlib.import_module("agentlog.backends.postgres.schema")
    tables = ("events", "blobs", "event_parts", "blob_parts")
    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute(f"SET search_path TO {pg_schema}")
        conn.execute("DELETE FROM event_parts")
        words = importlib.import_module("agentlog.search.diacritics").index_words
        conn.execute(
            "UPDATE events SET search_text = %s, search_words = %s WHERE id = %s",
            (long_inline, words(long_inline), inline.id),
        )
        conn.execute("DELETE FROM blob_parts")
        half = len(long_blob) // 2
        for i, piece in enumerate((long_blob[: half + 100], long_blob[half:])):
            conn.execute(
                "INSERT INTO blob_parts (digest, part, search_text, search_words) VALUES (%s, %s, %s, %s)",
                (blob.digest, i, piece, words(piece)),
            )
        for statement in schema._search_columns(schema._FOLDED_WORDS, tables):
            conn.execute(statement)
    sql(f"DELETE FROM {pg_schema}.schema_migrations WHERE name = '0013_southeast_asian_scripts_by_character'")
    matches = f"SELECT search @@ to_tsquery('simple', 'ข <-> า <-> ว') FROM {pg_schema}.events WHERE id = %s"
    assert sql(matches, short.id) == [(False,)]

    store = Store(pg_url(pg_schema), blob_threshold=256 * 1024)  # opening migrates
    assert sql(matches, short.id) == [(True,)]
    assert (sql(event_parts), sql(blob_parts)) == fresh
    assert sql(f"SELECT search_text FROM {pg_schema}.events WHERE id = %s", inline.id) == [(None,)]
    assert sql(f"SELECT search_text FROM {pg_schema}.events WHERE id = %s", plain.id) == [("plain words",)]
    assert {hit.event_id for hit in search(store, "ข้าว")} == {short.id, inline.id, blob.id}
    assert [hit.event_id for hit in search(store, "ปลายทาง")] == [inline.id]  # past the 8,000th word
    assert [hit.event_id for hit in search(store, "plain")] == [plain.id]
    store.close()


#: Thai consonants and vowels, its vowel signs and tone marks, and Khmer's.
LETTERS = st.sampled_from(list("กขคงจฉชซญดตถทนบปผพฟมยรลวสหอะาเแโใไ") + list("កខគងចឆជញដតណទនបពមយរលវសហអ"))
MARKS = st.sampled_from(
    list("\u0e31\u0e34\u0e35\u0e36\u0e37\u0e38\u0e39\u0e47\u0e48\u0e49\u0e4a\u0e4b\u0e4c\u17b7\u17b8\u17bb\u17c6\u17d2")
)
WORD = st.tuples(LETTERS, st.lists(MARKS, max_size=2)).map(lambda t: t[0] + "".join(t[1]))


@settings(max_examples=30, deadline=None)
@given(st.lists(WORD, min_size=2, max_size=14), st.data())
def test_every_run_inside_a_text_is_found_on_the_sqlite_index(words: list[str], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(words) - 1))
    end = data.draw(st.integers(start + 1, len(words)))
    store = Store.memory()
    with store.create(session_id="s") as s:
        eid = s.append("message", {"content": f"x {''.join(words)}, 1"}, role="user").id
    query = "".join(words[start:end])
    hits = search(store, query)
    assert [h.event_id for h in hits] == [eid]
    (a, b), *_ = hits[0].highlights
    assert hits[0].snippet[a:b].startswith(words[start][0])
    store.close()


@needs_pg
def test_punctuation_read_by_a_regular_expression_gives_the_words_translate_gave() -> None:
    # 0013 rebuilds the columns anyway, and reads ASCII punctuation with
    # regexp_replace() instead of translate(), five times faster.
    psycopg = pytest.importorskip("psycopg")
    schema = importlib.import_module("agentlog.backends.postgres.schema")
    rng = random.Random(3)
    alphabet = [chr(c) for c in range(1, 128)] + list("数据ก้าวé①ß\u200b")
    texts = ["".join(chr(c) for c in range(1, 128))]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200))) for _ in range(300)]
    before = schema._words("t", schema.RANGES)
    now = schema._words("t", schema.RANGES, spaces="regexp_replace")
    assert "translate" in before and "translate" not in now
    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE texts (t text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO texts VALUES (%s)", [(t,) for t in texts])
        # no parameters: the expressions' % signs are their own
        differ = conn.execute(f"SELECT t FROM texts WHERE ({before}) IS DISTINCT FROM ({now})").fetchall()
    assert differ == []
