"""Repair that loses no intact event: tombstones (backends/files/tombstone.py).

The issue's case: one damaged record in the middle of a 50-event chain.
Quarantining it alone used to leave 20 events on the active path; with
tombstones (what every file store's repair writes) all 49 intact events
stay reachable and HEAD does not move.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import FileBackend, RecoveryWarning, Store

SID = "s"


def _store(home: Path, **kw: object) -> Store:
    return Store(backend=FileBackend(str(home), durability="off", **kw))  # type: ignore[arg-type]


def _chain(store: Store, n: int = 50) -> list[str]:
    with store.create(session_id=SID) as s:
        return [
            s.append("message", {"content": f"turn {i:03d}"}, role="user" if i % 2 else "assistant").id
            for i in range(n)
        ]


def _chunk(home: Path) -> Path:
    return home / "sessions" / SID / "chunks" / "000000.jsonl"


def _flip(home: Path, needle: bytes, delta: int = 1) -> None:
    path = _chunk(home)
    data = bytearray(path.read_bytes())
    data[data.index(needle) + delta] ^= 0x01
    path.write_bytes(bytes(data))


def _index(home: Path) -> Path:
    return home / "sessions" / SID / "index.bin"


@pytest.mark.parametrize("with_index", [True, False])
def test_one_damaged_record_in_a_chain_keeps_every_intact_event(tmp_path: Path, with_index: bool) -> None:
    store = _store(tmp_path)
    ids = _chain(store)
    _flip(tmp_path, b"turn 029")  # inside the record: the checksum fails
    if not with_index:
        _index(tmp_path).unlink()  # recovered from the damaged bytes instead
    actions = store.repair(SID)
    assert any("tombstone for event " + ids[29] in a for a in actions), actions
    assert not any("moved HEAD" in a for a in actions)
    with store.open(SID, readonly=True) as s:
        assert s.head == ids[-1]
        path = s.transcript()
        assert [e.id for e in path] == ids
        stone = path[29]
        assert stone.kind == "tombstone" and stone.parent_id == ids[28] and stone.role is None
        q = stone.record["quarantined"]
        assert q["from"] == "000000.jsonl" and q["file"] == "000000.jsonl.quarantine"
        assert "checksum" in q["reason"]
        assert stone.record["recovered_from"] == ("index" if with_index else "record bytes")
        if with_index:
            assert stone.record["kind"] == "message" and stone.record["role"] == "user"
        # the provider views skip it: 49 messages, not 50
        assert len(s.to_chat_messages()) == 49
    quarantine = (tmp_path / "sessions" / SID / "chunks" / "000000.jsonl.quarantine").read_bytes()
    assert b"029" in quarantine  # the damaged bytes are kept, never deleted
    assert [p for p in store.fsck(SID) if p.severity == "error"] == []
    with store.open(SID) as s:  # and the session takes new appends on the same path
        assert s.append("message", {"content": "after"}, role="user").parent_id == ids[-1]


@pytest.mark.parametrize("with_index", [True, False])
def test_a_checkout_of_the_damaged_event_stands(tmp_path: Path, with_index: bool) -> None:
    """HEAD was moved back to the event whose record is damaged (a checkout
    line after it). The checkout was quarantined as naming an event not in
    the log, so HEAD moved to the newest event (found by the kill storm)."""
    store = _store(tmp_path)
    ids = _chain(store, 10)
    with store.open(SID) as s:
        s.checkout(ids[4])
    _flip(tmp_path, b"turn 004")
    if not with_index:
        _index(tmp_path).unlink()
    actions = store.repair(SID)
    assert any("tombstone for event " + ids[4] in a for a in actions), actions
    assert not any("checkout names" in a or "moved HEAD" in a for a in actions), actions
    with store.open(SID, readonly=True) as s:
        assert s.head == ids[4]
        assert [e.kind for e in s.transcript()][-1] == "tombstone"
        assert [e.id for e in s.entries()] == ids
    assert [p for p in store.fsck(SID) if p.severity == "error"] == []


def test_a_damaged_batch_member_is_replaced_and_its_batch_kept(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with store.create(session_id=SID) as s:
        first = s.append("message", {"content": "before"}, role="user")
        s.append_many([("message", {"content": f"member {i}"}, "assistant") for i in range(3)])
        batch = [e.id for e in s.path()[-3:]]
        last = s.append("message", {"content": "after"}, role="user")
    _flip(tmp_path, b"member 1")
    actions = store.repair(SID)
    assert any("tombstone" in a for a in actions), actions
    with store.open(SID, readonly=True) as s:
        path = s.transcript()
        assert [e.id for e in path] == [first.id, *batch, last.id]
        assert [e.kind for e in path] == ["message", "message", "tombstone", "message", "message"]
        assert path[1].record == {"content": "member 0"} and path[3].record == {"content": "member 2"}


def _wipe_identity(home: Path, event_id: str) -> None:
    """Overwrite a record's id and parent (and the keys around them): nothing
    in its bytes says who it was."""
    path = _chunk(home)
    data = bytearray(path.read_bytes())
    start = data.index(b'{"id":"' + event_id.encode())
    data[start + 1 : start + 95] = b"#" * 94
    path.write_bytes(bytes(data))


def test_an_unrecoverable_id_loses_only_itself_and_says_what_is_cut(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ids = _chain(store, 10)
    _index(tmp_path).unlink()
    _wipe_identity(tmp_path, ids[4])
    actions = store.repair(SID)
    assert not any("tombstone" in a for a in actions)
    cut = [a for a in actions if "no longer reachable" in a]
    # exactly the five events after it, each named
    assert cut == [
        "5 intact events are no longer reachable from the root "
        "(a damaged record's id could not be recovered): " + ", ".join(ids[5:])
    ], actions
    assert any(a.startswith(f"moved HEAD to {ids[3]}") for a in actions), actions
    with store.open(SID, readonly=True) as s:
        assert [e.id for e in s.transcript()] == ids[:4]  # HEAD moved to the newest whole path
        assert all(i in s for i in ids[5:])  # the cut events are kept, not deleted
        assert ids[4] not in s


def test_a_damaged_key_around_intact_ids_still_gives_them(tmp_path: Path) -> None:
    """The ids sit at fixed places: a flip in the key "id" itself does not
    hide them."""
    store = _store(tmp_path)
    ids = _chain(store, 10)
    _index(tmp_path).unlink()
    _flip(tmp_path, b'{"id":"' + ids[4].encode(), 2)
    store.repair(SID)
    with store.open(SID, readonly=True) as s:
        assert [e.id for e in s.transcript()] == ids
        assert s.event(ids[4]).kind == "tombstone"


def test_a_second_repair_names_only_what_it_cut(tmp_path: Path) -> None:
    """Events an earlier repair cut off are reported apart from the ones this
    repair cuts: the report says exactly which events it made unreachable."""
    store = _store(tmp_path)
    ids = _chain(store, 10)
    _index(tmp_path).unlink()
    _wipe_identity(tmp_path, ids[2])
    store.repair(SID)  # ids[3:] cut, HEAD moved to ids[1]
    with store.open(SID) as s:
        s.select(ids[1])
        more = [s.append("message", {"content": f"new {i}"}, role="user").id for i in range(4)]
    _index(tmp_path).unlink()
    _wipe_identity(tmp_path, more[1])
    actions = store.repair(SID)
    assert [a for a in actions if "reachable" in a] == [
        "2 intact events are no longer reachable from the root "
        "(a damaged record's id could not be recovered): " + ", ".join(more[2:]),
        "7 intact events were already unreachable from the root "
        "(a parent no line of the log holds): " + ", ".join(ids[3:]),
    ], actions


def test_a_damaged_id_is_taken_from_the_children_that_name_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ids = _chain(store, 10)
    _index(tmp_path).unlink()
    _flip(tmp_path, ids[4].encode(), 3)  # still looks like an id, but the wrong one
    store.repair(SID)
    with store.open(SID, readonly=True) as s:
        assert [e.id for e in s.transcript()] == ids
        assert s.event(ids[4]).kind == "tombstone"


def test_two_damaged_ids_in_a_row_are_not_confused(tmp_path: Path) -> None:
    """The missing parent the children name is the second record's id: the
    first damaged record must not take it (its own id differs in more than
    a character or two)."""
    store = _store(tmp_path)
    ids = _chain(store, 10)
    _index(tmp_path).unlink()
    offsets, pos = {}, 0
    for line in _chunk(tmp_path).read_bytes().splitlines(keepends=True):
        offsets[line[7:43].decode()] = pos
        pos += len(line)
    _flip(tmp_path, ids[3].encode(), 3)
    _flip(tmp_path, ids[4].encode(), 3)
    store.repair(SID)
    with store.open(SID, readonly=True) as s:
        stone = s.event(ids[4])
        assert stone.kind == "tombstone"
        assert stone.record["quarantined"]["offset"] == offsets[ids[4]]
        assert [e.id for e in s.path(ids[-1])][-6:] == ids[-6:]


def test_a_forged_index_entry_that_does_not_fit_is_not_believed(tmp_path: Path) -> None:
    """A recovered id out of order or a parent that is not earlier makes no
    tombstone: the record is quarantined the old way."""
    store = _store(tmp_path)
    ids = _chain(store, 6)
    _index(tmp_path).unlink()
    path = _chunk(tmp_path)
    data = path.read_bytes()
    # the damaged record claims, in its own bytes, a parent that comes after it
    start = data.index(ids[2].encode())
    forged = data[:start] + ids[2].encode() + b'","parent_id":"' + ids[5].encode()
    rest = data[start + len(ids[2]) + len(b'","parent_id":"') + 36 :]
    path.write_bytes(forged + rest)
    actions = store.repair(SID)
    assert not any("tombstone" in a for a in actions), actions
    with store.open(SID, readonly=True) as s:
        assert ids[2] not in s


def test_the_default_store_repairs_with_tombstones(tmp_path: Path) -> None:
    """Tombstones are what repair does: no option turns them on."""
    store = Store(str(tmp_path), durability="off")
    ids = _chain(store, 10)
    _flip(tmp_path, b"turn 004")
    actions = store.repair(SID)
    assert any(f"tombstone for event {ids[4]}" in a for a in actions), actions
    assert not any("reachable" in a or "moved HEAD" in a for a in actions), actions
    with store.open(SID, readonly=True) as s:
        assert s.head == ids[-1]
        assert [e.id for e in s.transcript()] == ids
        assert s.event(ids[4]).kind == "tombstone"


# --- randomized: any single flipped byte inside a record ------------------------------
_TEMPLATE: dict[str, bytes] = {}


def _template(tmp: Path) -> tuple[list[str], str, bytes]:
    """A session with branches and batches, built once; its chunk bytes."""
    if not _TEMPLATE:
        store = _store(tmp / "template")
        with store.create(session_id=SID) as s:
            ids = []
            for i in range(30):
                if i and i % 9 == 0:
                    s.select(ids[i - 4])
                if i % 5 == 4:
                    s.append_many([("message", {"content": f"b{i}-{j}"}, "assistant") for j in range(3)])
                    ids += [e.id for e in s.path()[-3:]]
                else:
                    ids.append(s.append("tool_call", {"content": f"e{i}"}, role="assistant").id)
            head = s.head
        _TEMPLATE["ids"] = "\n".join(ids).encode()
        _TEMPLATE["head"] = head.encode()
        _TEMPLATE["chunk"] = _chunk(tmp / "template").read_bytes()
        _TEMPLATE["index"] = _index(tmp / "template").read_bytes()
        _TEMPLATE["meta"] = (tmp / "template" / "sessions" / SID / "session.json").read_bytes()
    return _TEMPLATE["ids"].decode().split("\n"), _TEMPLATE["head"].decode(), _TEMPLATE["chunk"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line_pick=st.integers(0, 10_000), byte_pick=st.integers(0, 10_000), keep_index=st.booleans())
def test_a_flip_after_the_ids_never_loses_an_intact_event(
    tmp_path: Path, line_pick: int, byte_pick: int, keep_index: bool
) -> None:
    ids, head, chunk = _template(tmp_path)
    lines = chunk.splitlines(keepends=True)
    events = [i for i, line in enumerate(lines) if line.startswith(b'{"id"')]
    target = events[line_pick % len(events)]
    line = bytearray(lines[target])
    # past the id and parent (so they stay recoverable), before the newline
    at = 120 + byte_pick % (len(line) - 121)
    line[at] ^= 0x01
    lines[target] = bytes(line)
    home = Path(tempfile.mkdtemp(dir=tmp_path))
    sdir = home / "sessions" / SID
    (sdir / "chunks").mkdir(parents=True)
    (sdir / "blobs").mkdir()
    _chunk(home).write_bytes(b"".join(lines))
    (sdir / "session.json").write_bytes(_TEMPLATE["meta"])
    if keep_index:
        _index(home).write_bytes(_TEMPLATE["index"])
    store = _store(home)
    store.repair(SID)
    with store.open(SID, readonly=True) as s:
        assert s.head == head
        assert all(i in s for i in ids)
        for i in ids:  # every event's path reaches the root
            assert s.path(i)[0].parent_id == "00000000-0000-0000-0000-000000000000"
    assert [p for p in store.fsck(SID) if p.severity == "error"] == []


def test_a_byte_turned_into_a_newline_is_one_damaged_record(tmp_path: Path) -> None:
    """The split halves of one record are two bad lines; together they span
    exactly what the index framed, so they are one record again, and its
    tombstone keeps the chain whole."""
    store = _store(tmp_path)
    ids = _chain(store, 10)
    path = _chunk(tmp_path)
    data = bytearray(path.read_bytes())
    data[data.index(b"turn 004")] = ord("\n")
    path.write_bytes(bytes(data))
    actions = store.repair(SID)
    assert any(f"tombstone for event {ids[4]}" in a for a in actions), actions
    assert sum(" bytes at " in a for a in actions) == 1  # one piece, the whole record
    with store.open(SID, readonly=True) as s:
        assert s.head == ids[-1]
        assert [e.id for e in s.transcript()] == ids


def test_a_lost_newline_loses_neither_record(tmp_path: Path) -> None:
    """Two records merged into one bad line: cut where the index says the
    second starts; the first gets a tombstone, the second (intact) stays."""
    store = _store(tmp_path)
    ids = _chain(store, 10)
    path = _chunk(tmp_path)
    data = bytearray(path.read_bytes())
    data[data.index(b'{"id":"' + ids[5].encode()) - 1] = ord("x")  # the newline after turn 004
    path.write_bytes(bytes(data))
    actions = store.repair(SID)
    assert any(f"tombstone for event {ids[4]}" in a for a in actions), actions
    assert not any(ids[5] in a for a in actions), actions
    with store.open(SID, readonly=True) as s:
        assert s.head == ids[-1]
        assert [e.id for e in s.transcript()] == ids
        assert s.event(ids[4]).kind == "tombstone"
        assert s.event(ids[5]).record == {"content": "turn 005"}


def test_the_provider_views_skip_a_tombstone_and_the_result_of_its_call(tmp_path: Path) -> None:
    """A damaged tool call becomes a tombstone: the chat and Responses views
    skip it, and drop its result (an orphan), so the request stays valid."""
    store = _store(tmp_path)
    with store.create(session_id=SID) as s:
        s.append("message", {"content": "list files"}, role="user")
        call = s.append("tool_call", {"id": "c1", "name": "ls", "arguments": "{}"}, role="assistant")
        s.append("tool_result", {"tool_call_id": "c1", "content": "a.txt"}, role="tool")
        s.append("message", {"content": "there is a.txt"}, role="assistant")
    _flip(tmp_path, b'"name":"ls"', 3)
    store.repair(SID)
    with store.open(SID, readonly=True) as s:
        assert s.event(call.id).kind == "tombstone"
        chat = s.to_chat_messages()
        assert [(m["role"], m.get("content")) for m in chat] == [
            ("user", "list files"),
            ("assistant", "there is a.txt"),
        ]
        items = s.to_responses_input()
        assert not any(i.get("type") in ("function_call", "function_call_output") for i in items)
        assert len(items) == 2


def test_a_parent_lost_to_new_damage_is_not_blamed_on_an_old_quarantine(tmp_path: Path) -> None:
    """A quarantine file from before (here: the torn tail a writer's open
    cut off) used to make fsck say of any missing parent that repair had
    quarantined it, even when the parent was a damaged record not repaired
    yet. That gap is now an error that points at the damage."""
    store = _store(tmp_path)
    ids = _chain(store, 10)
    with _chunk(tmp_path).open("ab") as f:
        f.write(b'{"id":"torn')  # a crash's torn tail
    with pytest.warns(RecoveryWarning):
        store.open(SID).close()  # the writer cuts it off, into a .quarantine file
    assert list(_chunk(tmp_path).parent.glob("*.quarantine"))
    _flip(tmp_path, b"turn 004")
    problems = [p for p in store.fsck(SID) if ids[5] in p.message]
    assert [p.severity for p in problems] == ["error"]
    assert "damaged record reported here may be it" in problems[0].message
    assert "quarantined a record" not in problems[0].message
