"""Where a word ends, at the edges the earlier fixes left open, on every
backend: after a decomposed accent (``cafe`` + U+0301) glued to Chinese,
Thai or an emoji; a symbol inside a query's word (``build🤖ok``); a Thai
word written without the vowel sign or tone mark the text has; and a
query word longer than the snippet's margin, which is still highlighted."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.search import search
from agentlog.search.query import parse_query, to_match
from agentlog.search.scripts import MARK, split, unsplit
from agentlog.search.snippet import SNIPPET_CHARS, _fold, _window, _word_pattern, make_snippet
from agentlog.search.symbols import without_symbols
from index_support import as_older_index, assert_upgraded_in_place, matches

ACCENT = "\u0301"  # COMBINING ACUTE ACCENT: café decomposed, as macOS file names write it


def _shown(hit_snippet: str, spans: tuple[tuple[int, int], ...]) -> list[str]:
    return [hit_snippet[a:b] for a, b in spans]


def test_a_decomposed_accent_ends_a_word_before_chinese_thai_or_an_emoji() -> None:
    for after in ("数据", "กิน", "🤖"):
        assert split(f"cafe{ACCENT}{after}").startswith(f"café{MARK}")  # composed first
        assert split(f"caq{ACCENT}{after}").startswith(f"caq{ACCENT}{MARK}")  # no q with an acute exists
    assert split(f"🤖{ACCENT}agent") == f"🤖{MARK}{ACCENT}agent"  # the accent goes with the word after


def test_words_glued_after_a_decomposed_accent_are_found_on_every_backend(store: Store) -> None:
    texts = {
        "chinese": f"cafe{ACCENT}数据库连接失败",
        "thai": f"cafe{ACCENT}ผมชอบกินข้าว",
        "emoji": f"cafe{ACCENT}🤖 done",
    }
    with store.create(session_id="s") as s:
        ids = {name: s.append("message", {"content": text}, role="user").id for name, text in texts.items()}
    assert {h.event_id for h in search(store, "cafe")} == set(ids.values())
    assert [h.event_id for h in search(store, "连接")] == [ids["chinese"]]
    assert [h.event_id for h in search(store, "กิน")] == [ids["thai"]]
    (hit,) = search(store, "连接")
    assert _shown(hit.snippet, hit.highlights) == ["连接"]
    store.close()


def test_a_symbol_inside_a_query_word_is_kept_and_the_text_as_written_is_found(store: Store) -> None:
    assert without_symbols("build🤖ok") == "build🤖ok"
    assert without_symbols("🤖build ok🥲 a🤖 🤖b") == " build ok  a   b"  # at a word's edge: dropped
    assert parse_query("build🤖ok") == (("build", "ok"), False)  # PostgreSQL's words: the same phrase
    assert to_match("build🤖ok") == f'"build{MARK}🤖{MARK}ok"'
    with store.create(session_id="s") as s:
        glued = s.append("message", {"content": "the build🤖ok line"}, role="user").id
        s.append("message", {"content": "build failed, ok then"}, role="user")
    assert [h.event_id for h in search(store, "build🤖ok")] == [glued]
    assert [h.event_id for h in search(store, '"line"')] == [glued]
    store.close()


def test_a_thai_word_without_its_marks_is_found_and_highlighted_with_them(store: Store) -> None:
    with store.create(session_id="s") as s:
        rice = s.append("message", {"content": "ผมชอบกินข้าวผัดมาก"}, role="user").id
    (hit,) = search(store, "ขาว")  # ข้าว ("rice") typed without its tone mark
    assert hit.event_id == rice
    assert _shown(hit.snippet, hit.highlights) == ["ข้าว"]
    store.close()


def test_a_query_word_longer_than_the_margin_is_highlighted(store: Store) -> None:
    word = "x" * 700
    text = "start " + "filler " * 10 + word + " end " + "tail " * 400
    with store.create(session_id="s") as s:
        s.append("message", {"content": text}, role="user")
    (hit,) = search(store, word)
    at = text.index(word)
    lo, hi = _window(len(text), at)
    assert _shown(hit.snippet, hit.highlights) == [text[at:hi]]  # cut at the window's end
    store.close()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["x", "y", " ", "ข้าว", "ขาว", "-"]), max_size=120),
    st.integers(min_value=200, max_value=900),
    st.booleans(),
)
def test_long_words_and_unmarked_thai_get_the_spans_a_whole_scan_finds(
    pieces: list[str], length: int, prefix: bool
) -> None:
    words = [("x" * length, prefix), ("ขาว", False)]
    text = "".join(pieces).replace("x x", "x" * length)  # some runs long enough to match
    folded = _fold(text)
    spans = sorted({(m.start(), m.end()) for w, p in words for m in _word_pattern(w, p).finditer(folded)})
    lo, hi = _window(len(text), spans[0][0] if spans else 0)
    shift = (1 if lo else 0) - lo
    expected = tuple((a + shift, min(b, hi) + shift) for a, b in spans if lo <= a < hi)
    assert make_snippet(text, words)[1] == expected


def test_an_index_of_version_6_ends_those_words_in_place(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        # an accent that composes with no letter before it (none with q exists)
        glued = s.append("message", {"content": f"caq{ACCENT}数据 and caq{ACCENT}🤖"}, role="user").id

    def as_version_6(text: str) -> str:  # no MARK after an accent
        return re.sub(f"(?<={ACCENT}){MARK}", "", text)

    path = as_older_index(store, "6", as_version_6)
    assert matches(path, '"caq"') == 0
    assert_upgraded_in_place(store, path)
    assert matches(path, '"caq"') == 1
    assert [h.event_id for h in search(store, "caq 数据", refresh=False)] == [glued]
    assert unsplit(split(f"cafe{ACCENT}数据")) == "café数据"  # composed (search/composed.py)
    assert len(SNIPPET_CHARS * "x") == SNIPPET_CHARS
    store.close()
