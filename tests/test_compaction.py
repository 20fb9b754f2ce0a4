"""Compaction: the working context shrinks, the transcript keeps everything.

A compaction is one more event (invariant 4): the chunk bytes before it
never change. The context is the latest compaction's summary, the events
it kept, then everything after it; provider views built from it keep
every tool call with its result, whatever the keep budget.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import FileBackend, Store, SummarizerError
from agentlog.agent.loop import Agent
from agentlog.agent.models import Completion, check_messages
from agentlog.compaction import CompactionPolicy
from agentlog.errors import AgentlogError
from agentlog.summarize import ExtractiveSummarizer, empty_structured
from agentlog.tokens import Usage
from helpers import BLOB_THRESHOLD, RecordingFs, chunk_paths


def turn(s, n: int, *, calls: int = 1, big: bool = False, answer: bool = True):
    """One user turn: a question, a tool step with ``calls`` calls, an answer."""
    out = [s.append("message", {"content": f"Question {n}: please look at file{n}.py"}, role="user")]
    if calls:
        step = [("message", {"content": None}, "assistant")]
        step += [
            (
                "tool_call",
                {"id": f"c{n}_{k}", "name": "read_file", "arguments": f'{{"path": "file{n}.py"}}'},
                "assistant",
            )
            for k in range(calls)
        ]
        out += s.append_many(step)
        out += s.append_many(
            [
                (
                    "tool_result",
                    {
                        "tool_call_id": f"c{n}_{k}",
                        "name": "read_file",
                        "content": ("R" * 3000 if big else f"contents {n}.{k}"),
                        "is_error": False,
                    },
                    "tool",
                )
                for k in range(calls)
            ]
        )
    if answer:
        out.append(s.append("message", {"content": f"Answer {n}: file{n}.py is fine."}, role="assistant"))
    return out


def chunk_bytes(store, sid):
    return [p.read_bytes() for p in chunk_paths(store, sid)]


# --- transcript versus context ----------------------------------------------------------


def test_context_is_summary_plus_kept_plus_later_and_transcript_keeps_all(store):
    with store.create() as s:
        for n in range(6):
            turn(s, n)
        before = s.transcript()
        c = s.compact(keep_tokens=60)
        assert c is not None and c.kind == "compaction" and c.role == "system"
        assert s.transcript() == [*before, c]  # nothing dropped, nothing rewritten
        kept_from = c.record["first_kept_event_id"]
        ids = [e.id for e in before]
        kept = before[ids.index(kept_from) :]
        assert 0 < len(kept) < len(before)
        assert kept[0].kind == "message" and kept[0].role in ("user", "assistant")
        assert [e.id for e in s.context()] == [c.id, *(e.id for e in kept)]

        later = turn(s, 99)
        assert [e.id for e in s.context()] == [c.id, *(e.id for e in kept), *(e.id for e in later)]
        assert s.transcript() == [*before, c, *later]
        chat = s.to_chat_messages(system="sys")
        assert chat[0] == {"role": "system", "content": "sys"}
        assert chat[1]["role"] == "user" and c.record["summary"] in chat[1]["content"]
        check_messages(chat)


def test_compaction_after_select_summarizes_the_selected_path(store):
    """A compaction is appended where the next event goes; after select() that
    is the selected path, so it must neither summarize the abandoned branch
    nor keep events that are not on its own path."""
    with store.create() as s:
        turns = [turn(s, n) for n in range(6)]
        abandoned = {e.id for t in turns[3:] for e in t}
        s.select(turns[2][-1].id)
        c = s.compact(keep_tokens=40)
        assert c.parent_id == turns[2][-1].id and c.branch_from == turns[2][-1].id
        context = s.context()
        path_ids = {e.id for e in s.path()}
        assert c.record["first_kept_event_id"] in path_ids
        assert len(context) > 1 and {e.id for e in context[1:]} <= path_ids
        assert not {e.id for e in context} & abandoned
        for name in ("file3.py", "file4.py", "file5.py"):  # only the abandoned branch read these
            assert name not in c.record["summary"]
        assert "file0.py" in c.record["summary"]
        assert abandoned <= {e.id for e in s.entries()}  # still on disk
        check_messages(s.to_chat_messages())


def test_compaction_record_fields(store):
    with store.create() as s:
        for n in range(5):
            turn(s, n)
        c = s.compact(keep_tokens=40)
        rec = c.record
        assert set(rec) >= {
            "summary",
            "structured",
            "first_kept_event_id",
            "tokens_before",
            "tokens_after",
            "previous_compaction_id",
        }
        assert isinstance(rec["summary"], str) and rec["summary"].strip()
        assert set(rec["structured"]) == set(empty_structured())
        assert "file0.py" in rec["structured"]["files"]["read"]
        assert rec["first_kept_event_id"] in s
        assert rec["previous_compaction_id"] is None
        assert 0 < rec["tokens_after"] < rec["tokens_before"]


def test_nothing_to_compact_writes_nothing(store):
    with store.create() as s:
        assert s.compact() is None
        turn(s, 0)
        assert s.compact(keep_tokens=10**6) is None  # everything fits
        n = len(s)
        assert s.compact(keep_tokens=0) is None  # one turn: the current turn is never cut
        assert len(s) == n


def test_compaction_never_rewrites_chunk_bytes(tmp_path):
    store = Store(tmp_path / "home", blob_threshold=BLOB_THRESHOLD)
    with store.create() as s:
        for n in range(6):
            turn(s, n, big=n % 2 == 0)
        before = chunk_bytes(store, s.id)
        count = len(s)
        s.compact(keep_tokens=50)
        s.compact(keep_tokens=0)
        after = chunk_bytes(store, s.id)
        assert len(s) >= count + 1
    assert len(after) == len(before)
    for old, new in zip(before, after, strict=True):
        assert new[: len(old)] == old
    assert store.fsck() == []


def test_context_reads_no_payload_it_does_not_need(tmp_path):
    """Lazy payloads: building the context loads no blob, and resolving it
    loads only the blobs of events in it, none of the summarized ones."""
    home = str(tmp_path / "home")
    setup = Store(home, blob_threshold=BLOB_THRESHOLD)
    with setup.create() as s:
        for n in range(4):
            turn(s, n, big=True)
        c = s.compact(keep_tokens=30)
        turn(s, 50, big=True)
        sid = s.id
    assert c is not None

    fs = RecordingFs()
    store = Store(backend=FileBackend(home, fs=fs), blob_threshold=BLOB_THRESHOLD)
    with store.open(sid, readonly=True) as s:
        fs.clear()
        events = s.context()
        assert not [p for p in fs.opened if f"{os.sep}blobs{os.sep}" in p]
        assert any(e.record is None and e.digest for e in events)  # unloaded, not dropped
        in_context = {e.digest for e in events if e.digest}
        summarized = {e.digest for e in s.transcript() if e.digest} - in_context
        fs.clear()
        s.to_chat_messages()
        opened = {"sha256:" + os.path.basename(p) for p in fs.opened if f"{os.sep}blobs{os.sep}" in p}
    assert summarized and in_context
    assert opened == in_context


# --- repeated, automatic and failing compactions ----------------------------------------------


def test_repeated_compactions_update_the_previous_summary(store):
    with store.create() as s:
        s.append("message", {"content": "Goal: port the parser to Rust. Never touch the CLI."}, role="user")
        for n in range(3):
            turn(s, n)
        first = s.compact(keep_tokens=30)
        for n in range(10, 14):
            turn(s, n)
        second = s.compact(keep_tokens=30)
        assert second.record["previous_compaction_id"] == first.id
        structured = second.record["structured"]
        assert structured["goal"] == first.record["structured"]["goal"]
        assert "port the parser" in structured["goal"]
        assert any("Never touch the CLI" in c for c in structured["constraints"])
        read = structured["files"]["read"]
        assert "file0.py" in read and "file10.py" in read  # old and new facts both kept
        context = s.context()
        assert context[0].id == second.id
        assert first.id not in {e.id for e in context}
        assert first.id in {e.id for e in s.transcript()}


class Boom:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def summarize(self, events, previous):
        raise self.exc


@pytest.mark.parametrize(
    "exc",
    [RuntimeError("model unreachable"), SummarizerError("bad JSON from the model"), AgentlogError("anything of ours")],
)
def test_a_failing_summarizer_writes_nothing_and_retry_works(tmp_path, exc):
    store = Store(tmp_path / "home")
    with store.create() as s:
        for n in range(5):
            turn(s, n)
        count, head, data = len(s), s.head, chunk_bytes(store, s.id)
        with pytest.raises(SummarizerError):
            s.compact(Boom(exc), keep_tokens=30)
        assert (len(s), s.head, chunk_bytes(store, s.id)) == (count, head, data)
        s.summarizer = Boom(exc)
        s.compaction.keep_tokens = 30
        with pytest.raises(SummarizerError):
            s.maybe_compact(100, 100)
        assert len(s) == count
        c = s.compact(ExtractiveSummarizer(), keep_tokens=30)
        assert c is not None and len(s) == count + 1 and s.context()[0].id == c.id


def test_maybe_compact_at_80_percent_by_default(store):
    with store.create() as s:
        for n in range(5):
            turn(s, n)
        assert s.compaction.threshold == 0.8
        s.compaction.keep_tokens = 40
        assert s.maybe_compact(799, 1000) is None
        assert s.maybe_compact(0, 0) is None  # an unknown window never triggers
        c = s.maybe_compact(800, 1000)
        assert c is not None and c.kind == "compaction"


def test_threshold_and_keep_budget_are_configurable(store):
    from agentlog.tokens import event_tokens

    with store.create() as s:
        for n in range(8):
            turn(s, n)
        s.compaction = CompactionPolicy(threshold=0.5, keep_tokens=120)
        assert s.maybe_compact(499, 1000) is None
        c = s.maybe_compact(500, 1000)
        kept = s.context()[1:]
        assert sum(event_tokens(e) for e in kept) <= 120
        assert sum(e.role == "user" for e in kept) >= 2  # the budget, not one turn, decided
        # One more whole turn would have broken the budget.
        path = s.transcript()
        start = next(i for i, e in enumerate(path) if e.id == kept[0].id)
        previous_user = max(i for i in range(start) if path[i].role == "user")
        assert sum(event_tokens(e) for e in path[previous_user:-1]) > 120
        assert c.record["first_kept_event_id"] == kept[0].id
        s.compaction.enabled = False
        turn(s, 20)
        assert s.maybe_compact(10**6, 1000) is None
        assert s.context()[0].id == c.id


class UsageModel:
    """A model that answers with text and reports the usage it is told to."""

    name = "usage"

    def __init__(self, context_window: int, totals: list[int]) -> None:
        self.context_window = context_window
        self.totals = list(totals)

    def stream(self, messages, tools=None):
        total = self.totals.pop(0)
        yield Completion(content="Noted. Next I will keep going.", usage=Usage(total - 10, 10, total), model=self.name)


def test_the_agent_loop_compacts_when_reported_usage_reaches_the_threshold(store):
    with store.create() as s:
        for n in range(4):
            turn(s, n)
        s.compaction.keep_tokens = 30
        agent = Agent(s, UsageModel(1000, [799, 800, 100]))
        assert agent.run("first").compactions == 0
        assert not any(e.kind == "compaction" for e in s.transcript())
        assert agent.run("second").compactions == 1
        assert s.context()[0].kind == "compaction"
        s.compaction.threshold = 0.05  # configurable: now 100 of 1000 is enough
        assert agent.run("third").compactions == 1


# --- the property: tool calls and results stay paired ---------------------------------------


def _conversation_step(s, rng: random.Random, n: int) -> None:
    """A random piece of an agent conversation, as the loop would write it."""
    s.append("message", {"content": f"user {n} " + "u" * rng.randint(0, 400)}, role="user")
    for step in range(rng.randint(0, 3)):
        calls = rng.randint(1, 3)
        ids = [f"call_{n}_{step}_{k}" for k in range(calls)]
        text = "thinking " * rng.randint(0, 30) or None
        s.append_many(
            [("message", {"content": text}, "assistant")]
            + [("tool_call", {"id": i, "name": "t", "arguments": "{}"}, "assistant") for i in ids]
        )
        if rng.random() < 0.3:
            s.append("state", {"tool_calls": n}, role="system")
        if rng.random() < 0.1:
            return  # a crash while tools ran: calls left without results
        order = ids[:]
        rng.shuffle(order)
        s.append_many(
            [
                (
                    "tool_result",
                    {"tool_call_id": i, "name": "t", "is_error": False, "content": "r" * rng.choice([5, 200, 3000])},
                    "tool",
                )
                for i in order
            ]
        )
    if rng.random() < 0.8:
        s.append("message", {"content": "done " * rng.randint(1, 50)}, role="assistant")
    if rng.random() < 0.2:
        s.append("custom", {"note": n})


def _check_pairing(s) -> None:
    context = s.context(resolve=True)
    calls_seen: set[str] = set()
    answered: set[str] = set()
    for e in context:
        if e.kind == "tool_call":
            calls_seen.add(e.record["id"])
        elif e.kind == "tool_result":
            call_id = e.record["tool_call_id"]
            assert call_id in calls_seen, f"orphaned tool result {call_id}"
            assert call_id not in answered
            answered.add(call_id)
    unanswered = calls_seen - answered

    chat = s.to_chat_messages(system="sys")
    check_messages(chat)  # what a provider would refuse, refused here
    tool_msgs = [m for m in chat if m["role"] == "tool"]
    assert len(tool_msgs) == len(answered) + len(unanswered)  # nothing dropped

    items = s.to_responses_input(system="sys")
    pending: set[str] = set()
    for item in items:
        if item["type"] == "function_call":
            pending.add(item["call_id"])
        elif item["type"] == "function_call_output":
            assert item["call_id"] in pending, "responses output without its call"
            pending.remove(item["call_id"])
        else:
            assert not pending, "a message between calls and their outputs"
    assert not pending


def _run_property(store: Store, seed: int, ops: list[tuple[str, int]]) -> None:
    rng = random.Random(seed)
    with store.create() as s:
        n = 0
        for op, arg in ops:
            if op == "talk":
                for _ in range(arg):
                    _conversation_step(s, rng, n)
                    n += 1
            elif op == "compact":
                before = s.transcript()
                c = s.compact(keep_tokens=arg)
                after = s.transcript()
                assert after[: len(before)] == before
                if c is not None:
                    assert after[-1].id == c.id and len(after) == len(before) + 1
            elif op == "select-compact" and len(s) > 0:
                path = s.path()
                target = path[arg % len(path)]
                s.select(target.id)
                c = s.compact(keep_tokens=arg % 700)
                if c is not None:
                    assert c.parent_id == target.id
                    kept = c.record["first_kept_event_id"]
                    assert kept is None or kept in {e.id for e in s.path()}
                else:
                    s.select(None)
            elif op == "branch" and len(s) > 0:
                path = s.path()
                s.select(path[arg % len(path)].id)
                summary = s.summarize_branch()
                if summary is not None:
                    assert summary.parent_id == path[arg % len(path)].id
                else:
                    s.select(None)
            _check_pairing(s)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("talk"), st.integers(1, 4)),
        st.tuples(st.just("compact"), st.integers(0, 1500)),
        st.tuples(st.just("branch"), st.integers(0, 10_000)),
        st.tuples(st.just("select-compact"), st.integers(0, 10_000)),
    ),
    min_size=1,
    max_size=8,
)
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 2**32), ops=OPS)
def test_pairing_property_memory(seed, ops):
    _run_property(Store.memory(blob_threshold=BLOB_THRESHOLD), seed, ops)


@SETTINGS
@given(seed=st.integers(0, 2**32), ops=OPS)
def test_pairing_property_files(seed, ops):
    with tempfile.TemporaryDirectory() as home:
        store = Store(Path(home) / "h", durability="off", blob_threshold=BLOB_THRESHOLD)
        _run_property(store, seed, ops)
        assert store.fsck() == []


def test_an_earlier_compaction_among_the_kept_events_is_not_in_the_context(store):
    """A compaction that keeps from before the previous one (a long kept
    range; pi writes such, firstKeptEntryId at the root): the previous
    summary, which the new one updates, is not sent a second time."""
    with store.create() as s:
        a = s.append("message", {"content": "a"}, role="user")
        s.append("message", {"content": "b"}, role="assistant")
        first = s.append("compaction", {"summary": "one", "structured": {}, "first_kept_event_id": a.id})
        s.append("message", {"content": "c"}, role="user")
        second = s.append(
            "compaction",
            {"summary": "two", "structured": {}, "first_kept_event_id": a.id, "previous_compaction_id": first.id},
        )
        s.append("message", {"content": "d"}, role="user")
        context = s.context()
        assert [e.record.get("summary") or e.record["content"] for e in context] == ["two", "a", "b", "c", "d"]
        assert first.id in {e.id for e in s.transcript()}  # nothing deleted
        assert second.id == context[0].id


def test_a_kept_id_that_is_no_event_keeps_nothing_without_walking(store):
    """A compaction appended by hand with a stale first_kept_event_id made
    every context() walk the whole history to find the id absent."""
    with store.create() as s:
        for i in range(30):
            s.append("message", {"content": f"m{i}"}, role="user")
        s.append(
            "compaction",
            {"summary": "s", "structured": {}, "first_kept_event_id": "01a249b5-0000-7000-8000-000000000000"},
            role="system",
        )
        last = s.append("message", {"content": "after"}, role="user")
        walked = []
        real = type(s.storage).ancestors

        def counting(self, from_id, **kw):  # type: ignore[no-untyped-def]
            out = real(self, from_id, **kw)
            walked.append(len(out))
            return out

        type(s.storage).ancestors = counting  # type: ignore[method-assign]
        try:
            context = s.context()
        finally:
            type(s.storage).ancestors = real  # type: ignore[method-assign]
        assert [e.kind for e in context] == ["compaction", "message"] and context[-1].id == last.id
        assert sum(walked) <= 2  # the compaction and the event after it, not the 30 before
