"""Full-text search: all history, filters, incremental catch-up, a derived
index that can be deleted, and queries that read no event log."""

from __future__ import annotations

import builtins
import os
import threading

import pytest

from agentlog import Store
from agentlog.search import (
    SearchError,
    SearchHit,
    SearchWarning,
    catch_up,
    index_location,
    reindex,
    search,
)

BIG = 20_000  # over the default 16 KiB blob threshold


@pytest.fixture(params=["files", "memory"])
def store(request, tmp_path):
    """Every backend the search must work on (the lead may swap in the
    project-wide backend fixture)."""
    if request.param == "files":
        return Store(tmp_path / "home")
    return Store.memory()


def _history(store: Store) -> tuple[str, dict[str, str]]:
    """A session with a compaction, an abandoned branch and tool traffic."""
    ids: dict[str, str] = {}
    with store.create(name="history", working_dir="/work/proj") as s:
        first = s.append("message", {"content": "the zanzibar deployment is flaky"}, role="user")
        ids["early"] = first.id
        s.append("message", {"content": "I will look at it", "usage": {"input_tokens": 5}}, role="assistant")
        ids["call"] = s.append(
            "tool_call",
            {"id": "c1", "name": "grep_logs", "arguments": '{"pattern": "quokka-error"}'},
            role="assistant",
        ).id
        ids["result"] = s.append(
            "tool_result",
            {"tool_call_id": "c1", "name": "grep_logs", "content": "found 3 wombat timeouts"},
            role="tool",
        ).id
        ids["abandoned"] = s.append("message", {"content": "try the platypus approach"}, role="assistant").id
        s.select(first.id)
        s.append("message", {"content": "another way then"}, role="assistant")
        for n in range(12):
            s.append(
                "message",
                {"content": f"filler turn {n} " + "words " * 40},
                role="user" if n % 2 else "assistant",
            )
        compaction = s.compact(keep_tokens=50)
        assert compaction is not None
        ids["compaction"] = compaction.id
        ids["big"] = s.append("message", {"content": "x " * BIG + "narwhal"}, role="user").id
        return s.id, ids


def test_finds_text_before_a_compaction_and_on_abandoned_branches(store):
    sid, ids = _history(store)
    with store.open(sid, readonly=True) as s:
        assert ids["early"] not in {e.id for e in s.context()}  # compacted away from the model
        assert ids["abandoned"] not in {e.id for e in s.path()}  # not on the active path
    (early,) = search(store, "zanzibar", kind="message")
    assert (early.session_id, early.event_id, early.kind, early.role) == (
        sid,
        ids["early"],
        "message",
        "user",
    )
    assert [h.event_id for h in search(store, "platypus")] == [ids["abandoned"]]
    assert [h.event_id for h in search(store, "quokka-error")] == [ids["call"]]
    assert [h.event_id for h in search(store, "grep_logs", kind="tool_call")] == [ids["call"]]
    assert [h.event_id for h in search(store, "wombat")] == [ids["result"]]
    assert [h.event_id for h in search(store, "narwhal")] == [ids["big"]]  # a blob payload
    # The compaction's summary is indexed too.
    assert ids["compaction"] in {h.event_id for h in search(store, "zanzibar")}


def test_hits_are_typed_with_highlighted_snippets(store):
    _history(store)
    (hit,) = search(store, "zanzibar", kind="message")
    assert isinstance(hit, SearchHit)
    ((start, end),) = hit.highlights
    assert hit.snippet[start:end].lower() == "zanzibar"
    assert set(hit.to_dict()) >= {"session_id", "event_id", "kind", "role", "timestamp", "snippet"}
    (big,) = search(store, "narwhal")
    assert len(big.snippet) < 300  # one 40 KB "word" does not become the snippet


def test_filters(store):
    sid, ids = _history(store)
    with store.create(name="other", working_dir="/elsewhere") as other:
        other.append("message", {"content": "zanzibar again"}, role="assistant")

    def find(**filters):
        return search(store, "zanzibar", kind="message", **filters)

    assert len(find()) == 2
    assert [h.session_id for h in find(session=sid)] == [sid]
    assert [h.role for h in find(role="assistant")] == ["assistant"]
    assert [h.session_id for h in find(cwd="/work/proj")] == [sid]
    assert [h.session_id for h in find(cwd="/work")] == [sid]
    assert find(cwd="/work/pro") == []  # a directory, not a string prefix
    assert len(find(since="2000-01-01")) == 2
    assert find(since="2999-01-01T00:00:00Z") == []
    assert search(store, "zanzibar", kind="tool_result") == []


