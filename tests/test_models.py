"""The model interface, its contract helpers, and ScriptedModel."""

from __future__ import annotations

import json

import pytest

from agentlog import ModelError, Store
from agentlog.agent import (
    Completion,
    Delta,
    Model,
    ScriptedModel,
    ToolCall,
    ToolUse,
    Turn,
    Usage,
    check_messages,
    checked_stream,
    complete,
    estimate_request_tokens,
)

USER = [{"role": "user", "content": "List the files, please."}]


def play(model, messages=USER, tools=None) -> tuple[list[Delta], Completion]:
    items = list(checked_stream(model, messages, tools))
    return items[:-1], items[-1]


# --- ScriptedModel --------------------------------------------------------------


def test_scripted_is_a_model():
    assert isinstance(ScriptedModel([]), Model)


def test_text_streams_word_by_word():
    model = ScriptedModel(["The answer is forty two."])
    deltas, done = play(model)
    assert [d.text for d in deltas] == ["The ", "answer ", "is ", "forty ", "two."]
    assert done.content == "The answer is forty two."
    assert done.finish_reason == "stop"
    assert done.tool_calls == []
    assert done.model == "scripted"


def test_usage_is_deterministic():
    first = complete(ScriptedModel(["one two three"]), USER)
    second = complete(ScriptedModel(["one two three"]), USER)
    assert first.usage == second.usage
    assert first.usage.input_tokens == estimate_request_tokens(USER) > 0
    assert first.usage.output_tokens == 3
    assert first.usage.total_tokens == first.usage.input_tokens + 3
    assert first.usage.cost_usd is None
    longer = complete(ScriptedModel(["x"]), USER + [{"role": "user", "content": "more " * 50}])
    assert longer.usage.input_tokens > first.usage.input_tokens


def test_price_gives_a_cost():
    done = complete(ScriptedModel(["a b"], price_per_token=(1e-6, 2e-6)), USER)
    assert done.usage.cost_usd == pytest.approx(done.usage.input_tokens * 1e-6 + 2 * 2e-6)


def test_tool_call_turn_streams_arguments_in_fragments():
    model = ScriptedModel([ToolUse("list_dir", {"path": ".", "all": True})])
    deltas, done = play(model)
    assert done.finish_reason == "tool_calls"
    assert done.content == ""
    assert done.tool_calls == [ToolCall("call_1_0", "list_dir", '{"all": true, "path": "."}')]
    pieces = [d.tool_call_delta for d in deltas]
    assert pieces[0].id == "call_1_0" and pieces[0].name == "list_dir"
    assert len(pieces) > 2  # the arguments came in several fragments
    assert "".join(p.arguments for p in pieces) == done.tool_calls[0].arguments


def test_turn_with_text_reasoning_and_two_calls():
    turn = Turn(
        text="Checking.",
        reasoning="Need both files.",
        tool_calls=[ToolUse("read", {"p": "a"}), ToolUse("read", {"p": "b"}, id="mine")],
    )
    deltas, done = play(ScriptedModel([turn]))
    assert "".join(d.reasoning for d in deltas) == "Need both files."
    assert deltas[0].reasoning  # reasoning streams before the answer
    assert done.reasoning == "Need both files."
    assert [(c.id, c.parsed_arguments()) for c in done.tool_calls] == [
        ("call_1_0", {"p": "a"}),
        ("mine", {"p": "b"}),
    ]
    assert done.raw["choices"][0]["message"]["reasoning_content"] == "Need both files."


def test_callable_turn_reacts_to_the_prompt():
    def echo(messages):
        return f"You said: {messages[-1]['content']}"

    model = ScriptedModel([echo])
    assert complete(model, USER).content == "You said: List the files, please."


def test_callable_that_fails_is_a_model_error():
    def broken(messages):
        raise KeyError("oops")

    with pytest.raises(ModelError, match="turn 1 raised KeyError"):
        ScriptedModel([broken]).stream(USER)


def test_bad_script_entry():
    with pytest.raises(ModelError, match="turn 1 is a int"):
        ScriptedModel([42]).stream(USER)


def test_exhausted_script_says_so():
    model = ScriptedModel(["only one"])
    complete(model, USER)
    assert model.remaining == 0
    with pytest.raises(ModelError, match=r"no turn left: its script of 1 turns was used up \(call 2\)"):
        complete(model, USER)


def test_requests_are_recorded_as_copies():
    model = ScriptedModel(["a", "b"])
    messages = list(USER)
    tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    complete(model, messages, tools)
    messages.append({"role": "assistant", "content": "a"})
    messages.append({"role": "user", "content": "again"})
    complete(model, messages)
    assert model.requests[0] == (USER, tools)
    assert len(model.requests[1][0]) == 3
    assert model.requests[1][1] is None


@pytest.mark.parametrize("after", [0, 2])
def test_injected_failure_interrupts_the_turn(after):
    model = ScriptedModel([Turn(text="one two three four", fail_after=after)])
    it = model.stream(USER)
    got = []
    with pytest.raises(ModelError, match=f"injected failure in turn 1 after {after} deltas"):
        for item in it:
            got.append(item)
    assert len(got) == after
    assert not any(isinstance(i, Completion) for i in got)


