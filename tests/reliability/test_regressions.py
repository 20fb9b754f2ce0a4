"""One test per contract violation the reliability families found, named
after the failure. Each failed before its fix (docs/reliability.md lists
the fix beside the test's name) and fails again if the fix is undone.
"""

from __future__ import annotations

import errno
import os

import orjson
import pytest

from agentlog import CorruptionError, InvalidEvent, SessionPoisoned, StorageError, Store
from agentlog._codec import decode_line, encode_line
from agentlog.backends.files.index import ENTRY_SIZE, HEADER_SIZE, pack_slot, unpack_slot

from .crashsim import FsModel, RecordingFs, materialize
from .faults import FaultyFs

pytestmark = pytest.mark.filterwarnings("ignore::agentlog.RecoveryWarning")


def _session(home, **options):
    store = Store(
        str(home),
        chunk_size=options.pop("chunk_size", 4096),
        blob_threshold=options.pop("blob_threshold", 256),
        **options,
    )
    return store


def _chunk(home, sid, n=0):
    return os.path.join(str(home), "sessions", sid, "chunks", f"{n:06d}.jsonl")


def _index(home, sid):
    return os.path.join(str(home), "sessions", sid, "index.bin")


def _rewrite_slot(path: str, i: int, field: int, value: object) -> None:
    """Give field ``field`` of index slot ``i`` a new value, checksum intact."""
    data = open(path, "rb").read()
    at = HEADER_SIZE + i * ENTRY_SIZE
    fields = list(unpack_slot(data[at : at + ENTRY_SIZE]) or ())
    fields[field] = value
    open(path, "wb").write(data[:at] + pack_slot(tuple(fields)) + data[at + ENTRY_SIZE :])


def _rewrite_line(path: str, i: int, change) -> None:
    lines = open(path, "rb").read().splitlines(keepends=True)
    obj = decode_line(lines[i])
    change(obj)
    lines[i] = encode_line(obj)
    open(path, "wb").write(b"".join(lines))


def test_index_ending_inside_a_batch_is_not_corruption(tmp_path):
    """Crash states: the index (never synced) written up to a line boundary
    inside a batch made every open resume the log scan mid-batch and
    report 'batch member out of order'. Fix: storage._resume_entry backs the
    scan up to the batch's first member."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        s.append("message", {"content": "one"}, "user")
        batch = s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(3)])
    index = _index(tmp_path, "s")
    data = open(index, "rb").read()
    open(index, "wb").write(data[: HEADER_SIZE + 3 * ENTRY_SIZE])  # one single + two of three members
    for readonly in (True, False):
        with store.open("s", readonly=readonly) as s:
            assert [e.id for e in s.path()][-3:] == [e.id for e in batch]
            assert s.head == batch[-1].id
    assert [p for p in store.fsck("s") if p.severity == "error"] == []


def test_sessions_directory_entry_is_durable_before_a_session_is_created(tmp_path):
    """Crash states: FileBackend made sessions/ with os.makedirs, outside the
    I/O layer and without syncing home/, so a power loss could take sessions/
    with every acknowledged session in it. Fix: _mkdirs goes through fs and
    syncs each new entry's parent."""
    home = tmp_path / "home"
    home.mkdir()
    fs = RecordingFs(str(home))
    store = Store(str(home), fs=fs)
    assert ("mkdir", "sessions") in fs.ops
    assert fs.ops.index(("fsync_dir", ".")) > fs.ops.index(("mkdir", "sessions"))
    with store.create(session_id="s") as s:
        ev = s.append("message", {"content": "acknowledged"}, "user")
    model = FsModel()
    for op in fs.ops:
        model.apply(op)
    target = str(tmp_path / "after-power-loss")
    materialize(model.sample(None, False, mode="none"), target)
    with Store(target).open("s", readonly=True) as s:
        assert s.event(ev.id).record == {"content": "acknowledged"}


