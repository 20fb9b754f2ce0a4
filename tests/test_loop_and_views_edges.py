"""Edges of the sessions layer and the agent loop, found by a harness
builder's QA: what the model is sent, what a resume does, and options that
must be refused before anything is written."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from agentlog import InvalidEvent, InvalidOption, Session, Store
from agentlog.agent import Agent, Completion, Limits, ScriptedModel, Tool
from agentlog.agent.models import StreamItem, check_messages
from agentlog.tokens import Usage


def _user(text: str) -> tuple[str, dict[str, Any], str]:
    return ("message", {"content": text}, "user")


# --- Limits and tools are checked before the user's message is written -------------------


@pytest.mark.parametrize(
    "options",
    [
        {"max_iterations": "3"},
        {"max_iterations": 0},
        {"max_iterations": -1},
        {"max_iterations": True},
        {"max_iterations": 2.5},
        {"max_tool_calls": -2},
        {"max_tool_calls": "5"},
        {"max_cost_usd": "x"},
        {"max_cost_usd": -0.5},
        {"max_cost_usd": math.nan},
        {"max_cost_usd": math.inf},
        {"max_cost_usd": False},
    ],
)
def test_limits_out_of_range_are_invalid_options(options: dict[str, Any]) -> None:
    # Before: a TypeError (or a run that never stops) after run() had
    # written the user's message.
    with pytest.raises(InvalidOption):
        Limits(**options)


def test_limits_in_range_are_accepted() -> None:
    Limits(max_iterations=1, max_tool_calls=0, max_cost_usd=0)
    Limits(max_tool_calls=None, max_cost_usd=2.5)


def test_an_agent_refuses_two_tools_of_one_name_and_a_limits_of_another_type() -> None:
    session = Store.memory().create()
    model = ScriptedModel(["hi"])
    with pytest.raises(InvalidOption, match="'read'"):
        Agent(session, model, tools=[Tool("read", str), Tool("read", repr)])
    with pytest.raises(InvalidOption, match="Limits"):
        Agent(session, model, limits={"max_iterations": 2})  # type: ignore[arg-type]
    assert len(session) == 0


# --- resume() after summarize_branch() --------------------------------------------------


def test_resume_regenerates_after_a_branch_summary_of_the_answer(store: Store) -> None:
    """select(question), summarize_branch() so the model knows what was
    tried, resume(): the question is still owed an answer. Before, the
    branch summary counted as the conversation's end and nothing ran."""
    with store.create() as session:
        agent = Agent(session, ScriptedModel(["first answer", "second answer"]))
        question = agent.run("question").events[0]
        session.select(question.id)
        summary = session.summarize_branch()
        assert summary is not None and summary.parent_id == question.id
        result = agent.resume()
        assert result.text == "second answer"
        assert [e.kind for e in session.path()][-4:] == ["message", "branch_summary", "message", "state"]


def test_resume_looks_past_a_system_message_but_not_past_an_answer(store: Store) -> None:
    with store.create() as session:
        session.append_many([_user("q"), ("message", {"content": "reminder: be brief"}, "system")])
        assert Agent(session, ScriptedModel(["a"])).resume().text == "a"
        session.append("message", {"content": "note"}, role="developer")
        nothing = Agent(session, ScriptedModel([])).resume()
        assert nothing.events == [] and nothing.text == ""


def test_a_branch_summary_after_an_answer_owes_nothing(store: Store) -> None:
    with store.create() as session:
        agent = Agent(session, ScriptedModel(["one", "two"]))
        answer = agent.run("q").events[-1]
        agent.run("again")
        session.select(answer.id)
        assert session.summarize_branch() is not None
        assert agent.resume().events == []


# --- the OpenAI views send text where the APIs take only text ----------------------------


def _odd_json_session() -> Session:
    session = Store.memory().create()
    session.append_many(
        [
            ("message", {"content": {"question": "q"}}, "user"),
            ("message", {"content": None}, "assistant"),
            ("tool_call", {"id": "a", "name": "n", "arguments": {"x": 1}}, "assistant"),
            ("tool_result", {"tool_call_id": "a", "content": {"k": 1}}, "tool"),
            ("message", {"content": 42}, "assistant"),
        ]
    )
    return session


def test_chat_view_sends_objects_stored_by_a_plain_append_as_json_text() -> None:
    messages = _odd_json_session().to_chat_messages()
    check_messages(messages)
    assert messages[0]["content"] == '{"question": "q"}'
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"x": 1}'
    assert messages[2] == {"role": "tool", "tool_call_id": "a", "content": '{"k": 1}'}
    assert messages[3]["content"] == "42"


def test_responses_view_sends_objects_stored_by_a_plain_append_as_json_text() -> None:
    items = _odd_json_session().to_responses_input()
    assert items[0] == {"type": "message", "role": "user", "content": '{"question": "q"}'}
    assert items[1]["arguments"] == '{"x": 1}'
    assert items[2]["output"] == '{"k": 1}'
    assert items[3] == {"type": "message", "role": "assistant", "content": "42"}


