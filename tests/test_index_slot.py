"""The index slot packed in C (``_speedups.index_slot``) against the Python
packer (``Index._encode``), which stays the reference.

The write path packs each appended event's 64-byte entry with the C
function; where it answers, its bytes must be exactly the Python
packer's, and it must answer for every record agentlog's own writer makes
(or the speed is not real). Where it does not answer (None), the Python
packer runs, so anything it is unsure of costs speed, never correctness.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog._fs import OsFs
from agentlog.backends.files import index as index_module
from agentlog.backends.files.index import ENTRY_SIZE, HEADER_SIZE, Index, entry_of, read_intact_entries
from agentlog.backends.files.index_format import NameTable
from agentlog.errors import StorageError
from agentlog.event import NIL_ID, format_timestamp
from speedups_support import speedups

needs_c = pytest.mark.skipif(
    speedups is None and not os.environ.get("AGENTLOG_REQUIRE_SPEEDUPS"), reason="agentlog._speedups is not built here"
)

_LAST_NS = (1 << 63) - 1  # 2262-04-11T23:47:16.854775807Z: the slot's last instant


def _python_slot(rec: dict[str, Any], chunk: int, offset: int, length: int, codes: dict[str, int]) -> bytes:
    """``Index._encode`` on an index whose table already holds ``codes``."""
    index = Index.__new__(Index)
    index._names = NameTable(list(codes))
    return index._encode(entry_of(rec, chunk, offset, length), [])


def _record(eid: str, parent: str, stamp: str, **more: Any) -> dict[str, Any]:
    return {
        "id": eid,
        "parent_id": parent,
        "branch_from": more.get("branch_from"),
        "kind": more.get("kind", "message"),
        "role": more.get("role"),
        "timestamp": stamp,
        "digest": more.get("digest"),
    }


def _c_slot(rec: dict[str, Any], chunk: int, offset: int, length: int, codes: dict[str, int]) -> bytes | None:
    return speedups.index_slot(rec, chunk, offset, length, codes)


_uuids = st.builds(lambda n: str(uuid.UUID(int=n)), st.integers(0, (1 << 128) - 1))
_names = {"message": 1, "tool_result": 2, "user": 3, "assistant": 4}


@needs_c
def test_the_write_path_uses_the_c_packer() -> None:
    assert speedups is not None, "agentlog._speedups did not build"
    if os.environ.get("AGENTLOG_PURE_PYTHON"):
        assert index_module._index_slot is None  # turned off: the Python packer runs
    else:
        assert index_module._index_slot is speedups.index_slot


@needs_c
@settings(max_examples=400)
@given(
    eid=_uuids,
    parent=st.one_of(st.just(NIL_ID), _uuids),
    ns=st.integers(0, _LAST_NS),
    branch=st.sampled_from(["none", "parent", "other"]),
    digest=st.one_of(st.none(), st.just("sha256:" + "ab" * 32)),
    chunk=st.integers(0, (1 << 32) - 1),
    offset=st.integers(0, (1 << 64) - 1),
    length=st.integers(0, (1 << 32) - 1),
    kind=st.sampled_from(["message", "tool_result"]),
    role=st.sampled_from([None, "user", "assistant"]),
)
def test_every_record_the_writer_makes_packs_alike(eid, parent, ns, branch, digest, chunk, offset, length, kind, role):
    stamp = format_timestamp(ns)
    branch_from = {"none": None, "parent": parent, "other": "01a23132-a624-7506-9972-d0bcd3fea5c7"}[branch]
    rec = _record(eid, parent, stamp, branch_from=branch_from, digest=digest, kind=kind, role=role)
    got = _c_slot(rec, chunk, offset, length, _names)
    if int(stamp[:4]) <= 2261:
        assert got is not None, stamp  # every timestamp the writer makes until 2262 packs in C
    if got is not None:
        assert got == _python_slot(rec, chunk, offset, length, _names)
        assert len(got) == ENTRY_SIZE


@needs_c
@settings(max_examples=600)
@given(
    stamp=st.one_of(
        st.text(max_size=32),
        st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z\Z"),
        st.builds(
            lambda y, m, d, h, mi, s: f"{y:04d}-{m:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.123456789Z",
            st.integers(0, 9999),
            st.integers(0, 13),
            st.integers(0, 32),
            st.integers(0, 24),
            st.integers(0, 60),
            st.integers(0, 61),
        ),
    ),
    eid=st.one_of(_uuids, _uuids.map(str.upper), st.text(min_size=36, max_size=36)),
)
def test_whatever_it_answers_is_the_python_packers_answer(stamp, eid):
    """Odd timestamps (invalid dates, leap seconds, out of range, not the
    canonical form) and odd ids: C packs the same bytes, or leaves it to Python."""
    rec = _record(eid, NIL_ID, stamp)
    got = _c_slot(rec, 0, 10, 20, _names)
    if got is not None:
        assert got == _python_slot(rec, 0, 10, 20, _names)


@needs_c
@pytest.mark.parametrize(
    "stamp",
    [
        "1969-12-31T23:59:59.999999999Z",
        "2262-01-01T00:00:00.000000000Z",
        "2026-02-29T00:00:00.000000000Z",  # not a leap year
        "2026-04-31T00:00:00.000000000Z",
        "2026-12-31T23:59:60.000000000Z",  # a leap second: strptime takes it, it does not round-trip
        "2026-12-31T24:00:00.000000000Z",
        "2026-12-31 23:59:59.000000000Z",
        "2026-12-31T23:59:59.00000000Z",
        "２026-12-31T23:59:59.000000000Z",
    ],
)
def test_a_timestamp_it_is_unsure_of_is_left_to_python(stamp):
    assert _c_slot(_record(str(uuid.uuid4()), NIL_ID, stamp), 0, 0, 1, _names) is None


@needs_c
@pytest.mark.parametrize(
    "stamp",
    [
        "1970-01-01T00:00:00.000000000Z",
        "2000-02-29T12:00:00.500000000Z",
        "2261-12-31T23:59:59.999999999Z",
        "2024-02-29T23:59:59.999999999Z",
    ],
)
def test_the_edges_of_its_range_pack_alike(stamp):
    rec = _record(str(uuid.uuid4()), NIL_ID, stamp)
    got = _c_slot(rec, 3, 1 << 40, 7, _names)
    assert got is not None and got == _python_slot(rec, 3, 1 << 40, 7, _names)


@needs_c
def test_values_past_the_slot_are_left_to_python() -> None:
    rec = _record(str(uuid.uuid4()), NIL_ID, format_timestamp(10**18))
    assert _c_slot(rec, -1, 0, 1, _names) is None
    assert _c_slot(rec, 0, 1 << 64, 1, _names) is None
    assert _c_slot(rec, 0, 0, 1 << 32, _names) is None
    assert _c_slot(rec, 0, 0, 1, {"message": 256}) is None  # not a one-byte code
    assert _c_slot(rec, 0, 0, 1, {"message": 1 << 80}) is None
    assert _c_slot(rec, 0, 0, 1, {"message": "1"}) is None
    with pytest.raises(TypeError):
        speedups.index_slot(rec)
    with pytest.raises(TypeError):
        speedups.index_slot(list(rec.items()), 0, 0, 1, _names)


@needs_c
def test_names_not_in_the_table_and_missing_members_are_left_to_python() -> None:
    """A new kind or role gets its code from the Python packer (which adds
    it to the table); a record without a required member is ``entry_of``'s
    KeyError, as it always was; absent optional members read as None."""
    rec = _record(str(uuid.uuid4()), NIL_ID, format_timestamp(10**18), kind="custom.new", role="assistant")
    assert _c_slot(rec, 0, 0, 1, _names) is None
    rec = _record(str(uuid.uuid4()), NIL_ID, format_timestamp(10**18), role="critic")
    assert _c_slot(rec, 0, 0, 1, _names) is None
    for key in ("id", "parent_id", "timestamp", "kind"):
        partial = _record(str(uuid.uuid4()), NIL_ID, format_timestamp(10**18))
        del partial[key]
        assert _c_slot(partial, 0, 0, 1, _names) is None
    bare = _record(str(uuid.uuid4()), NIL_ID, format_timestamp(10**18))
    for key in ("role", "branch_from", "digest"):
        del bare[key]
    assert _c_slot(bare, 0, 0, 1, _names) == _python_slot(bare, 0, 0, 1, _names)


def _write(tmp_path, name: str, placed: list, *, fast: bool, monkeypatch) -> bytes:
    if not fast:
        monkeypatch.setattr(index_module, "_index_slot", None)
    path = str(tmp_path / name)
    index = Index(OsFs(), path, writable=True)
    for batch in placed:
        index.add_records(batch)
    index.close()
    monkeypatch.undo()
    with open(path, "rb") as f:
        return f.read()


def test_add_records_writes_the_file_add_writes(tmp_path, monkeypatch) -> None:
    """New names (the header first), odd timestamps, digests and branch
    points, in batches: the C and the Python paths write the same file, the
    same as ``add`` of the entries."""
    recs: list[dict[str, Any]] = []
    parent = NIL_ID
    for i in range(40):
        stamp = format_timestamp(1_764_585_732_000_000_000 + i) if i % 7 else "2026-11-30 14:42:57"
        rec = _record(
            f"01a22ce8-b344-7495-a838-{i:012x}",
            parent,
            stamp,
            kind=f"custom.k{i % 5}",
            role=None if i % 3 == 0 else f"r{i % 4}",
            digest="sha256:" + "cd" * 32 if i % 11 == 0 else None,
            branch_from=parent if i % 13 == 5 else None,
        )
        recs.append(rec)
        parent = rec["id"]
    placed = [(r, i // 20, 300 * (i % 20), 300) for i, r in enumerate(recs)]
    batches = [placed[:1], placed[1:2], placed[2:17], placed[17:18], placed[18:]]
    fast = _write(tmp_path, "fast.bin", batches, fast=True, monkeypatch=monkeypatch)
    slow = _write(tmp_path, "slow.bin", batches, fast=False, monkeypatch=monkeypatch)
    path = str(tmp_path / "add.bin")
    index = Index(OsFs(), path, writable=True)
    for batch in batches:
        index.add([entry_of(*p) for p in batch])
    index.close()
    with open(path, "rb") as f:
        assert fast == slow == f.read()
    assert len(fast) == HEADER_SIZE + 40 * ENTRY_SIZE
    assert [e.id for e in read_intact_entries(OsFs(), str(tmp_path / "fast.bin"))] == [r["id"] for r in recs]


class _FailingPwrite(OsFs):
    """Fails the next positioned write (the index's entries), once."""

    fail = False

    def pwrite(self, fd: int, data: bytes, offset: int, path: str = "?") -> None:
        if self.fail:
            self.fail = False
            raise StorageError("write", path, 28, "No space left on device")
        super().pwrite(fd, data, offset, path)


def test_a_failed_index_write_keeps_the_entries_in_memory(tmp_path) -> None:
    """The index is derived: a write that fails leaves the entries in the
    in-memory tail (lookups still find them) and the file as it was."""
    fs = _FailingPwrite()
    path = str(tmp_path / "index.bin")
    index = Index(fs, path, writable=True)
    first = _record("01a22ce8-b344-7495-a838-000000000001", NIL_ID, format_timestamp(10**18), kind="message")
    index.add_records([(first, 0, 0, 100)])
    second = _record("01a22ce8-b344-7495-a838-000000000002", first["id"], format_timestamp(10**18 + 1))
    fs.fail = True
    index.add_records([(second, 0, 100, 100)])
    assert index.broken and index.count == 1
    assert index.lookup(second["id"]) == entry_of(second, 0, 100, 100)
    index.close()
    assert os.path.getsize(path) == HEADER_SIZE + ENTRY_SIZE


def test_a_session_reads_back_what_the_c_packer_indexed(tmp_path) -> None:
    store = Store(str(tmp_path / "home"))
    with store.create(session_id="s") as s:
        made = [s.append("message", {"i": i}, role="user" if i % 2 else "assistant") for i in range(30)]
        made += s.append_many([("tool_result", {"out": "x" * 50}, "tool")] * 5)
        s.checkout(made[10].id)
        made.append(s.append("message", {"branch": True}, role="user"))
    assert store.fsck("s") == []
    with store.open("s", readonly=True) as r:
        assert [(e.id, e.parent_id, e.kind, e.role, e.timestamp) for e in r.entries()] == [
            (e.id, e.parent_id, e.kind, e.role, e.timestamp) for e in made
        ]


def test_adding_no_records_writes_nothing(tmp_path) -> None:
    path = str(tmp_path / "index.bin")
    index = Index(OsFs(), path, writable=True)
    index.add_records([])
    index.close()
    assert os.path.getsize(path) == HEADER_SIZE
