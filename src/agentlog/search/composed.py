"""Search reads every text composed (Unicode NFC), and every query.

The same word can be written two ways: ``é`` as one character or as
``e`` and a combining accent; a Korean syllable ``한`` as one character or
as its three letters (U+1112 U+1161 U+11AB), which is how macOS writes
the names of files, so a tool's listing of them reaches a session that
way. A person types the composed form. Neither index relates the two:
FTS5 drops a decomposed accent but keeps Korean letters as letters, and
PostgreSQL's parser keeps both. So ``한글`` never found a file name
written by macOS, and on PostgreSQL a query with a decomposed accent
found nothing.

Both indexes and every query therefore see the composed text
(``scripts.split`` for the SQLite index, ``searchable_text`` for
PostgreSQL's, ``query`` for the words asked for). Snippets are cut from
the text the index holds, so they show it composed: it reads the same.
"""

from __future__ import annotations

import functools
import sys
import unicodedata

__all__ = ["composed", "uncomposed_ranges"]


def composed(text: str) -> str:
    """``text`` in Unicode's composed form (NFC): the same object where it
    is so already, which the check finds fast (a tenth of the composing)."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


@functools.cache
def uncomposed_ranges() -> tuple[tuple[int, int], ...]:
    """The ranges of code points without which a text is composed already:
    a combining mark (it may compose, or need reordering), a character
    that composing replaces, and the second of any pair that composes
    (Korean vowel and final letters among them). A prefilter, so that a
    migration sends PostgreSQL's rows without them nowhere; whether a
    text is composed is decided by ``composed`` alone."""
    points: set[int] = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul V and T letters
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        if unicodedata.combining(ch) or unicodedata.normalize("NFC", ch) != ch:
            points.add(code)
        decomposition = unicodedata.decomposition(ch).split()
        if len(decomposition) == 2 and not decomposition[0].startswith("<"):
            points.add(int(decomposition[1], 16))
    ranges: list[list[int]] = []
    for code in sorted(points):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return tuple((lo, hi) for lo, hi in ranges)
