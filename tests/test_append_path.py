"""The lean append path: what it skips must not change what it stores.

``Session.append`` goes through ``Timeline.submit_one`` (one event, no
rebuilt objects), the file backend frames its line when it is submitted
and writes it in a group; ids are compared as text and timestamps are
formatted by slicing digits. Each shortcut is checked here against the
slow form it replaces, and group commit against its invariants: one
``fdatasync`` per acknowledged append when alone, one per group when
not, and a failed group fails every commit queued in it (invariant 1).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentlog.event as event_module
from agentlog import FileBackend, InvalidEvent, StorageError, Store, StreamedDeltaError
from agentlog._codec import decode_line, encode_line
from agentlog._fs import OsFs
from agentlog._slots import slot_constructor
from agentlog.backends.base import Commit, StagedEvent
from agentlog.backends.files.lines import frame_commit
from agentlog.event import Event, IdGenerator, format_timestamp, parse_timestamp

pytestmark = pytest.mark.timeout(120)

ID_A = "0192d1c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
ID_B = "0192d1c4-5e6f-7a8b-9c0d-1e2f3a4b5c6e"


# --- what the one-event path returns and stores --------------------------------
@pytest.mark.parametrize(
    "record",
    [
        {"content": "hi", "n": [1, 2.5, None, True]},
        ("a", ("nested", 1)),  # tuples come back as lists, as from a read
        "plain text",
        None,
        0,
        {"unicode": "é ✓ \u2028", "quote": '"\\'},
    ],
)
def test_append_returns_what_a_read_returns(store, record):
    with store.create() as s:
        e = s.append("message", record, role="assistant")
        assert s.event(e.id) == e
        assert e.record == orjson.loads(orjson.dumps(record))
        assert e.record is not record or record is None or isinstance(record, (str, int))


def test_append_returns_a_copy_not_the_callers_object(store):
    record = {"content": "before"}
    with store.create() as s:
        e = s.append("message", record, role="user")
        record["content"] = "after"
        assert e.record == {"content": "before"}
        assert s.event(e.id).record == {"content": "before"}


def test_one_event_append_and_append_many_store_the_same_shape(file_store):
    with file_store.create() as s:
        one = s.append("message", {"x": 1}, role="user")
        many = s.append_many([("message", {"x": 1}, "user")])[0]
    for e in (one, many):
        stored = file_store.open(s.id, readonly=True)
        got = stored.event(e.id)
        stored.close()
        assert (got.kind, got.role, got.record, got.digest, got.branch_from) == (
            "message",
            "user",
            {"x": 1},
            None,
            None,
        )
    assert many.parent_id == one.id


def test_append_after_checkout_branches_and_the_selection_is_honoured(store):
    with store.create() as s:
        a = s.append("message", {"n": 1}, role="user")
        b = s.append("message", {"n": 2}, role="user")
        s.checkout(a.id)
        c = s.append("message", {"n": 3}, role="user")  # a second child of a
        assert (c.parent_id, c.branch_from) == (a.id, a.id)
        s.select(b.id)
        d = s.append("message", {"n": 4}, role="user")
        assert (d.parent_id, d.branch_from) == (b.id, None)
        assert s.head == d.id


def test_a_blob_sized_record_goes_to_a_blob_on_the_one_event_path(file_store):
    big = {"out": "x" * 5000}
    with file_store.create() as s:
        e = s.append("tool_result", big, role="tool")
        assert e.digest is not None and e.digest.startswith("sha256:")
        assert e.record == big
        assert s.resolve(s.event(e.id)).record == big


# --- validation: once, cheaply, still complete ---------------------------------
@pytest.mark.parametrize(
    ("kind", "record", "role", "error"),
    [
        ("Message", {}, None, InvalidEvent),  # upper case
        ("", {}, None, InvalidEvent),
        (3, {}, None, InvalidEvent),
        ("message", {}, "Assistant", InvalidEvent),
        ("message", {}, 7, InvalidEvent),
        ("message", {}, ["user"], InvalidEvent),  # unhashable: must not reach the cache
        ("message", {1, 2}, "user", InvalidEvent),  # not JSON
        ("message", object(), "user", InvalidEvent),
        ("text_delta", {}, None, StreamedDeltaError),
        ("message", {"object": "chat.completion.chunk"}, "assistant", StreamedDeltaError),
        ("message", {"type": "response.output_text.delta"}, "assistant", StreamedDeltaError),
    ],
)
def test_invalid_drafts_are_refused_before_anything_is_written(store, kind, record, role, error):
    with store.create() as s:
        s.append("message", {}, role="user")  # the valid names are cached now
        with pytest.raises(error):
            s.append(kind, record, role=role)
        assert len(s) == 1


def test_a_cached_name_does_not_let_a_lookalike_through(store):
    class Sneaky(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    with store.create() as s:
        s.append("message", {}, role="user")
        with pytest.raises(InvalidEvent):
            s.append(Sneaky("Bad Kind"), {}, role="user")
        with pytest.raises(InvalidEvent):
            s.append("message", {}, role=Sneaky("Bad Role"))


# --- ids: compared as text, still strictly increasing ---------------------------
def test_ids_increase_when_the_clock_steps_back(monkeypatch):
    gen = IdGenerator()
    first = gen.next()
    past = uuid.UUID("00000000-0000-7000-8000-000000000000")
    monkeypatch.setattr(event_module.uuid_utils, "uuid7", lambda: past)
    second, third = gen.next(), gen.next()
    assert first < second < third
    assert uuid.UUID(second).int == uuid.UUID(first).int + 1
    assert str(uuid.UUID(third)) == third  # canonical


def test_ids_resume_after_the_last_stored_and_observed_one():
    top = "ffffffff-ffff-7fff-bfff-fffffffffff0"
    gen = IdGenerator(top.upper())  # stored ids are canonical; a stray upper-case one is normalised
    assert gen.last() == top
    assert gen.next() == "ffffffff-ffff-7fff-bfff-fffffffffff1"
    gen.observe("00000000-0000-7000-8000-000000000001")  # older: ignored
    assert gen.last() == "ffffffff-ffff-7fff-bfff-fffffffffff1"


def test_no_id_after_the_largest_uuid():
    gen = IdGenerator("ffffffff-ffff-ffff-ffff-ffffffffffff")
    with pytest.raises(InvalidEvent):
        gen.next()


@given(st.integers(min_value=0, max_value=2**128 - 1), st.integers(min_value=0, max_value=2**128 - 1))
def test_canonical_ids_sort_as_text_as_they_do_as_numbers(a, b):
    ta, tb = str(uuid.UUID(int=a)), str(uuid.UUID(int=b))
    assert (ta < tb) == (a < b)


# --- timestamps: sliced digits, the same text --------------------------------------
def _reference_timestamp(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(secs))}.{frac:09d}Z"


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_format_timestamp_matches_the_arithmetic_form(ns):
    assert format_timestamp(ns) == _reference_timestamp(ns)


@pytest.mark.parametrize("ns", [0, 999_999_999, 10**18 - 1, 10**18, 10**19 - 1, 10**19, 1_700_000_000_000_000_001])
def test_format_timestamp_at_the_width_edges(ns):
    assert format_timestamp(ns) == _reference_timestamp(ns)
    assert format_timestamp(ns) == _reference_timestamp(ns)  # the cached second too


def _strptime_reference(text: str) -> int:
    main, _, frac = text.rstrip("Z").partition(".")
    dt = datetime.strptime(main, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + int((frac or "0").ljust(9, "0")[:9])


@given(st.integers(min_value=0, max_value=253_402_300_799 * 10**9))  # to 9999-12-31
def test_parse_timestamp_reads_the_canonical_form_as_strptime_does(ns):
    text = format_timestamp(ns)
    assert parse_timestamp(text) == _strptime_reference(text) == ns


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01T00:00:00.000000000Z",
        "2026-02-30T00:00:00.000000000Z",
        "2026-01-01T24:00:00.000000000Z",
        "2026-01-01T00:00:61.000000000Z",
        "2026-01-01T00:00:00.00000000xZ",
    ],
)
def test_parse_timestamp_refuses_what_strptime_refuses(text):
    with pytest.raises(ValueError):
        parse_timestamp(text)


# --- framing ----------------------------------------------------------------------
_names = st.from_regex(r"[a-z][a-z0-9_.-]{0,31}", fullmatch=True)


@given(
    payload=st.one_of(st.none(), st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1), max_size=3)),
    role=st.one_of(st.none(), _names),
    kind=_names,
    branch=st.booleans(),
)
def test_a_framed_append_is_the_dict_encoded_and_decodes_back(payload, role, kind, branch):
    raw = None if payload is None else orjson.dumps(payload)
    digest = "sha256:" + "0" * 64 if raw is None else None
    e = StagedEvent(ID_B, ID_A, kind, role, "2026-01-01T00:00:00.000000001Z", raw, digest, ID_A if branch else None)
    lines, records = frame_commit(Commit((e,), ID_B, ID_A))
    assert len(lines) == 1 and records[0] is not None
    back = decode_line(lines[0])
    assert back["record"] == payload
    # format 3 leaves a null branch_from or digest out; readers take absent as null
    assert {"branch_from": None, "digest": None, **back} == {**e.to_event().to_dict(), "record": payload}
    assert ("branch_from" in back) == branch and ("digest" in back) == (digest is not None)
    assert lines[0] == encode_line({**records[0]})


def test_a_commit_of_several_lines_carries_batch_markers():
    a = StagedEvent(ID_A, "00000000-0000-0000-0000-000000000000", "message", None, "t", b"1")
    b = StagedEvent(ID_B, ID_A, "message", None, "t", b"2")
    lines, records = frame_commit(Commit((a, b), ID_A, "00000000-0000-0000-0000-000000000000"))
    decoded = [decode_line(line) for line in lines]
    assert [d.get("txn") for d in decoded] == [[0, 3], [1, 3], [2, 3]]
    assert decoded[2]["op"] == "checkout" and decoded[2]["head"] == ID_A
    assert records[2] is None and records[0] is not None


# --- fast constructors ----------------------------------------------------------
def test_slot_constructors_build_equal_frozen_objects():
    build = slot_constructor(Event)
    e = build(ID_A, ID_B, "message", None, "t", {"x": 1}, None, None, {})
    assert e == Event(ID_A, ID_B, "message", None, "t", {"x": 1})
    assert type(e) is Event and e.extra == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.kind = "other"  # type: ignore[misc]
    staged = slot_constructor(StagedEvent)(ID_A, ID_B, "k", None, "t", b"{}", None, None)
    assert staged == StagedEvent(ID_A, ID_B, "k", None, "t", b"{}")
    assert slot_constructor(Commit)((staged,), ID_A, ID_B, {}) == Commit((staged,), ID_A, ID_B)


def test_slot_constructor_falls_back_where_it_cannot_be_exact():
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int
        b: list[int] = field(default_factory=list)

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    assert slot_constructor(NoSlots) is NoSlots
    assert slot_constructor(Checked) is Checked


# --- group commit -----------------------------------------------------------------
class _SyncCounter(OsFs):
    """Counts fdatasyncs of chunks; can park the next one on a gate, or fail it."""

    def __init__(self) -> None:
        self.fdatasyncs = 0
        self.gate: threading.Event | None = None
        self.parked = threading.Event()
        self.fail_next = False
        self._lock = threading.Lock()

    def fdatasync(self, fd: int, path: str = "?") -> None:
        if "chunk" in path:
            with self._lock:
                gate, self.gate = self.gate, None
                fail, self.fail_next = self.fail_next, False
                self.fdatasyncs += 1
            if gate is not None:
                self.parked.set()
                gate.wait(30)
            if fail:
                raise StorageError("fdatasync", path, 5, "Input/output error")
        super().fdatasync(fd, path)


def _syncing_store(tmp_path: Any, fs: OsFs) -> Store:
    return Store(backend=FileBackend(str(tmp_path / "home"), durability="full", fs=fs))


def _in_thread(results: list[Any], fn: Any, *args: Any, **kwargs: Any) -> threading.Thread:
    def run() -> None:
        try:
            results.append(fn(*args, **kwargs))
        except BaseException as exc:  # the test inspects it
            results.append(exc)

    t = threading.Thread(target=run)
    t.start()
    return t


def _park_a_sync(s: Any, fs: _SyncCounter, results: list[Any]) -> tuple[threading.Thread, threading.Event]:
    """Start an append whose fdatasync is parked until the returned gate is set."""
    gate = fs.gate = threading.Event()
    fs.parked.clear()
    leader = _in_thread(results, s.append, "message", {"leader": True}, role="user")
    assert fs.parked.wait(10)
    return leader, gate


def _wait_queued(s: Any, n: int) -> None:
    storage = s.storage
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with storage._mu:
            queued = len(storage._queue)
        if queued >= n:
            return
        time.sleep(0.005)
    raise AssertionError(f"only {queued} of {n} commits queued")


def test_one_fdatasync_per_acknowledged_append_when_alone(tmp_path):
    fs = _SyncCounter()
    with _syncing_store(tmp_path, fs).create() as s:
        s.append("message", {"warm": True}, role="user")
        before = fs.fdatasyncs
        for i in range(20):
            s.append("message", {"i": i}, role="user")
            assert fs.fdatasyncs == before + i + 1


@pytest.mark.parametrize("shared", [True, False])
def test_appends_queued_during_a_sync_share_the_next_one(tmp_path, shared):
    fs = _SyncCounter()
    store = _syncing_store(tmp_path, fs)
    s = store.create()
    s.append("message", {"first": True}, role="user")
    results: list[Any] = []
    leader, gate = _park_a_sync(s, fs, results)
    before = fs.fdatasyncs
    handles = [s if shared else store.open(s.id) for _ in range(6)]
    followers = [_in_thread(results, h.append, "message", {"f": i}, role="user") for i, h in enumerate(handles)]
    _wait_queued(s, 6)
    gate.set()
    for t in (leader, *followers):
        t.join(30)
    assert not any(isinstance(r, BaseException) for r in results)
    assert len(results) == 7
    assert fs.fdatasyncs - before == 1  # all six queued behind the parked sync: one group, one sync
    ids = [e.id for e in s.path()]
    assert ids == sorted(ids) and len(ids) == 8
    for h in {id(h): h for h in handles}.values():
        h.close()
    s.close()


def test_a_failed_sync_fails_its_group_and_everything_queued_behind_it(tmp_path):
    fs = _SyncCounter()
    store = _syncing_store(tmp_path, fs)
    s = store.create()
    first = s.append("message", {"first": True}, role="user")
    # The leader's sync is parked; six commits queue; the next sync (theirs) fails.
    results: list[Any] = []
    leader, gate = _park_a_sync(s, fs, results)
    followers = [_in_thread(results, s.append, "message", {"f": i}, role="user") for i in range(6)]
    _wait_queued(s, 6)
    fs.fail_next = True
    gate.set()
    for t in (leader, *followers):
        t.join(30)
    ok = [r for r in results if isinstance(r, Event)]
    failed = [r for r in results if isinstance(r, BaseException)]
    assert len(ok) == 1 and ok[0].record == {"leader": True}  # its own sync succeeded
    assert len(failed) == 6 and all(isinstance(r, StorageError) for r in failed)
    assert s.head == ok[0].id
    # The session goes on from the last durable HEAD, and a reopen agrees.
    after = s.append("message", {"after": True}, role="user")
    assert after.parent_id == ok[0].id
    s.close()
    with store.open(s.id, readonly=True) as again:
        assert [e.id for e in again.path()] == [first.id, ok[0].id, after.id]


def test_a_ticket_waited_from_two_threads_settles_both(tmp_path):
    fs = _SyncCounter()
    store = _syncing_store(tmp_path, fs)
    s = store.create()
    results: list[Any] = []
    leader, gate = _park_a_sync(s, fs, results)
    # Queued behind the parked sync; its owner and a second thread (as the
    # core's drain does before a read) both wait on the one ticket.
    events, _, ticket = s._timeline.submit_one("message", {"queued": True}, "user")
    waiters = [_in_thread(results, ticket.wait) for _ in range(2)]
    _wait_queued(s, 1)
    time.sleep(0.05)
    gate.set()
    for t in (leader, *waiters):
        t.join(30)
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert len(results) == 3
    assert s.head == events[0].id
    s.close()


def test_commits_nobody_waited_for_are_written_on_close(tmp_path):
    store = Store(str(tmp_path / "home"))
    s = store.create()
    storage = s.storage
    head = s.head
    staged = StagedEvent(ID_A, head, "message", "user", format_timestamp(time.time_ns()), b'{"x":1}')
    storage.commit(Commit((staged,), ID_A, head))  # never waited
    s.close()
    with store.open(s.id, readonly=True) as again:
        assert again.head == ID_A
        assert again.event(ID_A).record == {"x": 1}


def test_many_threads_many_groups_one_chain(tmp_path):
    fs = _SyncCounter()
    store = _syncing_store(tmp_path, fs)
    s = store.create()
    before = fs.fdatasyncs
    results: list[Any] = []
    threads = [
        _in_thread(results, lambda t=t: [s.append("message", {"t": t, "i": i}, role="user") for i in range(25)])
        for t in range(16)
    ]
    for t in threads:
        t.join(60)
    assert not any(isinstance(r, BaseException) for r in results)
    events = [e for r in results for e in r]
    assert len(events) == 400
    assert fs.fdatasyncs - before <= 400
    path = s.path()
    assert [e.id for e in path] == sorted(e.id for e in events)
    s.close()


def test_the_nil_id_counts_as_no_id_issued():
    nil = "00000000-0000-0000-0000-000000000000"
    gen = IdGenerator(nil)
    assert gen.last() == "" and not gen.is_last(nil)
    gen.observe(nil)
    assert gen.last() == ""
    assert gen.next() > nil
