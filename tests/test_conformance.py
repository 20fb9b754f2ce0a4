"""The backend conformance suite: one contract, every backend.

Written once against the public API (Store, Session); the ``store``
fixture of conftest.py runs every test on each backend it lists. The
invariant numbers cited are those of DESIGN.md ("Invariants").
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import orjson
import pytest

from agentlog import (
    NIL_ID,
    Event,
    EventNotFound,
    InvalidEvent,
    InvalidEventId,
    InvalidSessionId,
    NewEvent,
    ReadOnlySession,
    SessionClosed,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    Store,
    StreamedDeltaError,
)
from agentlog.event import parse_timestamp
from helpers import BLOB_THRESHOLD, reopen_store, tree

DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")

BAD_SESSION_IDS = [
    "",
    ".",
    "..",
    "../x",
    "../../etc/passwd",
    "a/b",
    "a\\b",
    "/abs",
    "x" * 129,
    "a\x00b",
    "abc\n",
    " abc",
    "a.b",
    "\u0455ession",  # Cyrillic dze, looks like an 's'
    "\uff53ession",  # fullwidth s
    "abc\u200b",  # zero-width space
    "caf\u00e9",
    "\u0663",  # Arabic-Indic digit three
    None,
    5,
    b"abc",
]

BAD_EVENT_IDS = [
    "",
    "x",
    "not-a-uuid",
    "01a22671-e349-7983-9687-e4e8df4c43a",  # one digit short
    "01A22671-E349-7983-9687-E4E8DF4C43AB",  # uppercase
    "01a22671e3497983 9687e4e8df4c43ab",
    "01a22671-e349-7983-9687-e4e8df4c43ab\n",
    "../../etc/passwd",
    None,
    42,
]

BAD_KINDS = ["", "Message", "1abc", "_x", "a" * 33, "has space", "kind/x", "\u043a\u0438\u043d\u0434", None, 3]
BAD_ROLES = ["", "User", "a" * 33, "a b", 5]


def _nested(depth: int) -> Any:
    value: Any = {"deep": True}
    for i in range(depth):
        value = [value] if i % 2 else {"d": value}
    return value


# Records that must come back byte-for-byte the same (types, order, values).
ROUND_TRIP = {
    "message": {"content": "hello", "usage": {"input_tokens": 3, "output_tokens": 5}},
    "nested": {"a": [1, {"b": [None, True, False, 1.5, -0.0, {"c": {"d": []}}]}], "e": {}},
    "unicode": {
        "text": "h\u00e9llo \u2014 \u65e5\u672c\u8a9e \U0001f389 \u2028\u2029 \u0000 \u0645\u0631\u062d\u0628\u0627",
        "\u043a\u043b\u044e\u0447": "\u0437\u043d\u0430\u0447\u0435\u043d\u0438\u0435",
        "emoji\U0001f389": 1,
    },
    "large_ints": {"i63": 2**63 - 1, "neg": -(2**63), "u64": 2**64 - 1, "zero": 0},
    "floats": {"pi": 3.141592653589793, "tiny": 5e-324, "huge": 1.7976931348623157e308},
    "escapes": {"s": "\"\\\n\t\r\b\f/ '"},
    "framing_lookalikes": {
        "crc": "deadbeef",
        "id": "x",
        "txn": [0, 2],
        "op": "checkout",
        "record": {"crc": 1},
        "tail": ',"crc":"00000000"}',
    },
    "string": "just a string",
    "int": 42,
    "list": [1, "two", 3.0, None],
    "null": None,
    "empty_object": {},
    "deep": _nested(60),
}


def exact(value: Any) -> bytes:
    """A value's JSON bytes: equal only if types, key order and values all are."""
    return orjson.dumps(value)


