"""Audit of issue 3 (agent sessions): regressions for what the audit found.

Each test names the promise it checks (docs/sessions.md, docs/agent.md,
docs/records.md) and failed before its fix.
"""

from __future__ import annotations

import datetime
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentlog import Store
from agentlog.agent import Completion, LiveHub, OpenAICompatModel, ScriptedModel, ToolUse, Turn
from agentlog.agent.loop import Agent, Limits, Tool
from agentlog.agent.models import check_messages
from agentlog.errors import InvalidEvent, ModelError, SummarizerError
from agentlog.event import Event
from agentlog.summarize import ExtractiveSummarizer, LLMSummarizer, Summary
from agentlog.tokens import context_tokens, count_tokens
from stub_openai import Stream, StubOpenAI, text_events

AGENT_LOOP_TESTS = Path(__file__).resolve().parent / "test_agent_loop.py"


def shape(session) -> list[str]:
    return [f"{e.kind}/{e.role}" for e in session.path()]


def read_tool(log: list[str] | None = None) -> Tool:
    def read(path: str) -> str:
        if log is not None:
            log.append(path)
        return f"contents of {path}\n" + "line of code\n" * 200

    return Tool("read", read, "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


# --- auto-compaction inside one long turn -------------------------------------------------


def test_the_agent_compacts_inside_one_long_turn(store):
    """A coding agent's turn is one request and many tool steps. The current
    turn was always kept whole, so compaction wrote nothing and every request
    grew past the context window (a real provider then refuses it)."""
    steps = [ToolUse("read", {"path": f"src/f{i}.py"}) for i in range(24)]
    model = ScriptedModel([*steps, "All files read."], context_window=8000)
    with store.create() as s:
        s.compaction.keep_tokens = 2000
        agent = Agent(s, model, tools=[read_tool()], limits=Limits(max_iterations=40))
        result = agent.run("Read every file under src/ and report what they do.")
        assert result.stopped == "done" and result.compactions >= 1
        biggest = max(count_tokens(messages) for messages, _ in model.requests)
        assert biggest < model.context_window  # every request fit the window
        compaction = s.resolve(next(e for e in reversed(s.path()) if e.kind == "compaction"))
        # the request is quoted, not lost with the summarized part of its turn
        assert "Read every file under src/ and report what they do." in compaction.record["summary"]
        check_messages(s.to_chat_messages(system="sys"))  # pairs intact after a mid-turn cut
        assert s.context()[1].role == "assistant"  # the cut fell on an assistant step


def test_manual_compact_still_keeps_the_current_turn_whole(store):
    """Session.compact() keeps its documented default; splitting is opt-in."""
    with store.create() as s:
        s.append("message", {"content": "one question"}, role="user")
        for i in range(3):
            s.append_many(
                [
                    ("message", {"content": f"step {i}"}, "assistant"),
                    ("tool_call", {"id": f"c{i}", "name": "read", "arguments": "{}"}, "assistant"),
                ]
            )
            s.append("tool_result", {"tool_call_id": f"c{i}", "name": "read", "content": "x" * 400, "is_error": False})
        assert s.compact(keep_tokens=10) is None


# --- token counting without reported usage ------------------------------------------------


def test_context_tokens_estimates_when_no_usage_was_reported(store):
    """A server that reports no usage leaves zeros in the record; those are no
    report, so the context is estimated (it counted as 0 before)."""
    with store.create() as s:
        for _ in range(5):
            s.append("message", {"content": "a question " * 40}, role="user")
            s.append("message", {"content": "an answer " * 40, "usage": Completion("").usage.to_dict()}, "assistant")
        events = s.context(resolve=True)
        assert context_tokens(events) >= 5 * 2 * 100


def test_the_agent_compacts_against_a_server_that_reports_no_usage(tmp_path):
    """Through the OpenAI-compatible client and a loopback stub whose streams
    carry no usage chunk: the estimate drives the automatic policy."""
    replies = [Stream(text_events("word " * 300, usage=None)) for _ in range(8)]
    store = Store(tmp_path / "home")
    with StubOpenAI(replies) as stub:
        model = OpenAICompatModel(stub.url, model="stub", timeout=5.0, context_window=2000)
        with store.create() as s:
            s.compaction.keep_tokens = 300
            agent = Agent(s, model)
            compactions = sum(agent.run("tell me more " * 40).compactions for _ in range(8))
            assert compactions >= 1
            assert s.context()[0].kind == "compaction"


# --- the tool batch ---------------------------------------------------------------------


def test_a_tool_returning_something_json_cannot_hold_is_an_error_result(store):
    """It raised TypeError out of the loop, leaving the calls unanswered and
    losing the other tools' results."""
    model = ScriptedModel([Turn(tool_calls=[ToolUse("now"), ToolUse("ok")]), "done"])
    tools = [Tool("now", lambda: {"at": datetime.datetime.now()}), Tool("ok", lambda: "fine")]
    with store.create() as s:
        assert Agent(s, model, tools=tools).run("what time is it?").text == "done"
        results = [e.record for e in s.path() if e.kind == "tool_result"]
        assert [r["is_error"] for r in results] == [True, False]
        assert "not JSON" in results[0]["content"] and results[1]["content"] == "fine"


def test_an_interrupted_tool_batch_keeps_the_results_of_the_tools_that_finished(store):
    """KeyboardInterrupt in the second tool: the first one ran (its effect
    happened), so its result must be durable, not reported as interrupted."""
    ran: list[str] = []

    def ok() -> str:
        ran.append("ok")
        return "written"

    def interrupt() -> str:
        raise KeyboardInterrupt

    model = ScriptedModel([Turn(tool_calls=[ToolUse("ok"), ToolUse("interrupt")]), "after"])
    with store.create() as s:
        agent = Agent(s, model, tools=[Tool("ok", ok), Tool("interrupt", interrupt)])
        with pytest.raises(KeyboardInterrupt):
            agent.run("go")
        assert ran == ["ok"]
        results = [e.record for e in s.path() if e.kind == "tool_result"]
        assert [(r["name"], r["content"]) for r in results] == [("ok", "written")]
        assert shape(s)[-1] == "state/system"  # the state rode in the same batch
        assert s.state().tool_calls == agent.state.tool_calls == 2
        agent.resume()
        sent = model.requests[-1][0]
        assert [m.get("content") for m in sent if m["role"] == "tool"][0] == "written"
        check_messages(sent)


# --- resuming an interrupted turn -----------------------------------------------------------


def test_resume_finishes_a_turn_without_a_second_user_message(store):
    """docs/agent.md: after an interrupted response the turn can be retried.
    run() could only retry by storing the user's words a second time."""
    with store.create() as s:
        with pytest.raises(ModelError):
            Agent(s, ScriptedModel([Turn(text="half", fail_after=1)])).run("the question")
        model = ScriptedModel(["the whole answer"])
        result = Agent(s, model).resume()
        assert result.text == "the whole answer"
        assert shape(s) == ["message/user", "message/assistant", "state/system"]
        assert [m["content"] for m in model.requests[0][0]] == ["the question"]
        # Nothing is owed any more: nothing is called or written.
        n = len(s)
        idle = ScriptedModel([])
        assert Agent(s, idle).resume().events == [] and len(s) == n and idle.requests == []


def test_resume_after_a_crash_while_tools_ran(store):
    """Calls without results at HEAD: the model is told they were interrupted."""
    with store.create() as s:
        s.append("message", {"content": "build it"}, role="user")
        s.save_turn(
            [
                ("message", {"content": None}, "assistant"),
                ("tool_call", {"id": "k1", "name": "slow", "arguments": "{}"}, "assistant"),
            ],
            {"scratchpad": "", "todos": [], "tool_calls": 1, "usage": {}},
        )
        model = ScriptedModel(["It was interrupted; I will retry later."])
        agent = Agent(s, model)
        assert agent.resume().stopped == "done"
        check_messages(model.requests[0][0])
        assert agent.state.tool_calls == 1  # the checkpoint was restored


def test_resume_after_sigkill_during_generation(tmp_path):
    """A real writer killed mid-stream (the blocking child of the agent-loop
    tests), then a new process resumes the turn from the durable user message."""
    home = tmp_path / "home"
    child = subprocess.Popen(
        [sys.executable, str(AGENT_LOOP_TESTS), "block", str(home), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = child.stdout.readline()
        # A child that failed to start says why on stderr (read once it has ended).
        assert first.startswith("SESSION "), first or child.communicate()[1]
        sid = first.split()[1]
        assert child.stdout.readline().strip() == "GENERATING"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    with Store(home).continue_session(str(tmp_path)) as s:
        assert s.id == sid
        model = ScriptedModel(["Remembered."])
        assert Agent(s, model).resume().text == "Remembered."
        assert shape(s) == ["message/user", "message/assistant", "state/system"]
        assert [m["role"] for m in model.requests[0][0]] == ["user"]


# --- summarizers that fail or answer junk ---------------------------------------------------


class Answers:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def complete(self, messages):
        return self.answer


def long_session(store):
    s = store.create()
    for i in range(6):
        s.append("message", {"content": f"question {i} " * 30}, role="user")
        s.append("message", {"content": f"answer {i} " * 30}, role="assistant")
    return s


@pytest.mark.parametrize("answer", ["{}", '{"goal": "", "constraints": []}', '```json\n{"next_steps": []}\n```'])
def test_an_llm_summary_that_says_nothing_writes_nothing(store, answer):
    """An empty summary replaced the compacted events with nothing: the model
    silently lost them from its context."""
    with long_session(store) as s:
        n = len(s)
        with pytest.raises(SummarizerError):
            s.compact(LLMSummarizer(Answers(answer)), keep_tokens=50)
        assert len(s) == n
        assert s.compact(keep_tokens=50) is not None  # a retry with a working summarizer


def test_a_plug_in_summary_must_be_an_object_and_say_something(store):
    class NotAnObject:
        def summarize(self, events, previous):
            return Summary("text", "not an object")  # type: ignore[arg-type]

    class Empty:
        def summarize(self, events, previous):
            return Summary("  ")

    with long_session(store) as s:
        n = len(s)
        for bad in (NotAnObject(), Empty()):
            with pytest.raises(SummarizerError):
                s.compact(bad, keep_tokens=50)
        assert len(s) == n


def test_the_extractive_summary_is_never_empty_when_the_events_say_something(store):
    with store.create() as s:
        for _ in range(5):
            s.append("message", {"content": "ok " * 60}, role="assistant")
        c = s.compact(keep_tokens=10)
        assert c is not None and "ok ok" in c.record["summary"]
    assert ExtractiveSummarizer().summarize([], None).text == ""  # nothing in, nothing out


# --- sync() and the provider views -----------------------------------------------------------


@pytest.mark.parametrize("item", [42, "hello", None, ["role", "user"]])
def test_sync_refuses_a_list_item_that_is_not_a_message_with_a_typed_error(store, item):
    with store.create() as s:
        s.sync([{"role": "user", "content": "hi"}])
        n = len(s)
        with pytest.raises(InvalidEvent):
            s.sync([{"role": "user", "content": "hi"}, item])
        assert len(s) == n


def test_the_chat_view_is_valid_with_head_between_a_message_and_its_calls(store):
    """A checkout onto a tool-only assistant message (content null) left a
    message with neither content nor calls, which providers reject."""
    with store.create() as s:
        s.append("message", {"content": "go"}, role="user")
        step = s.append_many(
            [
                ("message", {"content": None}, "assistant"),
                ("tool_call", {"id": "x1", "name": "t", "arguments": "{}"}, "assistant"),
            ]
        )
        s.checkout(step[0].id)
        messages = s.to_chat_messages()
        check_messages(messages)
        assert messages[-1] == {"role": "assistant", "content": ""}
        model = ScriptedModel(["continuing"])
        Agent(s, model).run("and now?")  # the strict model validates the request
        assert s.to_responses_input()[1] == {"type": "message", "role": "assistant", "content": ""}


# --- the live hub ----------------------------------------------------------------------------


def test_a_compaction_by_the_loop_reaches_subscribers_and_the_result(store):
    """Every settled event goes to the hub (docs/agent.md); compactions did not."""
    hub = LiveHub()
    with store.create() as s:
        s.compaction.keep_tokens = 50
        for i in range(4):
            s.append("message", {"content": f"question {i} " * 30}, role="user")
            s.append("message", {"content": f"answer {i} " * 30}, role="assistant")
        sub = hub.subscribe(s.id)
        result = Agent(s, ScriptedModel(["fine"], context_window=400), hub=hub).run("more")
        hub.close(s.id)
        received = [i for i in sub if isinstance(i, Event)]
        assert result.compactions == 1
        # the loop compacts before the request that would pass the window (tests/test_qa_agent.py)
        assert [e.kind for e in result.events][1] == "compaction"
        assert [e.id for e in received] == [e.id for e in result.events]


def test_a_mid_turn_cut_quotes_the_request_when_the_goal_is_another(store):
    """After an earlier turn set the goal, a long second turn is cut inside:
    its request must survive in the summary, not only the older goal."""
    steps = [ToolUse("read", {"path": f"lib/m{i}.py"}) for i in range(20)]
    model = ScriptedModel(["Project set up.", *steps, "Read them all."], context_window=8000)
    with store.create() as s:
        s.compaction.keep_tokens = 2000
        agent = Agent(s, model, tools=[read_tool()], limits=Limits(max_iterations=40))
        agent.run("Set up a Python project called lumen with a src layout and tests.")
        assert agent.run("Read each module in lib and list its public functions.").compactions >= 1
        summary = s.resolve(s.context()[0]).record["summary"]
        assert "lumen" in summary  # the goal is kept
        assert "Read each module in lib and list its public functions." in summary
