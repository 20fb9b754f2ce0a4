"""A tool's output of any length is stored and searched whole, on every
backend: PostgreSQL's ``tsvector`` refused a text past 1 MB of distinct
words (the commit failed, reported as a lost lease), and quietly dropped
the positions a phrase needs past its 16,383rd word or a word's 255th use.
Such a text is indexed there in overlapping parts (``textparts``); a query
over it means what it means over the text whole."""

from __future__ import annotations

import importlib
import random
import re
import string
from collections import Counter
from collections.abc import Callable
from types import ModuleType

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.errors import LeaseLost, StorageError
from agentlog.search import search
from agentlog.search.scripts import CLASS
from pg_support import needs_pg, pg_url, sql

RNG = random.Random(7)
#: 160,000 distinct ten-letter words: 1.76 MB of text.
DISTINCT = ["".join(RNG.choices(string.ascii_lowercase, k=10)) for _ in range(160_000)]


def textparts() -> ModuleType:
    """agentlog.backends.postgres.textparts (the package needs the postgres extra)."""
    pytest.importorskip("psycopg")
    return importlib.import_module("agentlog.backends.postgres.textparts")


@pytest.mark.parametrize("inline", [False, True], ids=["blob", "inline"])
def test_a_text_of_distinct_words_past_a_megabyte_is_stored_and_every_query_reads_it_whole(
    make_store: Callable[..., Store], inline: bool
) -> None:
    store = make_store(blob_threshold=4 * 1024 * 1024 if inline else 16 * 1024)
    text = " ".join(DISTINCT)
    with store.create() as s:
        s.append("message", {"content": "cat the bundle"}, role="user")
        event = s.append("tool_result", {"tool_call_id": "c1", "content": text}, role="tool")
        other = s.append("message", {"content": f"{DISTINCT[0]} and {DISTINCT[-1]} alone"}, role="assistant")

    def found(query: str) -> set[str]:
        return {hit.event_id for hit in search(store, query, limit=50)}

    first, middle, last = DISTINCT[0], DISTINCT[80_000], DISTINCT[-1]
    assert found(first) == found(last) == {event.id, other.id}
    assert found(middle) == {event.id}
    assert found(f'"{DISTINCT[-3]} {DISTINCT[-2]} {last}"') == {event.id}  # a phrase at the very end
    assert found(f'"{DISTINCT[-2]} {DISTINCT[-3]}"') == set()  # its words, out of order
    assert found(f"{middle} AND {last}") == {event.id}  # words far apart
    assert found(f"{first} NOT {middle}") == {other.id}  # a NOT sees the whole text
    assert found(f"{middle} OR zzzzzz") == {event.id}
    assert found(f"{DISTINCT[123_456][:6]}*") >= {event.id}
    hit = search(store, middle)[0]
    assert middle in hit.snippet and hit.highlights  # the snippet shows where it was found


def test_a_phrase_past_any_word_limit_is_found(make_store: Callable[..., Store]) -> None:
    store = make_store()
    # A log of 40,000 words, "tick" used 10,000 times: the phrase comes after
    # position 16,383 and after the 255th "tick".
    vocabulary = [f"w{i}" for i in range(300)]
    lines = [f"tick {RNG.choice(vocabulary)} {RNG.choice(vocabulary)} {RNG.choice(vocabulary)}" for _ in range(10_000)]
    lines.insert(9_000, "tick connection refused by upstream")
    with store.create() as s:
        event = s.append("tool_result", {"tool_call_id": "c1", "content": "\n".join(lines)}, role="tool")
    for query in ('"connection refused"', '"tick connection refused"', '"refused by upstream"'):
        assert [hit.event_id for hit in search(store, query)] == [event.id], query
    assert search(store, '"refused connection"') == []


