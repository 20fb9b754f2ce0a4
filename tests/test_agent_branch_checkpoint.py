"""Fixes from the sessions-layer hunt of 2026-12-06: the checkpoint of a
branch taken at a reply, the tool-call limit's stop, and a read-only
session's compaction refused before its summarizer is called."""

from __future__ import annotations

from typing import Any

import pytest

from agentlog import ReadOnlySession, Store
from agentlog.agent import Agent, Limits, ScriptedModel, Tool
from agentlog.agent.scripted import ToolUse
from agentlog.summarize import ExtractiveSummarizer


def replies(events: list[Any]) -> list[Any]:
    return [e for e in events if e.kind == "message" and e.role == "assistant"]


def test_a_branch_at_a_reply_keeps_the_replys_spend(store: Store) -> None:
    # The loop saves [reply, state]: the reply's checkpoint is its child,
    # off the path of a branch taken at the reply. It used to be skipped, so
    # the reply's cost and call vanished from the branch that holds it.
    with store.create() as s:
        agent = Agent(s, ScriptedModel(["reply 1", "reply 2", "reply 2b"], price_per_token=(0.01, 0.01)))
        reply1 = replies(agent.run("q1").events)[0]
        at_reply1 = s.state().usage
        agent.run("q2")
        s.select(reply1.id)
        assert s.state().usage == at_reply1 and at_reply1.calls == 1
        agent.run("q2, reworded")
        usage = s.state().usage
        assert usage.calls == 2 and usage.cost_usd > at_reply1.cost_usd


def test_a_branch_at_a_reply_with_tool_calls(store: Store) -> None:
    # [reply, tool_call, state], then [tool_result, state]: the branch at the
    # reply starts from the batch's checkpoint (the call not yet run).
    with store.create() as s:
        tools = [Tool("echo", lambda x="": x)]
        agent = Agent(s, ScriptedModel([ToolUse("echo", {"x": "a"}), "done"]), tools=tools)
        reply = replies(agent.run("go").events)[0]
        assert s.state().tool_calls == 1 and s.state().usage.calls == 2
        s.select(reply.id)
        state = s.state()
        assert (state.usage.calls, state.tool_calls) == (1, 0)


def test_a_branch_budget_counts_the_reply_it_starts_from(store: Store) -> None:
    with store.create() as s:
        model = ScriptedModel(["r"] * 20, price_per_token=(0.01, 0.01))
        agent = Agent(s, model, limits=Limits(max_cost_usd=0.15))
        reply = replies(agent.run("q").events)[0]
        cost = s.state().usage.cost_usd
        assert 0 < cost < 0.15 < 2 * cost  # one more call passes the limit
        stopped = []
        for i in range(3):
            s.select(reply.id)
            stopped.append(agent.run(f"try {i}").stopped)
        # Each branch holds the first reply and one more: each is at the limit
        # after its own call, never counting the other branches' calls.
        assert stopped == ["done", "done", "done"]
        assert s.state().usage.calls == 2
        assert agent.run("one more").stopped == "budget"


def test_the_tool_call_limit_stops_the_turn(store: Store) -> None:
    with store.create() as s:
        model = ScriptedModel([ToolUse("echo", {"x": "a"})] * 5 + ["end"])
        limits = Limits(max_tool_calls=2, max_iterations=8)
        result = Agent(s, model, tools=[Tool("echo", lambda x="": x)], limits=limits).run("go")
        # two calls run, a refused batch answered once more, a second refused: stop
        assert result.stopped == "budget"
        assert 6 - model.remaining == 4
        refused = [e.record for e in s.path() if e.kind == "tool_result" and e.record["is_error"]]
        assert len(refused) == 2 and all("limit of 2" in r["content"] for r in refused)


def test_the_model_may_answer_after_a_refused_call(store: Store) -> None:
    with store.create() as s:
        model = ScriptedModel([ToolUse("echo", {"x": "a"})] * 2 + ["what I have"])
        result = Agent(s, model, tools=[Tool("echo", lambda x="": x)], limits=Limits(max_tool_calls=1)).run("go")
        assert (result.stopped, result.text) == ("done", "what I have")


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, events: Any, previous: Any) -> Any:
        self.calls += 1
        return ExtractiveSummarizer().summarize(events, previous)


@pytest.mark.parametrize("operation", ["compact", "summarize_branch"])
def test_a_read_only_session_refuses_before_the_summarizer_runs(store: Store, operation: str) -> None:
    with store.create() as s:
        for _ in range(4):
            s.append("message", {"content": "q " * 200}, role="user")
            s.append("message", {"content": "a " * 200}, role="assistant")
        sid = s.id
    summarizer = Counting()
    with store.open(sid, readonly=True) as reader:
        with pytest.raises(ReadOnlySession):
            if operation == "compact":
                reader.compact(summarizer, keep_tokens=10)
            else:
                reader.summarize_branch(summarizer)
    assert summarizer.calls == 0  # a model-backed summarizer is a paid call
