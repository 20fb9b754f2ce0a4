"""BM25 over a bounded set of candidates, in Python.

FTS5's ``bm25()`` counts, for every query, the rows each phrase occurs
in by reading that phrase's whole doclist: a word found in half a million
events costs tens of milliseconds before the first row is scored. When a
query matches more than ``CANDIDATES`` events, ``search`` takes the
newest ``CANDIDATES`` (a bounded, streamed read) and ranks them here with
the same formula, term statistics taken from the candidates themselves.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import unicodedata
from collections.abc import Iterable

from .scripts import KANA_MARKS

__all__ = ["fold", "rank"]

K1 = 1.2
B = 0.75


def fold(text: str) -> str:
    """Lowercase with diacritics removed (unicode61's remove_diacritics):
    every combining mark dropped but the kana voicing marks."""
    low = text.lower()
    if low.isascii():
        return low
    marks, astral = _marks()
    bare = marks.sub("", unicodedata.normalize("NFD", low))
    # Only a text with a character beyond the Basic Multilingual Plane is
    # longer in UTF-16 than in characters; the test costs a tenth of a search.
    if len(bare.encode("utf-16-le", "surrogatepass")) > 2 * len(bare):
        bare = astral.sub(_without_marks, bare)
    # composed again: a Hangul syllable (decomposed into its letters) and a
    # voiced kana (ギ) are one character each, as the query's are
    return unicodedata.normalize("NFC", bare)


def _without_marks(run: re.Match[str]) -> str:
    return "".join(ch for ch in run.group() if not unicodedata.combining(ch))


@functools.cache
def _marks() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The combining marks of the Basic Multilingual Plane (none comes
    before U+0300), and the span of code points beyond it that holds the
    others (U+101FD to U+1E94A: no emoji). One class of all 187 ranges of
    marks scans its ranges for every character (5 ms for 52 kB, where a
    Python loop took 1.7 ms); re compiles a class within the plane to a
    bitmap (0.4 ms), so the marks beyond it, which only texts with
    characters of that span can hold, are left to a loop over those."""
    marks = [chr(c) for c in range(0x300, sys.maxunicode + 1) if unicodedata.combining(chr(c))]
    bmp = "".join(ch for ch in marks if ord(ch) < 0x10000 and ch not in KANA_MARKS)
    astral = [ch for ch in marks if ord(ch) >= 0x10000]
    return re.compile(f"[{re.escape(bmp)}]+"), re.compile(f"[{astral[0]}-{astral[-1]}]+")


def rank(docs: Iterable[tuple[int, str]], words: list[tuple[str, bool]], limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best (rowid, score) of ``docs``, best first; scores are
    negated BM25, as FTS5 reports them (lower is better).

    Two shortcuts keep a thousand documents within a few milliseconds,
    and change rankings only at the margin: a document's length is its
    length in characters (BM25 uses it relative to the average only), and
    a word's frequency is how often it occurs as a substring (FTS5 has
    already matched it as a word; a word-bounded regex costs ten times
    more)."""
    wanted = [fold(w) for w, _prefix in words]
    rows: list[tuple[int, int, list[int]]] = []
    for rowid, text in docs:
        folded = fold(text)
        rows.append((rowid, len(folded), [folded.count(w) for w in wanted]))
    if not rows:
        return []
    total = len(rows)
    avg = sum(length for _, length, _ in rows) / total or 1.0
    idf = []
    for i in range(len(wanted)):
        having = sum(1 for _, _, tfs in rows if tfs[i])
        idf.append(math.log(1 + (total - having + 0.5) / (having + 0.5)))
    scored = []
    for rowid, length, tfs in rows:
        norm = K1 * (1 - B + B * length / avg)
        score = sum(w * tf * (K1 + 1) / (tf + norm) for w, tf in zip(idf, tfs, strict=True) if tf)
        scored.append((rowid, -score))
    scored.sort(key=lambda item: (item[1], -item[0]))
    return scored[:limit]
