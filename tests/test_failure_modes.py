"""One test per way the file backend's bytes can be found damaged on disk.

In the manner of leveldb's log_test: each test builds a small session,
damages real files byte by byte the way a crash or a bad disk would, and
checks that opening, reading and fsck tell a torn tail (cut off, with a
RecoveryWarning) from corruption (a CorruptionError naming file and
offset), and never skip anything silently. Invariants cite DESIGN.md.
"""

from __future__ import annotations

import os

import pytest

from agentlog import (
    NIL_ID,
    AgentlogError,
    BlobIntegrityError,
    CorruptionError,
    FileBackend,
    RecoveryWarning,
    Store,
)
from helpers import (
    BLOB_THRESHOLD,
    RecordingFs,
    blob_path,
    chunk_path,
    chunk_paths,
    cut_tail,
    errors_of,
    flip_byte,
    head_path,
    index_at,
    index_path,
    line_spans,
    open_quietly,
    rewrite_index_entry,
    session_dir,
    truncate,
)

SID = "s"

# Recovery warnings are expected here; the tests that care assert them.
pytestmark = pytest.mark.filterwarnings("ignore::agentlog.RecoveryWarning")


def build(store: Store, n: int = 5, **record) -> list:
    with store.create(session_id=SID) as s:
        return [s.append("message", {"i": i, "pad": "p" * 40, **record}, role="user") for i in range(n)]


def drop_index_entries(store: Store, keep: int) -> None:
    """The index as a crash before its write leaves it: the first ``keep`` entries."""
    truncate(index_path(store, SID), index_at(keep))


def path_ids(session) -> list[str]:
    return [e.id for e in session.path()]


