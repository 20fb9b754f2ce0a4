"""Follow-ups of a QA pass over the sessions layer and the agent loop: the
path a selection continues, and provider views a provider would have
refused (null tool content, string parts, images and files in results)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentlog import Store
from agentlog.agent.loop import Agent
from agentlog.agent.models import check_messages
from agentlog.agent.scripted import ScriptedModel
from agentlog.state import Checkpoint


def _texts(messages: list[dict[str, Any]]) -> list[Any]:
    return [m.get("content") for m in messages if m["role"] != "system"]


def test_select_then_resume_regenerates_the_answer_on_the_selected_path(store: Store) -> None:
    with store.create() as s:
        u1 = s.append("message", {"content": "what is 2+2"}, role="user")
        s.append("message", {"content": "5"}, role="assistant")
        s.save_turn([("message", {"content": "later"}, "user")], Checkpoint(tool_calls=7))
        s.select(u1.id)  # regenerate the answer to the first question
        assert s.next_parent == u1.id and s.state() == Checkpoint()  # the selected path has no checkpoint yet
        assert _texts(s.to_chat_messages()) == ["what is 2+2"]
        model = ScriptedModel(["4"])
        result = Agent(s, model).resume()
        [reply] = [e for e in result.events if e.kind == "message"]
        assert reply.parent_id == u1.id and s.head == result.events[-1].id
        assert _texts(model.requests[0][0]) == ["what is 2+2"]  # what it answers, nothing of the old branch


def test_resume_after_selecting_an_answered_event_does_nothing(store: Store) -> None:
    with store.create() as s:
        s.append("message", {"content": "q1"}, role="user")
        a1 = s.append("message", {"content": "a1"}, role="assistant")
        s.append("message", {"content": "q2, unanswered"}, role="user")
        s.select(a1.id)
        model = ScriptedModel(["an answer to q2 would land under a1"])
        assert Agent(s, model).resume().events == [] and model.requests == []


def _views(s: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    chat = s.to_chat_messages()
    check_messages(chat)  # as the scripted model checks a request
    return chat, s.to_responses_input()


def test_the_provider_views_send_tool_results_and_parts_as_the_apis_take_them(store: Store) -> None:
    with store.create() as s:
        s.append("message", {"content": ["first part", {"type": "text", "text": "second part"}]}, role="user")
        s.append("tool_call", {"id": "c1", "name": "shot", "arguments": "{}"}, role="assistant")
        s.append("tool_call", {"id": "c2", "name": "noop", "arguments": "{}"}, role="assistant")
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}
        s.append(
            "tool_result",
            {"tool_call_id": "c1", "content": [{"type": "text", "text": "screenshot"}, image]},
            role="tool",
        )
        s.append("tool_result", {"tool_call_id": "c2", "content": None}, role="tool")
        pdf = {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBER", "filename": "a.pdf"}}
        s.append("message", {"content": [{"type": "text", "text": "read this"}, pdf]}, role="user")
        chat, responses = _views(s)
    assert chat[0]["content"] == [{"type": "text", "text": "first part"}, {"type": "text", "text": "second part"}]
    tools = [m for m in chat if m["role"] == "tool"]
    assert tools[0]["content"] == "screenshot\n[image_url]"  # a tool message carries text only
    assert tools[1]["content"] == ""
    assert responses[0]["content"][0] == {"type": "input_text", "text": "first part"}
    outputs = [i for i in responses if i["type"] == "function_call_output"]
    assert outputs[0]["output"] == [
        {"type": "input_text", "text": "screenshot"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBOR", "detail": "auto"},
    ]
    assert outputs[1]["output"] == ""
    assert responses[-1]["content"][1] == {
        "type": "input_file",
        "file_data": "data:application/pdf;base64,JVBER",
        "filename": "a.pdf",
    }


_KILLED_IN_A_TOOL = """
import os, signal, sys
from agentlog import Store
from agentlog.agent.loop import Agent, Tool
from agentlog.agent.scripted import ScriptedModel, ToolUse, Turn

def first() -> str:
    return "first ran"

def second() -> str:
    os.kill(os.getpid(), signal.SIGKILL)  # the process dies in the middle of the batch
    return "never"

store = Store(sys.argv[1])
with store.create(session_id="k") as s:
    model = ScriptedModel([Turn(tool_calls=[ToolUse("first"), ToolUse("second"), ToolUse("first")])])
    Agent(s, model, tools=[Tool("first", first), Tool("second", second)]).run("go")
"""


def test_a_sigkill_in_a_tool_keeps_the_results_of_the_tools_before_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    killed = subprocess.run([sys.executable, "-c", _KILLED_IN_A_TOOL, str(home)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with Store(home).open("k", readonly=True) as s:
        results = [e.record for e in s.transcript() if e.kind == "tool_result"]
        assert [(r["name"], r["content"]) for r in results] == [("first", "first ran")]
        assert s.state().tool_calls == 1
        sent = [m for m in s.to_chat_messages() if m["role"] == "tool"]
    assert [m["content"] for m in sent][0] == "first ran"
    assert all("interrupted" in m["content"] for m in sent[1:]) and len(sent) == 3


def test_a_server_tools_result_inside_the_reply_answers_its_call(store: Store) -> None:
    """Anthropic's web search runs on the provider's side: an imported
    Claude Code reply holds the call and its result as parts of its own
    content, and its call as a tool_call event. The views answer the call
    with that result, not as interrupted, and send neither part as content."""
    with store.create() as s:
        s.append("message", {"content": "find wal"}, role="user")
        reply = [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sqlite wal"}},
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [{"type": "web_search_result", "title": "WAL", "url": "https://sqlite.org/wal.html"}],
            },
            {"type": "text", "text": "found it"},
        ]
        s.append("message", {"content": reply}, role="assistant")
        call = {"id": "srvtoolu_1", "name": "web_search", "arguments": '{"query":"sqlite wal"}'}
        s.append("tool_call", {**call, "extra": {"type": "server_tool_use"}}, role="assistant")
        chat, responses = _views(s)
    assert chat[1]["content"] == [{"type": "text", "text": "found it"}]
    assert chat[2] == {"role": "tool", "tool_call_id": "srvtoolu_1", "content": "WAL https://sqlite.org/wal.html"}
    assert responses[-1]["output"] == "WAL https://sqlite.org/wal.html"
