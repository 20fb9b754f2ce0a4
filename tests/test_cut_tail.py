"""A log cut short at its end: a crash's torn tail, or damage to records
already acknowledged. Recovery cuts a crash's tail and keeps its bytes in
the chunk's quarantine file; a tail the index shows acknowledged (synced,
then indexed: durability "full") is refused, and ``fsck --repair`` keeps
every intact record of it. (The QA finding behind this: a chunk cut short
inside an imported session's one batch used to be taken for a crash, and
the next writer deleted every intact record of the session.)"""

from __future__ import annotations

import pytest

from agentlog import CorruptionError, RecoveryWarning, Store
from agentlog.backends.files.index import Index
from helpers import chunk_path, index_path, line_spans, truncate

SID = "s"

pytestmark = pytest.mark.filterwarnings("ignore::agentlog.RecoveryWarning")


def _batch(store: Store, n: int = 20, before: int = 2) -> list:
    """``before`` single appends, then one batch of ``n`` (as an import writes)."""
    with store.create(session_id=SID) as s:
        singles = [s.append("message", {"i": i}, role="user") for i in range(before)]
        batch = s.append_many([("message", {"b": i, "pad": "x" * 30}, "user") for i in range(n)])
    return singles + batch


def _cut_inside(store: Store, line: int, into: int = 10) -> int:
    """Cut the chunk ``into`` bytes into line ``line``; return the new size."""
    chunk = chunk_path(store, SID)
    offset, _ = line_spans(chunk)[line]
    truncate(chunk, offset + into)
    return offset + into


def test_a_full_writer_marks_its_index_and_an_off_writer_clears_the_mark(tmp_path) -> None:
    full = Store(tmp_path / "home")
    _batch(full, 3)
    index = Index(full.backend.fs, str(index_path(full, SID)), writable=False)  # type: ignore[attr-defined]
    assert index.synced_entries
    index.close()
    off = Store(tmp_path / "home", durability="off")
    off.open(SID).close()
    index = Index(off.backend.fs, str(index_path(off, SID)), writable=False)  # type: ignore[attr-defined]
    assert not index.synced_entries and index.acknowledged_end() is None
    index.close()
    full.open(SID).close()
    index = Index(full.backend.fs, str(index_path(full, SID)), writable=False)  # type: ignore[attr-defined]
    assert index.synced_entries
    index.close()


def test_an_acknowledged_batch_cut_short_is_refused_not_cut(tmp_path) -> None:
    store = Store(tmp_path / "home")
    events = _batch(store)
    size = _cut_inside(store, 12)
    torn = chunk_path(store, SID).read_bytes()[size - 10 :]
    for _ in range(2):  # the refusal keeps its evidence: the second open refuses too
        with pytest.raises(CorruptionError, match="acknowledged") as info:
            store.open(SID)
        assert "nothing was removed" in str(info.value)
        assert chunk_path(store, SID).stat().st_size == size
        with pytest.raises(CorruptionError, match="acknowledged"):
            store.open(SID, readonly=True)
    problems = [p for p in store.backend.verify(SID) if p.severity == "error"]
    assert any("damage, not a crash" in p.message and "keeps its 10 intact records" in p.message for p in problems)

    actions = store.backend.repair(SID)
    assert any("kept the 10 intact records" in a for a in actions)
    assert any("are in no chunk any more" in a for a in actions)
    assert [p for p in store.backend.verify(SID) if p.severity == "error"] == []
    with store.open(SID) as s:
        kept = [e.id for e in s.path()]
        # the two singles and the ten whole members of the batch, in order, HEAD on the last
        assert kept == [e.id for e in events[:12]]
        assert [e.record for e in s.path()][2:] == [{"b": i, "pad": "x" * 30} for i in range(10)]
        s.append("message", {"after": "repair"}, role="user")
    quarantine = chunk_path(store, SID).with_name("000000.jsonl.quarantine").read_bytes()
    assert b'"reason":"torn record"}\n' + torn + b"\n" in quarantine  # the torn record, set aside
    with store.open(SID) as s:
        assert len(s.path()) == 13


