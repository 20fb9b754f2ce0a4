"""The reference agent loop: the seeds' durable contract, made real.

What is durable, and when (docs/agent.md):

1. The user's message is durable before generation starts.
2. The settled assistant message, its tool calls and the checkpoint state
   are durable, in one atomic batch, before any tool runs.
3. The tool results and the updated state are durable, in one atomic
   batch, after each tool batch.

So only an interrupted response (deltas streamed but not settled) can be
lost. A crash while tools run leaves calls without results; the provider
views answer those with an "interrupted" result, and the model is told.
Deltas go to the live hub only, never to disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..event import Event
from ..records import RecordTuple, ToolResultRecord
from ..session import Session
from ..state import Checkpoint
from .hub import LiveHub
from .models import Completion, Model, ToolCall, complete

__all__ = ["Agent", "Limits", "Tool", "TurnResult"]


@dataclass(frozen=True)
class Tool:
    """A function the model may call. ``fn`` takes the decoded arguments and
    returns text (or anything JSON-serializable, sent as JSON text)."""

    name: str
    fn: Callable[..., Any]
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class Limits:
    """Bounds on a run. They come from the current options on every resume;
    the counts they bound (tool calls, spend) come from the checkpoint."""

    max_iterations: int = 16  # model calls per user turn
    max_tool_calls: int | None = None  # over the whole session
    max_cost_usd: float | None = None  # over the whole session


@dataclass
class TurnResult:
    text: str
    stopped: str  # "done" | "max_iterations" | "budget"
    events: list[Event] = field(default_factory=list)
    compactions: int = 0


class Agent:
    """Runs turns of a model with tools against a session."""

    def __init__(
        self,
        session: Session,
        model: Model,
        *,
        tools: Sequence[Tool] = (),
        system: str | None = None,
        hub: LiveHub | None = None,
        limits: Limits = Limits(),
    ) -> None:
        self.session = session
        self.model = model
        self.tools = {tool.name: tool for tool in tools}
        self.system = system
        self.hub = hub
        self.limits = limits
        self.state: Checkpoint = session.state()
        self._state_at = session.head  # the event ``state`` belongs after

    # --- publishing ------------------------------------------------------------------
    def _publish(self, item: Any) -> None:
        if self.hub is not None:
            self.hub.publish(self.session.id, item)

    def _save(self, drafts: Sequence[RecordTuple], result: TurnResult) -> list[Event]:
        events = self.session.save_turn(drafts, self.state)
        self._state_at = events[-1].id
        result.events.extend(events)
        for event in events:
            self._publish(event)
        return events

    # --- the loop --------------------------------------------------------------------
    def run(self, user_text: str) -> TurnResult:
        """One user turn: model calls and tool batches until a plain reply."""
        result = TurnResult(text="", stopped="done")
        user = self.session.append("message", {"content": user_text}, role="user")
        self.session.persist()  # the user's words are durable before generation
        if user.parent_id != self._state_at:
            # The timeline moved under this agent (select, checkout): the
            # checkpoint is the one on the path this turn continues.
            self.state = self.session.state()
        result.events.append(user)
        self._publish(user)
        schemas = [tool.schema() for tool in self.tools.values()] or None
        for _ in range(self.limits.max_iterations):
            if self._over_budget():
                result.stopped = "budget"
                return result
            messages = self.session.to_chat_messages(system=self.system)
            completion = complete(self.model, messages, schemas, on_delta=self._publish)
            self.state.usage.add(completion.usage)
            self._save(completion.to_records(), result)
            result.text = completion.content
            if completion.tool_calls:
                self._save(self._run_tools(completion.tool_calls), result)
            if self._maybe_compact(completion):
                result.compactions += 1
            if not completion.tool_calls:
                return result
        result.stopped = "max_iterations"
        return result

    def _over_budget(self) -> bool:
        limit = self.limits.max_cost_usd
        return limit is not None and self.state.usage.cost_usd >= limit

    def _run_tools(self, calls: list[ToolCall]) -> list[RecordTuple]:
        drafts: list[RecordTuple] = []
        for call in calls:
            content, is_error = self._call(call)
            record: ToolResultRecord = {
                "tool_call_id": call.id,
                "name": call.name,
                "content": content,
                "is_error": is_error,
            }
            drafts.append(("tool_result", record, "tool"))
        return drafts

    def _call(self, call: ToolCall) -> tuple[str, bool]:
        limit = self.limits.max_tool_calls
        if limit is not None and self.state.tool_calls >= limit:
            return f"tool call limit of {limit} reached for this session", True
        self.state.tool_calls += 1
        tool = self.tools.get(call.name)
        if tool is None:
            return f"unknown tool {call.name!r}", True
        try:
            args = call.parsed_arguments()
            output = tool.fn(**args) if isinstance(args, dict) else tool.fn(args)
        except Exception as exc:  # a tool's failure is the model's to see, not a crash
            return f"{type(exc).__name__}: {exc}", True
        return output if isinstance(output, str) else json.dumps(output), False

    def _maybe_compact(self, completion: Completion) -> bool:
        usage = completion.usage
        used = usage.total_tokens or (usage.input_tokens + usage.output_tokens)
        event = self.session.maybe_compact(used, self.model.context_window)
        if event is not None:
            self._state_at = event.id
        return event is not None
