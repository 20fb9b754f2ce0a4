"""The reference agent loop and its durable contract (docs/agent.md).

1. The user's message is durable before generation starts.
2. The settled assistant message, its tool calls and the state are durable
   in one batch before any tool runs.
3. Tool results and the state are durable in one batch after each batch.
Deltas go to the live hub only, never to disk; limits come from the
current options, the counts they bound from the checkpoint.

Run as a script this file is the child of the kill test:

    python tests/test_agent_loop.py block HOME WORKDIR
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentlog import ModelError, Store
from agentlog.agent import Completion, Delta, LiveHub, OpenAICompatModel
from agentlog.agent.loop import Agent, Limits, Tool
from agentlog.agent.scripted import ScriptedModel, ToolUse, Turn
from agentlog.event import Event
from agentlog.state import Checkpoint
from stub_openai import Stream, StubOpenAI, chunk, text_events, usage_chunk

SELF = Path(__file__).resolve()


@pytest.fixture
def store(make_store):
    """Each backend of conftest.BACKENDS, with a larger blob threshold."""
    return make_store(blob_threshold=2048)


def kinds(session) -> list[str]:
    return [f"{e.kind}/{e.role}" for e in session.path()]


def calc_tools(log: list | None = None) -> list[Tool]:
    def add(a: int, b: int) -> str:
        if log is not None:
            log.append(("add", a, b))
        return str(a + b)

    def fail() -> str:
        raise RuntimeError("disk on fire")

    return [
        Tool(
            "add",
            add,
            "Add two numbers",
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        ),
        Tool("fail", fail),
    ]


# --- 1. the user's words are durable before generation --------------------------------


class BlockingModel:
    """Streams a few deltas, says so on stdout, then never finishes."""

    name = "blocking"
    context_window = 10_000

    def stream(self, messages, tools=None):
        yield Delta(text="partial ")
        yield Delta(text="answer that must never reach the disk")
        print("GENERATING", flush=True)
        time.sleep(3600)
        yield Completion(content="never")


def _block(home: str, workdir: str) -> None:
    store = Store(home)
    session = store.create(working_dir=workdir, lazy=True)  # even a lazy session
    print(f"SESSION {session.id}", flush=True)
    Agent(session, BlockingModel(), hub=LiveHub()).run("Please remember these words.")


def test_the_user_message_is_durable_before_generation(tmp_path):
    home = tmp_path / "home"
    child = subprocess.Popen(
        [sys.executable, str(SELF), "block", str(home), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = child.stdout.readline()
        # A child that failed to start says why on stderr (read once it has ended).
        assert first.startswith("SESSION "), first or child.communicate()[1]
        sid = first.split()[1]
        line = child.stdout.readline()
        assert line.strip() == "GENERATING", child.stderr.read() if child.poll() else line
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    store = Store(home)
    with store.continue_session(str(tmp_path)) as s:
        assert s.id == sid
        assert [(e.kind, e.role, e.record) for e in s.path()] == [
            ("message", "user", {"content": "Please remember these words."})
        ]
    chunks = b"".join(p.read_bytes() for p in (home / "sessions" / sid / "chunks").iterdir())
    assert b"must never reach" not in chunks and b"partial" not in chunks


# --- 2, 3. what is written after each step -----------------------------------------------


def test_a_turn_writes_settled_messages_tool_batches_and_state(store):
    with store.create() as s:
        model = ScriptedModel(
            [
                ToolUse("add", {"a": 1, "b": 2}),
                Turn(text="two more", tool_calls=[ToolUse("add", {"a": 3, "b": 4}), ToolUse("add", {"a": 5, "b": 6})]),
                "The sums are 3, 7 and 11.",
            ]
        )
        result = Agent(s, model, tools=calc_tools(), system="Be exact.").run("Add things.")
        assert (result.text, result.stopped) == ("The sums are 3, 7 and 11.", "done")
        assert kinds(s) == [
            "message/user",
            "message/assistant",
            "tool_call/assistant",
            "state/system",
            "tool_result/tool",
            "state/system",
            "message/assistant",
            "tool_call/assistant",
            "tool_call/assistant",
            "state/system",
            "tool_result/tool",  # each result saved as its tool returns, with the state it moved
            "state/system",
            "tool_result/tool",
            "state/system",
            "message/assistant",
            "state/system",
        ]
        assert [e.id for e in result.events] == [e.id for e in s.path()]
        results = [e.record for e in s.path() if e.kind == "tool_result"]
        assert [(r["content"], r["is_error"]) for r in results] == [("3", False), ("7", False), ("11", False)]
        first = s.path()[1].record
        assert first["usage"]["input_tokens"] > 0 and first["model"] == "scripted"
        assert first["finish_reason"] == "tool_calls"
        assert first["provider"]["object"] == "chat.completion"  # kept, not stripped
        state = s.state()
        assert (state.tool_calls, state.usage.calls) == (3, 3)
        # The model saw the system prompt, which is not an event.
        assert model.requests[0][0][0] == {"role": "system", "content": "Be exact."}
        assert all(e.kind != "message" or e.role != "system" for e in s.path())


def test_each_write_is_durable_before_the_next_step(tmp_path):
    """A reader opened from disk while a tool runs sees the call and the state,
    and while the model generates, sees the user's message."""
    store = Store(tmp_path / "home")
    seen = {}
    with store.create() as s:

        def on_disk() -> list[str]:
            with store.open(s.id, readonly=True) as reader:
                return [e.kind for e in reader.path()]

        def model_step(messages):
            seen.setdefault("generating", on_disk())
            return ToolUse("probe", {})

        def probe() -> str:
            seen["tool"] = on_disk()
            return "ok"

        Agent(s, ScriptedModel([model_step, "done"]), tools=[Tool("probe", probe)]).run("go")
    assert seen["generating"] == ["message"]
    assert seen["tool"] == ["message", "message", "tool_call", "state"]


