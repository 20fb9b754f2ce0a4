"""The reference agent loop: the seeds' durable contract, made real.

What is durable, and when (docs/agent.md):

1. The user's message is durable before generation starts.
2. The settled assistant message, its tool calls and the checkpoint state
   are durable, in one atomic batch, before any tool runs.
3. The tool results and the updated state are durable, in one atomic
   batch, after each tool batch.

So only an interrupted response (deltas streamed but not settled) can be
lost, and ``Agent.resume()`` finishes such a turn without storing the
user's words twice. A crash while tools run leaves calls without results;
the provider views answer those with an "interrupted" result, and the
model is told. Deltas go to the live hub only, never to disk.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._text import storable_bytes
from ..errors import ContextOverflow, InvalidOption, ModelError
from ..event import Event
from ..records import RecordTuple, ToolResultRecord
from ..session import Session
from ..state import Checkpoint
from ..tokens import context_tokens, event_tokens, usage_tokens
from .hub import LiveHub
from .models import Model, ToolCall, complete

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
    # Over the path the turn continues, as the checkpoint counts them (a
    # branch starts from its branch point's counts: docs/agent.md).
    max_tool_calls: int | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        # Checked here, not where they are used: by then run() has written the
        # user's message, and a "3" or a NaN would fail (or never stop) after it.
        if not _is_int(self.max_iterations) or self.max_iterations < 1:
            raise InvalidOption(f"max_iterations must be an integer of at least 1, not {self.max_iterations!r}")
        if self.max_tool_calls is not None and (not _is_int(self.max_tool_calls) or self.max_tool_calls < 0):
            raise InvalidOption(f"max_tool_calls must be None or an integer >= 0, not {self.max_tool_calls!r}")
        cost = self.max_cost_usd
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost) or cost < 0
        ):
            raise InvalidOption(f"max_cost_usd must be None or a finite number >= 0, not {cost!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: Why a run stopped: the model answered, the iteration bound, or the spend or tool-call budget.
StopReason = Literal["done", "max_iterations", "budget"]


@dataclass
class TurnResult:
    text: str
    stopped: StopReason
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
        if not isinstance(limits, Limits):
            raise InvalidOption(f"limits must be a Limits, not {type(limits).__name__}")
        names = [tool.name for tool in tools]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            # One would silently shadow the other: the model could never call it.
            raise InvalidOption(f"two tools share the name {', '.join(map(repr, twice))}")
        self.session = session
        self.model = model
        self.tools = {tool.name: tool for tool in tools}
        self.system = system
        self.hub = hub
        self.limits = limits
        self.state: Checkpoint = session.state()
        self._state_at = session.next_parent  # the event ``state`` belongs after
        # (event id, tokens): the size of a request built from the context
        # that ends at that event, as last measured; saves re-reading the
        # context to measure the first request of the next turn.
        self._measured: tuple[str, int] | None = None

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
        measured = self._measured
        used = measured[1] + event_tokens(user) if measured and measured[0] == user.parent_id else None
        self._state_at = user.id
        result.events.append(user)
        self._publish(user)
        return self._generate(result, used)

    def resume(self) -> TurnResult:
        """Finish a turn an interruption cut short, without a new user message.

        When the active path ends where the model still owes an answer (a
        user message, tool results, or tool calls whose results were lost,
        which the views answer as interrupted), the turn continues from
        there. Otherwise there is nothing to resume: nothing is called or
        written, and the result has no events."""
        if self.session.next_parent != self._state_at:
            self.state = self.session.state()  # another writer, a restart, a checkout, a select
            self._state_at = self.session.next_parent
        result = TurnResult(text="", stopped="done")
        if not self._owed():
            return result
        return self._generate(result)

    def _owed(self) -> bool:
        """Whether the path the next append continues (HEAD, or the selected
        event: a regenerate) ends waiting for the model."""
        for event in self.session.walk(self.session.next_parent):
            if event.kind in ("tool_call", "tool_result"):
                return True
            if event.kind == "message" and event.role in ("user", "assistant"):
                return event.role == "user"
            # state, compaction, label, custom: bookkeeping, not the conversation's end. Nor a
            # branch_summary (summarize_branch() after select(user_message) puts one after the
            # question a regenerate still owes an answer to), nor a system or developer
            # message (an instruction the harness added, not a turn that answers anything).
        return False

    def _generate(self, result: TurnResult, used: int | None = None) -> TurnResult:
        """Model calls and tool batches until a plain reply. ``used``: the
        size of the first request, when known without reading the context."""
        schemas = [tool.schema() for tool in self.tools.values()] or None
        refused = 0  # tool batches in this turn that the tool-call limit refused
        for _ in range(self.limits.max_iterations):
            # A batch the tool-call limit refused is answered once more by the
            # model, told so in each call's result; a second is the budget.
            if self._over_budget() or refused >= 2:
                result.stopped = "budget"
                return result
            self._fit_window(result, used)
            messages = self.session.to_chat_messages(system=self.system)
            completion = complete(self.model, messages, schemas, on_delta=self._publish)
            self.state.usage.add(completion.usage)
            step = len(result.events)
            self._save(completion.to_records(), result)
            result.text = completion.content
            if completion.tool_calls:
                refused += self._run_tools(completion.tool_calls, result)
            used = self._measure(result.events[step:])
            if not completion.tool_calls:
                return result
        result.stopped = "max_iterations"
        return result

    def _over_budget(self) -> bool:
        limit = self.limits.max_cost_usd
        return limit is not None and self.state.usage.cost_usd >= limit

    def _run_tools(self, calls: list[ToolCall], result: TurnResult) -> bool:
        """Run a tool batch, saving each result (and the state, whose count
        of tool calls it moved) as soon as its tool returns: a tool that ran
        had its effects, so its result must survive whatever stops the run
        next, a SIGKILL included, or the model would be told it did not
        complete and might run it again. The calls not run stay unanswered;
        the views answer them as interrupted. True if the tool-call limit
        refused a call of the batch."""
        refused = False
        for call in calls:
            refused = refused or self._at_tool_limit()
            counted = self.state.tool_calls
            try:
                content, is_error = self._call(call)
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: the run stops here
                if self.state.tool_calls != counted:
                    # The interrupted tool was started, and counts against
                    # max_tool_calls: the checkpoint says so.
                    try:
                        self._save([], result)
                    except BaseException as save_exc:  # reported with the interruption, not instead of it
                        exc.add_note(f"agentlog: the state could not be saved: {save_exc!r}")
                raise
            record: ToolResultRecord = {
                "tool_call_id": call.id,
                "name": call.name,
                # A tool's text may hold what no record can (a file name that
                # is not UTF-8, from os.listdir): written as escapes, since
                # the tool ran and its result must be stored.
                "content": storable_bytes(content),
                "is_error": is_error,
            }
            self._save([("tool_result", record, "tool")], result)
        return refused

    def _at_tool_limit(self) -> bool:
        limit = self.limits.max_tool_calls
        return limit is not None and self.state.tool_calls >= limit

    def _call(self, call: ToolCall) -> tuple[str, bool]:
        if self._at_tool_limit():
            return f"tool call limit of {self.limits.max_tool_calls} reached for this session", True
        self.state.tool_calls += 1
        tool = self.tools.get(call.name)
        if tool is None:
            return f"unknown tool {call.name!r}", True
        try:
            args = call.parsed_arguments()
        except ModelError as exc:
            # The call's own fault, told to the model as such: not labelled
            # a failure of the model backend, which is what ModelError means.
            shown = call.arguments if len(call.arguments) <= 200 else call.arguments[:200] + "..."
            return f"invalid arguments {shown!r}: {exc}; the tool did not run (send a JSON object)", True
        try:
            output = tool.fn(**args) if isinstance(args, dict) else tool.fn(args)
        except Exception as exc:  # a tool's failure is the model's to see, not a crash
            return f"{type(exc).__name__}: {exc}", True
        if isinstance(output, str):
            return output, False
        try:
            return json.dumps(output), False
        except (TypeError, ValueError) as exc:  # a datetime, a set, a cycle: the tool's bug, the model's to see
            return f"tool {call.name!r} returned a {type(output).__name__} that is not JSON: {exc}", True

    # --- the context window ----------------------------------------------------------
    def _measure(self, step: list[Event]) -> int | None:
        """The size of the next request from what one model call and its
        tools appended (``step``), or None when the provider reported no
        usage (then ``_fit_window`` reads and estimates the whole context)."""
        # The provider's report of this call plus what was appended after it
        # (the tool results), which ``step`` holds.
        if not any((u := usage_tokens(e)) is not None and u.input_tokens > 0 for e in step):
            self._measured = None
            return None
        used = context_tokens(step, system=self.system)
        self._measured = (self._state_at, used)
        return used

    def _measure_context(self) -> int:
        used = context_tokens(self.session.context(resolve=True), system=self.system)
        self._measured = (self.session.next_parent, used)
        return used

    def _fit_window(self, result: TurnResult, used: int | None) -> None:
        """Before each request: compact when it reaches the policy's
        threshold of the window, and refuse to send one still over it.

        The compaction keeps at most ``CompactionPolicy.keep_for(window)``,
        so it frees room whatever ``keep_tokens`` says, and it uses
        ``split_turn``: one request that runs many tool steps must shrink
        too, or the context outgrows the window inside the turn."""
        window = self.model.context_window
        policy = self.session.compaction
        if used is None:
            used = self._measure_context()
        compacted = False
        if policy.due(used, window):
            event = self.session.compact(keep_tokens=policy.keep_for(window), split_turn=True)
            if event is not None:
                compacted = True
                self._state_at = event.id
                result.events.append(event)
                result.compactions += 1
                self._publish(event)  # a settled event like any other, for live subscribers
                used = self._measure_context()
        if window > 0 and used > window:
            # A provider would refuse it (or cut it silently): say so here,
            # before anything is sent.
            if compacted:
                how = "after compacting"
            elif not policy.enabled:
                how = "and compaction is disabled"
            else:
                how = "and nothing more can be compacted"
            name = getattr(self.model, "name", type(self.model).__name__)
            raise ContextOverflow(
                f"the next request to model {name!r} needs about {used} tokens, more than its context "
                f"window of {window}, {how}: what no compaction cuts (the current request, the latest model "
                "step and its tool results, the summary) is too large; nothing was sent"
            )