def test_failed_chunk_rotation_does_not_wedge_the_session(tmp_path):
    """Faults: an EIO syncing a new chunk left it created but unused; every
    later append failed on O_EXCL with EEXIST, on the same Session, forever.
    Fix: ChunkLog.rotate reuses the empty next chunk and closes its fd."""
    fs = FaultyFs()
    store = Store(str(tmp_path), fs=fs, chunk_size=600)
    s = store.create(session_id="s")
    s.append("message", {"content": "x" * 400}, "user")
    calls = fs.count
    fs.arm(calls + 3, errno.EIO)  # open, fsync: the second call of the rotation fails
    with pytest.raises(StorageError) as caught:
        s.append("message", {"content": "y" * 400}, "user")
    assert fs.fired and fs.fired[0][1] == "fsync" and caught.value.errno == errno.EIO
    fs.disarm()
    ev = s.append("message", {"content": "z" * 400}, "user")
    s.close()
    with store.open("s", readonly=True) as r:
        assert r.head == ev.id and len(r) == 2
    assert [p for p in store.fsck("s") if p.severity == "error"] == []


def test_eio_reading_session_json_is_a_storage_error_not_corruption(tmp_path):
    """Faults: read_meta_file turned any failure to read session.json into
    CorruptionError, telling the user the file was damaged when the disk
    said EIO. Fix: only a missing file is corruption; other errors pass up."""
    fs = FaultyFs()
    store = Store(str(tmp_path), fs=fs)
    store.create(session_id="s").close()
    reader = store.open("s", readonly=True)
    fs.arm(fs.count + 1, errno.EIO, persistent=True)
    for read in (lambda: store.meta("s"), lambda: reader.meta):
        with pytest.raises(StorageError) as caught:
            read()
        assert not isinstance(caught.value, CorruptionError) and caught.value.errno == errno.EIO
    fs.disarm()
    reader.close()


def test_zero_filled_index_line_is_a_warning_not_an_error(tmp_path):
    """Crash states: an unsynced index write whose size reached the disk but
    whose bytes did not reads back as zeros; fsck called it an error though
    the next open rebuilds it. Fix: fsck reports an all-zero line as a warning."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        s.append("message", {"content": "one"}, "user")
        s.append("message", {"content": "two"}, "user")
    index = _index(tmp_path, "s")
    data = open(index, "rb").read()
    open(index, "wb").write(data[: HEADER_SIZE + ENTRY_SIZE] + bytes(ENTRY_SIZE))
    problems = store.fsck("s")
    assert problems and all(p.severity == "warning" for p in problems)
    with store.open("s") as s:
        assert len(s.path()) == 2


def test_repair_restores_a_session_created_without_syncs(tmp_path):
    """Crash states (durability off): a power loss kept the session's directory
    but not its chunks/ and blobs/; repair then failed with 'no chunk files'
    and the session could never be opened. Fix: repair recreates them."""
    store = Store(str(tmp_path), "off")
    store.create(session_id="s").close()
    sdir = os.path.join(str(tmp_path), "sessions", "s")
    for name in ("chunks", "blobs"):
        for f in os.listdir(os.path.join(sdir, name)):
            os.unlink(os.path.join(sdir, name, f))
        os.rmdir(os.path.join(sdir, name))
    actions = store.repair("s")
    assert any("chunks" in a for a in actions) and any("blobs" in a for a in actions)
    with store.open("s") as s:
        s.append("message", {"content": "works again"}, "user")


class _BlobDirSyncFails(RecordingFs):
    """Fails the first sync of a blobs/ directory, as a disk's EIO would."""

    failed = False

    def fsync_dir(self, path: str) -> None:
        if path.endswith(os.path.join("sessions", "s", "blobs")) and not self.failed:
            self.failed = True
            raise StorageError("fsync", path, errno.EIO, "Input/output error")
        super().fsync_dir(path)


def test_blob_directory_sync_is_retried_after_it_failed(tmp_path):
    """Faults x crash states: the blob was renamed in, its directory sync
    failed; the retried append found the file, skipped the sync, and was
    acknowledged with a blob a power loss could take. Fix: BlobStore keeps
    'unsynced' until a directory sync succeeds (and starts so)."""
    home = tmp_path / "home"
    home.mkdir()
    fs = _BlobDirSyncFails(str(home))
    store = Store(str(home), fs=fs, blob_threshold=64)
    payload = {"content": "x" * 500}
    with store.create(session_id="s") as s:
        with pytest.raises(StorageError):
            s.append("tool_result", payload, "tool")
        ev = s.append("tool_result", payload, "tool")
    model = FsModel()
    for op in fs.ops:
        model.apply(op)
    target = str(tmp_path / "after-power-loss")
    materialize(model.sample(None, False, mode="none"), target)
    with Store(target).open("s", readonly=True) as s:
        assert s.resolve(s.event(ev.id)).record == payload


