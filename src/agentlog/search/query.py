"""A query as a person types it, turned into an FTS5 MATCH expression.

Words are matched as words, whatever punctuation they hold (``foo-bar``,
``a.py`` or ``don't`` are FTS5 syntax errors when passed raw): each word
becomes a quoted FTS5 string. ``"two words"`` is a phrase, a trailing
``*`` a prefix, and a bare ``OR`` / ``NOT`` / ``AND`` between words keeps
its FTS5 meaning. Words are ANDed.

``NOT`` excludes: ``a NOT b`` is the events with ``a`` and without ``b``
(``a AND NOT b`` means the same). It needs a word before it: a query that
starts with ``NOT`` (``NOT b``), or ``OR NOT`` / ``NOT NOT``, is a
SearchError, never searched with the ``NOT`` dropped (that would find
exactly the events the person asked to leave out). "Everything but b" is
not offered: a hit is ranked by the words it matches, and it has none.
A stray ``OR`` / ``AND`` at either end, or a ``NOT`` at the end, excludes
nothing and is dropped.
"""

from __future__ import annotations

import re

from ..errors import SearchError, SearchWarning
from .composed import composed
from .diacritics import SEPARATING_MARKS
from .scripts import pieces, split
from .symbols import without_symbols

__all__ = ["Node", "SearchError", "SearchWarning", "Term", "highlight_words", "parse_query", "to_match"]

#: Words a query may hold (a pasted paragraph as the query took 13 s at
#: 3,000 words, and a repeated word against repetitive text minutes).
MAX_QUERY_WORDS = 128
_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
_OPERATORS = frozenset({"OR", "NOT", "AND"})
#: A word as FTS5's unicode61 tokenizer sees one: letters and digits.
_WORD = re.compile(r"[^\W_]+")
#: A word as a person reads it, for highlighting: words joined by the marks
#: FTS5 ends a word at (a Hindi or Thai vowel sign: ``हिन्दी``, ``กิน``).
_MARKED_WORD = re.compile(f"[^\\W_]+(?:[{SEPARATING_MARKS}]+[^\\W_]+)*")


def _quote(text: str) -> str:
    # FTS5 splits a quoted string as it split the text: a run of Chinese or
    # Japanese characters becomes the phrase of its characters. A symbol (an
    # emoji) is no word to any backend: left out, as PostgreSQL's words are.
    return '"' + split(without_symbols(text)).replace('"', '""') + '"'


def to_match(query: str) -> str:
    """The FTS5 expression for ``query`` (SearchError if it has no words)."""
    return " ".join(_parts(query))


#: A parsed query, for an index that is not FTS5 (PostgreSQL's): a term is
#: (its words, a prefix on the last word?); a node is a term or
#: (operator, left, right), the operator "AND", "NOT" or "OR".
Term = tuple[tuple[str, ...], bool]
Node = Term | tuple[str, "Node", "Node"]


def parse_query(query: str) -> Node:
    """``query`` as a tree with FTS5's meaning, which every backend follows:
    words next to each other bind tightest, then ``NOT`` (``a NOT b c`` is
    ``a`` without ``b c``), then ``AND``, then ``OR``, each from the left.
    A term's words are the letters and digits the SQLite index sees in it
    (``foo-bar`` is the phrase "foo bar"; ``数据库`` the phrase of its three
    characters, ``scripts.py``). SearchError as ``to_match``."""
    tokens = _parts(query)
    position = 0

    def term() -> Node:
        nonlocal position
        text = tokens[position]
        position += 1
        prefix = text.endswith("*")
        body = text[1 : -2 if prefix else -1].replace('""', '"')
        words = tuple(piece for word in _WORD.findall(body) for piece in pieces(word))
        return (words, prefix)

    def level(operator: str | None) -> Node:
        nonlocal position
        below = {"OR": "AND", "AND": "NOT", "NOT": None}
        operands = [level(below[operator]) if operator is not None else term()]
        while position < len(tokens):
            token = tokens[position]
            if operator is None:
                if token in _OPERATORS:
                    break
                operands.append(term())  # words side by side
                continue
            if token != operator:
                break
            position += 1
            operands.append(level(below[operator]))
        if operator == "NOT" and len(operands) > 2:
            # ``a NOT b NOT c`` is ``a NOT (b OR c)``: the same events.
            return ("NOT", operands[0], _balanced("OR", operands[1:]))
        return _balanced(operator or "AND", operands)

    return level("OR")


