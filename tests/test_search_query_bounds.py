"""A search query's words are bounded, and a repeated word counts once.

Search time grows with the words of the query times what they match: a
pasted paragraph of 3,000 words took 13 s, a word repeated 5,000 times
against text repeating it did not finish in ten minutes, and `agentlog
serve` runs the same code for anyone who can reach it."""

from __future__ import annotations

import pytest

from agentlog import SearchError, Store
from agentlog.search.query import MAX_QUERY_WORDS, parse_query, to_match


def test_a_repeated_word_is_looked_for_once() -> None:
    assert to_match("flaky " * 5000) == '"flaky"'
    assert parse_query("a b a b") == parse_query("a b")
    assert parse_query("a OR b OR a") != parse_query("a OR b")  # with operators, as typed


def test_a_query_of_too_many_words_is_refused_with_why() -> None:
    words = " ".join(f"w{i}" for i in range(MAX_QUERY_WORDS + 1))
    with pytest.raises(SearchError, match=f"{MAX_QUERY_WORDS + 1} words; at most {MAX_QUERY_WORDS}"):
        to_match(words)
    with pytest.raises(SearchError, match="at most"):
        to_match(f'"{words}"')  # a phrase's words count too
    assert to_match(" ".join(f"w{i}" for i in range(MAX_QUERY_WORDS)))


def test_search_of_a_repeated_word_against_repetitive_text_is_quick(make_store) -> None:
    store: Store = make_store()
    with store.create() as s:
        s.append("message", {"content": "flaky " * 5000}, role="user")
    (hit,) = store.search("flaky " * 5000)
    assert hit.kind == "message"
