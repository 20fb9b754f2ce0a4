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
from collections import Counter

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
#: A shorter text is never cut, nor even split into words: MAX_USES + 1
#: uses of a word take at least this many characters.
MIN_CHARS = 2 * (MAX_USES + 1) - 1


@functools.cache
def _word() -> re.Pattern[str]:
    # Compiled on first use: the class is long, and most commands never write.
    return re.compile(f"[{CLASS}]|[^\\W_{CLASS}]+")


def index_parts(text: str) -> list[str]:
    """``text`` as the parts PostgreSQL indexes: ``[text]`` for almost every
    record, several overlapping slices of it for one that reaches a limit."""
    if len(text) < MIN_CHARS:
        return [text]
    words = [(m.start(), m.end(), m.group().lower()) for m in _word().finditer(text)]
    parts: list[str] = []
    first = 0  # the index of the current part's first word
    begin = 0  # where the current part's text begins
    uses: Counter[str] = Counter()
    at = 0
    while at < len(words):
        start, end, word = words[at]
        if at > first and (at - first >= MAX_WORDS or uses[word] >= MAX_USES or end - words[first][0] > MAX_CHARS):
            parts.append(text[begin:start])
            first = max(first + 1, at - OVERLAP)
            begin = words[first][0]
            uses = Counter(w for _, _, w in words[first:at])
            continue
        uses[word] += 1
        at += 1
    parts.append(text[begin:])
    return parts
