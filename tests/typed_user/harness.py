"""A harness as its author would write it against agentlog's typed surface.

Never run: tests/test_typed_surface.py type-checks it with ``mypy --strict``
and expects no error. ``assert_type`` pins the types of key results; a
``# type: ignore[...]`` marks a call the surface must refuse (strict mode
reports an ignore that is no longer needed, so a loosened type fails too).
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, assert_type

from agentlog import (
    AgentlogError,
    Checkpoint,
    CompactionPolicy,
    CorruptionError,
    Event,
    ExtractiveSummarizer,
    ModelError,
    NewEvent,
    Problem,
    SearchHit,
    Session,
    SessionInfo,
    SessionLocked,
    SessionNotFound,
    StorageError,
    Store,
    Summary,
    Todo,
    Usage,
)
from agentlog.agent import (
    Agent,
    Completion,
    Delta,
    Limits,
    LiveHub,
    Model,
    ScriptedModel,
    ScriptStep,
    StreamItem,
    Tool,
    ToolUse,
    Turn,
    TurnResult,
    complete,
)
from agentlog.export import BundleImportReport, ExportReport, export_session, import_bundle
from agentlog.records import MessageRecord, ToolCallRecord
from agentlog.search import search


def session_api(store: Store) -> None:
    with store.create(name="fix calc", working_dir=".", model="m", ticket="T-1") as session:
        assert_type(session, Session)
        user = session.append("message", {"content": "Why?"}, role="user")
        assert_type(user, Event)
        assert_type(user.record, Any)
        assert_type(user.role, str | None)
        message: MessageRecord = {"content": "Looking."}
        call: ToolCallRecord = {"id": "c1", "name": "run_tests", "arguments": "{}"}
        batch = session.append_many(
            [
                ("message", message, "assistant"),
                ("tool_call", call, "assistant"),
                NewEvent("tool_result", {"tool_call_id": "c1", "content": "1 failed"}, "tool"),
            ]
        )
        assert_type(batch, list[Event])
        session.select(user.id)
        session.checkout(batch[-1].id)
        assert_type(session.walk(), Iterator[Event])
        assert_type(session.path(), list[Event])
        assert_type(session.transcript(), list[Event])
        assert_type(session.context(resolve=True), list[Event])
        assert_type(session.head, str)
        assert_type(session.pending, str | None)
        assert_type(session.update_meta(title="t"), dict[str, Any])
        assert_type(session.to_chat_messages(system="s"), list[dict[str, Any]])
        state = Checkpoint(todos=[Todo("fix it")])
        state.usage.add(Usage(input_tokens=10, output_tokens=2))
        assert_type(session.save_turn([("message", {"content": "ok"}, "assistant")], state), list[Event])
        assert_type(session.state(), Checkpoint)
        session.compaction = CompactionPolicy(threshold=0.5)
        session.summarizer = ExtractiveSummarizer()
        assert_type(session.compact(keep_tokens=0), Event | None)
        assert_type(session.fork(name="alt"), Session)
        sid = session.id
    assert_type(store.list(), list[SessionInfo])
    assert_type(store.fsck(), list[Problem])
    assert_type(store.search("failed", kind="tool_result", limit=5), list[SearchHit])
    store.search("failed", limt=5)  # type: ignore[call-arg]
    assert_type(search(store, "failed", since="2026-01-01"), list[SearchHit])
    try:
        store.open(sid).close()
    except SessionLocked as exc:
        assert_type(exc.holder, str | None)
    except SessionNotFound as exc:
        assert_type(exc.session_id, str)
    except (CorruptionError, StorageError) as exc:
        print(exc.path)
    except AgentlogError:
        raise


def export_api(session: Session, other: Store, folder: pathlib.Path) -> None:
    with open(folder / "s.bundle.jsonl", "wb") as out:
        assert_type(export_session(session, "bundle", out), ExportReport)
    assert_type(import_bundle(other, folder / "s.bundle.jsonl"), BundleImportReport)


@dataclass(frozen=True)
class FrozenModel:
    """A model of the harness's own: read-only name and window satisfy ``Model``."""

    name: str
    context_window: int = 8000

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Iterator[StreamItem]:
        yield Delta(text="ok")
        yield Completion(content="ok", usage=Usage(input_tokens=3, output_tokens=1))


class Summarize:
    def summarize(self, events: list[Event], previous: Any) -> Summary:
        return Summary(f"{len(events)} events")


def agent_api(store: Store) -> None:
    script: list[ScriptStep] = ["Let me look."]
    script.append(ToolUse("read", {"path": "a.py"}))
    script.append(Turn(text="Done."))
    script.append(lambda messages: "echo")
    hub = LiveHub()
    with store.create(lazy=True) as session:
        session.summarizer = Summarize()
        agent = Agent(
            session,
            ScriptedModel(script),
            tools=[Tool("read", lambda path: path)],
            hub=hub,
            limits=Limits(max_iterations=4),
        )
        assert_type(agent.run("hi"), TurnResult)
        assert_type(Agent(session, FrozenModel("mine")).resume(), TurnResult)
        own: Model = FrozenModel("mine")
        assert_type(complete(own, [{"role": "user", "content": "x"}]), Completion)
        try:
            agent.run("again")
        except ModelError as exc:  # a provider's HTTP status, when it gave one
            assert_type(exc.status, int | None)
