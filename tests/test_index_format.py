"""The binary index (index.bin, format version 2) and sessions written in version 1.

``tests/fixtures/format-v1/v1`` was written by agentlog at aa504cc, the
last version with 512-byte JSON index lines: a user message, a reply, a
batch (a tool call and a 3 KB tool result in a blob), a custom kind, and a
second branch started after a checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlog import FileBackend, RecoveryWarning, Store
from agentlog._codec import encode_line
from agentlog._fs import OsFs
from agentlog.backends.files.index import (
    ENTRY_SIZE,
    HEADER_SIZE,
    MAX_NAMES,
    Index,
    _canonical_ns,
    entry_of,
    read_intact_entries,
)
from agentlog.event import format_timestamp
from helpers import RecordingFs, errors_of, index_at, index_path, rewrite_index_entry

FIXTURE = Path(__file__).parent / "fixtures" / "format-v1" / "v1"
SID = "v1"


def _v1_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE, home / "sessions" / SID)
    return home


def _v1_entries() -> list[dict]:
    """What the version-1 index says, read as the JSON lines it is."""
    out = []
    for line in (FIXTURE / "index.jsonl").read_bytes().splitlines():
        e = orjson.loads(line)
        out.append({k: e[k] for k in ("id", "parent_id", "branch_from", "kind", "role", "timestamp", "digest")})
    return out


def _entries(session) -> list[dict]:
    return [
        {
            "id": e.id,
            "parent_id": e.parent_id,
            "branch_from": e.branch_from,
            "kind": e.kind,
            "role": e.role,
            "timestamp": e.timestamp,
            "digest": e.digest,
        }
        for e in session.entries()
    ]


def test_a_version_1_session_opens_and_its_index_is_converted(tmp_path):
    home = _v1_home(tmp_path)
    sdir = home / "sessions" / SID
    store = Store(home)
    assert store.backend.stats(SID).event_count == 6  # counted from the old index before any open
    fs = RecordingFs()
    with Store(backend=FileBackend(str(home), fs=fs)).open(SID, readonly=True) as r:
        assert _entries(r) == _v1_entries()
        assert [e.record for e in r.transcript()][-1] == {"content": "another try"}
        head = r.head
        blob_event = next(e for e in r.entries() if e.digest is not None)
        assert r.resolve(r.event(blob_event.id)).record["output"] == "x" * 3000
    # A reader reads the old index as it is: it writes nothing, and reads
    # records where the index says, not the log from its start.
    assert (sdir / "index.jsonl").exists() and not (sdir / "index.bin").exists()
    assert any(path.endswith("index.jsonl") for path in fs.opened)
    # The first writer converts it.
    with store.open(SID) as s:
        assert s.head == head
        assert _entries(s) == _v1_entries()
        s.append("message", {"content": "after the upgrade"}, role="user")
    assert not (sdir / "index.jsonl").exists()
    assert (sdir / "index.bin").stat().st_size == HEADER_SIZE + 7 * ENTRY_SIZE
    assert store.backend.stats(SID).event_count == 7
    assert errors_of(store.fsck(SID)) == []
    assert [p for p in store.fsck(SID) if p.severity == "warning"] == []


def test_a_damaged_version_1_index_is_derived_from_the_log_by_a_reader(tmp_path):
    home = _v1_home(tmp_path)
    legacy = home / "sessions" / SID / "index.jsonl"
    data = bytearray(legacy.read_bytes())
    data[512 * 5 + 100] ^= 0x01  # the last line's checksum fails
    legacy.write_bytes(bytes(data))
    with pytest.warns(RecoveryWarning, match="index rebuilt"):
        r = Store(home).open(SID, readonly=True)
    with r:
        assert _entries(r) == _v1_entries()
    assert legacy.read_bytes() == bytes(data)  # a reader changes nothing


def test_a_writer_converts_a_version_1_session(tmp_path):
    home = _v1_home(tmp_path)
    store = Store(home)
    with store.open(SID) as s:
        assert _entries(s) == _v1_entries()
    assert not (home / "sessions" / SID / "index.jsonl").exists()
    assert store.fsck(SID) == []


def test_a_reader_of_a_version_1_session_held_by_another_writer_reads_the_log(tmp_path):
    """The lease is held elsewhere (by a writer of an older agentlog, say):
    the reader neither converts nor waits."""
    home = _v1_home(tmp_path)
    code = (
        "import sys; from agentlog._lease import acquire; "
        f"lease = acquire({str(home / 'locks')!r}, {SID!r}); print('held', flush=True); sys.stdin.read()"
    )
    os.makedirs(home / "locks", exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with Store(home).open(SID, readonly=True) as r:
            assert _entries(r) == _v1_entries()
        assert (home / "sessions" / SID / "index.jsonl").exists()
        assert not (home / "sessions" / SID / "index.bin").exists()
    finally:
        holder.communicate("")
    problems = Store(home).fsck(SID)
    assert errors_of(problems) == []
    assert any("format version 1" in p.message for p in problems)


def test_index_costs_64_bytes_an_event(file_store):
    with file_store.create(session_id="s") as s:
        for i in range(50):
            s.append("message", {"i": i}, role="user" if i % 2 else "assistant")
    assert index_path(file_store, "s").stat().st_size == HEADER_SIZE + 50 * 64


def test_fields_the_slot_cannot_hold_are_read_from_the_record(tmp_path):
    """More kinds than the header's table holds, a timestamp in an older
    writer's form, a digest: entries() still says exactly what the records say."""
    fs = OsFs()
    path = str(tmp_path / "index.bin")
    index = Index(fs, path, writable=True)
    recs = []
    for i in range(MAX_NAMES + 5):
        recs.append(
            {
                "id": f"01a22ce8-b344-7495-a838-{i:012x}",
                "parent_id": "00000000-0000-0000-0000-000000000000" if i == 0 else recs[-1]["id"],
                "branch_from": None,
                "kind": f"k{i}",
                "role": None,
                "timestamp": "2026-11-30T14:42:57.476664059Z" if i % 3 else "2026-11-30 14:42:57",
                "digest": None if i % 4 else "sha256:" + "ab" * 32,
            }
        )
    index.add([entry_of(r, 0, 100 * i, 50) for i, r in enumerate(recs)])
    index.close()
    entries = read_intact_entries(fs, path)
    assert [e.id for e in entries] == [r["id"] for r in recs]
    for e, r in zip(entries, recs, strict=True):
        assert e.parent_id == r["parent_id"]
        if e.complete:
            assert (e.kind, e.role, e.timestamp, e.digest) == (r["kind"], r["role"], r["timestamp"], r["digest"])
        else:  # the record holds what the slot could not
            assert (
                r["digest"] is not None
                or not r["timestamp"].endswith("Z")
                or r["kind"] not in {f"k{i}" for i in range(MAX_NAMES)}
            )