def test_huge_length_in_an_index_line_is_not_a_huge_read(tmp_path):
    """Fuzz: a checksum-valid index line with location.length = 2**62 made
    reading the event allocate 2**62 bytes (MemoryError, untyped). Fix:
    _check_entry checks a location against the chunk before reading."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        ev = s.append("message", {"content": "one"}, "user")
    index = _index(tmp_path, "s")
    _rewrite_slot(index, 0, 4, 2**32 - 1)  # the largest length a slot holds
    with store.open("s", readonly=True) as s:
        assert s.event(ev.id).record == {"content": "one"}


@pytest.mark.parametrize(
    "field,value",
    [
        ("digest", -1),
        ("digest", [0, 1]),
        ("digest", "sha256:../x"),
        ("branch_from", -1),
        ("branch_from", "x" * 5000),
        ("id", "../../x"),
        ("parent_id", 7),
        ("kind", "k" * 5000),
        ("role", {"a": 1}),
        ("timestamp", None),
    ],
)
def test_checksum_valid_record_with_a_malformed_field_is_corruption(tmp_path, field, value):
    """Fuzz: a record whose CRC holds but whose digest, branch_from, id or
    kind had the wrong type or size was believed: AttributeError and
    TypeError in fsck, ValueError('index entry too long') on rebuild,
    a digest used as a path. Fix: storage.event_problem checks every field
    on read, in the store and in fsck."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        s.append("message", {"content": "two"}, "user")
    _rewrite_line(_chunk(tmp_path, "s"), 1, lambda obj: obj.__setitem__(field, value))
    os.unlink(_index(tmp_path, "s"))
    with pytest.raises(CorruptionError) as caught:
        store.open("s", readonly=True)
    assert caught.value.offset == len(open(_chunk(tmp_path, "s"), "rb").readline())
    errors = [p for p in store.fsck("s") if p.severity == "error"]
    assert errors and "malformed" in errors[0].message
    store.repair("s")
    with store.open("s") as s:
        assert s.event(first.id).record == {"content": "one"}


def test_checkout_naming_a_malformed_id_is_corruption(tmp_path):
    """Fuzz: a checkout record whose head was any string moved HEAD to it
    ('../x' became the session's HEAD). Fix: the head must be an event id."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        s.append("message", {"content": "two"}, "user")
        s.checkout(first.id)
    _rewrite_line(_chunk(tmp_path, "s"), 2, lambda obj: obj.__setitem__("head", "../x"))
    with pytest.raises(CorruptionError):
        store.open("s", readonly=True)


def test_non_increasing_event_ids_are_corruption_on_open(tmp_path):
    """Fuzz: two event lines swapped (each checksum intact) were indexed out
    of order on a rebuild, so the binary search missed events that were
    there. Fix: the scan requires ids to increase (invariant 11), as fsck did."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        for i in range(3):
            s.append("message", {"content": f"m{i}"}, "user")
    path = _chunk(tmp_path, "s")
    lines = open(path, "rb").read().splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    open(path, "wb").write(b"".join(lines))
    os.unlink(_index(tmp_path, "s"))
    with pytest.raises(CorruptionError) as caught:
        store.open("s", readonly=True)
    assert "does not increase" in caught.value.reason


