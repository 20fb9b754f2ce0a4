"""What only the embedded file backend can show (the shared contract is test_conformance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlog import NIL_ID, FileBackend, Store
from agentlog.backends.base import MAX_BLOB_THRESHOLD
from agentlog.event import digest_of
from helpers import RecordingFs, chunk_path, head_path, line_spans, lock_path, session_dir


def test_checkout_is_written_to_the_log_and_the_head_file(file_store):
    """Invariant 2 and 5: the HEAD move rides in the log; the HEAD file follows."""
    with file_store.create(session_id="s") as s:
        a = s.append("message", {"content": "a"})
        s.append("message", {"content": "b"})
        size = chunk_path(file_store, "s").stat().st_size
        s.checkout(a.id)
        assert chunk_path(file_store, "s").stat().st_size > size
    assert head_path(file_store, "s").read_text().strip() == a.id


def test_new_session_head_file_names_the_root(file_store):
    with file_store.create(session_id="s"):
        pass
    assert head_path(file_store, "s").read_text().strip() == NIL_ID


def test_blob_files_are_named_by_their_content_hash(file_store):
    """Invariant 9: a blob's name is the digest of its bytes."""
    with file_store.create(session_id="s") as s:
        e = s.append("tool_result", {"content": "o" * 5000}, role="tool")
    blobs = [p for p in (session_dir(file_store, "s") / "blobs").iterdir()]
    assert [p.name for p in blobs] == [e.digest.removeprefix("sha256:")]
    assert digest_of(blobs[0].read_bytes()) == e.digest


def test_delete_keeps_the_lock_file(file_store):
    """Invariant 7: deleting a lock file would let two writers lock two files."""
    with file_store.create(session_id="s") as s:
        s.append("message", {"content": "x"})
    assert lock_path(file_store, "s").exists()
    file_store.delete("s")
    assert lock_path(file_store, "s").exists()
    assert not session_dir(file_store, "s").exists()
    assert [p.name for p in (Path(file_store.home) / "sessions").iterdir()] == []


def test_unknown_durability_is_refused(home):
    with pytest.raises(ValueError):
        Store(home, durability="sometimes")


@pytest.mark.parametrize("threshold", [-1, "16k", 16.5, True, None, MAX_BLOB_THRESHOLD + 1, 1 << 32])
def test_a_blob_threshold_that_is_not_a_byte_count_is_refused_before_anything_is_made(tmp_path, threshold):
    """A threshold above the ceiling would let a record too long for the
    index slot's 32-bit length (or for a SQL value) be written inline, and
    fail only after its log write; a wrong type would fail at the first
    append. Both are refused at once, and nothing is created."""
    home = tmp_path / "home"
    with pytest.raises(ValueError, match="blob_threshold"):
        Store(home, blob_threshold=threshold)
    assert not home.exists()
    with pytest.raises(ValueError, match="blob_threshold"):
        Store.memory(blob_threshold=threshold)


def test_the_blob_threshold_bounds_are_taken(tmp_path):
    for threshold in (0, MAX_BLOB_THRESHOLD):
        store = Store(tmp_path / str(threshold), blob_threshold=threshold)
        with store.create(session_id="s") as s:
            event = s.append("message", {"content": "x" * 100})
            assert (event.digest is not None) == (threshold == 0)  # 0: every payload is a blob


def test_listing_reads_no_event_log(home):
    """Invariant 10: listing reads session.json and one stat, never a chunk."""
    writer = Store(home)
    for i in range(3):
        with writer.create(session_id=f"s{i}", name=f"n{i}") as s:
            for _ in range(5):
                s.append("message", {"content": "x" * 100})
    fs = RecordingFs()
    rows = Store(backend=FileBackend(str(home), fs=fs)).list()
    assert sorted(r.id for r in rows) == ["s0", "s1", "s2"]
    assert all(r.event_count == 5 for r in rows)
    assert not [p for p in fs.opened if "/chunks/" in p or p.endswith("index.bin")]


def test_context_reads_only_around_the_records_it_returns(home, monkeypatch):
    """Invariant 10: building the context reads the active path's records in
    blocks that end at a record it needs, and stops at the latest compaction:
    what it reads beyond the path is bounded by the first block."""
    from agentlog.backends.files import pathread

    monkeypatch.setattr(pathread, "FIRST_BLOCK", 512)
    monkeypatch.setattr(pathread, "BLOCK", 2048)
    with Store(home).create(session_id="s") as s:
        old = [s.append("message", {"content": f"old {i}" * 10}) for i in range(60)]
        s.append("compaction", {"summary": "sum", "first_kept_event_id": old[-2].id})
        for i in range(3):
            s.append("message", {"content": f"new {i}"})
    fs = RecordingFs()
    store = Store(backend=FileBackend(str(home), fs=fs))
    with store.open("s", readonly=True) as r:
        fs.clear()
        ctx = r.context()
    assert len(ctx) == 6
    spans = line_spans(chunk_path(store, "s"))
    ends = {off + length for off, length in spans}
    reads = fs.reads_of(chunk_path(store, "s"))
    assert all(off + size in ends for off, size in reads)  # every read ends at a record
    # two bulk reads (the path to the compaction, then the kept events), each
    # at most a first block and one grown block past the records it returns
    assert sum(size for _, size in reads) <= 2 * (512 + 2048) + sum(n for _, n in spans[-7:])
    assert min(off for off, _ in reads) > spans[40][0]  # the old history is not read


def test_reopen_reads_only_the_tail(home):
    """Invariant 10: opening costs O(what you read), not O(history)."""
    with Store(home).create(session_id="s") as s:
        for i in range(200):
            s.append("message", {"content": f"{i}" * 20})
    fs = RecordingFs()
    store = Store(backend=FileBackend(str(home), fs=fs))
    with store.open("s") as s:
        assert len(s) == 200
    chunk = chunk_path(store, "s")
    last_offset = line_spans(chunk)[-1][0]
    assert all(off >= last_offset for off, _ in fs.reads_of(chunk))