def test_strict_model_refuses_what_a_provider_would():
    call = ToolUse("ls", {})
    model = ScriptedModel([call, "done"])
    first = complete(model, USER)
    unanswered = USER + [first.to_message()]
    with pytest.raises(ModelError, match="call_1_0 have no result"):
        model.stream(unanswered)
    assert model.remaining == 1  # a refused request does not use up a turn
    answered = unanswered + [{"role": "tool", "tool_call_id": "call_1_0", "content": "a.txt"}]
    assert complete(model, answered).content == "done"


def test_lenient_model_accepts_anything():
    assert complete(ScriptedModel(["ok"], strict=False), [{"role": "wizard"}]).content == "ok"


# --- check_messages -----------------------------------------------------------------

CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}


@pytest.mark.parametrize(
    "messages, fragment",
    [
        ([], "non-empty list"),
        ("hello", "non-empty list"),
        (["hello"], r"messages\[0\] is a str"),
        ([{"role": "robot", "content": "x"}], "has role 'robot'"),
        ([{"role": "user"}], r"messages\[0\] \(user\) has no content"),
        ([{"role": "user", "content": 5}], "content is a int"),
        (
            [{"role": "assistant", "content": None, "tool_calls": [CALL]}, {"role": "user", "content": "?"}],
            r"messages\[1\] \(user\) comes before the results",
        ),
        ([{"role": "tool", "tool_call_id": "zz", "content": "x"}], "'zz', which is not pending"),
        ([{"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}], r"tool_calls\[0\] needs id"),
        ([{"role": "assistant", "content": None, "tool_calls": [CALL, CALL]}], "repeats tool call id"),
        (
            [
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ],
            "not pending",
        ),
    ],
)
def test_check_messages_refuses(messages, fragment):
    with pytest.raises(ModelError, match=fragment):
        check_messages(messages)


def test_check_messages_accepts_a_full_exchange():
    check_messages(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
            {"role": "assistant", "content": "There is a.txt."},
        ]
    )


# --- Completion helpers -------------------------------------------------------------


def test_to_records_follows_the_record_conventions():
    done = complete(ScriptedModel([Turn(text="Look:", tool_calls=[ToolUse("ls", {"d": "/"})])]), USER)
    records = done.to_records()
    kind, message, role = records[0]
    assert (kind, role) == ("message", "assistant")
    assert message["content"] == "Look:"
    assert message["usage"] == done.usage.to_dict()
    assert message["model"] == "scripted"
    assert message["finish_reason"] == "tool_calls"
    assert message["provider"]["object"] == "chat.completion"
    assert "reasoning" not in message  # absent, not null, when the model had none
    assert records[1] == ("tool_call", {"id": "call_1_0", "name": "ls", "arguments": '{"d": "/"}'}, "assistant")
    assert "provider" not in done.to_records(raw=False)[0][1]


def test_records_round_trip_through_a_store(tmp_path):
    done = complete(ScriptedModel([Turn(text="t", reasoning="r", tool_calls=[ToolUse("x")])]), USER)
    store = Store(tmp_path)
    with store.create() as session:
        sid = session.id
        session.append("message", {"content": USER[0]["content"]}, "user")
        session.append_many(done.to_records())
    with store.open(sid, readonly=True) as session:
        stored = [(e.kind, e.record, e.role) for e in session.transcript()[1:]]
    assert stored == done.to_records()


def test_to_message_is_what_the_next_request_needs():
    tool_turn = complete(ScriptedModel([ToolUse("ls", {})]), USER)
    assert tool_turn.to_message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1_0", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
    }
    text_turn = complete(ScriptedModel([""]), USER)
    assert text_turn.to_message() == {"role": "assistant", "content": ""}


def test_bad_tool_arguments_surface_as_model_error():
    done = complete(ScriptedModel([ToolUse("ls", '{"path": ')]), USER)
    assert done.tool_calls[0].arguments == '{"path": '  # kept as sent
    with pytest.raises(ModelError, match=r"call_1_0 \(ls\) has arguments that are not JSON"):
        done.tool_calls[0].parsed_arguments()


def test_usage_to_dict_keeps_cost_only_when_known():
    assert Usage(1, 2, 3).to_dict() == {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    assert Usage(1, 2, 3, 0.5).to_dict()["cost_usd"] == 0.5


# --- checked_stream: the contract for models written elsewhere -----------------------


class Misbehaving:
    name = "bad"
    context_window = 100

    def __init__(self, items, error=None):
        self.items, self.error = items, error

    def stream(self, messages, tools=None):
        yield from self.items
        if self.error:
            raise self.error


SETTLED = Completion(content="x")


@pytest.mark.parametrize(
    "model, fragment",
    [
        (Misbehaving([Delta(text="a")], ValueError("boom")), "model 'bad' failed: ValueError: boom"),
        (Misbehaving([Delta(text="a")]), "ended its stream without a completion"),
        (Misbehaving([SETTLED, Delta(text="late")]), "after its completion"),
        (Misbehaving(["text"]), "streamed a str"),
    ],
)
def test_checked_stream_enforces_the_contract(model, fragment):
    with pytest.raises(ModelError, match=fragment):
        complete(model, USER)


def test_checked_stream_passes_model_errors_through():
    err = ModelError("rate limited")
    with pytest.raises(ModelError) as info:
        complete(Misbehaving([], err), USER)
    assert info.value is err


def test_estimate_request_tokens_counts_tools():
    tools = [{"type": "function", "function": {"name": "t" * 40}}]
    assert estimate_request_tokens(USER, tools) > estimate_request_tokens(USER)
    assert estimate_request_tokens(USER) == (len(json.dumps(USER, sort_keys=True)) + 3) // 4
