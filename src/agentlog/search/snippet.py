"""Snippets: a window of an event's text around the words a query found.

Built from the stored text in Python rather than with FTS5's
``snippet()``, which re-runs the whole query for each hit (a prefix
query that way costs a full doclist merge per hit shown).
"""

from __future__ import annotations

import re
import unicodedata

from .diacritics import SEPARATING_MARKS
from .scripts import CLASS, KANA_MARKS, unspaced

__all__ = ["SNIPPET_CHARS", "make_snippet"]

SNIPPET_CHARS = 240
_BEFORE = SNIPPET_CHARS // 3
#: A letter or digit of a word that goes on: not ``_``, and not a character
#: of the scripts each of whose characters is a word (``scripts.py``), so
#: ``test`` in ``test数据`` is a whole word, as the index sees it.
_GOES_ON = f"[^\\W_{CLASS}]"
#: Marks that end a word to the index (a Thai or Hindi vowel sign): a
#: highlighted word may hold them, and the text may hold others there (the
#: index finds กิน in กน too).
_MARKS = f"[{SEPARATING_MARKS}]"


def _fold(text: str) -> str:
    """Case and diacritics folded, one character for one (so offsets hold)."""
    if text.isascii():
        return text.lower()
    out = []
    for ch in text:
        base = ch
        if ord(ch) > 127:
            # a letter and its accents: the letter; but a Hangul syllable,
            # whose parts are letters too (한: ㅎ ㅏ ㄴ), stays whole, and so
            # does a voiced kana (ギ is not キ)
            parts = unicodedata.normalize("NFD", ch)
            if all(unicodedata.combining(mark) and mark not in KANA_MARKS for mark in parts[1:]):
                base = parts[0]
        out.append(base.lower() if len(base.lower()) == 1 else ch)
    return "".join(out)


def make_snippet(text: str, words: list[tuple[str, bool]]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(snippet, highlighted spans in it) for ``text``; ``words`` are
    (word, is_prefix) as from ``highlight_words``."""
    folded = _fold(text)
    spans: list[tuple[int, int]] = []
    for word, prefix in words:
        # A word of Chinese or Japanese is found inside a run of such
        # characters (scripts.py), so it has no word boundary on that side,
        # and as a prefix it ends where it ends: each character is a word.
        head = "" if word and unspaced(word[0]) else f"(?<!{_GOES_ON})"
        # a vowel sign or tone mark after the last letter belongs to it
        if word and unspaced(word[-1]):
            tail = f"{_MARKS}*"
        else:
            tail = f"{_GOES_ON}*{_MARKS}*" if prefix else f"{_MARKS}*(?!{_GOES_ON})"
        body = f"{_MARKS}*".join(re.escape(_fold(piece)) for piece in re.split(f"{_MARKS}+", word))
        pattern = re.compile(head + body + tail)
        spans += [(m.start(), m.end()) for m in pattern.finditer(folded)]
    spans = sorted(set(spans))
    first = spans[0][0] if spans else 0
    lo = max(0, min(first - _BEFORE, len(text) - SNIPPET_CHARS))
    hi = min(len(text), lo + SNIPPET_CHARS)
    head = "…" if lo else ""
    shift = len(head) - lo
    kept = tuple((a + shift, min(b, hi) + shift) for a, b in spans if lo <= a < hi)
    # A NUL shows as its symbol, as PostgreSQL's stored text has it (it holds
    # no NUL); one character for one, so the spans hold.
    flat = (head + text[lo:hi] + ("…" if hi < len(text) else "")).replace("\x00", "\u2400")
    return flat, kept
