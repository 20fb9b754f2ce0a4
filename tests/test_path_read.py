"""The file backend's whole-path read (backends/files/pathread.py).

It must return exactly what the per-event walk of the seam's default
``ancestors`` returns, on any tree, across chunk boundaries and block
boundaries, and it must report damage exactly as a single ``get`` does.
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import NIL_ID, CorruptionError, EventNotFound, Store
from agentlog.backends.base import SessionStorage
from agentlog.backends.files import pathread
from agentlog.event import stored_record_problem


def _default_ancestors(storage: SessionStorage, from_id: str, **kw: Any) -> list[Any]:
    """The seam's reference walk: one ``get`` per event."""
    return SessionStorage.ancestors(storage, from_id, **kw)


def _build_tree(store: Store, n: int, seed: int) -> tuple[Any, list[str]]:
    rng = random.Random(seed)
    s = store.create(session_id="t")
    ids: list[str] = []
    for i in range(n):
        if ids and rng.random() < 0.15:
            s.select(rng.choice(ids))  # a new branch off any earlier event
        kind = rng.choice(["message", "tool_call", "tool_result"])
        size = rng.choice([10, 200, 3000])
        if rng.random() < 0.2:
            s.append_many([(kind, {"content": "x" * size, "i": i}, "user"), ("message", {"i": -i}, None)])
            ids += [e.id for e in s.path()[-2:]]
        else:
            ids.append(s.append(kind, {"content": "y" * size, "i": i}, role="assistant").id)
    return s, ids


@pytest.mark.parametrize("chunk_size", [4096, 64 * 1024, 1 << 26])
def test_matches_the_per_event_walk_on_a_branched_tree(
    tmp_path: Path, chunk_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pathread, "BLOCK", 8192)  # many block boundaries in a small session
    store = Store(str(tmp_path), durability="off", chunk_size=chunk_size)
    s, ids = _build_tree(store, 300, seed=chunk_size)
    s.close()
    with store.open("t", readonly=True) as r:
        storage = r.storage
        for event_id in ids[::7] + [ids[-1]]:
            assert storage.ancestors(event_id) == _default_ancestors(storage, event_id)
            assert storage.ancestors(event_id, limit=5) == _default_ancestors(storage, event_id, limit=5)
            assert storage.ancestors(event_id, until_kind="tool_call") == _default_ancestors(
                storage, event_id, until_kind="tool_call"
            )
            root = _default_ancestors(storage, event_id)[-1].id
            assert storage.ancestors(event_id, until_id=root)[-1].id == root


def test_record_larger_than_a_block_and_blobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pathread, "BLOCK", 4096)
    store = Store(str(tmp_path), durability="off", blob_threshold=64 * 1024)
    with store.create(session_id="t") as s:
        s.append("message", {"content": "a"}, role="user")
        s.append("tool_result", {"content": "b" * 20_000}, role="tool")  # inline, > BLOCK
        s.append("tool_result", {"content": "c" * 100_000}, role="tool")  # a blob
        s.append("message", {"content": "d"}, role="assistant")
        head = s.head
    with store.open("t", readonly=True) as r:
        got = r.storage.ancestors(head)
        assert got == _default_ancestors(r.storage, head)
        assert [e.record is None for e in got] == [False, True, False, False]


def test_unknown_start_is_event_not_found(tmp_path: Path) -> None:
    store = Store(str(tmp_path), durability="off")
    with store.create(session_id="t") as s:
        s.append("message", {"content": "a"})
        with pytest.raises(EventNotFound):
            s.storage.ancestors("01900000-0000-7000-8000-000000000000")
        assert s.storage.ancestors(NIL_ID) == []


def _chunk(tmp_path: Path) -> Path:
    return next((tmp_path / "sessions" / "t" / "chunks").iterdir())


def _linear(tmp_path: Path, n: int = 40) -> tuple[Store, list[str]]:
    store = Store(str(tmp_path), durability="off")
    with store.create(session_id="t") as s:
        ids = [s.append("message", {"content": f"m{i}"}, role="user").id for i in range(n)]
    return store, ids


def test_a_flipped_byte_in_the_middle_is_reported_as_get_reports_it(tmp_path: Path) -> None:
    store, ids = _linear(tmp_path)
    path = _chunk(tmp_path)
    data = bytearray(path.read_bytes())
    where = data.index(b'"m20"')
    data[where + 1] ^= 0x01  # inside a record: the checksum no longer matches
    path.write_bytes(bytes(data))
    with store.open("t", readonly=True) as r:
        with pytest.raises(CorruptionError) as fast:
            r.storage.ancestors(ids[-1])
    with store.open("t", readonly=True) as r:
        with pytest.raises(CorruptionError) as slow:
            _default_ancestors(r.storage, ids[-1])
    assert (fast.value.path, fast.value.offset) == (slow.value.path, slow.value.offset)


