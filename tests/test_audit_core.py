"""Regression tests of the core audit (issues 2 and 4): each failed before
its fix, on real files damaged or raced the way a disk or a second process
would. Invariants cite docs/invariants.md."""

from __future__ import annotations

import errno
import os
import warnings

import pytest

from agentlog import RecoveryWarning, Store
from agentlog._fs import OsFs
from agentlog.backends.files import storage as files_storage
from agentlog.errors import StorageError
from helpers import chunk_path, chunk_paths, session_dir

SID = "s"


def _chain(store: Store, n: int) -> list[str]:
    with store.create(session_id=SID) as s:
        return [s.append("message", {"content": f"msg {i}"}, role="user").id for i in range(n)]


# --- repair: a zeroed page (invariant 3) -------------------------------------
def test_repair_of_a_zeroed_page_keeps_every_intact_event_reachable(tmp_path):
    """A 4 KiB page of zeros (what a disk that lost a write leaves) wipes the
    newlines and record starts of a dozen small records: one bad line. The
    index, intact, frames each of them; repair used to find no identity for
    the merged line, cut 27 intact events off the root and move HEAD 44
    events back. Now each framed record gets its tombstone."""
    store = Store(tmp_path)
    ids = _chain(store, 60)
    chunk = chunk_path(store, SID)
    data = bytearray(chunk.read_bytes())
    data[4096:8192] = bytes(4096)
    chunk.write_bytes(bytes(data))

    actions = store.repair(SID)

    assert not any("no longer reachable" in a for a in actions), actions
    assert sum("wrote a tombstone" in a for a in actions) >= 15
    with store.open(SID, readonly=True) as s:
        assert s.head == ids[-1]
        path = s.path()
        assert [e.id for e in path] == ids
        damaged = [e for e in path if e.kind == "tombstone"]
        assert all(e.record["recovered_from"] == "index" for e in damaged)
    assert store.fsck(SID) == []
    # Bytes are moved, never deleted: the quarantine holds all 4,096 zeros.
    quarantine = (chunk.parent / (chunk.name + ".quarantine")).read_bytes()
    assert quarantine.count(0) == 4096


def test_a_record_that_decodes_is_never_cut_at_an_index_frame(tmp_path):
    """The index-framed cut applies only to a line that is no record at all.
    A whole, checksum-valid record refused for where it stands (moved by a
    swap) may hold another record's old frame: it stays one piece."""
    from agentlog.backends.files.chunklog import ChunkLog
    from agentlog.backends.files.fsck import Bad
    from agentlog.backends.files.repair_plan import split_merged

    store = Store(tmp_path)
    _chain(store, 1)
    chunk = chunk_path(store, SID)
    line = chunk.read_bytes()
    entries = {(0, 10, 20): {"id": "01a22ebe-0000-7000-8000-000000000001"}}  # a frame inside the line
    log = ChunkLog(OsFs(), str(chunk.parent), chunk_size=1 << 20, durable=False, writable=False)
    try:
        refused = Bad(0, 0, len(line), "event id does not increase")
        assert split_merged([refused], entries, log) == [refused]
        chunk.write_bytes(bytes(len(line) - 1) + b"\n")  # the same line, zeroed: cut at the frame
        zeroed = Bad(0, 0, len(line), "not a framed record")
        assert [(b.offset, b.length) for b in split_merged([zeroed], entries, log)] == [(0, 10), (10, len(line) - 10)]
    finally:
        log.close()


