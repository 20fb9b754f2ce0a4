"""Random operation sequences against a plain model of the tree and HEAD.

A hypothesis state machine appends, batches, selects, checks out, reopens,
reads through a read-only handle and resolves blobs, on the file backend
and on the memory backend alike, and after every step compares the session
with a dict-and-list model: HEAD, the event count, the active path and
every record. AGENTLOG_EXHAUSTIVE=1 runs many more and longer sequences.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import orjson
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from agentlog import NIL_ID, Store

settings.register_profile(
    "agentlog-quick",
    max_examples=15,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "agentlog-exhaustive",
    max_examples=400,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE = settings.get_profile(
    "agentlog-exhaustive" if os.environ.get("AGENTLOG_EXHAUSTIVE") == "1" else "agentlog-quick"
)

THRESHOLD = 256  # small, so blobs come often

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8"), max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
records = json_values | st.builds(
    lambda s, n: {"content": s * n}, st.text(min_size=1, max_size=4), st.integers(80, 400)
)
kinds = st.sampled_from(["message", "tool_call", "tool_result", "state", "custom", "x.y-z"])


class Model:
    """What the session must be: events by id, HEAD, and a pending selection."""

    def __init__(self) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.head = NIL_ID
        self.pending: str | None = None

    def has_children(self, event_id: str) -> bool:
        return any(e["parent"] == event_id for e in self.events.values())

    def expected_parent(self) -> tuple[str, str | None]:
        """Two-phase branching: a selection other than HEAD becomes the parent;
        the parent (selected, or HEAD after a checkout) is marked as a branch
        point when it already has children."""
        selected = self.pending
        if selected is None or selected == self.head:
            head = self.head
            return head, (head if self.has_children(head) else None)
        return selected, (selected if self.has_children(selected) else None)

    def add(self, event, parent: str, record: Any) -> None:
        self.events[event.id] = {"parent": parent, "kind": event.kind, "record": record}
        self.head = event.id
        self.pending = None

    def path(self) -> list[str]:
        out, cur = [], self.head
        while cur != NIL_ID:
            out.append(cur)
            cur = self.events[cur]["parent"]
        return out[::-1]


class SessionMachine(RuleBasedStateMachine):
    backend = "files"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="agentlog-prop-")
        self.model = Model()
        if self.backend == "files":
            self.store = Store(os.path.join(self.tmp, "home"), blob_threshold=THRESHOLD)
        else:
            self.store = Store.memory(blob_threshold=THRESHOLD)
        self.session = None

    @initialize()
    def create(self) -> None:
        self.session = self.store.create(session_id="prop")

    def teardown(self) -> None:
        if self.session is not None:
            self.session.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def known_ids(self) -> list[str]:
        return sorted(self.model.events)

    # --- writes --------------------------------------------------------------
    @rule(kind=kinds, record=records)
    def append(self, kind, record) -> None:
        parent, branch_from = self.model.expected_parent()
        event = self.session.append(kind, record)
        assert (event.parent_id, event.branch_from) == (parent, branch_from)
        assert all(event.id > other for other in self.model.events)  # invariant 11
        self.model.add(event, parent, record)

    @rule(items=st.lists(st.tuples(kinds, records), min_size=1, max_size=4))
    def append_many(self, items) -> None:
        parent, branch_from = self.model.expected_parent()
        events = self.session.append_many(items)
        assert len(events) == len(items)
        assert (events[0].parent_id, events[0].branch_from) == (parent, branch_from)
        for event, (_, record) in zip(events, items, strict=True):
            assert event.parent_id == parent
            self.model.add(event, parent, record)
            parent = event.id

    @rule(data=st.data())
    def select(self, data) -> None:
        target = data.draw(st.sampled_from([None, NIL_ID, *self.known_ids()]))
        self.session.select(target)
        self.model.pending = target

    @precondition(lambda self: self.model.events)
    @rule(data=st.data())
    def checkout(self, data) -> None:
        target = data.draw(st.sampled_from([NIL_ID, *self.known_ids()]))
        self.session.checkout(target)
        self.model.head = target
        self.model.pending = None

    @rule()
    def reopen(self) -> None:
        """Invariant 1 and 5: what was acknowledged, and HEAD, survive reopening."""
        self.session.close()
        if self.backend == "files":  # a new Store, as a new process would have
            self.store = Store(self.store.home, blob_threshold=THRESHOLD)
        self.session = self.store.open("prop")
        self.model.pending = None  # a selection is not durable

    # --- reads ---------------------------------------------------------------
    @rule()
    def read_only_view(self) -> None:
        with self.store.open("prop", readonly=True) as reader:
            assert reader.head == self.model.head
            assert len(reader) == len(self.model.events)
            assert [e.id for e in reader.path()] == self.model.path()
            entries = reader.entries()
            assert [x.id for x in entries] == self.known_ids()
            for x in entries:
                assert x.parent_id == self.model.events[x.id]["parent"]

    @precondition(lambda self: self.model.events)
    @rule(data=st.data())
    def resolve(self, data) -> None:
        """Invariant 9: a payload comes back exactly, blob or inline."""
        event_id = data.draw(st.sampled_from(self.known_ids()))
        event = self.session.event(event_id)
        want = self.model.events[event_id]
        assert event.kind == want["kind"]
        if event.record is None and event.digest is not None:
            event = self.session.resolve(event)
        assert orjson.dumps(event.record) == orjson.dumps(want["record"])

    # --- always ----------------------------------------------------------------
    @invariant()
    def matches_the_model(self) -> None:
        if self.session is None:
            return
        assert self.session.head == self.model.head
        assert self.session.pending == self.model.pending
        assert len(self.session) == len(self.model.events)
        assert [e.id for e in self.session.path()] == self.model.path()


class MemorySessionMachine(SessionMachine):
    backend = "memory"


TestFileBackendProperties = SessionMachine.TestCase
TestFileBackendProperties.settings = PROFILE
TestMemoryBackendProperties = MemorySessionMachine.TestCase
TestMemoryBackendProperties.settings = PROFILE