def test_entries_of_a_session_with_unusual_fields_match_its_records(file_store):
    with file_store.create(session_id="s") as s:
        for i in range(MAX_NAMES + 3):
            s.append(f"custom.k{i}", {"i": i})
        s.append("tool_result", {"out": "y" * 40_000}, role="tool")  # a blob: the digest is in the record
    with file_store.open("s", readonly=True) as r:
        got = [(e.id, e.kind, e.digest) for e in r.entries()]
        want = [(e.id, e.kind, e.digest) for e in r.transcript()]
    assert got == want
    assert got[-1][2] is not None


def test_a_reader_sees_names_the_writer_added_after_it_opened(file_store):
    with file_store.create(session_id="s") as s:
        s.append("message", {"i": 0}, role="user")
        with file_store.open("s", readonly=True) as r:
            s.append("custom.new", {"i": 1})
            r.refresh()
            assert [e.kind for e in r.entries()] == ["message", "custom.new"]
        with file_store.open("s", readonly=True) as r2:
            assert [e.kind for e in r2.entries()] == ["message", "custom.new"]


def test_a_damaged_header_is_rebuilt_with_a_warning(file_store):
    with file_store.create(session_id="s") as s:
        ids = [s.append("message", {"i": i}, role="user").id for i in range(5)]
    path = index_path(file_store, "s")
    data = bytearray(path.read_bytes())
    data[40] ^= 0x01  # in the names table
    path.write_bytes(bytes(data))
    problems = file_store.fsck("s")
    assert errors_of(problems) == []
    assert any("header" in p.message for p in problems)
    with pytest.warns(RecoveryWarning, match="index rebuilt"):
        s = file_store.open("s")
    with s:
        assert [e.id for e in s.entries()] == ids
    assert file_store.fsck("s") == []