def test_index_line_with_a_non_object_location_does_not_crash_fsck(tmp_path):
    """Fuzz: fsck read location with .get() and died with AttributeError on
    a checksum-valid index line whose location was a number. Fix: a
    location that is not an object is reported as a wrong location."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        s.append("message", {"content": "one"}, "user")
    index = _index(tmp_path, "s")
    _rewrite_slot(index, 0, 3, 10**6)  # an offset past the chunk
    problems = store.fsck("s")
    assert any("wrong location" in p.message for p in problems)
    _rewrite_slot(index, 0, 3, 2**63)  # an offset no file has: reported, never read
    problems = store.fsck("s")
    assert any("offset" in p.message and p.severity == "error" for p in problems)


def test_repair_rebuilds_an_index_fsck_finds_wrong(tmp_path):
    """Fuzz: with every chunk whole but an index line damaged, repair did
    nothing (it rebuilt the index only after quarantining) and fsck kept
    failing. Fix: repair always rebuilds the derived index."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        for i in range(3):
            s.append("message", {"content": f"m{i}"}, "user")
    index = _index(tmp_path, "s")
    data = bytearray(open(index, "rb").read())
    data[HEADER_SIZE + ENTRY_SIZE + 40] ^= 0x01
    open(index, "wb").write(bytes(data))
    assert [p for p in store.fsck("s") if p.severity == "error"]
    store.repair("s")
    assert store.fsck("s") == []


def test_repair_keeps_a_batch_whole_when_one_member_is_bad(tmp_path):
    """Fuzz: a batch member with a checksum-valid but malformed field was
    quarantined alone; the members left behind made every open fail with
    'batch member out of order'. Fix: scan_log condemns the whole batch,
    and repair makes it whole again: a tombstone in the bad member's place
    (its id and parent from the index), the intact members kept."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        batch = s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(3)])
    _rewrite_line(_chunk(tmp_path, "s"), 2, lambda obj: obj.__setitem__("branch_from", -1))
    actions = store.repair("s")
    assert sum(" bytes at " in a for a in actions) == 1
    assert any(f"tombstone for event {batch[1].id}" in a for a in actions), actions
    with store.open("s") as s:
        assert [e.id for e in s.path()] == [first.id] + [e.id for e in batch]
        assert [e.kind for e in s.path()] == ["message", "message", "tombstone", "message"]
        assert s.head == batch[-1].id
        s.append("message", {"content": "after"}, "user")


def test_repair_quarantines_a_whole_batch_when_a_member_cannot_be_identified(tmp_path):
    """Invariant 6 still holds when no tombstone can stand in: a member whose
    id and parent are gone (no index to say them) condemns its batch whole,
    and the report names what that cut."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(3)])
        last = s.append("message", {"content": "after the batch"}, "user")
    os.unlink(_index(tmp_path, "s"))
    path = _chunk(tmp_path, "s")
    lines = open(path, "rb").read().splitlines(keepends=True)
    lines[2] = lines[2][:1] + b"#" * 94 + lines[2][95:]
    open(path, "wb").write(b"".join(lines))
    actions = store.repair("s")
    assert sum(" bytes at " in a for a in actions) == 3
    assert not any("tombstone" in a for a in actions)
    assert [a for a in actions if "reachable" in a] == [
        "1 intact events are no longer reachable from the root "
        f"(a damaged record's id could not be recovered): {last.id}"
    ]
    with store.open("s") as s:
        assert [e.id for e in s.path()] == [first.id]
        assert last.id in s
        s.append("message", {"content": "after"}, "user")


