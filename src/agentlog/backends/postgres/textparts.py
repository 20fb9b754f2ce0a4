"""A record's search text cut into parts that PostgreSQL can index whole.

A ``tsvector`` has three limits that a tool's output reaches: its distinct
words may total at most 1 MB (past it ``to_tsvector`` fails, and with it
the commit: a 1.7 MB output of distinct words could not be stored), a
word's position is counted up to 16,383 only, and a word keeps at most 255
positions. The last two do not fail: they quietly lose the positions a
phrase needs, so ``"connection refused"`` late in a long log, or after a
word's 256th use, was never found.

A text that could reach any of them is therefore indexed as parts, each
far inside every limit, cut between words; consecutive parts share
``OVERLAP`` words, so a phrase of up to that many words that crosses a cut
lies whole in the next part. Search evaluates each term of a query over
all of a text's parts, and the query's AND, OR and NOT over those answers
(``search.search_sql``), so a text in parts matches exactly what it would
match whole. The other backends' index (SQLite FTS5) has none of these
limits and keeps each text whole.

Words are counted as PostgreSQL's generated column splits them (ASCII
punctuation a space, each Chinese, Japanese or Korean character a word,
schema migrations 0005 and 0008); the count need not be exact, as the
limits are kept with a wide margin.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

from ...search.diacritics import SEPARATING_MARK_RANGES, strip_diacritics
from ...search.scripts import CLASS

__all__ = ["KEPT_POSITIONS", "MAX_CHARS", "MAX_USES", "MIN_CHARS", "MAX_WORDS", "OVERLAP", "index_parts"]

#: Words in one part: half of the 16,383 positions PostgreSQL counts.
MAX_WORDS = 8000
#: PostgreSQL keeps this many positions of a word, and drops the rest.
KEPT_POSITIONS = 255
#: Uses of one word in a part, with a margin under KEPT_POSITIONS.
MAX_USES = 240
#: Characters in one part: at most 800 kB of UTF-8, under the 1 MB of words.
MAX_CHARS = 200_000
#: Words two consecutive parts share: the longest phrase found across a cut.
OVERLAP = 64
#: Characters two consecutive parts share at most: a text of long tokens
#: (a hex dump) must still move on by most of a part at each cut.
MAX_OVERLAP_CHARS = MAX_CHARS // 4
#: PostgreSQL indexes no word longer than this many bytes: such a word
#: counts toward no limit but the characters.
LONGEST_WORD = 2047
#: A text of fewer characters is never cut, nor even split into words: it
#: holds at most MAX_USES words (a Chinese character is a word alone).
MIN_CHARS = MAX_USES + 1


@functools.cache
def _word() -> re.Pattern[str]:
    """A word as FTS5 reads one (and so PostgreSQL, given ``index_words``):
    a character of Chinese, Japanese or Korean; or a run of letters, digits
    and the marks FTS5 keeps inside a word (those it drops, and those its
    Unicode tables do not know), which end a word to Python's ``\\w``.
    Compiled on first use: the classes are long, and most commands never write."""
    ending = {cp for lo, hi in SEPARATING_MARK_RANGES for cp in range(lo, hi + 1)}
    inside = [cp for cp in range(0x300, 0x30000) if unicodedata.category(chr(cp))[0] == "M" and cp not in ending]
    marks = "".join(re.escape(chr(cp)) for cp in inside)
    return re.compile(f"[{CLASS}]|(?:[^\\W_{CLASS}]|[{marks}])+")


def _indexed_as(word: str) -> str | None:
    """``word`` as PostgreSQL indexes it (folded, as ``index_words`` gives
    it, and lowercased), or None if it is too long to be indexed."""
    folded = strip_diacritics(word).lower()
    return folded if len(folded) <= LONGEST_WORD // 4 or len(folded.encode()) <= LONGEST_WORD else None


def index_parts(text: str) -> list[str]:
    """``text`` as the parts PostgreSQL indexes: ``[text]`` for almost every
    record, several overlapping slices of it for one that reaches a limit.
    A word's uses are counted as the index sees it: café and cafe are one."""
    if len(text) < MIN_CHARS:
        return [text]
    words = [(m.start(), m.end(), _indexed_as(m.group())) for m in _word().finditer(text)]
    parts: list[str] = []
    first = 0  # the index of the current part's first word
    begin = 0  # where the current part's text begins
    uses: Counter[str | None] = Counter()
    at = 0
    while at < len(words):
        start, end, word = words[at]
        counted = at - first - uses[None]  # the words PostgreSQL indexes
        if at > first and (
            counted >= MAX_WORDS or (word is not None and uses[word] >= MAX_USES) or end - words[first][0] > MAX_CHARS
        ):
            parts.append(text[begin:start])
            first = max(first + 1, at - OVERLAP)
            while first < at and start - words[first][0] > MAX_OVERLAP_CHARS:
                first += 1
            begin = words[first][0]
            uses = Counter(w for _, _, w in words[first:at])
            continue
        uses[word] += 1
        at += 1
    parts.append(text[begin:])
    return parts