def _balanced(operator: str, operands: list[Node]) -> Node:
    """``operands`` joined by ``operator`` (AND or OR, either way round the
    same events) as a tree of logarithmic depth: a left-leaning one as deep
    as a pasted traceback is long broke a reader that walks it recursively
    (PostgreSQL's, at a thousand words). Two or three operands lean left,
    as FTS5 reads them."""
    if len(operands) == 1:
        return operands[0]
    middle = (len(operands) + 1) // 2
    return (operator, _balanced(operator, operands[:middle]), _balanced(operator, operands[middle:]))


def _parts(query: str) -> list[str]:
    parts: list[str] = []
    for found in _TOKEN.finditer(composed(query)):
        phrase, word = found.group(1), found.group(2)
        # Text without a letter or digit (``*``, ``...``, an emoji) holds
        # no word the index has, so it would match nothing and the query
        # would say "no matches"; it is left out like any punctuation.
        if phrase is not None:
            if _WORD.search(phrase):
                parts.append(_quote(phrase))
            continue
        if word in _OPERATORS:
            _operator(parts, word, query)
            continue
        prefix = word.endswith("*") and len(word) > 1
        body = word.rstrip("*") if prefix else word
        if _WORD.search(body):
            parts.append(_quote(body) + ("*" if prefix else ""))
    while parts and parts[-1] in _OPERATORS:
        parts.pop()
    if not parts:
        raise SearchError(f"the search query {query!r} has no words to look for")
    if not any(part in _OPERATORS for part in parts):
        parts = list(dict.fromkeys(parts))  # a word twice finds what it finds once
    words = sum(len(_WORD.findall(part)) for part in parts if part not in _OPERATORS)
    if words > MAX_QUERY_WORDS:
        shown = query if len(query) <= 60 else query[:50] + "..."
        raise SearchError(
            f"the search query {shown!r} has {words} words; at most {MAX_QUERY_WORDS} are looked for at once"
            " (the time a search takes grows with them): search for the few that matter"
        )
    return parts


def _operator(parts: list[str], word: str, query: str) -> None:
    """Add operator ``word`` to ``parts``, or drop it where it changes
    nothing; a NOT that would be dropped is an error (see the module doc)."""
    previous = parts[-1] if parts else None
    if previous is None or previous in _OPERATORS:
        if word != "NOT":
            return  # a stray OR / AND: nothing to join
        if previous == "AND":
            parts[-1] = "NOT"  # "a AND NOT b" is FTS5's "a NOT b"
            return
        if previous is None:
            raise SearchError(
                f"cannot search for {query!r}: NOT leaves out, from the events with the words "
                "before it, those with the words after it, and there is no word before it; "
                "put what you are looking for first, as in 'error NOT timeout'"
            )
        raise SearchError(
            f"cannot search for {query!r}: '{previous} NOT' is not a search; NOT needs a word "
            "right before it, as in 'error NOT timeout'"
        )
    parts.append(word)


def highlight_words(query: str) -> list[tuple[str, bool]]:
    """The words a hit is highlighted on: (word, is_prefix), leaving out
    words after NOT (they are, by definition, not in the hit). A word
    keeps the marks inside it (``_MARKED_WORD``): ``กิน`` is highlighted
    whole, not its two letters wherever each stands."""
    words: list[tuple[str, bool]] = []
    negated = False
    for found in _TOKEN.finditer(composed(query)):
        phrase, word = found.group(1), found.group(2)
        if word in _OPERATORS:
            negated = word == "NOT"
            continue
        if not negated:
            if phrase is not None:
                words += [(w, False) for w in _MARKED_WORD.findall(phrase)]
            elif word:
                prefix = word.endswith("*")
                words += [(w, prefix) for w in _MARKED_WORD.findall(word.rstrip("*"))]
        negated = False
    return words