def test_deltas_go_to_the_hub_never_to_disk(store):
    hub = LiveHub()
    with store.create() as s:
        sub = hub.subscribe(s.id)
        model = ScriptedModel(
            [
                Turn(
                    text="thinking aloud in many words",
                    reasoning="secret chain of thought",
                    tool_calls=[ToolUse("add", {"a": 1, "b": 1})],
                ),
                "two",
            ]
        )
        Agent(s, model, tools=calc_tools(), hub=hub).run("1+1?")
        items = []
        while (item := sub.poll(0)) is not None:
            items.append(item)
        deltas = [i for i in items if isinstance(i, Delta)]
        events = [i for i in items if isinstance(i, Event)]
        assert len(deltas) > 5 and all(isinstance(i, (Delta, Event)) for i in items)
        assert "".join(d.reasoning for d in deltas) == "secret chain of thought"
        assert [e.id for e in events] == [e.id for e in s.path()]  # settled events, in order
        assert {e.kind for e in s.path()} == {"message", "tool_call", "tool_result", "state"}
        assert len(s) == len(events)
        assert s.path()[1].record["reasoning"] == "secret chain of thought"  # settled, kept


# --- limits from the current options ---------------------------------------------------------


def test_tool_call_limit_comes_from_the_options_and_the_count_from_the_checkpoint(store):
    log = []
    with store.create() as s:
        Agent(s, ScriptedModel([ToolUse("add", {"a": 1, "b": 1}), "2"]), tools=calc_tools(log)).run("one call")
        assert s.state().tool_calls == 1
    with store.open(s.id) as s:  # a restart: the count is restored, the limit is new
        agent = Agent(
            s,
            ScriptedModel([ToolUse("add", {"a": 2, "b": 2}), "refused"]),
            tools=calc_tools(log),
            limits=Limits(max_tool_calls=1),
        )
        assert agent.state.tool_calls == 1
        agent.run("another")
        refused = [e for e in s.path() if e.kind == "tool_result"][-1].record
        assert refused["is_error"] and "limit of 1" in refused["content"]
        assert log == [("add", 1, 1)] and s.state().tool_calls == 1
        Agent(
            s,
            ScriptedModel([ToolUse("add", {"a": 3, "b": 3}), "6"]),
            tools=calc_tools(log),
            limits=Limits(max_tool_calls=5),
        ).run("raised limit")
        assert log[-1] == ("add", 3, 3) and s.state().tool_calls == 2


def test_spend_limit_survives_a_restart(store):
    with store.create() as s:
        model = ScriptedModel(["first answer"] * 3, price_per_token=(0.001, 0.001))
        Agent(s, model, limits=Limits(max_cost_usd=10.0)).run("spend a little")
        spent = s.state().usage.cost_usd
        assert spent > 0
    with store.open(s.id) as s:
        model = ScriptedModel(["never asked"], price_per_token=(0.001, 0.001))
        result = Agent(s, model, limits=Limits(max_cost_usd=spent)).run("more")
        assert result.stopped == "budget"
        assert model.requests == []  # over budget: the model is not called at all
        assert s.path()[-1].record == {"content": "more"}  # the user's words are still kept
        result = Agent(s, model, limits=Limits(max_cost_usd=spent * 10)).run("raised")
        assert result.stopped == "done" and result.text == "never asked"


def test_max_iterations_per_turn(store):
    with store.create() as s:
        model = ScriptedModel([ToolUse("add", {"a": i, "b": 0}) for i in range(5)])
        result = Agent(s, model, tools=calc_tools(), limits=Limits(max_iterations=2)).run("loop")
        assert result.stopped == "max_iterations"
        assert len(model.requests) == 2 and model.remaining == 3
        assert s.state().usage.calls == 2 and s.state().tool_calls == 2


# --- failures ------------------------------------------------------------------------------


def test_tool_failures_are_results_for_the_model(store):
    with store.create() as s:
        model = ScriptedModel(
            [
                Turn(tool_calls=[ToolUse("fail"), ToolUse("nope"), ToolUse("add", "{not json")]),
                "I saw three errors.",
            ]
        )
        result = Agent(s, model, tools=calc_tools()).run("break things")
        assert result.text == "I saw three errors."
        errors = [e.record for e in s.path() if e.kind == "tool_result"]
        assert all(r["is_error"] for r in errors)
        assert "disk on fire" in errors[0]["content"]
        assert "unknown tool 'nope'" in errors[1]["content"]
        assert "not JSON" in errors[2]["content"]
        tool_msgs = [m for m in model.requests[1][0] if m["role"] == "tool"]
        assert len(tool_msgs) == 3


