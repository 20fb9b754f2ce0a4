"""Text no record can hold never costs the agent a tool result or a reply.

A tool returning a file name that is not UTF-8 (``os.listdir`` keeps such
bytes as lone surrogates) made the turn fail with InvalidEvent after the tool
ran, and a resume then told the model the tool did not complete; a reply
whose emoji reached us as two separate surrogate halves (a stream cut inside
it) was lost after it was paid for."""

from __future__ import annotations

import json
import os

from agentlog import Store
from agentlog._text import storable, storable_bytes
from agentlog.agent.loop import Agent, Tool
from agentlog.agent.scripted import ScriptedModel, ToolUse

LISTING = ["notes.txt", os.fsdecode(b"caf\xe9.txt")]


def test_a_tool_result_and_a_reply_with_surrogates_are_stored(tmp_path) -> None:
    store = Store(tmp_path / "home")
    tools = [Tool("ls", lambda: "\n".join(LISTING))]
    model = ScriptedModel([ToolUse("ls", {}), "Two files \ud83d\ude00, one odd \udce9."])
    with store.create() as s:
        result = Agent(s, model, tools=tools).run("What is here?")
        assert result.stopped == "done"
        (tool_result,) = [e for e in s.path() if e.kind == "tool_result"]
        assert tool_result.record["content"] == "notes.txt\ncaf\\xe9.txt"
        reply = s.path()[-2] if s.path()[-1].kind == "state" else s.path()[-1]
        assert reply.record["content"] == "Two files \U0001f600, one odd \\udce9."  # half an emoji, as likely


def test_storable_keeps_what_it_can_and_escapes_the_rest() -> None:
    assert storable("plain é 😀") == "plain é 😀"
    assert storable("\ud83d\ude00") == "\U0001f600"  # a pair split in two, joined again
    assert storable("x\ud83d") == "x\\ud83d"  # a lone half
    assert storable_bytes(os.fsdecode(b"\xff\xfe")) == "\\xff\\xfe"  # bytes the OS gave that were not UTF-8
    for half in ("\ud83d", "\udca1"):  # either half of 💡 (the low one is in the range of escaped bytes)
        arguments = json.dumps({"path": "a"})[:-2] + half + '"}'
        assert json.loads(storable(arguments)) == {"path": "a" + half}  # JSON text stays the same JSON
