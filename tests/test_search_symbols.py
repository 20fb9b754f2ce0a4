"""A symbol FTS5's Unicode 6.1 tables take for a letter (an emoji added
since, an icon font's private-use glyph) ends the word it touches on
every backend (``agentlog.search.symbols``): ``agent`` is found in
``🤖agent``, and a query's symbols are no words."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.search import search
from agentlog.search.query import parse_query, to_match
from agentlog.search.scripts import MARK, split, unsplit
from agentlog.search.symbols import separate, without_symbols
from index_support import as_older_index, assert_upgraded_in_place, matches

PIECES = st.sampled_from(
    ["agent", "é", "e\u0301", "🤖", "🥲", "\ue0a0", "─", "✅", "数据", "กิน", " ", "-", "1", "\u200b"]
)


@settings(max_examples=300)
@given(st.lists(PIECES, max_size=30))
def test_the_marks_come_out_again_and_a_second_split_adds_none(pieces: list[str]) -> None:
    text = "".join(pieces).replace(MARK, "")  # a text's own MARK is dropped by unsplit, as documented
    assert unsplit(split(text)) == unicodedata.normalize("NFC", text)  # search reads a text composed
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
    path = as_older_index(store, "5")
    assert matches(path, "agent") == 0
    assert_upgraded_in_place(store, path)
    assert [h.event_id for h in search(store, "agent", refresh=False)] == [glued]
    store.close()