def test_repair_quarantines_a_torn_tail_instead_of_cutting_it(tmp_path):
    """Repair checks: repair opened the session for writing at the end, and
    that open cut a torn tail off: bytes deleted, not quarantined (and a
    flipped final newline looks exactly like a torn tail). Fix: repair
    quarantines the torn tail with the damaged records."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        s.append("message", {"content": "two"}, "user")
    path = _chunk(tmp_path, "s")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-10])
    actions = store.repair("s")
    quarantine = open(path + ".quarantine", "rb").read()
    header, rest = quarantine.split(b"\n", 1)
    assert orjson.loads(header)["reason"] == "torn record"
    assert open(path, "rb").read() + rest[:-1] == data[:-10]
    assert any("torn record" in a for a in actions)
    with store.open("s", readonly=True) as s:
        assert s.head == first.id


def test_poisoned_session_recovers_after_reopen(tmp_path):
    """Faults (documented behaviour, not a bug): when the rollback of a
    failed write fails too, the Session raises SessionPoisoned until it is
    closed and the session reopened; the reopen recovers from the log."""
    fs = FaultyFs()
    store = Store(str(tmp_path), fs=fs)
    s = store.create(session_id="s")
    kept = s.append("message", {"content": "kept"}, "user")
    fs.arm(fs.count + 1, errno.EIO, persistent=True, partial=True)  # write half, then all fails
    with pytest.raises(StorageError):
        s.append("message", {"content": "x" * 300}, "user")
    with pytest.raises(SessionPoisoned):
        s.append("message", {"content": "refused"}, "user")
    fs.disarm()
    with pytest.raises(SessionPoisoned):
        s.append("message", {"content": "still refused on this object"}, "user")
    s.close()
    with store.open("s") as s:
        ev = s.append("message", {"content": "after reopen"}, "user")
        assert [e.id for e in s.path()] == [kept.id, ev.id]
    assert [p for p in store.fsck("s") if p.severity == "error"] == []


def test_append_after_the_largest_event_id_does_not_write_a_malformed_id(tmp_path):
    """Fuzz: a checksum-valid record whose id became ffffffff-...-ffffffffffff
    (damage; or kept by a fork or a legacy migration, which keep ids) made the
    next append issue '10000000-0000-0000-0000-0000000000000' and write it:
    the store corrupted its own log. Expected: a typed refusal, log intact."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        s.append("message", {"content": "one"}, "user")
    _rewrite_line(_chunk(tmp_path, "s"), 0, lambda obj: obj.__setitem__("id", "ffffffff-ffff-ffff-ffff-ffffffffffff"))
    os.unlink(_index(tmp_path, "s"))
    with store.open("s") as s:
        with pytest.raises(InvalidEvent, match="largest UUID"):
            s.append("message", {"content": "two"}, "user")
    assert [p for p in store.fsck("s") if p.severity == "error"] == []


@pytest.mark.parametrize("marker", ["", -1, ["a", "b"], [0], {"i": 0}])
def test_malformed_batch_marker_inside_a_batch_is_corruption(tmp_path, marker):
    """Fuzz: a batch member whose txn marker (checksum intact) was "" or -1
    was indexed as txn[0] before its shape was checked: IndexError and
    TypeError from open and from fsck. Fix: the marker's shape is checked
    first, in the scan and in fsck."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(3)])
    _rewrite_line(_chunk(tmp_path, "s"), 2, lambda obj: obj.__setitem__("txn", marker))
    os.unlink(_index(tmp_path, "s"))
    with pytest.raises(CorruptionError):
        store.open("s", readonly=True)
    assert any("batch" in p.message for p in store.fsck("s") if p.severity == "error")
    store.repair("s")
    with store.open("s") as s:
        assert [e.id for e in s.path()] == [first.id]


# --- repair that loses no intact event (tombstones): found by the fuzz harness --------


def _lines(path: str) -> list[bytes]:
    data = open(path, "rb").read()
    return [line + b"\n" for line in data.split(b"\n")[:-1]]


def _wipe(line: bytes) -> bytes:
    """A line whose id and parent (and the keys around them) are gone."""
    return line[:1] + b"#" * 94 + line[95:]


def _put_back(path: str) -> bytes:
    """The chunk as repair found it: its bytes, tombstone lines taken out,
    with every quarantined piece put back at its offset."""
    kept = b"".join(line for line in _lines(path) if b'"kind":"tombstone"' not in line)
    pieces, q, pos = [], open(path + ".quarantine", "rb").read(), 0
    while pos < len(q):
        nl = q.index(b"\n", pos)
        header = orjson.loads(q[pos:nl])
        pieces.append((header["offset"], q[nl + 1 : nl + 1 + header["length"]]))
        pos = nl + 1 + header["length"] + 1
    rebuilt, k = bytearray(), 0
    for offset, piece in sorted(pieces):
        gap = offset - len(rebuilt)
        rebuilt += kept[k : k + gap]
        k += gap
        rebuilt += piece
    return bytes(rebuilt + kept[k:])


def test_repair_never_lets_an_open_cut_a_kept_batch(tmp_path):
    """Fuzz harness: the intact member of a final batch, kept while the
    batch was planned whole, read as a torn tail once its unidentifiable
    partner was quarantined, and the writer's open at the end of repair cut
    it off: bytes deleted. Fix: the second pass quarantines a torn tail too."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        middle = s.append("message", {"content": "two"}, "user")
        batch = s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(2)])
    os.unlink(_index(tmp_path, "s"))
    path = _chunk(tmp_path, "s")
    lines = _lines(path)
    lines[1] = lines[1].replace(b'"two"', b'"tw"')  # shorter: a tombstone of another length
    lines[3] = _wipe(lines[3])  # the last member: the first is left alone at the end
    damaged = b"".join(lines)
    open(path, "wb").write(damaged)
    actions = store.repair("s")
    assert any(f"tombstone for event {middle.id}" in a for a in actions), actions
    assert _put_back(path).startswith(damaged)  # and after it, at most the checkout repair appends
    with store.open("s", readonly=True) as s:
        assert [e.id for e in s.path()] == [first.id, middle.id]
        assert batch[0].id not in s  # its batch could not be made whole: quarantined, not deleted
    assert batch[0].id.encode() in open(path + ".quarantine", "rb").read()


