"""A snippet looks for the words it highlights inside its window only (a
long log holds thousands of them, and a search of many hits spent most of
its time finding them all): the spans are exactly those a scan of the
whole text finds inside the window."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.search import snippet
from agentlog.search.snippet import _fold, _window, _word_pattern, make_snippet

PIECES = st.sampled_from(["cafe", "café", "caf", "Cafe", "x", " ", "  ", "-", "数据", "กิน", "ข้าว", "a" * 40, "\n"])
WORDS = st.lists(
    st.tuples(st.sampled_from(["cafe", "caf", "数", "กิน", "x", "aaaa"]), st.booleans()), min_size=1, max_size=3
)


def _whole_scan(text: str, words: list[tuple[str, bool]]) -> tuple[int, tuple[tuple[int, int], ...]]:
    """(where the window starts, the spans in it) from every match of every
    word in the whole text, as snippets were made before."""
    folded = _fold(text)
    spans = sorted({(m.start(), m.end()) for w, p in words for m in _word_pattern(w, p).finditer(folded)})
    lo, hi = _window(len(text), spans[0][0] if spans else 0)
    shift = (1 if lo else 0) - lo
    return lo, tuple((a + shift, min(b, hi) + shift) for a, b in spans if lo <= a < hi)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=150), WORDS, st.sampled_from([600, 1024]))
def test_the_spans_are_what_a_whole_scan_finds_in_the_window(
    pieces: list[str], words: list[tuple[str, bool]], first_read: int
) -> None:
    text = "".join(pieces)
    lo, spans = _whole_scan(text, words)
    kept, snippet._FIRST_READ = snippet._FIRST_READ, first_read  # a text read in parts more often
    try:
        shown, found = make_snippet(text, words)
    finally:
        snippet._FIRST_READ = kept
    assert found == spans
    assert shown.removeprefix("…").startswith(text[lo : lo + 20])


def test_a_word_longer_than_the_margin_is_matched_whole() -> None:
    # "cafe" then 600 letters: not the word cafe, though a read that stops
    # 256 characters past the window would take it for one.
    text = "cafe " + "x" * 230 + " cafe" + "z" * 600
    assert make_snippet(text, [("cafe", False)])[1] == ((0, 4),)
    assert make_snippet(text, [("cafe", True)])[1] == ((0, 4), (236, 240))
