"""Format version 3: an event line leaves out a null ``branch_from`` and a
null ``digest`` (docs/format.md). Lines written before it carry both as
null, and a session may hold both forms: a log written by an older build
and appended to by this one. Every reader takes an absent member as null,
so both forms read alike, on the fast path and the careful one, and fsck
and repair treat them alike.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from agentlog import FileBackend, Store
from agentlog._codec import decode_line, encode_line
from helpers import errors_of
from reliability.lineforms import as_format_2

SID = "s"
V1 = Path(__file__).parent / "fixtures" / "format-v1" / "v1"


def _chunk(home: Path) -> Path:
    return home / "sessions" / SID / "chunks" / "000000.jsonl"


def _as_format_2(line: bytes) -> bytes:
    """The line as a version-2 build wrote it: both members, null or not."""
    rec = decode_line(line)
    return line if "op" in rec else encode_line(as_format_2(rec)).rstrip(b"\n")


def _view(store: Store) -> tuple[list[tuple], list[object], str]:
    with store.open(SID, readonly=True) as s:
        entries = [(e.id, e.parent_id, e.branch_from, e.kind, e.role, e.timestamp, e.digest) for e in s.entries()]
        return entries, [(e.id, e.record) for e in s.transcript()], s.head


def test_new_lines_leave_out_null_members_and_keep_set_ones(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.create(session_id=SID) as s:
        first = s.append("message", {"content": "hi"}, role="user")
        s.append("tool_result", {"content": "x" * 20_000}, role="tool")  # large: a blob
        s.checkout(first.id)
        s.append("message", {"content": "again"}, role="user")  # starts a branch
    lines = [orjson.loads(line) for line in _chunk(tmp_path).read_bytes().splitlines()]
    events = [rec for rec in lines if "op" not in rec]
    plain, blob, branch = events
    assert "branch_from" not in plain and "digest" not in plain
    assert list(plain) == ["id", "parent_id", "kind", "role", "timestamp", "record", "crc"]
    assert blob["digest"].startswith("sha256:") and blob["record"] is None and "branch_from" not in blob
    assert branch["branch_from"] == first.id and "digest" not in branch
    assert list(branch)[:3] == ["id", "parent_id", "branch_from"]


@pytest.mark.parametrize("keep_index", [True, False])
def test_a_log_of_both_forms_reads_alike(tmp_path: Path, keep_index: bool) -> None:
    """The version-1 fixture's lines carry the nulls; this build appends
    lines without them; the session reads the same as one of either form."""
    home = tmp_path / "mixed"
    shutil.copytree(V1, home / "sessions" / SID)
    store = Store(home)
    with store.open(SID) as s:  # converts the old index, then appends format 3
        for i in range(5):
            s.append("message", {"content": f"new {i}"}, role="user" if i % 2 else "assistant")
        s.append("tool_result", {"content": "y" * 20_000}, role="tool")
    raw = _chunk(home).read_bytes().splitlines()
    assert sum(b'"branch_from":null' in line for line in raw) == 5  # the fixture's plain events
    assert sum(b'"branch_from"' not in line and b'"op"' not in line for line in raw) == 6  # ours
    before = _view(store)
    assert len(before[0]) == 12 and before[0][-1][6] is not None  # the last record is in a blob
    # the same session written wholly in version 2's form
    v2 = tmp_path / "v2"
    shutil.copytree(home, v2)
    _chunk(v2).write_bytes(b"".join(_as_format_2(line) + b"\n" for line in raw))
    (v2 / "sessions" / SID / "index.bin").unlink()
    if not keep_index:
        (home / "sessions" / SID / "index.bin").unlink()  # readers derive it from the log
    assert _view(Store(home)) == before == _view(Store(v2))
    assert errors_of(store.fsck(SID)) == []
    assert errors_of(Store(v2).fsck(SID)) == []


def test_repair_writes_tombstones_for_damage_in_either_form(tmp_path: Path) -> None:
    """One damaged line of each form in one chain, with no index to say
    what they were: both are recovered from their own bytes, every intact
    event stays reachable, and the tombstones are format 3 lines."""
    store = Store(backend=FileBackend(str(tmp_path), durability="off"))
    with store.create(session_id=SID) as s:
        ids = [s.append("message", {"content": f"turn {i:02d}"}, role="user").id for i in range(20)]
    path = _chunk(tmp_path)
    lines = path.read_bytes().splitlines()
    # the first half as a version-2 build wrote it
    lines = [_as_format_2(line) if i < 10 else line for i, line in enumerate(lines)]
    data = bytearray(b"".join(line + b"\n" for line in lines))
    for needle in (b"turn 05", b"turn 15"):  # one old line, one new
        data[data.index(needle) + 1] ^= 0x01
    path.write_bytes(bytes(data))
    (tmp_path / "sessions" / SID / "index.bin").unlink()
    actions = store.repair(SID)
    for i in (5, 15):
        assert any("tombstone for event " + ids[i] in a for a in actions), actions
    with store.open(SID, readonly=True) as s:
        assert s.head == ids[-1]
        path_ids = [e.id for e in s.transcript()]
        assert path_ids == ids
        stones = [e for e in s.transcript() if e.kind == "tombstone"]
        assert [e.id for e in stones] == [ids[5], ids[15]]
        assert all(e.record["recovered_from"] == "record bytes" for e in stones)
    written = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    for rec in written:
        if rec.get("kind") == "tombstone":
            assert "branch_from" not in rec and "digest" not in rec
    assert errors_of(store.fsck(SID)) == []