# --- a reader racing a chunk rotation (invariants 7, 10) ---------------------
def test_a_reader_that_races_a_rotation_does_not_rebuild_the_index(tmp_path, monkeypatch):
    """A reader lists the chunks, then reads the index. A writer that rotates
    in between indexes a chunk the reader has not listed: the reader called
    the index damaged, warned "index rebuilt from the chunks" and read every
    chunk (O(history), on a healthy session). It now looks at the chunk
    list again."""
    store = Store(tmp_path, chunk_size=2048)
    writer = store.create(session_id=SID)
    first = [writer.append("message", {"content": "x" * 100}).id for _ in range(3)]
    real_open_index = files_storage._open_index
    raced: list[str] = []

    def open_index_after_a_rotation(fs, layout, session_id, *, writable):
        if not writable and not raced:
            before = len(chunk_paths(store, SID))
            while len(chunk_paths(store, SID)) == before:
                raced.append(writer.append("message", {"content": "y" * 100}).id)
        return real_open_index(fs, layout, session_id, writable=writable)

    monkeypatch.setattr(files_storage, "_open_index", open_index_after_a_rotation)
    reads: list[str] = []
    real_open = OsFs.open

    def counting_open(self, path, flags, mode=0o600):
        reads.append(path)
        return real_open(self, path, flags, mode)

    monkeypatch.setattr(OsFs, "open", counting_open)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecoveryWarning)
        with store.open(SID, readonly=True) as reader:
            assert reader.head == raced[-1]
            assert [e.id for e in reader.path()][-len(raced) - 3 :] == first + raced
    # Opening read the new chunk's tail, not the whole log from chunk 0.
    assert raced and not any(p.endswith("000000.jsonl") for p in reads[: reads.index(str(chunk_path(store, SID, 1)))])
    writer.close()


# --- failed atomic replace leaves no temporary (docs/durability.md) ----------
class _FullDisk(OsFs):
    """ENOSPC on every write to a session.json temporary, once ``full``."""

    full = False

    def write(self, fd, data, path="?"):
        if self.full and path.endswith("session.json.tmp"):
            raise StorageError("write", path, errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(fd, data, path)


def test_a_failed_session_json_replace_leaves_no_temporary_behind(tmp_path):
    """ENOSPC while writing session.json.tmp left the temporary (holding the
    part written) on a full disk, where nothing names or removes it."""
    from agentlog.backends.files import FileBackend

    fs = _FullDisk()
    store = Store(backend=FileBackend(str(tmp_path), fs=fs))
    with store.create(session_id=SID, name="kept") as s:
        pass
    fs.full = True
    with store.open(SID) as s, pytest.raises(StorageError) as caught:
        s.update_meta(name="lost")
    assert caught.value.errno == errno.ENOSPC
    assert not (session_dir(store, SID) / "session.json.tmp").exists()
    assert store.meta(SID)["name"] == "kept"


# --- repair: chunks gone (invariant 3: nothing skipped silently) -------------
def _chunked(store: Store, n: int) -> list[str]:
    with store.create(session_id=SID) as s:
        return [s.append("message", {"content": f"msg {i}", "pad": "p" * 200}).id for i in range(n)]


def test_repair_of_a_session_missing_a_middle_chunk_makes_it_usable_and_names_the_loss(tmp_path):
    """A chunk missing between others (deleted; or, under "off", a power loss
    that kept a later chunk's directory entry) made every open refuse the
    session and repair fail the same way: nothing could read the intact
    events around it again."""
    store = Store(tmp_path, chunk_size=1024)
    ids = _chunked(store, 12)
    chunks = chunk_paths(store, SID)
    assert len(chunks) >= 4
    gone = chunks[1]
    held = [i for i in ids if f'{{"id":"{i}"'.encode() in gone.read_bytes()]
    gone.unlink()

    actions = store.repair(SID)

    assert any(f"created the missing chunk {gone}" in a for a in actions), actions
    lost = next(a for a in actions if "the index knew are in no chunk" in a)
    assert all(i in lost for i in held) and lost.startswith(f"{len(held)} events")
    with store.open(SID) as s:  # writable again, the events before the gap intact
        assert [e.id for e in s.path()] == ids[: ids.index(held[0])]
        s.append("message", {"content": "after"})


def test_repair_names_the_events_of_a_deleted_last_chunk(tmp_path):
    """The last chunk deleted: the index still framed its events. Repair
    removed the index, said only that, and fsck was then clean: the events
    were gone without a word anywhere."""
    store = Store(tmp_path, chunk_size=1024)
    ids = _chunked(store, 12)
    last = chunk_paths(store, SID)[-1]
    held = [i for i in ids if f'{{"id":"{i}"'.encode() in last.read_bytes()]
    last.unlink()
    assert any(p.severity == "error" for p in store.fsck(SID))

    actions = store.repair(SID)

    lost = next(a for a in actions if "the index knew are in no chunk" in a)
    assert held and all(i in lost for i in held)
    assert not any(i in lost for i in ids if i not in held)