def test_repair_quarantines_by_the_offsets_the_chunk_had_when_it_began(tmp_path):
    """Fuzz harness: the second pass quarantined by offsets in repair's own
    rewrite (a tombstone is longer than the line it replaces), so the
    pieces no longer fit the chunk as it was. Fix: it maps each offset back
    (and takes back, unquarantined, a tombstone of its own that does not fit)."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        s.append("message", {"content": "one"}, "user")
        middle = s.append("message", {"content": "two"}, "user")
        s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(2)])
        last = s.append("message", {"content": "three"}, "user")
    os.unlink(_index(tmp_path, "s"))
    path = _chunk(tmp_path, "s")
    lines = _lines(path)
    lines[1] = lines[1].replace(b'"two"', b'"tw"')
    lines[2] = _wipe(lines[2])  # the second member is left, out of order, for the second pass
    damaged = b"".join(lines)
    open(path, "wb").write(damaged)
    actions = store.repair("s")
    assert any(f"tombstone for event {middle.id}" in a for a in actions), actions
    assert _put_back(path).startswith(damaged)  # and after it, at most the checkout repair appends
    with store.open("s", readonly=True) as s:
        assert last.id in s


def test_repair_plans_one_tombstone_for_two_damaged_copies_of_a_record(tmp_path):
    """Fuzz harness: a duplicated line, both copies damaged, got two
    tombstones of one id. Fix: the second copy gets none (it is quarantined)."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        ids = [s.append("message", {"content": f"m{i}"}, "user").id for i in range(4)]
    os.unlink(_index(tmp_path, "s"))
    path = _chunk(tmp_path, "s")
    lines = _lines(path)
    bad = lines[2].replace(b'"m2"', b'"M2"')
    open(path, "wb").write(b"".join([*lines[:2], bad, bad, lines[3]]))
    actions = store.repair("s")
    assert sum(f"tombstone for event {ids[2]}" in a for a in actions) == 1, actions
    with store.open("s", readonly=True) as s:
        assert [e.id for e in s.path()] == ids
        assert s.event(ids[2]).kind == "tombstone"


def test_repair_keeps_a_batch_whose_members_are_all_damaged(tmp_path):
    """Fuzz harness: both members of a final batch damaged, the second's
    batch marker too: the first member's marker was taken from its
    neighbours, one intact single and one damaged line, which said nothing
    (so none), and the second's from its damaged bytes ([1,3]): the batch was
    lost. Fix: a marker the neighbours cannot say is read from the bytes, and
    a tombstone's marker follows the tombstone before it."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        batch = s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(2)])
    path = _chunk(tmp_path, "s")
    lines = _lines(path)
    lines[1] = lines[1].replace(b'"b0"', b'"B0"')
    lines[2] = lines[2].replace(b'"txn":[1,2]', b'"txn":[1,3]')
    open(path, "wb").write(b"".join(lines))
    actions = store.repair("s")
    assert sum("wrote a tombstone for event" in a for a in actions) == 2, actions
    with store.open("s", readonly=True) as s:
        assert s.head == batch[1].id
        assert [e.id for e in s.path()] == [first.id, batch[0].id, batch[1].id]


def test_repair_finds_the_index_entry_of_a_record_after_damage_that_changed_a_length(tmp_path):
    """Fuzz harness: the index entry of a damaged record was looked up only by
    its exact location; damage earlier in the chunk that changed a length
    shifted every later offset, so a record whose own id was unreadable
    lost its identity and cut the chain. Fix: the entries for ids no line
    holds, between the same two intact lines, are matched by order."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        ids = [s.append("message", {"content": f"m{i}"}, "user").id for i in range(5)]
    path = _chunk(tmp_path, "s")
    lines = _lines(path)
    lines[1] = lines[1].replace(b'"m1"', b'"m"')  # one byte shorter
    lines[2] = _wipe(lines[2])
    open(path, "wb").write(b"".join(lines))
    actions = store.repair("s")
    assert any(f"tombstone for event {ids[2]}" in a for a in actions), actions
    assert not any("reachable" in a or "moved HEAD" in a for a in actions), actions
    with store.open("s", readonly=True) as s:
        assert [e.id for e in s.path()] == ids


