"""sync() of a list a harness built from to_chat_messages(), the view the
docs point it at. That view answers a tool call left unanswered with a
synthetic result; sync() compared only with the faithful view, so once
such a call sat before later messages (Ctrl-C in a tool, then resume())
every sync() of the list raised ContextMismatch, and when the call was
last on the path the synthetic result was stored as if the harness had
sent it."""

from __future__ import annotations

import pytest

from agentlog import ContextMismatch, Store
from agentlog.agent import Agent, ScriptedModel, Tool
from agentlog.agent.scripted import ToolUse, Turn
from agentlog.providers import INTERRUPTED


def interrupted_session(store: Store):  # type: ignore[no-untyped-def]
    session = store.create()

    def stop() -> str:
        raise KeyboardInterrupt  # the user pressed Ctrl-C while the tool ran

    agent = Agent(session, ScriptedModel([Turn(tool_calls=[ToolUse("stop")])]), tools=[Tool("stop", stop)])
    with pytest.raises(KeyboardInterrupt):
        agent.run("go")
    return session


def test_the_synthetic_result_is_never_stored(store: Store) -> None:
    with interrupted_session(store) as s:
        messages = s.to_chat_messages(system="S")
        assert messages[-1]["role"] == "tool" and INTERRUPTED in str(messages[-1]["content"])
        count = len(s)
        assert s.sync(messages) == []
        assert len(s) == count
        assert not any(e.kind == "tool_result" for e in s.path())


def test_a_list_from_the_repaired_view_keeps_syncing(store: Store) -> None:
    with interrupted_session(store) as s:
        Agent(s, ScriptedModel(["sorry, that was interrupted"])).resume()
        messages = [*s.to_chat_messages(system="S"), {"role": "user", "content": "next"}]
        assert [(e.kind, e.role) for e in s.sync(messages)] == [("message", "user")]
        messages.append({"role": "assistant", "content": "ok"})
        assert [e.record["content"] for e in s.sync(messages)] == ["ok"]
        assert s.sync(messages) == []


def test_a_real_result_for_the_call_is_stored(store: Store) -> None:
    with interrupted_session(store) as s:
        messages = s.to_chat_messages()
        call_id = messages[-1]["tool_call_id"]
        messages[-1] = {"role": "tool", "tool_call_id": call_id, "content": "ran after all"}
        [stored] = s.sync(messages)
        assert stored.kind == "tool_result" and stored.record["content"] == "ran after all"


def test_a_list_that_differs_from_both_views_is_still_refused(store: Store) -> None:
    with interrupted_session(store) as s:
        messages = s.to_chat_messages()
        messages[0] = {"role": "user", "content": "something else"}
        count = len(s)
        with pytest.raises(ContextMismatch, match="message 0 differs"):
            s.sync([*messages, {"role": "user", "content": "next"}])
        assert len(s) == count


def test_blank_text_beside_tool_calls_is_sent_as_null(store: Store) -> None:
    # The loop stores "" beside a reply's tool calls; the provider view sends
    # null there, as Completion.to_message() does, and sync() takes either.
    with store.create() as s:
        Agent(s, ScriptedModel([ToolUse("t"), "done"]), tools=[Tool("t", lambda: "x")]).run("go")
        sent = s.to_chat_messages()
        assert sent[1]["content"] is None and sent[1]["tool_calls"]
        assert s.sync(sent) == []
        stored = [e for e in s.path() if e.kind == "message" and e.role == "assistant"][0]
        assert stored.record["content"] == ""
        as_stored = [{**m, "content": ""} if m.get("tool_calls") else m for m in sent]
        assert s.sync([*as_stored, {"role": "user", "content": "next"}])[0].record["content"] == "next"
