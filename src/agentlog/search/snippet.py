"""Snippets: a window of an event's text around the words a query found.

Built from the stored text in Python rather than with FTS5's
``snippet()``, which re-runs the whole query for each hit (a prefix
query that way costs a full doclist merge per hit shown).
"""

from __future__ import annotations

import functools
import re
import unicodedata

from .diacritics import SEPARATING_MARKS
from .scripts import CLASS, KANA_MARKS, pieces, unspaced

__all__ = ["SNIPPET_CHARS", "make_snippet"]

SNIPPET_CHARS = 240
_BEFORE = SNIPPET_CHARS // 3
#: How far past the window a word found in it is read at first.
_MARGIN = 256
#: The characters of a text folded and searched first (then 4 times more).
_FIRST_READ = 1024
#: A letter or digit of a word that goes on: not ``_``, and not a character
#: of the scripts each of whose characters is a word (``scripts.py``), so
#: ``test`` in ``test数据`` is a whole word, as the index sees it.
_GOES_ON = f"[^\\W_{CLASS}]"
#: Marks that end a word to the index (a Thai or Hindi vowel sign): a
#: highlighted word may hold them, and the text may hold others there (the
#: index finds กิน in กน too).
_MARKS = f"[{SEPARATING_MARKS}]"


class _Folds(dict[int, str]):
    """Each character's fold, computed on first use and kept: a table for
    ``str.translate``, which then folds a text at C speed (a loop over a
    100 kB text's characters in Python took 30 ms a hit)."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        base = ch
        if code > 127:
            # a letter and its accents: the letter; but a Hangul syllable,
            # whose parts are letters too (한: ㅎ ㅏ ㄴ), stays whole, and so
            # does a voiced kana (ギ is not キ)
            parts = unicodedata.normalize("NFD", ch)
            if all(unicodedata.combining(mark) and mark not in KANA_MARKS for mark in parts[1:]):
                base = parts[0]
        folded = base.lower() if len(base.lower()) == 1 else ch
        self[code] = folded
        return folded


_FOLDS = _Folds()


def _fold(text: str) -> str:
    """Case and diacritics folded, one character for one (so offsets hold)."""
    return text.lower() if text.isascii() else text.translate(_FOLDS)


@functools.lru_cache(maxsize=256)  # each hit of a page asks for the same words
def _word_pattern(word: str, prefix: bool) -> re.Pattern[str]:
    """Where ``word`` (a prefix, or not) stands in a folded text."""
    # A word of Chinese or Japanese is found inside a run of such
    # characters (scripts.py), so it has no word boundary on that side,
    # and as a prefix it ends where it ends: each character is a word.
    head = "" if word and unspaced(word[0]) else f"(?<!{_GOES_ON})"
    # a vowel sign or tone mark after the last letter belongs to it
    if word and unspaced(word[-1]):
        tail = f"{_MARKS}*"
    else:
        tail = f"{_GOES_ON}*{_MARKS}*" if prefix else f"{_MARKS}*(?!{_GOES_ON})"
    # Between two letters of those scripts, the text may hold marks the
    # word has not: the index finds ขาว in ข้าว (a mark is no word to it).
    body = f"{_MARKS}*".join(re.escape(_fold(run)) for piece in re.split(f"{_MARKS}+", word) for run in pieces(piece))
    return re.compile(head + body + tail)


def _window(length: int, first: int) -> tuple[int, int]:
    """The characters a snippet of a text of ``length`` shows: from a third
    of it before ``first``, where the first word found starts."""
    lo = max(0, min(first - _BEFORE, length - SNIPPET_CHARS))
    return lo, min(length, lo + SNIPPET_CHARS)


def make_snippet(text: str, words: list[tuple[str, bool]]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(snippet, highlighted spans in it) for ``text``; ``words`` are
    (word, is_prefix) as from ``highlight_words``.

    The window starts a little before the first word found, which is
    nearly always early in a text: the text is folded and read a part at
    a time until a word is found far enough from the part's end that no
    word after it could start the window, and only the spans inside the
    window are looked for (a long log holds thousands of the word)."""
    patterns = [_word_pattern(word, prefix) for word, prefix in words]
    size = _FIRST_READ
    while True:
        folded = _fold(text[:size])
        whole = len(folded) == len(text)
        # A match in the part that runs to its end may not be one in the
        # text (the word may go on): only those well before the end count.
        before = len(folded) if whole else len(folded) - SNIPPET_CHARS - _MARGIN
        found = [(p, m.start()) for p, m in ((p, p.search(folded)) for p in patterns) if m is not None]
        if whole or any(at < before for _, at in found):
            break
        size *= 4
    lo, hi = _window(len(text), min((at for _, at in found if at < before), default=0))
    # A word that starts in the window may end past the part read (a query
    # word of hundreds of letters): read on to where the longest could end.
    reach = hi + max((len(word) for word, _ in words), default=0) + _MARGIN
    if not whole and reach > len(folded):
        folded = _fold(text[:reach])
        whole = len(folded) == len(text)
    spans: set[tuple[int, int]] = set()
    for pattern in patterns:
        for m in pattern.finditer(folded, lo):
            if m.start() >= hi:
                break
            # A match that runs to the end of the part read is matched again
            # against the whole text, whose next character decides where a
            # word ends.
            match = m if whole or m.end() < len(folded) else pattern.match(_fold(text), m.start())
            if match is not None:
                spans.add((match.start(), match.end()))
    head = "…" if lo else ""
    shift = len(head) - lo
    kept = tuple((a + shift, min(b, hi) + shift) for a, b in sorted(spans))
    # A NUL shows as its symbol, as PostgreSQL's stored text has it (it holds
    # no NUL); one character for one, so the spans hold.
    flat = (head + text[lo:hi] + ("…" if hi < len(text) else "")).replace("\x00", "\u2400")
    return flat, kept
