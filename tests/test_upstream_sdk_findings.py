"""AgentlogSession on the SDK paths that the Agents SDK's own session tests reach.

An acceptance run of openai-agents' tests/memory suite with AgentlogSession in
place of SQLiteSession found no behaviour of the adapter that differs from
SQLiteSession 0.24.0. These tests pin the paths that run covered and the other
adapter tests do not: the runner's retry rewind, the compaction wrapper's
history replacement, approval resume, a guardrail tripwire, a run with a context,
and items read back being the caller's to change. Each one runs the same script
on SQLiteSession and on AgentlogSession and compares the results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any
from unittest.mock import AsyncMock, MagicMock

import pytest

from agentlog import Store

pytest.importorskip(
    "agents.memory", reason="LOUD SKIP: openai-agents is not installed (pip install agentlog[openai-agents])"
)
from agents import (  # noqa: E402
    Agent,
    GuardrailFunctionOutput,
    InputGuardrail,
    InputGuardrailTripwireTriggered,
    RunConfig,
    Runner,
    function_tool,
)
from agents.memory import OpenAIResponsesCompactionSession, SQLiteSession  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from agentlog.integrations.openai_agents import AgentlogSession  # noqa: E402

Script = Callable[[Any], Coroutine[Any, Any, Any]]
QUIET = RunConfig(tracing_disabled=True)


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Store:
    return Store(tmp_path / "home") if request.param == "files" else Store.memory()


def both(store: Store, script: Script) -> tuple[Any, Any]:
    """(SQLiteSession's result, AgentlogSession's result) of one script."""
    reference = SQLiteSession("findings")
    ours = AgentlogSession("findings", store=store)
    try:
        return asyncio.run(script(reference)), asyncio.run(script(ours))
    finally:
        reference.close()
        ours.close()
        store.close()


def test_the_runners_retry_rewind_leaves_the_history_sqlite_session_does(store: Store) -> None:
    session_persistence = pytest.importorskip("agents.run_internal.session_persistence")
    rewind = getattr(session_persistence, "rewind_session_items", None)
    if rewind is None:
        pytest.skip("LOUD SKIP: this openai-agents has no rewind_session_items")
    turn = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]

    async def script(session: Any) -> list[Any]:
        await session.add_items([{"role": "user", "content": "keep"}])
        await session.add_items(turn)
        await rewind(session, turn)  # the tail matches: both items go
        seen = [await session.get_items()]
        await session.add_items([{"role": "user", "content": "a"}])
        await rewind(session, [{"role": "user", "content": "not the tail"}])  # left alone
        seen.append(await session.get_items())
        return seen

    expected, got = both(store, script)
    assert got == expected
    assert got[0] == [{"role": "user", "content": "keep"}]


def test_a_compaction_replaces_the_history_as_on_sqlite_session(store: Store) -> None:
    history = [
        {"type": "message", "role": "user", "content": "hello"},
        {"type": "message", "role": "assistant", "content": "world"},
    ]
    compacted = [
        {"type": "message", "role": "user", "content": "hello"},
        {"type": "compaction", "encrypted_content": "opaque"},
    ]

    async def script(session: Any) -> list[Any]:
        await session.add_items(history)
        response = MagicMock()
        response.output = compacted
        client = MagicMock()
        client.responses.compact = AsyncMock(return_value=response)
        wrapper = OpenAIResponsesCompactionSession(
            session_id="c", underlying_session=session, client=client, compaction_mode="input"
        )
        await wrapper.run_compaction({"force": True})
        model = ScriptedModel([[assistant_message("next")]])
        await Runner.run(Agent(name="a", model=model), "next turn", session=wrapper, run_config=QUIET)
        return [
            client.responses.compact.call_args.kwargs.get("input"),
            model.calls[-1].input,
            await session.get_items(),
        ]

    expected, got = both(store, script)
    assert got == expected
    assert got[0] == history


def test_items_read_back_are_the_callers_to_change(store: Store) -> None:
    async def script(session: Any) -> list[Any]:
        await session.add_items(
            [
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "out"},
                {"type": "reasoning", "id": "r", "summary": []},
            ]
        )
        read = await session.get_items()
        read[0]["content"][0]["text"] = "changed"
        read[1]["name"] = "changed"
        read[2]["output"] = "changed"
        read[3]["summary"].append("changed")
        popped = await session.pop_item()
        popped["summary"].append("changed")
        return list(await session.get_items())

    expected, got = both(store, script)
    assert got == expected
    assert got[0]["content"][0]["text"] == "hi"


@dataclass
class Tenant:
    name: str


def test_approval_resume_guardrail_and_context_runs_persist_as_sqlite_session(store: Store) -> None:
    async def needs_ok() -> str:
        return "approved result"

    def tripwire(_ctx: Any, _agent: Any, _input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    async def script(session: Any) -> list[Any]:
        # a run with a context (the runner passes its wrapper to a session that takes one)
        model = ScriptedModel([[assistant_message("hello")]])
        await Runner.run(Agent(name="a", model=model), "hi", context=Tenant("t"), session=session, run_config=QUIET)
        # a tool that needs approval: the run stops, is approved, and resumes
        model = ScriptedModel([[function_call("needs_ok", "{}", call_id="call-1")], [assistant_message("done")]])
        agent = Agent(
            name="a", model=model, tools=[function_tool(needs_ok, name_override="needs_ok", needs_approval=True)]
        )
        first = await Runner.run(agent, "do it", session=session, run_config=QUIET)
        state = first.to_state()
        state.approve(first.interruptions[0])
        resumed = await Runner.run(agent, state, session=session, run_config=QUIET)
        # an input guardrail trips: the input is kept, no reply
        guarded = Agent(
            name="g",
            model=ScriptedModel([[assistant_message("never")]]),
            input_guardrails=[InputGuardrail(guardrail_function=tripwire)],
        )
        with pytest.raises(InputGuardrailTripwireTriggered):
            await Runner.run(guarded, "blocked", session=session, run_config=QUIET)
        return [resumed.final_output, await session.get_items()]

    expected, got = both(store, script)
    assert got == expected
    assert got[0] == "done"
    assert any(item.get("type") == "function_call_output" for item in got[1])