def _reframe(line: bytes, change: dict[str, Any]) -> bytes:
    """A line rewritten with a valid checksum, as a hostile writer would."""
    rec = orjson.loads(line)
    del rec["crc"]
    rec.update(change)
    body = orjson.dumps(rec)
    return b'%s,"crc":"%08x"}\n' % (body[:-1], zlib.crc32(body))


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "Mess ge"},  # same byte length as "message": the index still frames it
        {"role": "U er"},
        {"parent_id": "../../../../../../../../etc/passwd.."},
        {"timestamp": '2026-01-01T00:00:00.0000000"Z'},
    ],
)
def test_a_well_checksummed_invalid_record_is_refused(tmp_path: Path, change: dict[str, Any]) -> None:
    """Invariant 3: a valid checksum is not a valid event; the fast path
    must not believe what get() refuses (the record keeps its length, so the
    index still points at it and only the read can catch it)."""
    store, ids = _linear(tmp_path)
    path = _chunk(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if b'"m20"' in line)
    forged = _reframe(lines[target], change)
    assert len(forged) == len(lines[target])
    lines[target] = forged
    path.write_bytes(b"".join(lines))
    with store.open("t", readonly=True) as r:
        with pytest.raises(CorruptionError, match="malformed"):
            r.storage.ancestors(ids[-1])


_text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=45)
_field = st.one_of(
    st.none(),
    st.integers(),
    _text,
    st.sampled_from(["01900000-0000-7000-8000-000000000001", "2026-01-01T00:00:00.000000001Z", "message", "user"]),
)


@settings(max_examples=400, deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "id": _field,
            "parent_id": _field,
            "kind": _field,
            "role": _field,
            "timestamp": _field,
            "branch_from": _field,
            "digest": _field,
        }
    )
)
def test_fast_check_accepts_only_what_the_full_check_accepts(rec: dict[str, Any]) -> None:
    if pathread.fast_record_ok(rec):
        assert stored_record_problem(rec) is None


def test_reading_while_the_writer_appends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks are read from the chunk the writer is appending to: a read
    ends at a record already applied, so it never sees a half-written line."""
    import threading

    monkeypatch.setattr(pathread, "BLOCK", 4096)
    monkeypatch.setattr(pathread, "FIRST_BLOCK", 1024)
    store = Store(str(tmp_path), durability="off", chunk_size=16 * 1024)
    with store.create(session_id="t") as s:
        s.append("message", {"content": "root"}, role="user")
        done = threading.Event()
        errors: list[BaseException] = []

        def read() -> None:
            try:
                while not done.is_set():
                    path = s.transcript()
                    assert path[0].parent_id == NIL_ID
                    assert all(a.id == b.parent_id for a, b in zip(path, path[1:], strict=False))
            except BaseException as exc:  # reported to the main thread below
                errors.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for i in range(400):
                s.append("message", {"content": f"m{i}" * (1 + i % 30)}, role="assistant")
        finally:
            done.set()
            reader.join()
        assert not errors, errors[0]
        assert len(s.transcript()) == 401


def test_fields_are_checked_one_by_one_not_as_a_concatenation() -> None:
    """A 35-character parent must not borrow the timestamp's first character."""
    good = {
        "id": "01900000-0000-7000-8000-000000000002",
        "parent_id": "01900000-0000-7000-8000-000000000001",
        "kind": "message",
        "role": "user",
        "timestamp": "2026-01-01T00:00:00.000000001Z",
        "branch_from": None,
        "digest": None,
    }
    assert pathread.fast_record_ok(good)
    short = dict(good, parent_id=good["parent_id"][:-1], timestamp="1" + good["timestamp"])
    assert stored_record_problem(short) is not None
    assert not pathread.fast_record_ok(short)
    line = _reframe(orjson.dumps(dict(short, record={"a": 1}, crc="0")), {})
    key = short["id"]
    taken: list[Any] = []
    pathread._follow([line.rstrip(b"\n")], 0, key, taken, 1, None, None)
    assert taken == []  # the fast loop declines it (and the full check reports it)


def test_blobs_and_branches_do_not_multiply_the_bytes_read(tmp_path: Path) -> None:
    """A record the fast check declines (a blob, a branch point) is decoded
    from the block already read; a jump starts again with a small block. So
    a whole path reads each byte of the log about once, not once per event."""
    from agentlog import FileBackend
    from helpers import RecordingFs

    store = Store(str(tmp_path), durability="off", blob_threshold=1024)
    with store.create(session_id="t") as s:
        ids = []
        for i in range(300):
            if i and i % 40 == 0:
                s.select(ids[-10])  # a branch: the path jumps back over 9 events
            big = i % 3 == 0
            ids.append(
                s.append("tool_result", {"content": ("z" if big else "m") * (2000 if big else 100)}, role="tool").id
            )
        head = s.head
    chunk = next((tmp_path / "sessions" / "t" / "chunks").iterdir())
    fs = RecordingFs()
    with Store(backend=FileBackend(str(tmp_path), fs=fs)).open("t", readonly=True) as r:
        fs.clear()
        path = r.path(head)
        assert path[-1].id == head and len(path) > 200
    read = sum(size for _, size in fs.reads_of(chunk))
    assert read <= 2 * chunk.stat().st_size, (read, chunk.stat().st_size)