def test_sync_matches_arguments_stored_as_an_object() -> None:
    """chat_messages_to_drafts stores object arguments as JSON text; the
    faithful view now renders a stored object the same way, so a harness
    whose list holds the object is a prefix match, not a ContextMismatch."""
    session = Store.memory().create()
    call = {"id": "a", "type": "function", "function": {"name": "n", "arguments": {"x": 1}}}
    listed = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
    ]
    session.append_many(
        [
            _user("q"),
            ("message", {"content": None}, "assistant"),
            ("tool_call", {"id": "a", "name": "n", "arguments": {"x": 1}}, "assistant"),
            ("tool_result", {"tool_call_id": "a", "name": "n", "content": "r", "is_error": False}, "tool"),
        ]
    )
    assert session.sync([*listed, {"role": "user", "content": "next"}])[0].record["content"] == "next"


def test_a_summary_of_null_is_no_text_not_none() -> None:
    session = Store.memory().create()
    session.append_many(
        [
            _user("q"),
            ("message", {"content": "a"}, "assistant"),
            ("branch_summary", {"summary": None}, "system"),
        ]
    )
    last = session.to_chat_messages()[-1]["content"]
    assert not last.endswith("None") and last.endswith("(its changes may not apply here):\n")


# --- a record no provider takes is named with its event -----------------------------------


def test_a_message_of_a_role_no_provider_takes_is_named_with_its_id() -> None:
    session = Store.memory().create()
    session.append("message", {"content": "q"}, role="user")
    bad = session.append("message", {"content": "x"}, role="tool")
    for view in (session.to_chat_messages, session.to_responses_input, session.to_anthropic_input):
        with pytest.raises(InvalidEvent, match=bad.id):
            view()
    session.select(bad.parent_id)  # the way around it the error names
    assert session.to_chat_messages() == [{"role": "user", "content": "q"}]


def test_a_tool_call_without_a_string_id_is_named_with_its_id() -> None:
    session = Store.memory().create()
    session.append("message", {"content": "q"}, role="user")
    bad = session.append("tool_call", {"id": 5, "name": "n", "arguments": "{}"}, role="assistant")
    with pytest.raises(InvalidEvent, match=bad.id):
        session.to_chat_messages()


# --- usage a model reports: a NaN cost must not switch the budget off ---------------------


class _CostModel:
    """Replies "ok", reporting the given costs in turn."""

    name = "costs"
    context_window = 0

    def __init__(self, costs: list[Any]) -> None:
        self.costs = costs

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Iterator[StreamItem]:
        cost = self.costs.pop(0)
        yield Completion(content="ok", usage=Usage(10, 1, 11, cost), model=self.name)


def test_a_nan_cost_is_unknown_and_the_budget_still_stops_the_session(store: Store) -> None:
    with store.create() as session:
        agent = Agent(session, _CostModel([math.nan, 1.0, 1.0, 1.0]), limits=Limits(max_cost_usd=1.5))
        agent.run("one")
        agent.run("two")
        assert agent.state.usage.cost_usd == 1.0 and agent.state.usage.calls == 2
        agent.run("three")
        stopped = agent.run("four")
        # Before: NaN + 1.0 is NaN, NaN >= 1.5 is False, and it never stopped.
        assert stopped.stopped == "budget"
        assert session.state().usage.cost_usd == 2.0


def test_usage_numbers_a_model_reports_badly_never_lose_its_reply(store: Store) -> None:
    with store.create() as session:
        model = _CostModel([None])
        bad = Usage("many", math.nan, 0, None)  # type: ignore[arg-type]
        model.stream = lambda messages, tools=None: iter([Completion(content="kept", usage=bad)])  # type: ignore[method-assign]
        result = Agent(session, model).run("q")
        assert result.text == "kept"
        assert [e.kind for e in session.path()] == ["message", "message", "state"]
        assert json.loads(json.dumps(session.state().usage.to_record()))["calls"] == 1


# --- Responses images carry the detail the API's own type requires ----------------------------

PNG_URL = "data:image/png;base64,iVBORw0KGgo="


def test_responses_images_carry_detail_and_pass_the_openai_sdk_types() -> None:
    pytest.importorskip("openai")
    from openai.types.responses.easy_input_message_param import EasyInputMessageParam
    from pydantic import TypeAdapter

    session = Store.memory().create()
    session.append_many(
        [
            ("message", {"content": [{"type": "text", "text": "look"}, _chat_image()]}, "user"),
            ("message", {"content": [{"type": "input_image", "image_url": PNG_URL}]}, "user"),  # Agents SDK's
            ("message", {"content": [{"type": "image_url", "image_url": {"url": PNG_URL, "detail": "low"}}]}, "user"),
        ]
    )
    items = session.to_responses_input(system="S")
    adapter = TypeAdapter(EasyInputMessageParam)
    for item in items:
        adapter.validate_python(item, strict=True)  # before: "detail: Field required"
    assert [item["content"][-1]["detail"] for item in items[1:]] == ["auto", "auto", "low"]


def _chat_image() -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": PNG_URL}}
