"""Words in scripts written without spaces between them: Chinese,
Japanese and Korean; Thai, Lao, Myanmar and Khmer.

FTS5's unicode61 tokenizer (and PostgreSQL's parser) end a word only at a
space or punctuation, so ``数据库连接失败`` is one word, and a search for
``连接`` ("connection") inside it found nothing. Thai, Lao, Myanmar and
Khmer write a sentence without spaces too; there FTS5 ends a word at each
vowel sign or tone mark instead (``search.diacritics``), which cuts a
sentence into pieces that are not words either: ``กิน`` ("eat") was not
found in ``ผมชอบกินข้าว``. Both indexes therefore see
each character of these scripts as a word of its own, and a query's run of
such characters is searched as the phrase of its characters, in order: a
search finds any run of them inside the text, as a person reading it would.

Single characters rather than pairs (bigrams): a query of one character
(``错``) still finds its text, and a phrase of single characters matches
exactly the runs a pair index would, at the price of longer position
lists. FTS5's ``trigram`` tokenizer would need three characters, and many
words in these scripts have two. A dictionary segmenter (ICU's, as
PyICU) would find word boundaries in Thai or Khmer, but it is a heavy
native dependency, SQLite's FTS5 and PostgreSQL would each need their own
build of it, and two segmenters that disagree on a boundary would make
the backends find different events. Characters need no dictionary: a
word is found wherever its letters stand together, inside a longer word
too (as if ``cat`` found ``concatenate``): that is the one cost. A
vowel sign or tone mark between two letters is no word and no position
to either index, so ``กิน`` is the phrase ``ก น``.

For SQLite, a zero-width space marks each boundary in the text given to
FTS5: unicode61 treats it (a format character) as a separator, and it is
taken out again before a snippet is made, so what a hit shows is the text
as stored. PostgreSQL's generated column splits with a regular expression
over the same ranges (schema migration 0008).
"""

from __future__ import annotations

import bisect
import functools
import re

from .composed import composed
from .symbols import MARK, in_word, separate

__all__ = [
    "CJK_RANGES",
    "CLASS",
    "KANA_MARKS",
    "MARK",
    "RANGES",
    "SOUTHEAST_ASIAN_RANGES",
    "pieces",
    "postgres_class",
    "split",
    "unspaced",
    "unsplit",
]

#: The code point ranges of Chinese, Japanese and Korean: CJK ideographs
#: (the unified block, extensions A to H, compatibility ideographs), the
#: ideographic iteration and closing marks, Bopomofo, Hiragana, Katakana
#: (with the phonetic extensions and the halfwidth forms) and Hangul
#: (syllables, jamo, compatibility jamo). PostgreSQL's migrations 0008 to
#: 0012 are written from them: frozen (a change is a new migration, and a
#: new SCHEMA_VERSION of the SQLite index).
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),
    (0x3005, 0x3007),
    (0x3041, 0x30FF),
    (0x3105, 0x312F),
    (0x3131, 0x318E),
    (0x31A0, 0x31BF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7AF),
    (0xD7B0, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x2FA1F),
    (0x30000, 0x323AF),
)
#: Thai and Lao (one range: their blocks touch), Myanmar (with its
#: extensions A and B) and Khmer (with its symbols): SQLite index version
#: 6, PostgreSQL migration 0013.
SOUTHEAST_ASIAN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x19E0, 0x19FF),
    (0xA9E0, 0xA9FF),
    (0xAA60, 0xAA7F),
)
#: Every range whose characters are each a word, in code point order.
RANGES: tuple[tuple[int, int], ...] = tuple(sorted(CJK_RANGES + SOUTHEAST_ASIAN_RANGES))
#: The ranges as the inside of a regular expression's bracket expression.
CLASS = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in RANGES)
_CLASS = CLASS
_STARTS = [lo for lo, _ in RANGES]


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a run of such characters; one such character or a run of other
    letters and digits), compiled on first use: each takes milliseconds,
    which every command would otherwise pay as it starts."""
    return re.compile(f"[{_CLASS}]+"), re.compile(f"[{_CLASS}]|[^{_CLASS}]+")


def unspaced(ch: str) -> bool:
    """Whether the character ``ch`` is of these scripts."""
    at = bisect.bisect_right(_STARTS, ord(ch)) - 1
    return at >= 0 and ord(ch) <= RANGES[at][1]


#: The kana voicing marks (ギ is キ and U+3099 decomposed). They are not
#: accents: they change the sound and the word, and neither index folds
#: them away, so the folding for snippets and ranking keeps them too.
KANA_MARKS = "\u3099\u309a"


def split(text: str) -> str:
    """``text`` with ``MARK`` between each two characters of these scripts,
    and between such a character and a letter or digit next to it (and
    between a symbol and a word it touches: ``symbols.separate``): what
    FTS5 indexes and is asked for, composed first (``composed``)."""
    if text.isascii():
        return text
    text = separate(composed(text))

    def marked(run: re.Match[str]) -> str:
        out = MARK.join(run.group())
        start, end = run.span()
        if start and in_word(text[start - 1]):  # 错误error: two words, not one
            out = MARK + out
        if end < len(text) and in_word(text[end]):
            out += MARK
        return out

    return _patterns()[0].sub(marked, text)


def unsplit(text: str) -> str:
    """``text`` as it was before ``split`` (a ``MARK`` the text held itself,
    being invisible, is dropped with the rest)."""
    return text.replace(MARK, "") if MARK in text else text


def pieces(word: str) -> list[str]:
    """The words the indexes see in ``word`` (letters and digits only):
    each character of these scripts alone, other runs whole."""
    if word.isascii():
        return [word]
    return _patterns()[1].findall(word)


def postgres_class(ranges: tuple[tuple[int, int], ...] = RANGES) -> str:
    """``ranges`` as a bracket expression of PostgreSQL's regular
    expressions (``\\U`` escapes of eight hex digits, so the SQL stays
    ASCII and no escape runs into the next)."""
    return "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]"