# === torn tails (invariant 3: cut off with a warning) =========================
def test_torn_tail_is_truncated_on_writer_open(file_store):
    events = build(file_store)
    chunk = chunk_path(file_store, SID)
    last_offset, last_len = line_spans(chunk)[-1]
    cut_tail(chunk, last_len // 2)
    drop_index_entries(file_store, 4)  # the crash came before the index write
    with pytest.warns(RecoveryWarning, match="truncated"):
        s = file_store.open(SID)
    with s:
        assert chunk.stat().st_size == last_offset
        assert s.head == events[3].id
        assert path_ids(s) == [e.id for e in events[:4]]
        assert events[4].id not in s
        e = s.append("message", {"after": "crash"})
        assert e.parent_id == events[3].id
    assert errors_of(file_store.fsck(SID)) == []


def test_torn_tail_with_index_ahead_of_the_log(home):
    """Without syncs (durability off) the index may name a record the log lost."""
    store = Store(home, durability="off")
    events = build(store)
    chunk = chunk_path(store, SID)
    cut_tail(chunk, 7)
    with pytest.warns(RecoveryWarning):
        s = store.open(SID)
    with s:
        assert s.head == events[3].id
        assert events[4].id not in s
        assert len(s) == 4
        assert s.append("message", {"x": 1}).parent_id == events[3].id
    assert errors_of(store.fsck(SID)) == []


def test_torn_tail_is_left_alone_by_readers(file_store):
    """Invariant 7: a reader never sees a torn record, and never writes."""
    events = build(file_store)
    chunk = chunk_path(file_store, SID)
    cut_tail(chunk, 10)
    drop_index_entries(file_store, 4)
    size = chunk.stat().st_size
    with file_store.open(SID, readonly=True) as r:
        assert r.head == events[3].id
        assert len(r) == 4
    assert chunk.stat().st_size == size
    problems = file_store.fsck(SID)
    assert errors_of(problems) == []
    assert any("torn" in p.message for p in problems)


def test_zero_filled_tail_is_a_torn_tail(file_store):
    """A file system may extend a file with zeros it never got the data for."""
    events = build(file_store, 3)
    chunk = chunk_path(file_store, SID)
    size = chunk.stat().st_size
    with open(chunk, "ab") as f:
        f.write(b"\0" * 300)
    with pytest.warns(RecoveryWarning):
        s = file_store.open(SID)
    with s:
        assert chunk.stat().st_size == size
        assert s.head == events[-1].id


def test_torn_index_line_is_cut(file_store):
    events = build(file_store)
    truncate(index_path(file_store, SID), index_at(4) + 40)
    s, _ = open_quietly(file_store, SID)
    with s:
        assert s.head == events[-1].id
        assert [e.id for e in s.entries()] == [e.id for e in events]
    assert index_path(file_store, SID).stat().st_size == index_at(5)
    assert file_store.fsck(SID) == []


# === corruption (invariant 3: typed error, file and offset, never skipped) ====
def test_checksum_mismatch_mid_file_is_corruption(file_store):
    events = build(file_store)
    chunk = chunk_path(file_store, SID)
    offset, length = line_spans(chunk)[2]
    flip_byte(chunk, offset + length // 2)
    with file_store.open(SID) as s:  # opening reads only the log's end: no error yet
        assert s.event(events[4].id).record["i"] == 4
        with pytest.raises(CorruptionError) as info:
            s.event(events[2].id)
    assert info.value.path == str(chunk)
    assert info.value.offset == offset
    problems = errors_of(file_store.fsck(SID))
    assert any(p.path == str(chunk) and p.offset == offset for p in problems)


def test_checksum_mismatch_is_never_walked_past(file_store):
    events = build(file_store)
    chunk = chunk_path(file_store, SID)
    offset, length = line_spans(chunk)[1]
    flip_byte(chunk, offset + 60)
    with file_store.open(SID, readonly=True) as r:
        assert r.event(events[0].id).record["i"] == 0
        with pytest.raises(CorruptionError) as info:
            r.path()
        assert (info.value.path, info.value.offset) == (str(chunk), offset)
        # The index a reader derived only up to the damage never answers for
        # the rest: the reader goes back to the index it had, and every
        # event read through it is checked against its own line again.
        assert r.event(events[4].id).record["i"] == 4
        with pytest.raises(CorruptionError):
            r.event(events[1].id)


def test_corruption_found_by_a_writer_stops_it_from_forking(file_store):
    """Invariant 3 and 5: once a writer meets a damaged record, it must not
    carry on from a HEAD derived from the log before the damage."""
    events = build(file_store)
    chunk = chunk_path(file_store, SID)
    offset, length = line_spans(chunk)[2]
    flip_byte(chunk, offset + length // 2)
    s = file_store.open(SID)
    try:
        with pytest.raises(CorruptionError):
            s.event(events[2].id)
        assert s.head == events[4].id
        with pytest.raises(AgentlogError):
            s.append("message", {"would": "fork"})
        with pytest.raises(CorruptionError):
            s.event(events[4].id)  # the partial index must not pass for the whole
    finally:
        s.close()
    with pytest.raises(CorruptionError) as info:
        file_store.open(SID)
    assert (info.value.path, info.value.offset) == (str(chunk), offset)
    with pytest.raises(CorruptionError):
        file_store.open(SID, readonly=True)


def test_checksum_mismatch_in_the_unindexed_tail_fails_open(file_store):
    """A damaged record the open must read is reported there, not skipped."""
    build(file_store)
    chunk = chunk_path(file_store, SID)
    offset, length = line_spans(chunk)[3]
    flip_byte(chunk, offset + length // 2)
    drop_index_entries(file_store, 2)
    for readonly in (False, True):
        with pytest.raises(CorruptionError) as info:
            file_store.open(SID, readonly=readonly)
        assert (info.value.path, info.value.offset) == (str(chunk), offset)
    assert chunk.stat().st_size == sum(n for _, n in line_spans(chunk))


def test_complete_final_line_with_bad_checksum_is_not_a_torn_tail(file_store):
    """A complete record failing its checksum is corruption even at the end:
    truncating it would silently drop an acknowledged event."""
    build(file_store)
    chunk = chunk_path(file_store, SID)
    offset, length = line_spans(chunk)[-1]
    flip_byte(chunk, offset + 20)
    size = chunk.stat().st_size
    with pytest.raises(CorruptionError) as info:
        file_store.open(SID)
    assert (info.value.path, info.value.offset) == (str(chunk), offset)
    assert chunk.stat().st_size == size


def test_garbage_line_is_corruption(file_store):
    build(file_store, 2)
    chunk = chunk_path(file_store, SID)
    size = chunk.stat().st_size
    with open(chunk, "ab") as f:
        f.write(b"this is not a record\n")
    with pytest.raises(CorruptionError) as info:
        file_store.open(SID)
    assert (info.value.path, info.value.offset) == (str(chunk), size)
    assert any(p.offset == size for p in errors_of(file_store.fsck(SID)))


def test_torn_record_in_a_sealed_chunk_is_corruption(home):
    """Only the last chunk can end torn: a record never spans two chunks."""
    store = Store(home, chunk_size=4096)
    build(store, 40)
    first = chunk_paths(store, SID)[0]
    assert len(chunk_paths(store, SID)) > 2
    offset, _ = line_spans(first)[-1]
    cut_tail(first, 5)
    with pytest.raises(CorruptionError) as info:
        with store.open(SID) as s:
            s.path()
    assert (info.value.path, info.value.offset) == (str(first), offset)
    assert any(p.path == str(first) for p in errors_of(store.fsck(SID)))


def test_missing_chunk_is_corruption(home):
    store = Store(home, chunk_size=4096)
    build(store, 40)
    chunks = chunk_paths(store, SID)
    os.unlink(chunks[1])
    with pytest.raises(CorruptionError):
        store.open(SID)
    assert errors_of(store.fsck(SID))


def test_damaged_session_json_is_reported(file_store):
    build(file_store, 2)
    meta = session_dir(file_store, SID) / "session.json"
    meta.write_bytes(meta.read_bytes()[:-5])
    assert [b.id for b in file_store.broken()] == [SID]
    assert SID not in [r.id for r in file_store.list(archived=True)]
    assert any(p.path == str(meta) for p in errors_of(file_store.fsck(SID)))


# === the derived index (invariant 2: validated and rebuilt from the log) =====
def _rewrite_index_line(store: Store, line: int, **changes: int) -> None:
    rewrite_index_entry(index_path(store, SID), line, **changes)


def test_bad_length_in_the_last_index_entry_rebuilds_the_index(file_store):
    events = build(file_store)
    _rewrite_index_line(file_store, 4, length=3)
    with pytest.warns(RecoveryWarning, match="index rebuilt"):
        s = file_store.open(SID)
    with s:
        assert s.head == events[-1].id
        assert path_ids(s) == [e.id for e in events]
    assert file_store.fsck(SID) == []


def test_bad_length_mid_index_rebuilds_on_read(file_store):
    events = build(file_store)
    _rewrite_index_line(file_store, 1, length=3 * 512)
    s, _ = open_quietly(file_store, SID)
    with s:
        with pytest.warns(RecoveryWarning, match="index rebuilt"):
            assert s.event(events[1].id).record["i"] == 1
        assert path_ids(s) == [e.id for e in events]
        s.append("message", {"x": 1})
    assert file_store.fsck(SID) == []


def test_bad_offset_mid_index_rebuilds_for_a_reader(file_store):
    events = build(file_store)
    _rewrite_index_line(file_store, 2, offset=0)  # points at another record
    with file_store.open(SID, readonly=True) as r:
        with pytest.warns(RecoveryWarning, match="index rebuilt"):
            assert r.event(events[2].id).record["i"] == 2


def test_missing_index_is_rebuilt(file_store):
    events = build(file_store)
    os.unlink(index_path(file_store, SID))
    s, _ = open_quietly(file_store, SID)
    with s:
        assert s.head == events[-1].id
        assert path_ids(s) == [e.id for e in events]
    assert index_path(file_store, SID).stat().st_size == index_at(5)
    assert file_store.fsck(SID) == []


def test_missing_index_does_not_stop_a_reader(file_store):
    """Invariant 2: the index is derived, so a reader can derive it too."""
    events = build(file_store)
    os.unlink(index_path(file_store, SID))
    r, _ = open_quietly(file_store, SID, readonly=True)
    with r:
        assert r.head == events[-1].id
        assert path_ids(r) == [e.id for e in events]
    assert not index_path(file_store, SID).exists()  # readers write nothing


def test_damaged_index_line_is_rebuilt(file_store):
    events = build(file_store)
    flip_byte(index_path(file_store, SID), index_at(2) + 40)  # in a field, not the id
    s, _ = open_quietly(file_store, SID)
    with s:
        # the whole-path read takes records from the log in blocks: it does
        # not need that index line, and returns the path whole
        assert path_ids(s) == [e.id for e in events]
        with pytest.warns(RecoveryWarning, match="index rebuilt"):
            assert s.event(events[2].id).id == events[2].id  # a lookup that reads the line
    assert file_store.fsck(SID) == []


def test_damaged_id_in_the_index_does_not_hide_an_event(file_store):
    """A lookup is a binary search over ids; a flipped id byte must not turn
    an event that is in the log into EventNotFound."""
    events = build(file_store, 7)
    flip_byte(index_path(file_store, SID), index_at(3) + 14)
    s, _ = open_quietly(file_store, SID)
    with s:
        with pytest.warns(RecoveryWarning, match="index rebuilt"):
            assert s.event(events[3].id).record["i"] == 3
        assert all(e.id in s for e in events)
    assert file_store.fsck(SID) == []


def test_damaged_index_is_reported_by_fsck(file_store):
    build(file_store)
    index = index_path(file_store, SID)
    flip_byte(index, index_at(1) + 50)
    assert any(p.path == str(index) and p.offset == index_at(1) for p in errors_of(file_store.fsck(SID)))


def test_index_lagging_the_log_is_completed_from_the_tail(home):
    """Invariant 2 and 10: only the log's tail after the last indexed record is read."""
    store = Store(home)
    events = build(store, 30)
    drop_index_entries(store, 20)
    chunk = chunk_path(store, SID)
    last_indexed = line_spans(chunk)[19][0]
    fs = RecordingFs()
    s = Store(backend=FileBackend(str(home), fs=fs)).open(SID)
    with s:
        assert s.head == events[-1].id
        assert len(s) == 30
        assert min(off for off, _ in fs.reads_of(chunk)) == last_indexed
    assert index_path(store, SID).stat().st_size == index_at(30)
    assert store.fsck(SID) == []


def test_index_cut_inside_a_batch_is_completed(file_store):
    """An index write cut at a line boundary can stop inside a batch's entries."""
    with file_store.create(session_id=SID) as s:
        first = s.append("message", {"i": 0})
        batch = s.append_many([("message", {"b": j}) for j in range(4)])
    drop_index_entries(file_store, 3)  # the first event and two of the four members
    s, _ = open_quietly(file_store, SID)
    with s:
        assert path_ids(s) == [first.id] + [e.id for e in batch]
        assert s.append("message", {"x": 1}).parent_id == batch[-1].id
    assert file_store.fsck(SID) == []


# === HEAD (invariant 5: derived from the log, the file a cache) ===============
def test_stale_head_file_is_rewritten_from_the_log(file_store):
    events = build(file_store)
    head = head_path(file_store, SID)
    head.write_text(events[1].id + "\n")
    assert any("HEAD" in p.message for p in file_store.fsck(SID))
    with file_store.open(SID, readonly=True) as r:
        assert r.head == events[-1].id
    assert head.read_text().strip() == events[1].id  # readers do not write
    with file_store.open(SID) as s:
        assert s.head == events[-1].id
    assert head.read_text().strip() == events[-1].id
    assert file_store.fsck(SID) == []


def test_stale_head_after_a_checkout(file_store):
    events = build(file_store)
    with file_store.open(SID) as s:
        s.checkout(events[1].id)
    head_path(file_store, SID).write_text(events[-1].id + "\n")
    with file_store.open(SID) as s:
        assert s.head == events[1].id
    assert head_path(file_store, SID).read_text().strip() == events[1].id


@pytest.mark.parametrize(
    "content", [b"", b"garbage\n", b"\xff\xfe" * 30, None], ids=["empty", "garbage", "binary", "missing"]
)
def test_unreadable_head_file_is_rewritten(file_store, content):
    events = build(file_store)
    head = head_path(file_store, SID)
    if content is None:
        head.unlink()
    else:
        head.write_bytes(content)
    with file_store.open(SID) as s:
        assert s.head == events[-1].id
    assert head.read_text().strip() == events[-1].id


def test_interrupted_head_rename_is_cleaned(file_store):
    events = build(file_store)
    head = head_path(file_store, SID)
    tmp = head.with_name("HEAD.tmp")
    head.write_text(events[2].id + "\n")
    tmp.write_text(events[-1].id[:10])  # the crash came mid-write of the temp file
    assert any(p.path == str(tmp) for p in file_store.fsck(SID))
    with file_store.open(SID) as s:
        assert s.head == events[-1].id
    assert not tmp.exists()
    assert head.read_text().strip() == events[-1].id
    assert file_store.fsck(SID) == []


def test_interrupted_head_rename_with_head_file_current(file_store):
    events = build(file_store)
    tmp = head_path(file_store, SID).with_name("HEAD.tmp")
    tmp.write_text(events[-1].id + "\n")
    with file_store.open(SID):
        pass
    assert not tmp.exists()
    assert head_path(file_store, SID).read_text().strip() == events[-1].id


# === blobs (invariant 9: every load verifies its digest) =====================
def _blob_event(store: Store):
    with store.create(session_id=SID) as s:
        s.append("message", {"content": "small"})
        return s.append("tool_result", {"content": "B" * (BLOB_THRESHOLD * 3)}, role="tool")


def test_missing_blob_raises_blob_integrity_error(file_store):
    e = _blob_event(file_store)
    blob = blob_path(file_store, SID, e.digest)
    blob.unlink()
    with file_store.open(SID, readonly=True) as r:
        unloaded = r.event(e.id)  # the event itself is intact
        assert unloaded.record is None
        with pytest.raises(BlobIntegrityError) as info:
            r.resolve(unloaded)
    assert info.value.path == str(blob)
    assert any(p.path == str(blob) for p in errors_of(file_store.fsck(SID)))


def test_blob_digest_mismatch_raises_blob_integrity_error(file_store):
    e = _blob_event(file_store)
    blob = blob_path(file_store, SID, e.digest)
    flip_byte(blob, 1000)
    with file_store.open(SID, readonly=True) as r:
        with pytest.raises(BlobIntegrityError):
            r.resolve(r.event(e.id))
        with pytest.raises(BlobIntegrityError):
            r.context(resolve=True)
    assert any(p.path == str(blob) for p in errors_of(file_store.fsck(SID)))


def test_truncated_blob_raises_blob_integrity_error(file_store):
    e = _blob_event(file_store)
    cut_tail(blob_path(file_store, SID, e.digest), 1)
    with file_store.open(SID, readonly=True) as r:
        with pytest.raises(BlobIntegrityError):
            r.resolve(r.event(e.id))


def test_leftover_blob_temporary_is_reported_and_removed_by_repair(file_store):
    """Opening does not list blobs/ (that costs O(blobs)); fsck reports the
    leftover as a warning and repair removes it, saying so."""
    _blob_event(file_store)
    leftover = session_dir(file_store, SID) / "blobs" / ".tmp-999-abcdef"
    leftover.write_bytes(b"half a blob")
    assert [p.severity for p in file_store.fsck(SID)] == ["warning"]
    with file_store.open(SID):
        pass
    assert leftover.exists()
    actions = file_store.repair(SID)
    assert any(".tmp-999-abcdef" in a for a in actions)
    assert not leftover.exists()
    assert file_store.fsck(SID) == []


# === chunk rotation ===========================================================
def test_torn_tail_across_chunk_rotation(home):
    store = Store(home, chunk_size=4096, blob_threshold=BLOB_THRESHOLD)
    with store.create(session_id=SID) as s:
        events = []
        for i in range(120):
            if i % 10 == 5:
                events += s.append_many([("message", {"i": i, "j": j, "pad": "q" * 60}) for j in range(3)])
            else:
                events.append(s.append("message", {"i": i, "pad": "p" * 80}, role="user"))
    chunks = chunk_paths(store, SID)
    assert len(chunks) >= 5
    newest = chunks[-1]
    spans = line_spans(newest)
    survivors = len(events) - 1
    cut_tail(newest, spans[-1][1] - 1)
    drop_index_entries(store, survivors)
    with pytest.warns(RecoveryWarning):
        s = store.open(SID)
    with s:
        assert path_ids(s) == [e.id for e in events[:survivors]]
        # every chunk but the newest is read back intact, record by record
        for e in events[:survivors]:
            assert s.event(e.id).record == e.record
        more = [s.append("message", {"more": k, "pad": "m" * 200}) for k in range(40)]
        assert more[0].parent_id == events[survivors - 1].id
    reopened = Store(home, chunk_size=4096)
    with reopened.open(SID, readonly=True) as r:
        assert path_ids(r) == [e.id for e in events[:survivors] + more]
    assert len(chunk_paths(store, SID)) > len(chunks)
    assert errors_of(store.fsck(SID)) == []


def test_torn_first_record_of_a_new_chunk(home):
    store = Store(home, chunk_size=4096)
    with store.create(session_id=SID) as s:
        events = []
        while len(chunk_paths(store, SID)) < 3:  # stop right after a rotation
            events.append(s.append("message", {"i": len(events), "pad": "p" * 100}))
    newest = chunk_paths(store, SID)[-1]
    assert len(line_spans(newest)) == 1
    cut_tail(newest, 3)
    drop_index_entries(store, len(events) - 1)
    with pytest.warns(RecoveryWarning):
        s = store.open(SID)
    with s:
        assert newest.stat().st_size == 0
        assert s.head == events[-2].id
        e = s.append("message", {"x": 1})
        assert e.parent_id == events[-2].id
    assert errors_of(store.fsck(SID)) == []


# === batches (invariant 6: all or nothing) ===================================
@pytest.mark.parametrize("cut", ["mid_line", "line_boundary"])
def test_batch_cut_short_is_removed_whole(file_store, cut):
    with file_store.create(session_id=SID) as s:
        before = [s.append("message", {"i": i}) for i in range(3)]
        batch = s.append_many([("message", {"b": j, "pad": "z" * 50}) for j in range(4)])
    chunk = chunk_path(file_store, SID)
    spans = line_spans(chunk)
    batch_start = spans[3][0]
    if cut == "mid_line":  # the third member torn, the fourth never written
        truncate(chunk, spans[5][0] + spans[5][1] // 2)
    else:  # two whole members, then nothing
        truncate(chunk, spans[5][0])
    drop_index_entries(file_store, 3)
    with pytest.warns(RecoveryWarning, match="batch|torn"):
        s = file_store.open(SID)
    with s:
        assert chunk.stat().st_size == batch_start
        assert s.head == before[-1].id
        assert all(e.id not in s for e in batch)
        assert len(s) == 3
        again = s.append_many([("message", {"retry": j}) for j in range(2)])
        assert again[0].parent_id == before[-1].id
    assert file_store.fsck(SID) == []


def test_batch_cut_short_is_invisible_to_readers(file_store):
    with file_store.create(session_id=SID) as s:
        first = s.append("message", {"i": 0})
        s.append_many([("message", {"b": j}) for j in range(3)])
    chunk = chunk_path(file_store, SID)
    truncate(chunk, line_spans(chunk)[3][0])
    drop_index_entries(file_store, 1)
    with file_store.open(SID, readonly=True) as r:
        assert r.head == first.id
        assert len(r) == 1
    problems = file_store.fsck(SID)
    assert errors_of(problems) == [] and any("batch" in p.message for p in problems)


def test_whole_batch_survives_when_complete(file_store):
    with file_store.create(session_id=SID) as s:
        batch = s.append_many([("message", {"b": j}) for j in range(4)])
    drop_index_entries(file_store, 0)
    s, _ = open_quietly(file_store, SID)
    with s:
        assert path_ids(s) == [e.id for e in batch]
        assert s.head == batch[-1].id != NIL_ID
