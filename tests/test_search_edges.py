"""Search at its edges, found by QA: queries as long as a pasted traceback,
a word glued to Chinese in a highlight, a limit above the candidate pool,
and ``--reindex`` on a store that keeps its own index."""

from __future__ import annotations

import pytest

import agentlog.search as search_module
from agentlog import SearchError, Store
from agentlog.search import IndexStats, reindex, search, searches_itself
from agentlog.search.query import Node, parse_query
from agentlog.search.snippet import make_snippet
from cli_support import ok, ok_json


def _depth(node: Node) -> int:
    if len(node) == 2:
        return 1
    _operator, left, right = node
    return 1 + max(_depth(left), _depth(right))


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("word " * 2000, True),  # a pasted log: the same word, looked for once
        ("word OR " * 127 + "word", True),
        ("word* " * 2000, True),
        ("word NOT " * 64 + "zebra", False),  # word NOT word: nothing
        ("word " + "NOT zebra " * 127, True),
    ],
    ids=["and", "or", "prefix", "not-self", "not-others"],
)
def test_a_query_as_long_as_allowed_is_searched_on_every_backend(store: Store, query: str, found: bool) -> None:
    # PostgreSQL's reader walked a tree as deep as the query was long and
    # failed with RecursionError past about a thousand words; a query is now
    # at most MAX_QUERY_WORDS words (test_search_query_bounds.py).
    with store.create() as s:
        event = s.append("message", {"content": "word by word"}, role="user")
    assert [h.event_id for h in search(store, query)] == ([event.id] if found else [])


def test_a_longer_query_is_refused_on_every_backend(store: Store) -> None:
    with store.create() as s:
        s.append("message", {"content": "word by word"}, role="user")
    for query in ("word OR " * 2000 + "word", "word NOT " * 1600 + "zebra"):
        with pytest.raises(SearchError, match="at most"):
            search(store, query)


def test_a_parsed_query_is_as_deep_as_the_log_of_its_length() -> None:
    assert _depth(parse_query(" ".join(f"w{i}" for i in range(128)))) <= 8
    assert _depth(parse_query("a OR " * 127 + "b")) <= 9
    assert _depth(parse_query("a" + " NOT b" * 127)) <= 9
    a, b, c = ((("a",), False), (("b",), False), (("c",), False))
    # the same events as FTS5's left-to-right reading
    assert parse_query("a NOT b NOT c") == ("NOT", a, ("OR", b, c))
    assert parse_query("a b c") == ("AND", ("AND", a, b), c)


def test_a_word_next_to_chinese_is_highlighted(store: Store) -> None:
    # The index sees "test" in "test数据" as a word (each Chinese character
    # is one), so it is a hit; its highlight must mark it too.
    with store.create() as s:
        s.append("message", {"content": "errorОшибка test数据 数据test"}, role="user")
    (hit,) = search(store, "test")
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["test", "test"]


def test_a_prefix_highlight_stops_where_chinese_begins() -> None:
    snippet, spans = make_snippet("testing数据 tes数", [("tes", True)])
    assert [snippet[a:b] for a, b in spans] == ["testing", "tes"]
    snippet, spans = make_snippet("snake_case test_x", [("test", False)])
    assert [snippet[a:b] for a, b in spans] == ["test"]


def test_a_limit_above_the_candidates_gives_every_match(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # "-n 5000" with 5,000 matches showed 1,000 (CANDIDATES) on the SQLite
    # index and 5,000 on PostgreSQL.
    monkeypatch.setattr(search_module, "CANDIDATES", 3)
    with store.create() as s:
        ids = {s.append("message", {"content": f"apple {n}"}, role="user").id for n in range(8)}
    assert {h.event_id for h in search(store, "apple", limit=8)} == ids
    assert {h.event_id for h in search(store, "apple", limit=1_000_000)} == ids
    assert len(search(store, "apple", limit=5)) == 5


def test_reindex_of_a_store_that_searches_itself_reads_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    with store.create() as s:
        s.append("message", {"content": "apple"}, role="user")
    if not searches_itself(store):
        assert reindex(store).events_added == 1
        return

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("reindex read the store's events")

    monkeypatch.setattr(store, "open", never)
    assert reindex(store) == IndexStats(0, 0, 0, 0)


def test_cli_reindex_on_a_store_with_its_own_index_says_there_is_nothing_to_do(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store.url.startswith("memory:"):
        pytest.skip("the CLI would open a memory store of its own")
    with store.create() as s:
        s.append("message", {"content": "apple pie"}, role="user")
    if not searches_itself(store):  # the file stores: as if they searched themselves
        monkeypatch.setattr("agentlog.cli.search.searches_itself", lambda _store: True)
    assert ok_json(store.url, "search", "--reindex")["reindexed"] is False
    assert "nothing to rebuild" in ok(store.url, "search", "--reindex")
    assert "apple pie" in ok(store.url, "search", "--reindex", "apple")