def test_ranking_and_query_syntax(store):
    with store.create() as s:
        s.append("message", {"content": "kiwi"}, role="user")
        s.append("message", {"content": "kiwi kiwi kiwi banana"}, role="user")
        s.append("message", {"content": "banana split dessert"}, role="user")
    hits = search(store, "kiwi")
    assert len(hits) == 2 and hits[0].score <= hits[1].score
    assert len(search(store, '"banana split"')) == 1
    assert len(search(store, "kiwi OR dessert")) == 3
    assert len(search(store, "kiw*")) == 2
    assert len(search(store, "banana NOT kiwi")) == 1
    assert len(search(store, "kiwi", limit=1)) == 1


@pytest.mark.parametrize("query", ["", "   ", "OR", '""'])
def test_a_query_without_words_is_a_typed_error(store, query):
    with pytest.raises(SearchError):
        search(store, query)


def test_punctuation_is_not_fts_syntax(store):
    with store.create() as s:
        s.append("message", {"content": "run tests/test_calc.py -k 'add' (now)"}, role="user")
    for query in ["tests/test_calc.py", "-k", "'add'", "(now)", 'a"b', "NEAR(", "col:x"]:
        search(store, query)  # never an sqlite syntax error
    assert len(search(store, "test_calc.py")) == 1


def test_catch_up_is_incremental(store):
    with store.create() as s:
        s.append("message", {"content": "alpha"}, role="user")
        sid = s.id
    assert catch_up(store).events_added == 1
    assert catch_up(store).sessions_indexed == 0  # nothing new: no session reopened
    with store.open(sid) as s:
        s.append("message", {"content": "beta"}, role="user")
    stats = catch_up(store)
    assert (stats.sessions_indexed, stats.events_added) == (1, 1)  # only the new event
    assert len(search(store, "alpha OR beta")) == 2


def test_a_deleted_session_leaves_the_index(store):
    with store.create() as s:
        s.append("message", {"content": "ephemeral"}, role="user")
        sid = s.id
    assert len(search(store, "ephemeral")) == 1
    store.delete(sid)
    assert search(store, "ephemeral") == []


def test_a_session_recreated_under_its_id_is_indexed_again(store):
    with store.create(session_id="same") as s:
        s.append("message", {"content": "first life"}, role="user")
    assert len(search(store, "first")) == 1
    store.delete("same")
    with store.create(session_id="same") as s:
        s.append("message", {"content": "second life"}, role="user")
    assert search(store, "first") == []
    assert len(search(store, "second")) == 1


def test_reindex_rebuilds_everything(store):
    _history(store)
    before = {h.event_id for h in search(store, "zanzibar OR platypus OR narwhal")}
    calls = []
    stats = reindex(store, progress=lambda done, total: calls.append((done, total)))
    assert stats.events_added > 10 and calls[-1] == (1, 1)
    assert {h.event_id for h in search(store, "zanzibar OR platypus OR narwhal")} == before


def test_deleting_the_index_file_loses_nothing(tmp_path):
    store = Store(tmp_path / "home")
    _history(store)
    path = index_location(store.home)
    assert path == os.path.join(store.home, "search", "fts.sqlite3")
    assert len(search(store, "platypus")) == 1
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    assert len(search(store, "platypus")) == 1


