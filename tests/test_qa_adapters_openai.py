"""QA regressions for the Agents SDK adapter: items come back exactly as
given, values the store cannot hold are refused whole, writers share one
lease within a process, and its history reads as Chat Completions parts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlog import InvalidEvent, InvalidSessionId, Store

pytest.importorskip(
    "agents.memory", reason="LOUD SKIP: openai-agents is not installed (pip install agentlog[openai-agents])"
)
from agents.memory import SQLiteSession  # noqa: E402

from agentlog.integrations.openai_agents import AgentlogSession  # noqa: E402


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return Store(tmp_path / "home") if request.param == "files" else Store.memory()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _roundtrip(session: Any, items: list[Any]) -> list[Any]:
    await session.add_items(items)
    return list(await session.get_items())


def test_function_call_output_comes_back_with_exactly_its_keys(store: Store) -> None:
    items = [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2"},  # no output key
        {"type": "function_call_output", "call_id": "c3", "output": None},
    ]
    reference = SQLiteSession("s")
    ours = AgentlogSession("s", store=store)
    try:
        expected = run(_roundtrip(reference, items))
        got = run(_roundtrip(ours, items))
    finally:
        reference.close()
        ours.close()
    assert got == expected == items
    assert [list(i) for i in got] == [list(i) for i in items]  # key order too
    again = AgentlogSession("s", store=store)  # as stored, not as cached
    try:
        assert run(again.get_items()) == items
        # The record conventions still see the result (content None).
        results = [e.record for e in again.session.walk() if e.kind == "tool_result"]
        assert [r["content"] for r in results] == [None, None, "r"]
    finally:
        again.close()


def test_nan_and_infinity_are_stored_as_null_as_every_record(store: Store) -> None:
    # agentlog records are JSON: the adapter follows the core (docs/records.md)
    # rather than a rule of its own; docs/integrations.md lists the difference.
    ours = AgentlogSession("n", store=store)
    try:
        got = run(_roundtrip(ours, [{"role": "user", "content": "x", "a": float("nan"), "b": float("inf")}]))
        core = store.create().append("custom", {"a": float("nan")}).record
    finally:
        ours.close()
    assert got == [{"role": "user", "content": "x", "a": None, "b": None}]
    assert core == {"a": None}


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "user", "content": "a\ud800"},
        {"role": "user", "content": "b", "n": 2**70},
        {"role": "user", "content": "c", "m": {1: 2}},
        {"type": "function_call_output", "call_id": "c", "output": "\udc00"},
        "not a dict",
    ],
    ids=["surrogate", "bigint", "int-key", "surrogate-output", "not-a-dict"],
)
def test_unstorable_items_are_refused_and_nothing_is_written(store: Store, bad: Any) -> None:
    ours = AgentlogSession("u", store=store)
    try:
        run(ours.add_items([{"role": "user", "content": "kept"}]))
        with pytest.raises(InvalidEvent):
            run(ours.add_items([{"role": "user", "content": "same batch"}, bad]))
        assert run(ours.get_items()) == [{"role": "user", "content": "kept"}]
    finally:
        ours.close()


def test_a_session_id_with_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(InvalidSessionId):
        AgentlogSession("conv\ud800", store=Store.memory())


def test_writers_in_one_process_share_the_lease_and_another_process_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = AgentlogSession("dup", store=Store(home))
    second = AgentlogSession("dup", store=Store(home))
    try:
        run(first.add_items([{"role": "user", "content": "1"}]))
        run(second.add_items([{"role": "user", "content": "2"}]))
        expected = [{"role": "user", "content": "1"}, {"role": "user", "content": "2"}]
        assert run(first.get_items()) == run(second.get_items()) == expected
        probe = (
            "import sys\nfrom agentlog import Store, SessionLocked\n"
            "try:\n    Store(sys.argv[1]).open('dup')\nexcept SessionLocked:\n    print('locked')\n"
        )
        other = subprocess.run([sys.executable, "-c", probe, str(home)], capture_output=True, text=True)
        assert other.stdout.strip() == "locked", other.stderr
    finally:
        first.close()
        second.close()


def test_agents_sdk_history_gives_chat_text_parts(store: Store) -> None:
    ours = AgentlogSession("chat", store=store)
    try:
        run(
            ours.add_items(
                [
                    {"role": "user", "content": "hi"},
                    {
                        "type": "message",
                        "id": "m1",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "hello", "annotations": []}],
                    },
                ]
            )
        )
        messages = ours.session.to_chat_messages()
        responses = ours.session.to_responses_input()
    finally:
        ours.close()
    assert messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    ]
    assert responses[1]["content"] == [{"type": "output_text", "text": "hello", "annotations": []}]