def test_a_crash_tail_is_cut_and_kept_in_quarantine(tmp_path) -> None:
    """Without the index's word (here: a batch the index never got, as a
    crash between the log's write and its sync leaves it), the tail is a
    crash's: cut, with its bytes kept aside, and the warning says how many."""
    store = Store(tmp_path / "home")
    events = _batch(store, before=4)
    chunk = chunk_path(store, SID)
    data = chunk.read_bytes()
    truncate(index_path(store, SID), 4096 + 64 * 4)  # the index as it was before the batch
    size = _cut_inside(store, 10)
    with pytest.warns(RecoveryWarning, match=rf"truncated at byte {line_spans(chunk)[4][0]}.*bytes cut off are kept"):
        s = store.open(SID)
    with s:
        assert [e.id for e in s.path()] == [e.id for e in events[:4]]
    quarantine = chunk.with_name("000000.jsonl.quarantine").read_bytes()
    assert quarantine == data[line_spans(chunk)[-1][0] + line_spans(chunk)[-1][1] : size]


def test_off_durability_tail_is_a_crash_tail_whatever_the_index_says(tmp_path) -> None:
    """At durability "off" nothing is synced before it is indexed, so a
    power loss may keep index entries whose records it lost: the mark is
    cleared, and such a tail is cut (and kept aside), never refused."""
    store = Store(tmp_path / "home", durability="off")
    events = _batch(store)
    _cut_inside(store, 12)
    s = store.open(SID)
    with s:
        assert [e.id for e in s.path()] == [e.id for e in events[:2]]
    assert chunk_path(store, SID).with_name("000000.jsonl.quarantine").exists()


def test_a_marker_claiming_members_that_never_were_keeps_its_record(tmp_path) -> None:
    """Found by make fuzz: a checksum-valid batch marker rewritten to claim
    10**12 members reads as an acknowledged batch cut short at the end;
    repair keeps the one intact record, written back as a whole batch of
    one (its bytes as they were set aside), and the fuzz harness sees the
    chunk as it was once the pieces are put back."""
    from agentlog._codec import decode_line, encode_line

    store = Store(tmp_path / "home")
    events = _batch(store, n=1, before=3)
    chunk = chunk_path(store, SID)
    lines = chunk.read_bytes().splitlines(keepends=True)
    rec = decode_line(lines[-1])
    rec.pop("crc", None)
    rec["txn"] = [0, 10**12]
    chunk.write_bytes(b"".join(lines[:-1]) + encode_line(rec))
    with pytest.raises(CorruptionError, match="acknowledged"):
        store.open(SID)
    store.backend.repair(SID)
    assert [p for p in store.backend.verify(SID) if p.severity == "error"] == []
    with store.open(SID) as s:
        assert [e.id for e in s.path()] == [e.id for e in events]


def test_recovery_syncs_the_records_it_indexes_before_their_entries(tmp_path) -> None:
    """Records found after the index (a crash between their write and their
    sync, or before their entries) are adopted by the next writer: their
    chunk is synced before their entries are written, or a power loss could
    keep an entry, under the index's mark, whose record it took."""
    from agentlog import FileBackend
    from agentlog._fs import OsFs

    class Ops(OsFs):
        def __init__(self) -> None:
            self.ops: list[tuple[str, str]] = []

        def fdatasync(self, fd: int, path: str = "?") -> None:
            self.ops.append(("sync", path))
            super().fdatasync(fd, path)

        def pwrite(self, fd: int, data: bytes, offset: int, path: str = "?") -> None:
            self.ops.append(("pwrite", path))
            super().pwrite(fd, data, offset, path)

    store = Store(tmp_path / "home")
    _batch(store, n=3, before=2)
    truncate(index_path(store, SID), 4096 + 64 * 2)  # the batch's entries never written
    fs = Ops()
    with Store(backend=FileBackend(str(tmp_path / "home"), fs=fs)).open(SID) as s:
        assert len(s.path()) == 5
    chunk, index = str(chunk_path(store, SID)), str(index_path(store, SID))
    first_entry = fs.ops.index(("pwrite", index))
    assert ("sync", chunk) in fs.ops[:first_entry]