def _files_opened_by(monkeypatch, action) -> list[str]:
    """Paths opened (builtins.open and os.open) while ``action`` runs."""
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file, *args, **kwargs):
        opened.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else str(file))
        return real_open(file, *args, **kwargs)

    def spy_os_open(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_os_open(path, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(builtins, "open", spy_open)
        patch.setattr(os, "open", spy_os_open)
        action()
    return [
        p for p in opened if f"{os.sep}chunks{os.sep}" in p or f"{os.sep}blobs{os.sep}" in p or p.endswith("index.bin")
    ]


def test_after_indexing_a_query_opens_no_chunk_or_blob(tmp_path, monkeypatch):
    store = Store(tmp_path / "home")
    _history(store)
    hits: list[SearchHit] = []
    # The spy sees the event log being read while the index catches up...
    assert _files_opened_by(monkeypatch, lambda: hits.extend(search(store, "narwhal")))
    # ...and nothing of it once the index is up to date.
    assert _files_opened_by(monkeypatch, lambda: hits.extend(search(store, "platypus"))) == []
    assert len(hits) == 2


def test_a_writer_is_not_blocked_by_searches(tmp_path):
    store = Store(tmp_path / "home")
    _history(store)
    writer = store.open(store.list()[0].id)  # holds the lease for the whole test
    stop = threading.Event()
    errors: list[BaseException] = []

    def searching() -> None:
        try:
            while not stop.is_set():
                search(store, "zanzibar OR appended")
        except BaseException as exc:  # handed to the main thread to fail the test
            errors.append(exc)

    thread = threading.Thread(target=searching)
    thread.start()
    try:
        for n in range(30):
            writer.append("message", {"content": f"appended {n}"}, role="user")
    finally:
        stop.set()
        thread.join()
        writer.close()
    assert errors == []
    assert len(search(store, "appended", limit=100)) == 30


def test_snippets_highlight_words_prefixes_and_phrases(store):
    with store.create() as s:
        s.append("message", {"content": "Refactoring the Café parser; the café reopened"}, role="user")
    (hit,) = search(store, "refactor* cafe")
    marked = [hit.snippet[a:b] for a, b in hit.highlights]
    assert marked == ["Refactoring", "Café", "café"]
    (hit,) = search(store, '"cafe parser" NOT zebra')
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["Café", "parser", "café"]


def test_with_many_matches_the_newest_candidates_are_ranked(store, monkeypatch):
    import agentlog.search as search_module

    with store.create() as s:
        old = [s.append("message", {"content": "apple " * 5}, role="user").id for _ in range(3)]
        new = [s.append("message", {"content": "apple pie"}, role="user").id for _ in range(3)]
    assert {h.event_id for h in search(store, "apple", limit=3)} == set(old)  # best ranked
    monkeypatch.setattr(search_module, "CANDIDATES", 3)
    assert {h.event_id for h in search(store, "apple", limit=3)} == set(new)  # newest only


def test_a_backend_with_its_own_search_answers_instead(store, monkeypatch):
    seen = {}

    def native(query, **filters):
        seen.update(filters, query=query)
        return [SearchHit("s", "e", "message", "user", "t", "snip", (), 0.0)]

    monkeypatch.setattr(store.backend, "search", native, raising=False)
    assert [h.session_id for h in search(store, "words", kind="message", limit=3)] == ["s"]
    assert seen["query"] == "words" and seen["kind"] == "message" and seen["limit"] == 3


def test_the_index_file_is_private(tmp_path):
    store = Store(tmp_path / "home")
    _history(store)
    search(store, "zanzibar")
    path = index_location(store.home)
    assert os.stat(path).st_mode & 0o077 == 0
    assert os.stat(os.path.dirname(path)).st_mode & 0o077 == 0


def test_candidates_are_ranked_by_bm25_in_python():
    from agentlog.search.rank import rank

    docs = [(1, "apple " + "filler " * 30), (2, "apple apple apple"), (3, "Äpple pie"), (4, "nothing here")]
    ranked = rank(docs, [("apple", False)], 4)
    # Most frequent first, then the short one (diacritics fold, as in FTS5),
    # then the long one; 4 has no apple and scores 0.
    assert [r for r, _ in ranked] == [2, 3, 1, 4]
    assert ranked[0][1] < ranked[1][1] < ranked[2][1] < ranked[3][1] == 0
    assert [r for r, _ in rank(docs, [("äpp", True)], 5)][:1] == [2]
    assert rank([], [("x", False)], 3) == []


def test_a_damaged_session_is_reported_not_skipped_silently(tmp_path):
    store = Store(tmp_path / "home")
    with store.create(session_id="healthy") as s:
        s.append("message", {"content": "koala one"}, role="user")
    with store.create(session_id="damaged") as s:
        for n in range(3):
            s.append("message", {"content": f"koala {n}"}, role="user")
    chunk = tmp_path / "home" / "sessions" / "damaged" / "chunks" / "000000.jsonl"
    data = bytearray(chunk.read_bytes())
    data[data.index(b"koala 1") + 1] ^= 0x01  # a complete line, now failing its checksum
    chunk.write_bytes(bytes(data))
    (tmp_path / "home" / "sessions" / "damaged" / "index.bin").unlink()  # force a rescan
    with pytest.warns(SearchWarning, match="damaged.*agentlog fsck damaged"):
        hits = search(store, "koala")
    assert "healthy" in {h.session_id for h in hits}
    with pytest.warns(SearchWarning):
        stats = catch_up(store)
    assert [sid for sid, _ in stats.failed] == ["damaged"]
