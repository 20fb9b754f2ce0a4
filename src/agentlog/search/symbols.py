"""Symbols next to a word: where every backend ends the word.

FTS5's unicode61 tokenizer reads characters by the tables of Unicode 6.1
(2012), and takes a character those tables do not know, or one of the
private use area, for a letter. So an emoji added since (🤖, 🥲, most of
those an agent writes) or an icon font's glyph (a terminal prompt's
branch symbol, U+E0A0) made one word of the word it touched: ``🤖agent``
was one word to the SQLite index, and a search for ``agent`` did not find
it. PostgreSQL's parser and the query parser (Python's ``str.isalnum``)
end the word there. The SQLite index is therefore given a ``MARK``
between such a symbol and a letter or digit next to it (``separate``), and
ends the word there too; a query leaves the symbols out
(``without_symbols``), as the words PostgreSQL is asked for do.

A symbol here is a character that is no letter, digit, mark or space to
Python and may be a letter to FTS5: one of the private use areas, or one
Unicode 3.2 did not have (``is_symbol``). Older punctuation and symbols
(``，``, ``✓``) are separators to every index already.

What stays different: such a symbol is still a word of its own to FTS5
(nothing the text can hold makes it a separator; only the tokenizer's own
``separators`` option could, at the price of a rebuilt index), so the
SQLite index does not find a phrase across it (``"branch main"`` in
``branch\ue0a0main``), where PostgreSQL does.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["MARK", "in_word", "is_symbol", "separate", "without_symbols"]

#: U+200B ZERO WIDTH SPACE: a separator to unicode61, invisible in text.
MARK = "\u200b"


def is_symbol(ch: str) -> bool:
    """Whether ``ch`` is a symbol FTS5 may take for a letter: of a private
    use area, or no letter, digit, mark or space that Unicode 3.2 did not
    have (the oldest tables ``unicodedata`` keeps; FTS5's are 6.1, so this
    takes in some it knows, which a ``MARK`` beside leaves as they were).
    Older symbols (``，``, ``✓``, ``─``) are separators to FTS5 already:
    marking them would only make the index longer."""
    category = unicodedata.category(ch)
    return category == "Co" or (category[0] in "SPC" and unicodedata.ucd_3_2_0.category(ch) == "Cn")


_is_symbol = functools.cache(is_symbol)  # separate asks of the same emoji again and again


def in_word(ch: str) -> bool:
    """Whether ``ch`` goes on the word it touches, to FTS5: a letter or a
    digit, or a mark (an accent, decomposed as in ``cafe\u0301``: FTS5
    keeps it in the word, and drops it). A mark FTS5 ends a word at (a Thai
    vowel sign) counts too: a ``MARK`` beside it changes no word."""
    return ch.isalnum() or (len(ch) == 1 and unicodedata.category(ch)[0] == "M")


@functools.cache
def _candidates() -> re.Pattern[str]:
    """A run of the symbols of the Basic Multilingual Plane, or of any
    characters past it. One exact class of the first (a bitmap to ``re``:
    10 ns a character) and one range of the rest (an exact class of them
    cost 400 ns a character); ``separate`` asks ``is_symbol`` of each
    character past the plane, where emoji live and few texts go. Compiled
    on first use (12 ms), which most commands never make."""
    ranges: list[list[int]] = []
    for cp in range(0x80, 0x10000):
        if not 0xD800 <= cp < 0xE000 and is_symbol(chr(cp)):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    plane = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)
    return re.compile(f"(?:[{plane}]|[\U00010000-\U0010ffff])+")


def separate(text: str) -> str:
    """``text`` with ``MARK`` between a symbol and a letter or digit next
    to it (and nowhere else: a line of ``───`` touches no word, and is left
    as it is)."""
    if text.isascii():
        return text

    def marked(run: re.Match[str]) -> str:
        start, end = run.span()
        out = []
        before = text[start - 1] if start else ""
        for ch in run.group() + (text[end] if end < len(text) else ""):
            # a symbol and a letter or digit side by side: never two symbols,
            # nor two letters (a character of Chinese past the plane is one)
            if before and (_is_symbol(before) and in_word(ch) or in_word(before) and _is_symbol(ch)):
                out.append(MARK)
            out.append(ch)
            before = ch
        return "".join(out)[: None if end == len(text) else -1]

    return _candidates().sub(marked, text)


def without_symbols(text: str) -> str:
    """``text`` with each symbol a space where it starts or ends a word:
    what a query's words are. A symbol inside a word (``build🤖ok``) stays,
    so the query is the phrase the SQLite index holds for that text
    (``build``, ``🤖``, ``ok``); PostgreSQL's words of it are the same
    phrase without the symbol, and find the same text."""
    if text.isascii():
        return text

    def dropped(run: re.Match[str]) -> str:
        start, end = run.span()
        chars = run.group()
        symbol = [_is_symbol(ch) for ch in chars]
        # the character before and after each one that is not a symbol (a
        # run may hold letters too: any character past the plane is in it)
        left, last = [], text[start - 1] if start else ""
        for ch, sym in zip(chars, symbol, strict=True):
            left.append(last)
            last = last if sym else ch
        right, last = [""] * len(chars), text[end] if end < len(text) else ""
        for at in range(len(chars) - 1, -1, -1):
            right[at] = last
            last = last if symbol[at] else chars[at]
        return "".join(
            " " if sym and not (in_word(lo) and in_word(hi)) else ch
            for ch, sym, lo, hi in zip(chars, symbol, left, right, strict=True)
        )

    return _candidates().sub(dropped, text)