class TestConformance:
    """Every backend of ``conftest.BACKENDS``: the ``store`` fixture runs each
    test once per backend."""

    @pytest.fixture
    def session(self, store):
        session = store.create(session_id="conf")
        yield session
        session.close()

    def reopen(self, store: Store, session, readonly: bool = False):
        session.close()
        return reopen_store(store).open(session.id, readonly=readonly)

    @staticmethod
    def chain(session, n: int, start: int = 0) -> list[Event]:
        return [session.append("message", {"content": f"m{i}"}, role="user") for i in range(start, start + n)]

    # === lifecycle ==============================================================
    def test_create_returns_an_empty_writable_session(self, store):
        with store.create(session_id="s1") as s:
            assert s.id == "s1"
            assert not s.readonly
            assert s.head == NIL_ID
            assert len(s) == 0
            assert s.path() == []
        assert store.exists("s1")

    def test_create_without_id_picks_a_uuid7(self, store):
        with store.create() as s:
            assert uuid.UUID(s.id).version == 7
            assert str(uuid.UUID(s.id)) == s.id
        assert store.exists(s.id)

    def test_create_twice_raises_session_exists(self, store, session):
        with pytest.raises(SessionExists):
            store.create(session_id=session.id)

    def test_create_records_metadata(self, store):
        with store.create(session_id="meta", name="n", working_dir=".", model="m", ticket={"id": 7}) as s:
            meta = s.meta
        assert meta["name"] == "n"
        assert meta["model"] == "m"
        assert meta["working_dir"].startswith("/")
        assert meta["ticket"] == {"id": 7}
        assert store.meta("meta") == meta

    def test_open_unknown_raises_session_not_found(self, store):
        with pytest.raises(SessionNotFound):
            store.open("nobody")
        with pytest.raises(SessionNotFound):
            store.open("nobody", readonly=True)
        assert not store.exists("nobody")

    def test_list_shows_sessions_with_counts_and_hides_archived(self, store):
        with store.create(session_id="a", name="alpha") as a:
            self.chain(a, 3)
        with store.create(session_id="b") as b:
            self.chain(b, 1)
            b.update_meta(archived=True)
        rows = {r.id: r for r in reopen_store(store).list()}
        assert set(rows) == {"a"}
        assert rows["a"].event_count == 3
        assert rows["a"].title == "alpha"
        everything = {r.id: r for r in store.list(archived=True)}
        assert set(everything) == {"a", "b"}
        assert everything["b"].archived and everything["b"].event_count == 1

    def test_delete_removes_the_session(self, store):
        with store.create(session_id="doomed") as s:
            self.chain(s, 2)
        store.delete("doomed")
        assert not store.exists("doomed")
        assert "doomed" not in {r.id for r in store.list(archived=True)}
        with pytest.raises(SessionNotFound):
            store.open("doomed")
        with pytest.raises(SessionNotFound):
            store.delete("doomed")

    def test_delete_then_create_same_id_starts_empty(self, store):
        with store.create(session_id="again") as s:
            self.chain(s, 2)
        store.delete("again")
        with store.create(session_id="again") as s:
            assert len(s) == 0 and s.head == NIL_ID
            e = s.append("message", {"content": "fresh"})
            assert e.parent_id == NIL_ID

    def test_delete_refuses_while_a_writer_is_open(self, store, session):
        """Invariant 1, 7: deleting under a live writer would turn its next
        acknowledged append into a lost one."""
        self.chain(session, 1)
        with pytest.raises(SessionLocked):
            store.delete(session.id)
        e = session.append("message", {"content": "still here"})
        reopened = self.reopen(store, session, readonly=True)
        try:
            assert reopened.head == e.id
        finally:
            reopened.close()

    # === appending ==============================================================
    def test_append_links_each_event_to_the_previous_head(self, session):
        events = self.chain(session, 5)
        assert events[0].parent_id == NIL_ID
        assert events[0].is_root
        for prev, cur in zip(events, events[1:], strict=False):
            assert cur.parent_id == prev.id
        assert session.head == events[-1].id
        assert len(session) == 5
        assert all(e.branch_from is None for e in events)

    def test_event_ids_are_time_ordered_uuid7(self, session):
        events = self.chain(session, 20)
        ids = [e.id for e in events]
        for i in ids:
            assert uuid.UUID(i).version == 7
            assert str(uuid.UUID(i)) == i
        assert ids == sorted(ids)
        assert len(set(ids)) == len(ids)
        for e in events:
            assert e.timestamp.endswith("Z")
            parse_timestamp(e.timestamp)

    def test_append_returns_what_a_read_gives(self, session):
        e = session.append("tool_call", {"id": "c1", "name": "ls", "arguments": "{}"}, role="assistant")
        got = session.event(e.id)
        assert got == e
        assert (got.kind, got.role) == ("tool_call", "assistant")

    def test_append_many_is_a_chain_from_head(self, session):
        first = session.append("message", {"content": "q"}, role="user")
        batch = session.append_many(
            [
                NewEvent("message", {"content": "a"}, "assistant"),
                ("tool_call", {"id": "1", "name": "x", "arguments": "{}"}, "assistant"),
                {"kind": "tool_result", "record": {"tool_call_id": "1", "content": "ok"}, "role": "tool"},
                ("state", {"todos": []}),
            ]
        )
        assert [e.kind for e in batch] == ["message", "tool_call", "tool_result", "state"]
        assert batch[0].parent_id == first.id
        for prev, cur in zip(batch, batch[1:], strict=False):
            assert cur.parent_id == prev.id
        assert session.head == batch[-1].id
        assert [e.id for e in session.path()] == [first.id] + [e.id for e in batch]

    def test_append_many_of_nothing_changes_nothing(self, session):
        e = session.append("message", {"content": "x"})
        assert session.append_many([]) == []
        assert session.head == e.id and len(session) == 1

    def test_custom_kinds_and_no_role_are_accepted(self, session):
        e = session.append("my.harness-note_2", {"x": 1})
        assert (e.kind, e.role) == ("my.harness-note_2", None)
        assert session.append("a" * 32, None).kind == "a" * 32

    @pytest.mark.parametrize("kind", BAD_KINDS, ids=repr)
    def test_invalid_kind_raises_invalid_event(self, session, kind):
        with pytest.raises(InvalidEvent):
            session.append(kind, {"content": "x"})
        assert len(session) == 0

    @pytest.mark.parametrize("role", BAD_ROLES, ids=repr)
    def test_invalid_role_raises_invalid_event(self, session, role):
        with pytest.raises(InvalidEvent):
            session.append("message", {"content": "x"}, role=role)
        assert len(session) == 0

    @pytest.mark.parametrize(
        "record",
        [
            {"x": object()},
            {1: "int key"},
            {"x": {1, 2}},
            {"big": 2**64},
            "\ud800",
        ],
        ids=["object", "int_key", "set", "int_over_64_bits", "lone_surrogate"],
    )
    def test_unserializable_record_raises_invalid_event(self, session, record):
        with pytest.raises(InvalidEvent):
            session.append("custom", record)
        assert len(session) == 0 and session.head == NIL_ID

    def test_one_bad_item_refuses_the_whole_batch(self, session):
        """Invariant 6: a batch is all or nothing, refusals included."""
        with pytest.raises(InvalidEvent):
            session.append_many([("message", {"content": "ok"}), ("Bad Kind", {})])
        with pytest.raises(InvalidEvent):
            session.append_many([("message", {"content": "ok"}), ("custom", {"x": object()})])
        assert len(session) == 0

    @pytest.mark.parametrize(
        "kind,record",
        [
            ("delta", {"content": "tok"}),
            ("content_delta", {"text": "tok"}),
            ("response.delta", {"text": "tok"}),
            ("message", {"object": "chat.completion.chunk", "choices": [{"delta": {"content": "t"}}]}),
            ("message", {"type": "response.output_text.delta", "delta": "t"}),
        ],
    )
    def test_streamed_deltas_are_refused(self, session, kind, record):
        with pytest.raises(StreamedDeltaError):
            session.append(kind, record, role="assistant")
        with pytest.raises(StreamedDeltaError):
            session.append_many([("message", {"content": "ok"}), (kind, record)])
        assert len(session) == 0

    def test_settled_records_that_mention_deltas_are_accepted(self, session):
        session.append("message", {"object": "chat.completion", "content": "a delta"})
        session.append("deltas", {"type": "summary"})
        assert len(session) == 2

    # === two-phase branching ====================================================
    def test_select_does_not_move_head_until_the_next_append(self, session):
        a, b, c = self.chain(session, 3)
        session.select(a.id)
        assert session.head == c.id
        assert session.pending == a.id
        assert [e.id for e in session.path()] == [a.id, b.id, c.id]
        d = session.append("message", {"content": "retry"}, role="user")
        assert d.parent_id == a.id
        assert d.branch_from == a.id  # a already had a child: a deliberate fork
        assert session.head == d.id
        assert session.pending is None
        assert [e.id for e in session.path()] == [a.id, d.id]

    def test_select_of_a_childless_event_is_not_a_branch(self, session):
        a, b, c = self.chain(session, 3)
        session.select(a.id)
        d = session.append("message", {"content": "fork"})
        session.select(c.id)  # c is a leaf off the active path: plain continuation
        e = session.append("message", {"content": "resume"})
        assert (e.parent_id, e.branch_from) == (c.id, None)
        assert d.branch_from == a.id
        assert [x.id for x in session.path()] == [a.id, b.id, c.id, e.id]

    def test_select_of_head_is_an_ordinary_append(self, session):
        a, b = self.chain(session, 2)
        session.select(b.id)
        c = session.append("message", {"content": "next"})
        assert (c.parent_id, c.branch_from) == (b.id, None)

    def test_select_then_append_many_branches_once(self, session):
        a, b = self.chain(session, 2)
        session.select(a.id)
        batch = session.append_many([("message", {"i": 1}), ("message", {"i": 2})])
        assert batch[0].parent_id == a.id and batch[0].branch_from == a.id
        assert batch[1].parent_id == batch[0].id and batch[1].branch_from is None
        assert session.head == batch[1].id

    def test_select_root_starts_a_new_root(self, session):
        a, b = self.chain(session, 2)
        session.select(NIL_ID)
        r = session.append("message", {"content": "from scratch"})
        assert r.parent_id == NIL_ID and r.is_root
        assert r.branch_from == NIL_ID
        assert [e.id for e in session.path()] == [r.id]

    def test_select_none_drops_the_selection(self, session):
        a, b = self.chain(session, 2)
        session.select(a.id)
        session.select(None)
        assert session.pending is None
        c = session.append("message", {"content": "on"})
        assert (c.parent_id, c.branch_from) == (b.id, None)

    def test_selection_is_not_durable(self, store, session):
        """Two-phase: only an append (or checkout) moves HEAD, so a selection
        dies with the handle."""
        a, b = self.chain(session, 2)
        session.select(a.id)
        reopened = self.reopen(store, session)
        try:
            assert reopened.pending is None
            assert reopened.head == b.id
            assert reopened.append("message", {"content": "x"}).parent_id == b.id
        finally:
            reopened.close()

    def test_select_unknown_or_invalid_event(self, session):
        self.chain(session, 1)
        with pytest.raises(EventNotFound):
            session.select(str(uuid.UUID(int=12345)))
        with pytest.raises(InvalidEventId):
            session.select("nope")
        assert session.pending is None

    def test_branches_keep_all_history(self, session):
        """Invariant 4: branching adds events; nothing is removed."""
        a, b, c = self.chain(session, 3)
        session.select(a.id)
        d = session.append("message", {"content": "alt"})
        assert len(session) == 4
        for e in (a, b, c, d):
            assert session.event(e.id).id == e.id
        assert sorted(session.children()[a.id]) == sorted([b.id, d.id])
        assert [e.id for e in session.path(c.id)] == [a.id, b.id, c.id]

    # === checkout ===============================================================
    def test_checkout_moves_head_without_appending(self, session):
        """Invariant 4 and 5: HEAD moves to a durable event; no event is added."""
        a, b, c = self.chain(session, 3)
        session.checkout(a.id)
        assert session.head == a.id
        assert len(session) == 3
        assert [e.id for e in session.path()] == [a.id]
        d = session.append("message", {"content": "after checkout"})
        assert d.parent_id == a.id
        assert session.event(c.id).id == c.id

    def test_checkout_survives_reopen(self, store, session):
        """Invariant 5: the HEAD move is durable once checkout() returns."""
        a, b = self.chain(session, 2)
        session.checkout(a.id)
        reopened = self.reopen(store, session)
        try:
            assert reopened.head == a.id
            assert len(reopened) == 2
        finally:
            reopened.close()
        reader = reopen_store(store).open(session.id, readonly=True)
        try:
            assert reader.head == a.id
        finally:
            reader.close()

    def test_checkout_root_empties_the_active_path(self, session):
        self.chain(session, 2)
        session.checkout(NIL_ID)
        assert session.head == NIL_ID and session.path() == [] and len(session) == 2
        r = session.append("message", {"content": "new root"})
        assert r.parent_id == NIL_ID

    def test_checkout_drops_a_pending_selection(self, session):
        a, b, c = self.chain(session, 3)
        session.select(a.id)
        session.checkout(b.id)
        assert session.pending is None
        assert session.append("message", {"content": "x"}).parent_id == b.id

    def test_checkout_unknown_or_invalid_event(self, session):
        a = self.chain(session, 1)[0]
        with pytest.raises(EventNotFound):
            session.checkout(str(uuid.UUID(int=7)))
        with pytest.raises(InvalidEventId):
            session.checkout("HEAD~1")
        assert session.head == a.id

    # === paths and context ======================================================
    def test_path_and_transcript_run_root_to_head(self, session):
        events = self.chain(session, 4)
        ids = [e.id for e in events]
        assert [e.id for e in session.path()] == ids
        assert [e.id for e in session.transcript()] == ids
        assert [e.id for e in session.walk()] == ids[::-1]
        assert [e.id for e in session.path(ids[1])] == ids[:2]

    def test_entries_follow_append_order_without_payloads(self, session):
        events = self.chain(session, 3)
        session.select(events[0].id)
        fork = session.append("message", {"content": "f"})
        entries = session.entries()
        assert [x.id for x in entries] == [e.id for e in events] + [fork.id]
        assert entries[-1].parent_id == events[0].id
        assert entries[-1].branch_from == events[0].id

    def test_context_without_compaction_is_the_whole_path(self, session):
        events = self.chain(session, 4)
        assert [e.id for e in session.context()] == [e.id for e in events]

    def test_context_starts_at_the_latest_compaction(self, session):
        old = self.chain(session, 5)
        comp = session.append("compaction", {"summary": "s1", "first_kept_event_id": old[3].id}, role="system")
        after = self.chain(session, 2, start=10)
        ctx = [e.id for e in session.context()]
        assert ctx == [comp.id, old[3].id, old[4].id] + [e.id for e in after]
        # the transcript still has everything (invariant 4)
        assert len(session.transcript()) == 8

    def test_context_uses_only_the_latest_of_two_compactions(self, session):
        old = self.chain(session, 3)
        session.append("compaction", {"summary": "s1", "first_kept_event_id": old[1].id}, role="system")
        mid = self.chain(session, 2, start=10)
        comp2 = session.append("compaction", {"summary": "s2", "first_kept_event_id": None}, role="system")
        tail = self.chain(session, 1, start=20)
        assert [e.id for e in session.context()] == [comp2.id, tail[0].id]
        assert mid[0].id not in [e.id for e in session.context()]

    def test_context_ignores_compactions_on_other_branches(self, session):
        a, b = self.chain(session, 2)
        session.append("compaction", {"summary": "s", "first_kept_event_id": None})
        session.select(b.id)
        c = session.append("message", {"content": "other branch"})
        assert [e.id for e in session.context()] == [a.id, b.id, c.id]

    def test_context_keeps_nothing_when_the_kept_id_is_off_path(self, session):
        a, b = self.chain(session, 2)
        session.select(a.id)
        side = session.append("message", {"content": "side"})
        session.checkout(b.id)
        comp = session.append("compaction", {"summary": "s", "first_kept_event_id": side.id})
        assert [e.id for e in session.context()] == [comp.id]

    def test_context_with_a_compaction_big_enough_for_a_blob(self, session):
        old = self.chain(session, 3)
        comp = session.append("compaction", {"summary": "s" * 4000, "first_kept_event_id": old[2].id}, role="system")
        ctx = session.context()
        assert [e.id for e in ctx] == [comp.id, old[2].id]
        resolved = session.context(resolve=True)
        assert resolved[0].record["summary"] == "s" * 4000

    # === blobs ==================================================================
    def test_large_records_come_back_unloaded_until_resolved(self, session):
        """Invariant 9: resolve() loads and verifies the blob."""
        record = {"content": "y" * 5000, "n": 1}
        e = session.append("tool_result", record, role="tool")
        assert e.digest is not None and DIGEST.match(e.digest)
        got = session.event(e.id)
        assert got.record is None and not got.loaded
        assert got.digest == e.digest
        assert exact(session.resolve(got).record) == exact(record)
        on_path = session.path()[-1]
        assert on_path.record is None
        assert session.context(resolve=True)[-1].record == record

    def test_blob_threshold_boundary(self, session):
        at = "x" * (BLOB_THRESHOLD - 2)  # JSON text exactly at the threshold
        over = "x" * (BLOB_THRESHOLD - 1)
        e_at = session.append("custom", at)
        e_over = session.append("custom", over)
        assert session.event(e_at.id).record == at and session.event(e_at.id).digest is None
        assert session.event(e_over.id).record is None
        assert session.resolve(session.event(e_over.id)).record == over

    def test_small_records_are_inline_and_resolve_is_a_no_op(self, session):
        e = session.append("message", {"content": "small"})
        got = session.event(e.id)
        assert got.loaded and got.digest is None
        assert session.resolve(got) is got

    def test_duplicate_payloads_share_one_blob(self, session, store, backend):
        big = {"content": "z" * 3000}
        e1 = session.append("tool_result", big, role="tool")
        e2 = session.append("tool_result", dict(big), role="tool")
        e3 = session.append("tool_result", {"content": "w" * 3000}, role="tool")
        assert e1.digest == e2.digest != e3.digest
        assert backend.blob_count(store, session.id) == 2
        assert session.resolve(session.event(e2.id)).record == big

    def test_blobs_inside_a_batch(self, session):
        batch = session.append_many(
            [("message", {"content": "small"}), ("tool_result", {"content": "q" * 3000}, "tool")]
        )
        assert batch[0].digest is None and batch[1].digest
        assert session.resolve(session.event(batch[1].id)).record == {"content": "q" * 3000}

    # === validation =============================================================
    @pytest.mark.parametrize("bad", BAD_SESSION_IDS, ids=repr)
    def test_invalid_session_ids_are_refused_before_any_io(self, store, bad, tmp_path):
        """Invariant 8: ids are checked before a path is built from them."""
        before = tree(tmp_path)
        calls = [
            lambda: store.open(bad),
            lambda: store.open(bad, readonly=True),
            lambda: store.exists(bad),
            lambda: store.delete(bad),
            lambda: store.meta(bad),
            lambda: store.info(bad),
        ]
        if bad is not None:  # None asks create() for a fresh id, fsck() for all
            calls += [lambda: store.create(session_id=bad), lambda: store.fsck(bad)]
        for call in calls:
            with pytest.raises(InvalidSessionId):
                call()
        assert tree(tmp_path) == before
        assert store.list(archived=True) == []

    def test_longest_valid_session_id(self, store):
        sid = "A-z_9" * 25 + "abc"
        assert len(sid) == 128
        with store.create(session_id=sid) as s:
            s.append("message", {"content": "x"})
        assert store.exists(sid)

    @pytest.mark.parametrize("bad", BAD_EVENT_IDS, ids=repr)
    def test_invalid_event_ids_raise_invalid_event_id(self, session, bad):
        self.chain(session, 1)
        with pytest.raises(InvalidEventId):
            session.event(bad)
        if bad is not None:  # None means "HEAD" or "no selection" there
            with pytest.raises(InvalidEventId):
                session.select(bad)
            with pytest.raises(InvalidEventId):
                session.checkout(bad)
            with pytest.raises(InvalidEventId):
                session.path(bad)
        assert bad not in session

    def test_unknown_event_raises_event_not_found(self, session):
        self.chain(session, 2)
        ghost = str(uuid.UUID(int=(1 << 127) | 99))
        with pytest.raises(EventNotFound):
            session.event(ghost)
        with pytest.raises(EventNotFound):
            session.path(ghost)
        assert ghost not in session
        assert NIL_ID not in session

    # === read-only and closed ===================================================
    def test_readonly_session_refuses_writes(self, store, session):
        a, b = self.chain(session, 2)
        meta = store.meta(session.id)
        reader = store.open(session.id, readonly=True)
        try:
            assert reader.readonly
            assert [e.id for e in reader.path()] == [a.id, b.id]
            for write in (
                lambda: reader.append("message", {"content": "no"}),
                lambda: reader.append_many([("message", {"content": "no"})]),
                lambda: reader.checkout(a.id),
                lambda: reader.update_meta(title="no"),
            ):
                with pytest.raises(ReadOnlySession):
                    write()
            assert reader.head == b.id and len(reader) == 2
        finally:
            reader.close()
        assert session.head == b.id and len(session) == 2
        assert store.meta(session.id) == meta

    def test_reader_catches_up_with_the_writer(self, store, session):
        """Invariant 7: readers need no lock and never see a torn record."""
        a = self.chain(session, 1)[0]
        reader = store.open(session.id, readonly=True)
        try:
            b, c = self.chain(session, 2, start=1)
            session.checkout(b.id)
            reader.refresh()
            assert reader.head == b.id
            assert reader.event(c.id).record == {"content": "m2"}
            assert [e.id for e in reader.path()] == [a.id, b.id]
        finally:
            reader.close()

    @pytest.mark.parametrize(
        "op",
        [
            "append",
            "append_many",
            "select",
            "checkout",
            "event",
            "resolve",
            "path",
            "context",
            "entries",
            "update_meta",
            "refresh",
        ],
    )
    def test_closed_session_raises_session_closed(self, store, op):
        s = store.create(session_id="closing")
        a = s.append("message", {"content": "x"})
        big = s.event(s.append("custom", {"content": "b" * 3000}).id)
        s.close()
        s.close()  # closing twice is harmless
        calls = {
            "append": lambda: s.append("message", {"content": "y"}),
            "append_many": lambda: s.append_many([("message", {"content": "y"})]),
            "select": lambda: s.select(a.id),
            "checkout": lambda: s.checkout(a.id),
            "event": lambda: s.event(a.id),
            "resolve": lambda: s.resolve(big),
            "path": lambda: s.path(),
            "context": lambda: s.context(),
            "entries": lambda: s.entries(),
            "update_meta": lambda: s.update_meta(title="t"),
            "refresh": lambda: s.refresh(),
        }
        with pytest.raises(SessionClosed):
            calls[op]()
        with store.open("closing", readonly=True) as r:
            assert len(r) == 2

    def test_context_manager_closes(self, store):
        with store.create(session_id="cm") as s:
            s.append("message", {"content": "x"})
        with pytest.raises(SessionClosed):
            s.append("message", {"content": "y"})

    # === records ================================================================
    @pytest.mark.parametrize("name", sorted(ROUND_TRIP))
    def test_records_round_trip_exactly(self, store, session, name):
        """Invariant 1: what was acknowledged is what comes back, after reopen too."""
        record = ROUND_TRIP[name]
        e = session.append("custom", record)
        assert exact(session.event(e.id).record) == exact(record)
        reopened = self.reopen(store, session, readonly=True)
        try:
            got = reopened.resolve(reopened.event(e.id))
            assert exact(got.record) == exact(record)
        finally:
            reopened.close()

    def test_big_record_round_trips_through_a_blob(self, store, session):
        record = {"text": "\U0001f389\u65e5\u672c" * 1000, "ints": [2**63 - 1] * 50}
        e = session.append("custom", record)
        reopened = self.reopen(store, session, readonly=True)
        try:
            assert exact(reopened.resolve(reopened.event(e.id)).record) == exact(record)
        finally:
            reopened.close()

    def test_the_caller_cannot_alter_a_record_after_append(self, session):
        record = {"list": [1, 2], "big": "b" * 2000}
        e = session.append("custom", record)
        record["list"].append(3)
        e.record["list"].append(4)
        got = session.resolve(session.event(e.id))
        assert got.record == {"list": [1, 2], "big": "b" * 2000}

    def test_reads_cannot_alter_stored_records(self, session):
        e = session.append("custom", {"list": [1, 2]})
        got = session.event(e.id)
        got.record["list"].append(3)
        assert session.event(e.id).record == {"list": [1, 2]}

    # === metadata ===============================================================
    def test_update_meta_keeps_unknown_fields(self, store, session):
        store_meta = session.meta
        session.update_meta(future_field={"v": 2})
        meta = session.update_meta(title="renamed")
        assert meta["future_field"] == {"v": 2}
        assert meta["title"] == "renamed"
        assert meta["created_at"] == store_meta["created_at"]
        assert meta["updated_at"] >= store_meta["updated_at"]
        fresh = reopen_store(store)
        assert fresh.meta(session.id) == meta
        assert fresh.info(session.id).title == "renamed"

    # === one writer per process ================================================
    def test_opening_twice_for_writing_shares_the_writer(self, store, session):
        """Invariant 7: within a process, a second open joins the first writer."""
        other = store.open(session.id)
        try:
            a = session.append("message", {"content": "from first"})
            assert other.head == a.id
            assert other.event(a.id).record == {"content": "from first"}
            b = other.append("message", {"content": "from second"})
            assert b.parent_id == a.id
            assert session.head == b.id
        finally:
            other.close()
        c = session.append("message", {"content": "first still open"})
        assert c.parent_id == b.id

    def test_writer_and_reader_in_one_process(self, store, session):
        self.chain(session, 1)
        with store.open(session.id, readonly=True) as reader:
            session.append("message", {"content": "more"})
            reader.refresh()
            assert len(reader) == 2

    # === durability through reopen =============================================
    def test_everything_survives_reopen(self, store, session):
        """Invariant 1 and 2: a reopened session is exactly what was acknowledged."""
        a, b = self.chain(session, 2)
        session.select(a.id)
        c = session.append("message", {"content": "fork"})
        big = session.append("custom", {"content": "r" * 3000})
        batch = session.append_many([("message", {"i": 1}), ("message", {"i": 2})])
        before = [(x.id, x.parent_id, x.branch_from, x.kind, x.digest) for x in session.entries()]
        reopened = self.reopen(store, session)
        try:
            after = [(x.id, x.parent_id, x.branch_from, x.kind, x.digest) for x in reopened.entries()]
            assert after == before
            assert reopened.head == batch[-1].id
            assert [e.id for e in reopened.path()] == [a.id, c.id, big.id] + [e.id for e in batch]
            assert reopened.resolve(reopened.event(big.id)).record == {"content": "r" * 3000}
            nxt = reopened.append("message", {"content": "next"})
            assert nxt.parent_id == batch[-1].id and nxt.id > batch[-1].id
        finally:
            reopened.close()
        assert [p for p in store.fsck(session.id) if p.severity == "error"] == []
