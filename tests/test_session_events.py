"""``Session.events()``: every event of every branch in append order, read
in bulk, exactly as an ``event()`` of each id in turn gives it, errors
included. The file backend reads its log in large blocks guided by the
index; the others get each event (the seam's default)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from agentlog import CorruptionError, RecoveryWarning, SessionClosed, Store
from agentlog.backends.files import pathread
from agentlog.backends.files.index import Index
from helpers import BLOB_THRESHOLD, chunk_paths, flip_byte, index_path, line_spans, rewrite_index_entry


def _branched(store: Store) -> str:
    """A session with branches, blobs, a checkout and several batches."""
    with store.create(name="events") as session:
        root = session.append("message", {"content": "start"}, role="user")
        session.append_many([("message", {"content": f"m{i}"}, "assistant") for i in range(30)])
        session.append("tool_result", {"content": "x" * (BLOB_THRESHOLD * 3)}, role="tool")  # a blob
        session.checkout(root.id)
        session.append("message", {"content": "another way"}, role="user")
        for i in range(40):
            session.append("message", {"content": f"n{i} " + "y" * 200}, role="assistant")
        return session.id


def _one_by_one(store: Store, sid: str) -> list[object]:
    with store.open(sid, readonly=True) as session:
        return [session.event(e.id) for e in session.entries()]


def test_events_are_every_event_as_event_gives_it(store: Store) -> None:
    sid = _branched(store)
    with store.open(sid, readonly=True) as session:
        bulk = list(session.events())
    assert bulk == _one_by_one(store, sid)
    assert len(bulk) == 73 and any(not e.loaded for e in bulk)  # the blob's payload stays unloaded


def test_events_span_chunks_and_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many small chunks, and blocks smaller than some lines: lines that
    do not fit a block are read alone, and nothing is skipped or doubled."""
    monkeypatch.setattr(pathread, "BLOCK", 4096)
    monkeypatch.setattr("agentlog.backends.files.scan.BLOCK", 4096)
    store = Store(tmp_path, chunk_size=16 * 1024, blob_threshold=1 << 20)
    with store.create(session_id="s") as session:
        for i in range(300):
            session.append("message", {"content": f"{i} " + "z" * (i * 37 % 9000)}, role="user")
    assert len(chunk_paths(store, "s")) > 5
    with store.open("s", readonly=True) as session:
        bulk = list(session.events())
    assert [e.record["content"].split()[0] for e in bulk] == [str(i) for i in range(300)]
    assert bulk == _one_by_one(store, "s")


def test_a_damaged_record_raises_as_event_raises(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.create(session_id="s") as session:
        for i in range(20):
            session.append("message", {"content": f"m{i}"}, role="user")
    chunk = chunk_paths(store, "s")[0]
    offset, length = line_spans(chunk)[12]
    flip_byte(chunk, offset + length // 2)
    with store.open("s", readonly=True) as session:
        ids = [e.id for e in session.entries()]
        with pytest.raises(CorruptionError) as one:
            session.event(ids[12])
        seen = []
        with pytest.raises(CorruptionError) as bulk:
            for event in session.events():
                seen.append(event.id)
    assert seen == ids[:12]  # every event before the damage, then the same error
    assert (bulk.value.path, bulk.value.offset) == (one.value.path, one.value.offset)


def test_a_damaged_index_entry_is_rebuilt_and_every_event_read(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.create(session_id="s") as session:
        for i in range(20):
            session.append("message", {"content": f"m{i}"}, role="user")
    rewrite_index_entry(index_path(store, "s"), 7, length=5)  # frames no record, checksum made right
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecoveryWarning)
        with store.open("s") as session:
            bulk = list(session.events())
    assert [e.record["content"] for e in bulk] == [f"m{i}" for i in range(20)]
    assert any("index rebuilt" in str(w.message) for w in caught)


def test_a_closed_session_refuses(store: Store) -> None:
    sid = _branched(store)
    session = store.open(sid, readonly=True)
    session.close()
    with pytest.raises(SessionClosed):
        session.events()


def test_a_forward_read_finds_each_next_event_without_a_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index tries the slot after the last one found (as it tries the
    one before, for a path walked backwards): an export from the root to
    HEAD, or the search index catching up, reads a 16-byte id or two an
    event, not a binary search's dozen."""
    store = Store(tmp_path)
    with store.create(session_id="s") as session:
        session.append_many([("message", {"content": f"m{i}"}, "user") for i in range(4000)])
    probes = 0
    original = Index._id_at

    def counted(self: Index, i: int) -> bytes:
        nonlocal probes
        probes += 1
        return original(self, i)

    monkeypatch.setattr(Index, "_id_at", counted)
    with store.open("s", readonly=True) as session:
        ids = [e.id for e in session.entries()]
        probes = 0
        assert [session.event(i).record["content"] for i in ids] == [f"m{i}" for i in range(4000)]
    assert probes <= 2 * len(ids) + 20, f"{probes} id reads for {len(ids)} events"


def test_a_session_closed_midway_reads_no_more(store: Store) -> None:
    """The rest of the stream raises SessionClosed, as any read after
    close() does, rather than read the log on (the file backend opened its
    chunks again, and nothing closed them)."""
    sid = _branched(store)
    session = store.open(sid, readonly=True)
    events = session.events()
    first = next(events)
    session.close()
    with pytest.raises(SessionClosed):
        next(events)
    assert first.record == {"content": "start"}
