"""A symbol FTS5's Unicode 6.1 tables take for a letter (an emoji added
since, an icon font's private-use glyph) ends the word it touches on
every backend (``agentlog.search.symbols``): ``agent`` is found in
``🤖agent``, and a query's symbols are no words."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.search import catch_up, search
from agentlog.search.index import SCHEMA_VERSION, index_location
from agentlog.search.query import parse_query, to_match
from agentlog.search.scripts import MARK, split, unsplit
from agentlog.search.symbols import separate, without_symbols

PIECES = st.sampled_from(
    ["agent", "é", "e\u0301", "🤖", "🥲", "\ue0a0", "─", "✅", "数据", "กิน", " ", "-", "1", "\u200b"]
)


@settings(max_examples=300)
@given(st.lists(PIECES, max_size=30))
def test_the_marks_come_out_again_and_a_second_split_adds_none(pieces: list[str]) -> None:
    text = "".join(pieces).replace(MARK, "")  # a text's own MARK is dropped by unsplit, as documented
    assert unsplit(split(text)) == text
    assert split(split(text)) == split(text)


def test_only_a_symbol_that_touches_a_word_is_marked() -> None:
    assert separate("🤖agent") == f"🤖{MARK}agent"
    assert separate("branch\ue0a0main") == f"branch{MARK}\ue0a0{MARK}main"
    assert separate("table ─── line") == "table ─── line"  # nothing to separate
    assert separate("café hindi हिन्दी") == "café hindi हिन्दी"  # marks belong to their words
    assert without_symbols("🤖agent 🥲") == " agent  "


def test_a_query_leaves_its_symbols_out_on_every_backend() -> None:
    assert parse_query("🤖agent") == (("agent",), False)
    assert to_match("🤖agent") == '" agent"'  # FTS5 reads the phrase of its one word


def test_a_word_glued_to_an_emoji_is_found_and_highlighted() -> None:
    store = Store.memory()
    with store.create(session_id="s") as s:
        eid = s.append("message", {"content": "🤖agent finished🥲"}, role="assistant").id
    (hit,) = search(store, "agent finished")
    assert hit.event_id == eid
    assert hit.snippet == "🤖agent finished🥲"  # the text as stored
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["agent", "finished"]
    store.close()


def test_an_index_of_version_5_separates_them_in_place(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        glued = s.append("message", {"content": "🤖agent finished"}, role="assistant").id
    catch_up(store)
    path = index_location(store.home)
    assert path is not None
    conn = sqlite3.connect(path)
    with conn:  # what version 5 wrote: the text as it is
        for rowid, text in conn.execute("SELECT rowid, text FROM fts").fetchall():
            conn.execute("UPDATE fts SET text = ? WHERE rowid = ?", (unsplit(text), rowid))
        conn.execute("UPDATE info SET value = '5' WHERE key = 'schema'")
    assert conn.execute("SELECT count(*) FROM fts WHERE fts MATCH 'agent'").fetchone() == (0,)
    conn.close()

    stats = catch_up(store)
    assert (stats.sessions_indexed, stats.events_added) == (0, 0)  # upgraded, not rebuilt
    assert [h.event_id for h in search(store, "agent", refresh=False)] == [glued]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM info WHERE key = 'schema'").fetchone() == (SCHEMA_VERSION,)
    conn.close()
    store.close()