def test_a_model_failure_mid_stream_loses_only_the_response(store):
    hub = LiveHub()
    with store.create() as s:
        sub = hub.subscribe(s.id)
        before = s.state()
        with pytest.raises(ModelError):
            Agent(s, ScriptedModel([Turn(text="half of an answer", fail_after=2)]), hub=hub).run("question")
        assert kinds(s) == ["message/user"]
        assert s.state() == before
        assert any(isinstance(i, Delta) for i in iter(lambda: sub.poll(0), None))
        Agent(s, ScriptedModel(["whole answer"])).run("question again")
        assert kinds(s)[-2:] == ["message/assistant", "state/system"]


def test_the_checkpoint_follows_the_branch_the_agent_continues(store):
    """docs/agent.md: after a branch the state is the branch point's, so the
    counts on the new branch agree with its own messages."""
    with store.create() as s:
        agent = Agent(
            s,
            ScriptedModel(
                [
                    ToolUse("add", {"a": 1, "b": 1}),
                    "2",
                    ToolUse("add", {"a": 2, "b": 2}),
                    "4",
                    ToolUse("add", {"a": 3, "b": 3}),
                    "6",
                    ToolUse("add", {"a": 4, "b": 4}),
                    "8",
                ]
            ),
            tools=calc_tools(),
        )
        agent.run("first")
        branch_point = s.head
        agent.run("second")
        assert s.state().tool_calls == 2
        s.select(branch_point)
        agent.run("second, differently")  # the same agent object continues the branch
        assert s.state().tool_calls == 2 and s.state().usage.calls == 4
        s.select(branch_point)
        fresh = Agent(s, agent.model, tools=calc_tools())  # a new one after select()
        fresh.run("third way")
        assert s.state().tool_calls == 2 and s.state().usage.calls == 4


def test_interrupted_tool_calls_are_answered_on_resume(store):
    """A crash while tools ran leaves calls without results; the next request
    answers them as interrupted, so the provider accepts it."""
    with store.create() as s:
        s.append("message", {"content": "build it"}, role="user")
        s.save_turn(
            [
                ("message", {"content": None}, "assistant"),
                ("tool_call", {"id": "c9", "name": "slow", "arguments": "{}"}, "assistant"),
            ],
            Checkpoint(),
        )
        model = ScriptedModel(["The build was interrupted; retrying later."])
        Agent(s, model).run("what happened?")
        sent = model.requests[0][0]
        assert sent[2]["role"] == "tool" and "interrupted" in sent[2]["content"]


# --- against an OpenAI-compatible server ---------------------------------------------------


def tool_call_events():
    return [
        chunk({"role": "assistant", "content": "Let me add."}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": ""}}
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 2, '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"b": 40}'}}]}),
        chunk({}, "tool_calls"),
        usage_chunk(20, 9),
    ]


def test_stub_server_streams_to_two_subscribers_and_persists_only_settled_events(tmp_path):
    store = Store(tmp_path / "home")
    hub = LiveHub()
    with StubOpenAI(
        [Stream(tool_call_events()), Stream(text_events("The ", "answer ", "is ", "42.", usage=(40, 4)))]
    ) as stub:
        model = OpenAICompatModel(stub.url, model="stub-model", timeout=5.0, context_window=100_000)
        with store.create() as s:
            subs = [hub.subscribe(s.id), hub.subscribe(s.id)]
            result = Agent(s, model, tools=calc_tools(), hub=hub).run("What is 2 + 40?")
            hub.close(s.id)
            received = [list(sub) for sub in subs]
            path = s.path()
    assert result.text == "The answer is 42."
    assert received[0] == received[1]  # both subscribers got everything, in order
    deltas = [i for i in received[0] if isinstance(i, Delta)]
    events = [i for i in received[0] if isinstance(i, Event)]
    assert "".join(d.text for d in deltas) == "Let me add.The answer is 42."
    assert any(d.tool_call_delta is not None for d in deltas)
    assert [e.id for e in events] == [e.id for e in path]
    assert [f"{e.kind}/{e.role}" for e in path] == [
        "message/user",
        "message/assistant",
        "tool_call/assistant",
        "state/system",
        "tool_result/tool",
        "state/system",
        "message/assistant",
        "state/system",
    ]
    call = path[2].record
    assert (call["id"], call["name"], json.loads(call["arguments"])) == ("call_1", "add", {"a": 2, "b": 40})
    assert path[4].record["content"] == "42"
    assert path[1].record["usage"]["total_tokens"] == 29
    # The second request carried the tool result back, paired with its call.
    sent = stub.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    raw = b"".join(p.read_bytes() for p in (Path(store.home) / "sessions" / s.id / "chunks").iterdir())
    assert b"chat.completion.chunk" not in raw  # no streamed chunk was ever written


if __name__ == "__main__":
    role, *rest = sys.argv[1:]
    {"block": _block}[role](*rest)