def test_an_entry_that_disagrees_with_its_record_is_rebuilt(file_store):
    """A checksum-valid entry with the wrong kind code (a stale or buggy
    index) is found when it is checked against the log."""
    with file_store.create(session_id="s") as s:
        s.append("message", {"i": 0}, role="user")
        last = s.append("custom.other", {"i": 1})
    rewrite_index_entry(index_path(file_store, "s"), 1, kind=1)  # "message"
    problems = errors_of(file_store.fsck("s"))
    assert any(p.offset == index_at(1) and "disagrees" in p.message for p in problems)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = file_store.open("s")
    with s:
        assert [e.kind for e in s.entries()] == ["message", "custom.other"]
        assert s.head == last.id
    assert any("index rebuilt" in str(w.message) for w in caught)


def test_a_crash_that_kept_an_entry_but_not_its_new_name_is_a_warning(home):
    """The header's new name and the entry are two unsynced writes: a crash
    may keep the entry only. That is a crash state (warning), and the next
    open rebuilds the index."""
    store = Store(backend=FileBackend(str(home)))
    with store.create(session_id="s") as s:
        s.append("message", {"i": 0}, role="user")
        header_before = index_path(store, "s").read_bytes()[:HEADER_SIZE]
        s.append("custom.late", {"i": 1})
    path = index_path(store, "s")
    path.write_bytes(header_before + path.read_bytes()[HEADER_SIZE:])
    problems = store.fsck("s")
    assert errors_of(problems) == []
    assert any("header holds" in p.message for p in problems)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        with store.open("s") as s:
            assert [e.kind for e in s.entries()] == ["message", "custom.late"]
    assert store.fsck("s") == []


@given(ns=st.integers(0, (1 << 63) - 1))
def test_a_canonical_timestamp_round_trips_through_the_slot(ns):
    stamp = format_timestamp(ns)
    assert _canonical_ns(stamp) == ns


@given(stamp=st.text(max_size=40))
def test_any_other_timestamp_is_left_to_the_record(stamp):
    ns = _canonical_ns(stamp)
    assert ns is None or format_timestamp(ns) == stamp


@pytest.mark.parametrize(
    "stamp",
    [
        "0001-01-01T00:00:00.000000000Z",
        "1600-01-01T00:00:00.000000000Z",
        "1969-12-31T23:59:59.000000001Z",
        "2263-01-01T00:00:00.000000000Z",
    ],
)
def test_a_timestamp_outside_the_slot_is_refused_on_every_call(stamp):
    """Found by `make fuzz` (repair target): the second call, answered from
    the cache of the last second parsed, skipped the range check, and a
    timestamp before 1678 reached `struct.pack` (an untyped error on open)."""
    assert _canonical_ns(stamp) is None
    assert _canonical_ns(stamp) is None  # now from the cache
    assert _canonical_ns(stamp[:20] + "000000002Z") is None


def test_a_checksum_valid_record_dated_1600_opens_and_its_entry_is_incomplete(file_store):
    """Two events of one second outside the slot's range: both are kept and
    read back exactly, their timestamps from the records."""
    with file_store.create(session_id="s") as s:
        s.append("message", {"content": "a"}, role="user")
        s.append("message", {"content": "b"}, role="user")
    chunk = next((Path(file_store.home) / "sessions" / "s" / "chunks").iterdir())
    lines = chunk.read_bytes().splitlines()
    out = []
    for i, line in enumerate(lines):
        rec = orjson.loads(line)
        del rec["crc"]
        rec["timestamp"] = f"1600-01-01T00:00:00.00000000{i}Z"
        out.append(encode_line(rec))
    chunk.write_bytes(b"".join(out))
    (Path(file_store.home) / "sessions" / "s" / "index.bin").unlink()
    stamps = ["1600-01-01T00:00:00.000000000Z", "1600-01-01T00:00:00.000000001Z"]
    with file_store.open("s") as s:
        assert [e.timestamp for e in s.transcript()] == stamps
        assert [e.timestamp for e in s.entries()] == stamps
    slots = read_intact_entries(OsFs(), str(Path(file_store.home) / "sessions" / "s" / "index.bin"))
    assert [e.complete for e in slots] == [False, False]  # the time is read from each record
    assert file_store.fsck("s") == []