def test_repair_keeps_a_batch_whose_member_was_split_in_its_batch_marker(tmp_path):
    """Fuzz (the million-case run): a byte of a batch member's marker turned
    into a newline. The halves were joined again as one damaged record, but
    its marker was looked for in the half after it, which says nothing, and
    not in the next record: its tombstone had none, and the member after it
    was quarantined. Fix: a bad record's neighbours are the lines that end
    where it starts and start where it ends."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        first = s.append("message", {"content": "one"}, "user")
        batch = s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(2)])
    path = _chunk(tmp_path, "s")
    data = open(path, "rb").read()
    at = data.index(b'"txn":[0,2]') + len(b'"txn":[')
    open(path, "wb").write(data[:at] + b"\n" + data[at + 1 :])
    actions = store.repair("s")
    assert any(f"tombstone for event {batch[0].id}" in a for a in actions), actions
    with store.open("s", readonly=True) as s:
        assert s.head == batch[1].id
        assert [e.id for e in s.path()] == [first.id, batch[0].id, batch[1].id]


def test_a_checksum_field_spelled_differently_but_equal_as_a_number_is_damage(tmp_path):
    """Kill storm (sampled, `make test`): a flipped bit turned a checksum digit
    "a" into "A". The field was parsed with int(..., 16), which reads "A" as
    "a", so the damaged line still checked and repair found nothing to do.
    Fix: the field is compared as the text the writer writes."""
    store = _session(tmp_path)
    with store.create(session_id="s") as s:
        ids = [s.append("message", {"content": f"m{i}"}, "user").id for i in range(8)]
    path = _chunk(tmp_path, "s")
    lines = _lines(path)
    # a middle line whose checksum has a letter (all eight digits: 2% a line)
    i = next(i for i in range(1, len(lines) - 1) if not lines[i][-11:-3].isdigit())
    lines[i] = lines[i][:-11] + lines[i][-11:-3].upper() + lines[i][-3:]
    open(path, "wb").write(b"".join(lines))
    with pytest.raises(ValueError, match="not 8 lowercase hex digits"):
        decode_line(lines[i])
    with store.open("s", readonly=True) as s, pytest.raises(CorruptionError):
        s.path()
    assert any(p.severity == "error" for p in store.fsck("s"))
    actions = store.repair("s")
    assert any(f"tombstone for event {ids[i]}" in a for a in actions), actions
    with store.open("s", readonly=True) as s:
        assert [e.id for e in s.path()] == ids


@pytest.mark.parametrize("spell", ["%08X", " %07x", "+%07x", "0_%06x"])
def test_every_other_spelling_of_the_checksum_is_refused(spell):
    """int(..., 16) also takes a sign, spaces and underscores; the writer
    writes none of them. A record whose checksum is small enough for each
    spelling to fit the 8 bytes, with letters for the upper case one."""
    for n in range(100_000):
        line = encode_line({"n": n})
        crc = int(line[-11:-3], 16)
        if crc < 1 << 24 and not line[-11:-3].isdigit():
            break
    spelled = (spell % crc).encode()
    assert len(spelled) == 8 and int(spelled, 16) == crc and spelled != b"%08x" % crc
    with pytest.raises(ValueError, match="not 8 lowercase hex digits"):
        decode_line(line[:-11] + spelled + line[-3:])
    assert decode_line(line) == {"n": n}