def test_a_phrase_across_a_cut_between_parts_is_found(make_store: Callable[..., Store]) -> None:
    store = make_store()
    parts = textparts()
    text = " ".join(DISTINCT[: 3 * parts.MAX_WORDS])
    cut = len(parts.index_parts(text)[0].split())  # the first part's last word is here
    with store.create() as s:
        event = s.append("tool_result", {"tool_call_id": "c1", "content": text}, role="tool")
    for span in (DISTINCT[cut - 3 : cut + 3], DISTINCT[cut - parts.OVERLAP // 2 : cut + parts.OVERLAP // 2]):
        assert [hit.event_id for hit in search(store, '"' + " ".join(span) + '"')] == [event.id]


def pg_words(text: str) -> list[str]:
    """The words PostgreSQL's column sees: letters and digits, each Chinese
    character alone."""
    return [w.lower() for w in re.findall(f"[{CLASS}]|[^\\W_{CLASS}]+", text)]


@pytest.mark.parametrize(
    "text",
    [
        " ".join(DISTINCT[:30_000]),  # past MAX_WORDS
        "ledger " * 5_000,  # past MAX_USES
        "x" * 300_000 + " tail " + "y" * 300_000,  # words past MAX_CHARS
        "数据库连接失败" * 3_000,  # every character a word
        " ".join(DISTINCT[:500]) + "\n\n" + "déjà_vu " * 600,
    ],
    ids=["words", "uses", "chars", "unspaced", "mixed"],
)
def test_the_parts_cover_the_text_in_order_and_keep_every_limit(text: str) -> None:
    limits = textparts()
    parts = limits.index_parts(text)
    assert len(parts) > 1
    assert text.startswith(parts[0]) and text.endswith(parts[-1])
    start = end = 0
    for part in parts[1:]:
        at = text.find(part, start + 1)
        assert start < at <= end + len(parts[0]), "each part begins inside or at the end of the one before"
        start, end = at, at + len(part)
    for part in parts:
        words = pg_words(part)
        assert len(words) <= limits.MAX_WORDS
        assert max(Counter(words).values()) <= limits.MAX_USES
        assert len(part) <= limits.MAX_CHARS or len(words) == 1
    assert {w for p in parts for w in pg_words(p)} == set(pg_words(text))


def test_a_text_that_reaches_no_limit_is_one_part() -> None:
    limits = textparts()
    for text in ("", "short", " ".join(DISTINCT[: limits.MAX_WORDS // 2]), "ledger " * limits.MAX_USES):
        assert limits.index_parts(text) == [text]


@needs_pg
def test_rows_written_before_parts_are_cut_when_the_store_is_opened(pg_schema: str) -> None:
    # Inline (test_search_thinking_upgrade has 0011 cut a blob).
    store = Store(pg_url(pg_schema), blob_threshold=1024 * 1024)
    vocabulary = [f"w{i}" for i in range(300)]
    record = {"tool_call_id": "c1", "content": " ".join(RNG.choice(vocabulary) for _ in range(20_000)) + " bad gateway"}
    with store.create(session_id="s") as s:
        event = s.append("tool_result", record, role="tool")
        short = s.append("message", {"content": "bad gateway once"}, role="user")
    parts = sql(f"SELECT part, search_text FROM {pg_schema}.event_parts ORDER BY part")
    assert len(parts) > 1
    store.close()
    # As a build before 0011 left it: the text whole in its row, where the
    # phrase's positions were lost.
    sql(f"DROP TABLE {pg_schema}.event_parts, {pg_schema}.blob_parts")
    sql(f"DELETE FROM {pg_schema}.schema_migrations WHERE name = '0011_long_texts_in_parts'")
    storage = importlib.import_module("agentlog.backends.postgres.storage")
    whole = storage.searchable_text("tool_result", orjson.dumps(record))
    sql(f"UPDATE {pg_schema}.events SET search_text = %s WHERE id = %s", whole, event.id)
    phrase = "SELECT search @@ to_tsquery('simple', 'bad <-> gateway') FROM {}.events WHERE id = %s"
    assert sql(phrase.format(pg_schema), event.id) == [(False,)]

    store = Store(pg_url(pg_schema), blob_threshold=1024 * 1024)  # opening migrates
    assert sql(f"SELECT part, search_text FROM {pg_schema}.event_parts ORDER BY part") == parts
    assert sql(f"SELECT search_text FROM {pg_schema}.events WHERE id = %s", event.id) == [(None,)]
    assert {hit.event_id for hit in search(store, '"bad gateway"')} == {event.id, short.id}
    store.close()


@needs_pg
def test_a_commit_the_server_refuses_is_a_storage_error_and_the_writer_keeps_its_lease(pg_schema: str) -> None:
    # The server's refusal of one commit (here a limit, as the tsvector's
    # was) was reported as a lost lease, and the session could write no more.
    store = Store(pg_url(pg_schema))
    sql(
        f"""CREATE FUNCTION {pg_schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'too large here' USING ERRCODE = 'program_limit_exceeded'; END $$"""
    )
    sql(
        f"CREATE TRIGGER refuse BEFORE INSERT ON {pg_schema}.events FOR EACH ROW"
        f" WHEN (NEW.kind = 'refused') EXECUTE FUNCTION {pg_schema}.refuse()"
    )
    with store.create() as s:
        kept = s.append("message", {"content": "before"}, role="user")
        with pytest.raises(StorageError, match="too large here") as refused:
            s.append("refused", {"n": 1})
        assert not isinstance(refused.value, LeaseLost)
        after = s.append("message", {"content": "after"}, role="user")
        assert [e.id for e in s.transcript()] == [kept.id, after.id]
    store.close()


@pytest.mark.parametrize(
    ("text", "queries"),
    [
        # café and cafe are one word to the index: 400 uses, not 200 and 200.
        ("café x " * 200 + "cafe y " * 200 + "cafe omega end", {'"cafe omega"': True, '"omega cafe"': False}),
        # An accent FTS5 drops is inside its word: no cut may fall there.
        ("tick " * 240 + "zq\u0301tick end", {"zq": False, "zqtick": True, "tick NOT zq": True}),
        # Each Chinese character is a word: 300 uses in 301 characters.
        ("哈" * 300 + "好", {"哈好": True, '"好 哈"': False}),
        # 2,049 bytes written, 683 indexed: a word PostgreSQL indexes, and counts.
        (("ạ" * 683 + " ") * 290 + "tail", {'"' + "a" * 683 + ' tail"': True}),
        # PostgreSQL has no word for ①: the query must not become NOT café alone.
        ("café ① " + "filler " * 9000, {"① NOT café": False, "café": True}),
    ],
    ids=["folded-uses", "dropped-mark", "unspaced-uses", "folded-length", "no-word-for-it"],
)
def test_a_text_near_a_limit_is_read_as_whole_on_every_backend(
    make_store: Callable[..., Store], text: str, queries: dict[str, bool]
) -> None:
    store = make_store()
    with store.create() as s:
        event = s.append("tool_result", {"tool_call_id": "c1", "content": text}, role="tool")
    for query, found in queries.items():
        assert [hit.event_id for hit in search(store, query)] == ([event.id] if found else []), query


def test_a_text_of_long_tokens_is_not_stored_many_times_over() -> None:
    # Parts shared 64 tokens of up to 4,000 characters: each new part began
    # one token later, and 2 MB of hex became 85 MB of parts.
    limits = textparts()
    text = " ".join(f"{n:04x}" * 1000 for n in range(500))
    parts = limits.index_parts(text)
    assert sum(map(len, parts)) < 1.5 * len(text)
    assert all(len(part) <= limits.MAX_CHARS + 4000 for part in parts)


WORDS = ["tick", "Tick", "café", "cafe", "zq\u0301x", "हिन्दी", "数据", "naïve", "x" * 30, "ok"]


@given(st.lists(st.sampled_from(WORDS), max_size=120), st.lists(st.sampled_from([" ", "\n", ", ", "/"]), min_size=1))
@settings(max_examples=300, deadline=None)
def test_any_text_is_cut_between_words_within_every_limit(words: list[str], gaps: list[str]) -> None:
    # The limits made small, so that a short text reaches each of them.
    limits = textparts()
    small = {"MAX_WORDS": 12, "MAX_USES": 4, "MAX_CHARS": 60, "OVERLAP": 3, "MAX_OVERLAP_CHARS": 15, "MIN_CHARS": 5}
    text = "".join(word + gaps[i % len(gaps)] for i, word in enumerate(words))
    with pytest.MonkeyPatch.context() as patch:
        for name, value in small.items():
            patch.setattr(limits, name, value)
        parts = limits.index_parts(text)
    starts = {m.start() for m in limits._word().finditer(text)}
    at = 0
    for n, part in enumerate(parts):
        begin = text.find(part, at) if n else 0
        assert begin >= 0 and (n == 0 or begin in starts), "a part begins where a word does"
        end = begin + len(part)
        assert end == len(text) or end in starts or not text[end - 1 : end + 1].strip(), "and ends before one"
        found = [limits.strip_diacritics(m.group()).lower() for m in limits._word().finditer(part)]
        assert len(found) <= small["MAX_WORDS"]
        assert max(Counter(found).values(), default=0) <= small["MAX_USES"]
        assert len(part) <= small["MAX_CHARS"] + 30 or len(found) <= 1  # a part may end in its one long word
        at = begin + 1
    every = {limits.strip_diacritics(m.group()).lower() for m in limits._word().finditer(text)}
    assert every == {limits.strip_diacritics(m.group()).lower() for p in parts for m in limits._word().finditer(p)}


@needs_pg
def test_a_row_that_reaches_a_limit_once_folded_is_cut_when_the_store_is_opened(pg_schema: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    from conftest import PG_DSN

    text = "café x " * 200 + "cafe y " * 200 + "connection refused"
    store = Store(pg_url(pg_schema), blob_threshold=1024 * 1024)
    with store.create(session_id="s") as s:
        event = s.append("tool_result", {"tool_call_id": "c1", "content": text}, role="tool")
    store.close()
    # As a build before 0011 left it: the text whole, indexed as written
    # (café and cafe two words of 200 uses, neither at a limit).
    schema = importlib.import_module("agentlog.backends.postgres.schema")
    storage = importlib.import_module("agentlog.backends.postgres.storage")
    tables = ("events", "blobs")
    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute(f"SET search_path TO {pg_schema}")
        conn.execute("DROP TABLE event_parts, blob_parts")
        for statement in schema._search_columns(schema._SEARCH_WORDS, tables):
            conn.execute(statement)
        for table in tables:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN search_words")
        whole = storage.searchable_text("tool_result", orjson.dumps({"tool_call_id": "c1", "content": text}))
        conn.execute("UPDATE events SET search_text = %s WHERE id = %s", (whole, event.id))
        conn.execute("DELETE FROM schema_migrations WHERE name > '0010'")

    store = Store(pg_url(pg_schema), blob_threshold=1024 * 1024)  # opening migrates
    assert len(sql(f"SELECT part FROM {pg_schema}.event_parts WHERE id = %s", event.id)) > 1
    assert [hit.event_id for hit in search(store, '"cafe y connection refused"')] == [event.id]
    store.close()


@needs_pg
def test_a_blob_stored_as_two_kinds_keeps_one_cut_of_parts(pg_schema: str) -> None:
    # The same bytes stored as a message and as a custom event: a message's
    # text is its content, a custom event's every string in it, so the
    # second cut has more parts. Those past the first cut's went in (ON
    # CONFLICT kept only the rows the first had), and the blob was indexed
    # as a mix of two cuts.
    store = Store(pg_url(pg_schema), blob_threshold=1024)
    record = {"content": " ".join(DISTINCT[:20_000]), "note": " ".join(DISTINCT[20_000:40_000])}
    with store.create(session_id="a") as s:
        message = s.append("message", record, role="user")
    first = sql(f"SELECT part, search_text FROM {pg_schema}.blob_parts ORDER BY part")
    storage = importlib.import_module("agentlog.backends.postgres.storage")
    other = textparts().index_parts(storage.searchable_text("custom", orjson.dumps(record)))
    assert len(other) > len(first) > 1
    with store.create(session_id="b") as s:
        custom = s.append("custom", record)
    assert message.digest == custom.digest is not None
    assert sql(f"SELECT part, search_text FROM {pg_schema}.blob_parts ORDER BY part") == first
    assert {hit.event_id for hit in search(store, DISTINCT[19_999])} == {message.id, custom.id}
    store.close()
