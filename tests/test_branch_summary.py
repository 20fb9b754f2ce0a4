"""Branch summaries: after select(), what the abandoned branch tried.

The summary is the first event of the new branch (a child of the selected
event, ``branch_from`` set when that event already had children); the old
branch stays on disk, and the model sees the summary in its context.
"""

from __future__ import annotations

import pytest

from agentlog import NIL_ID, Store, SummarizerError
from agentlog.agent.models import check_messages
from agentlog.providers import BRANCH_PREFIX, INTERRUPTED
from agentlog.summarize import empty_structured


def history(s):
    q = s.append("message", {"content": "Make the build faster."}, role="user")
    a = s.append("message", {"content": "I will try caching in build.py first."}, role="assistant")
    call = s.append_many(
        [
            ("message", {"content": None}, "assistant"),
            ("tool_call", {"id": "c1", "name": "edit_file", "arguments": '{"path": "build.py"}'}, "assistant"),
        ]
    )
    result = s.append(
        "tool_result",
        {"tool_call_id": "c1", "name": "edit_file", "content": "x" * 3000, "is_error": False},
        role="tool",
    )
    done = s.append("message", {"content": "Caching added to build.py; it did not help."}, role="assistant")
    return q, a, call, result, done


def test_summary_lands_at_the_selected_event_with_branch_from(store):
    with store.create() as s:
        q, a, call, result, done = history(s)
        s.select(a.id)
        summary = s.summarize_branch()
        assert summary.kind == "branch_summary" and summary.role == "system"
        assert summary.parent_id == a.id
        assert summary.branch_from == a.id  # a already had a child: a deliberate branch
        assert s.head == summary.id and s.pending is None
        rec = summary.record
        assert rec["abandoned_head"] == done.id
        assert rec["common_ancestor"] == a.id
        assert set(rec["structured"]) == set(empty_structured())
        assert "build.py" in rec["summary"]
        assert [e.id for e in s.path()] == [q.id, a.id, summary.id]
        assert done.id in s and len(s) == 7  # the old branch is all still there

        nxt = s.append("message", {"content": "Try parallel jobs instead."}, role="user")
        assert nxt.parent_id == summary.id and nxt.branch_from is None
        chat = s.to_chat_messages()
        assert chat[2]["role"] == "user" and chat[2]["content"].startswith(BRANCH_PREFIX)
        check_messages(chat)


def test_summary_after_select_of_the_root(store):
    with store.create() as s:
        history(s)
        s.select(NIL_ID)
        summary = s.summarize_branch()
        assert summary.parent_id == NIL_ID and summary.branch_from == NIL_ID
        assert summary.record["common_ancestor"] == NIL_ID
        assert s.path() == [summary]


def test_summary_covers_only_what_is_not_shared(store):
    with store.create() as s:
        q, a, call, result, done = history(s)
        s.select(q.id)
        seen = []

        class Spy:
            def summarize(self, events, previous):
                seen.extend(events)
                from agentlog.summarize import Summary

                return Summary("tried caching", empty_structured())

        s.summarize_branch(Spy())
        assert [e.id for e in seen] == [a.id, *(e.id for e in call), result.id, done.id]
        assert all(e.loaded for e in seen)  # blob payloads were resolved for the summarizer


def test_nothing_to_summarize_writes_nothing(store):
    with store.create() as s:
        assert s.summarize_branch() is None  # nothing selected
        q, *_, done = history(s)
        s.select(done.id)  # HEAD itself
        assert s.summarize_branch() is None
        n = len(s)
        s.select(None)
        assert s.summarize_branch() is None
        assert len(s) == n


def test_selecting_forward_abandons_nothing(store):
    """Selecting an event ahead of HEAD (after a checkout back) leaves nothing behind."""
    with store.create() as s:
        q, a, *_, done = history(s)
        s.checkout(a.id)
        s.select(done.id)
        assert s.summarize_branch() is None


def test_a_failing_summarizer_keeps_the_selection_for_a_retry(tmp_path):
    store = Store(tmp_path / "home")
    with store.create() as s:
        q, a, *_ = history(s)
        s.select(q.id)
        n, head = len(s), s.head

        class Boom:
            def summarize(self, events, previous):
                raise TimeoutError("model timed out")

        with pytest.raises(SummarizerError):
            s.summarize_branch(Boom())
        assert (len(s), s.head, s.pending) == (n, head, q.id)
        summary = s.summarize_branch()
        assert summary.parent_id == q.id and len(s) == n + 1


def test_branching_inside_a_tool_group_never_orphans_a_result(store):
    """Select the tool call itself: its result stays on the abandoned branch,
    and the new context answers the call as interrupted, never with an orphan."""
    with store.create() as s:
        q, a, call, result, done = history(s)
        s.select(call[-1].id)
        summary = s.summarize_branch()
        assert summary.parent_id == call[-1].id
        chat = s.to_chat_messages()
        check_messages(chat)
        tool_msgs = [m for m in chat if m["role"] == "tool"]
        assert tool_msgs == [{"role": "tool", "tool_call_id": "c1", "content": INTERRUPTED}]
        assert chat[-1]["content"].startswith(BRANCH_PREFIX)
        items = s.to_responses_input()
        outputs = [i for i in items if i["type"] == "function_call_output"]
        assert [o["call_id"] for o in outputs] == ["c1"]


def test_branch_summary_survives_reopen(tmp_path):
    store = Store(tmp_path / "home")
    with store.create() as s:
        q, a, *_ = history(s)
        s.select(a.id)
        summary = s.summarize_branch()
    with Store(tmp_path / "home").open(s.id) as again:
        assert again.head == summary.id
        assert again.event(summary.id).branch_from == a.id
    assert store.fsck() == []
