"""AgentlogSession against the Agents SDK's own SQLiteSession: the same calls,
the same results; then what the timeline adds (history kept, branches, roots)."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
from typing import Any

import pytest

from agentlog import NIL_ID, InvalidEvent, SessionClosed, Store

agents_memory = pytest.importorskip(
    "agents.memory", reason="LOUD SKIP: openai-agents is not installed (pip install agentlog[openai-agents])"
)
from agents.memory import SessionSettings, SQLiteSession  # noqa: E402

from agentlog.integrations.openai_agents import AgentlogSession  # noqa: E402


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Store:
    return Store(tmp_path / "home") if request.param == "files" else Store.memory()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


BIG = "x" * 40_000  # above the blob threshold: the payload goes to a blob

ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Paris"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21C"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]},
    {"role": "user", "content": [{"type": "input_text", "text": BIG}]},
    {"type": "function_call_output", "call_id": "call_2", "output": BIG},
]


async def script(session: Any) -> list[Any]:
    """One sequence of calls; every observable result is collected."""
    seen: list[Any] = []
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    await session.add_items(ITEMS[:4])
    await session.add_items([])
    seen.append(await session.get_items())
    seen.append(await session.get_items(limit=2))
    seen.append(await session.get_items(limit=0))
    seen.append(await session.get_items(limit=-1))
    seen.append(await session.get_items(limit=100))
    seen.append(await session.pop_item())
    seen.append(await session.get_items())
    await session.add_items(ITEMS[4:])
    seen.append(await session.get_items(limit=3))
    seen.append(await session.pop_item())
    seen.append(await session.pop_item())
    await session.clear_session()
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    await session.add_items([ITEMS[0]])
    seen.append(await session.get_items())
    return seen


def test_same_results_as_sqlite_session(store: Store) -> None:
    reference = SQLiteSession("conv_1")
    ours = AgentlogSession("conv_1", store=store)
    try:
        expected = run(script(reference))
        got = run(script(ours))
    finally:
        reference.close()
        ours.close()
    assert got == expected
    assert got[2] == ITEMS[:4]  # and the same dicts as given


def test_session_settings_limit_is_honoured(store: Store) -> None:
    reference = SQLiteSession("s", session_settings=SessionSettings(limit=2))
    ours = AgentlogSession("s", store=store, session_settings=SessionSettings(limit=2))

    async def go(session: Any) -> list[Any]:
        await session.add_items(ITEMS[:4])
        return [await session.get_items(), await session.get_items(limit=3)]

    try:
        assert run(go(ours)) == run(go(reference))
        assert len(run(ours.get_items())) == 2
        as_dict = AgentlogSession("s", store=store, session_settings={"limit": 1})  # the SDK's dict form
        assert run(as_dict.get_items()) == ITEMS[3:4]
        as_dict.close()
    finally:
        reference.close()
        ours.close()


def test_history_stays_on_the_timeline(store: Store) -> None:
    ours = AgentlogSession("conv_2", store=store)

    async def go() -> None:
        await ours.add_items(ITEMS[:2])
        popped = await ours.pop_item()
        assert popped == ITEMS[1]
        await ours.add_items([{"role": "assistant", "content": "retry"}])
        await ours.clear_session()
        await ours.add_items([{"role": "user", "content": "fresh start"}])

    run(go())
    session = ours.session
    entries = session.entries()
    assert len(entries) == 4  # nothing was deleted
    first, popped, retry, fresh = entries
    assert popped.parent_id == first.id and retry.parent_id == first.id
    assert retry.branch_from == first.id  # the retry is a branch beside the popped item
    assert fresh.parent_id == NIL_ID  # clear_session started a new root
    assert session.event(popped.id).record == ITEMS[1]
    assert [e.kind for e in session.path()] == ["message"]
    ours.close()


def test_kinds_follow_the_record_conventions(store: Store) -> None:
    ours = AgentlogSession("conv_3", store=store)
    run(ours.add_items(ITEMS[:5]))
    path = ours.session.path()
    assert [(e.kind, e.role) for e in path] == [
        ("message", "user"),
        ("message", "assistant"),
        ("tool_call", "assistant"),
        ("tool_result", "tool"),
        ("custom", None),
    ]
    assert path[2].record["id"] == "call_1" and path[2].record["name"] == "weather"
    assert path[3].record["tool_call_id"] == "call_1" and path[3].record["content"] == "sunny, 21C"
    # agentlog's own provider view understands what the adapter stored
    chat = ours.session.to_chat_messages()
    assert any(m.get("tool_calls") for m in chat) and any(m["role"] == "tool" for m in chat)
    ours.close()


def test_add_items_is_one_atomic_batch(store: Store) -> None:
    ours = AgentlogSession("conv_4", store=store)
    run(ours.add_items([ITEMS[0]]))
    with pytest.raises(InvalidEvent):
        run(ours.add_items([ITEMS[1], {"role": "user", "content": object()}]))
    with pytest.raises(InvalidEvent):
        run(ours.add_items(["not a dict"]))  # type: ignore[list-item]
    assert run(ours.get_items()) == [ITEMS[0]]
    ours.close()


def test_concurrent_use_from_one_event_loop(store: Store) -> None:
    ours = AgentlogSession("conv_5", store=store)
    reference = SQLiteSession("conv_5")

    async def go(session: Any) -> list[Any]:
        batches = [[{"role": "user", "content": f"{n}-{k}"} for k in range(3)] for n in range(20)]
        await asyncio.gather(*(session.add_items(b) for b in batches))
        items = await session.get_items()
        popped = await asyncio.gather(*(session.pop_item() for _ in range(10)))
        return [items, popped, await session.get_items()]

    got = run(go(ours))
    expected = run(go(reference))
    reference.close()

    # SQLiteSession's worker threads may commit concurrent batches in any
    # order, so the comparison is of contents; ours keeps each batch whole.
    def key(item: dict[str, Any]) -> str:
        return str(item["content"])

    assert sorted(got[0], key=key) == sorted(expected[0], key=key)
    assert len(got[2]) == len(expected[2]) == 50
    assert got[2] == got[0][:50] and list(reversed(got[1])) == got[0][50:]
    contents = [i["content"] for i in got[0]]
    for n in range(20):
        at = contents.index(f"{n}-0")
        assert contents[at : at + 3] == [f"{n}-0", f"{n}-1", f"{n}-2"]
    ours.close()


def test_reopen_sees_the_same_items_and_the_lease_refuses_another_process(tmp_path: Any) -> None:
    home = tmp_path / "home"
    first = AgentlogSession("user@example.com/chat", store=Store(home))  # not a valid id: mapped
    run(first.add_items(ITEMS[:3]))
    probe = (
        "import asyncio, sys\n"
        "from agentlog import Store, SessionLocked\n"
        "from agentlog.integrations.openai_agents import AgentlogSession\n"
        "s = AgentlogSession('user@example.com/chat', store=Store(sys.argv[1]))\n"
        "assert len(asyncio.run(s.get_items())) == 3  # a reader takes no lease\n"
        "try:\n"
        "    asyncio.run(s.add_items([{'role': 'user', 'content': 'second writer'}]))\n"
        "except SessionLocked:\n"
        "    sys.exit(3)\n"
    )
    other = subprocess.run([sys.executable, "-c", probe, str(home)], capture_output=True, text=True)
    assert other.returncode == 3, other.stderr  # agentlog's lease refused the second writer
    first.close()
    second = AgentlogSession("user@example.com/chat", store=Store(home))
    assert run(second.get_items()) == ITEMS[:3]
    assert second.session.meta["framework_id"] == "user@example.com/chat"
    assert second.agentlog_id.startswith("h--")
    second.close()
    with pytest.raises(SessionClosed):
        run(second.get_items())


def test_runner_wrapper_keyword_is_accepted(store: Store) -> None:
    from agents.memory.session import _session_accepts_wrapper

    ours = AgentlogSession("conv_6", store=store)
    assert _session_accepts_wrapper(ours)  # the runner will pass its context wrapper
    run(ours.add_items([ITEMS[0]], wrapper=None))
    assert run(ours.get_items(wrapper=None)) == [ITEMS[0]]
    ours.close()


class ScriptedModel:
    """An Agents SDK model that calls the weather tool once, then answers;
    it records the input it was given, so two sessions can be compared."""

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    def build(self) -> Any:
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

        outer = self

        class _Model(Model):
            async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any) -> Any:
                outer.inputs.append(copy.deepcopy(input))
                calls = sum(1 for i in input if isinstance(i, dict) and i.get("type") == "function_call_output")
                turn = sum(1 for i in input if isinstance(i, dict) and i.get("role") == "user")
                if calls < turn:
                    output: list[Any] = [
                        ResponseFunctionToolCall(
                            id=f"fc_{turn}",
                            call_id=f"call_{turn}",
                            name="weather",
                            arguments='{"city": "Paris"}',
                            type="function_call",
                            status="completed",
                        )
                    ]
                else:
                    text = ResponseOutputText(text=f"answer {turn}", type="output_text", annotations=[])
                    output = [
                        ResponseOutputMessage(
                            id=f"msg_{turn}",
                            content=[text],
                            role="assistant",
                            status="completed",
                            type="message",
                        )
                    ]
                return ModelResponse(output=output, usage=Usage(), response_id=None)

            def stream_response(self, *args: Any, **kw: Any) -> Any:
                raise NotImplementedError("the test runs without streaming")

        return _Model()


def test_a_real_runner_sees_the_same_history(store: Store) -> None:
    from agents import Agent, RunConfig, Runner, function_tool

    @function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    async def converse(session: Any) -> tuple[list[Any], list[Any], list[str]]:
        model = ScriptedModel()
        agent = Agent(name="assistant", instructions="Be brief.", model=model.build(), tools=[weather])
        finals = []
        for question in ("weather in Paris?", "and tomorrow?"):
            result = await Runner.run(agent, question, session=session, run_config=RunConfig(tracing_disabled=True))
            finals.append(result.final_output)
        return model.inputs, await session.get_items(), finals

    reference = SQLiteSession("runner")
    ours = AgentlogSession("runner", store=store)
    try:
        expected = run(converse(reference))
        got = run(converse(ours))
    finally:
        reference.close()
    assert got == expected
    assert got[2] == ["answer 1", "answer 2"]
    kinds = [e.kind for e in ours.session.path()]
    assert kinds.count("tool_call") == 2 and kinds.count("tool_result") == 2
    ours.close()


def test_a_cancelled_add_items_completes_as_with_sqlite_session(store: Store) -> None:
    import time

    async def go(session: Any, slow_target: Any) -> tuple[bool, list[Any]]:
        original = slow_target.append_many if slow_target is not None else None
        if slow_target is not None:

            def slow(drafts: Any) -> Any:
                time.sleep(0.2)  # the mutation is under way when the caller is cancelled
                return original(drafts)

            slow_target.append_many = slow
        task = asyncio.ensure_future(session.add_items(ITEMS[:2]))
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
            cancelled = False
        except asyncio.CancelledError:
            cancelled = True
        return cancelled, await session.get_items()

    ours = AgentlogSession("cancel", store=store)
    cancelled, items = run(go(ours, ours.session))
    assert cancelled and items == ITEMS[:2]  # the batch was seen through, then the cancel raised
    ours.close()
    reference = SQLiteSession("cancel")
    assert run(go(reference, None))[1] == ITEMS[:2]
    reference.close()
