"""The model interface the agent loop talks to.

A model takes a list of OpenAI chat-completions messages (``role``,
``content``, ``tool_calls``, ``tool_call_id``) and optional tool schemas,
and streams:

- any number of :class:`Delta` items: live-only pieces of text, reasoning
  or tool-call arguments, for a TUI or an SSE client. They are published to
  the hub and never persisted;
- then exactly one :class:`Completion`: the settled assistant turn, which
  :meth:`Completion.to_records` turns into the events docs/records.md
  describes.

Every failure of a model surfaces as :class:`agentlog.errors.ModelError`;
:func:`checked_stream` enforces that (and the one-completion rule) for any
implementation, including ones written outside agentlog.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._text import storable, storable_json
from ..errors import ModelError
from ..records import MessageRecord, RecordTuple, ToolCallRecord
from ..tokens import Usage, estimate_tokens

__all__ = [
    "Completion",
    "Delta",
    "Model",
    "StreamItem",
    "ToolCall",
    "ToolCallDelta",
    "check_messages",
    "checked_stream",
    "complete",
    "estimate_request_tokens",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One settled tool call; ``arguments`` is JSON text, as providers send it."""

    id: str
    name: str
    arguments: str

    def to_record(self) -> ToolCallRecord:
        # a lone surrogate in JSON text becomes its \\u escape: the same JSON
        return {"id": self.id, "name": self.name, "arguments": storable(self.arguments)}

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    def parsed_arguments(self) -> Any:
        """The arguments decoded; a model that sent bad JSON is a ModelError."""
        try:
            return json.loads(self.arguments) if self.arguments.strip() else {}
        except ValueError as exc:
            raise ModelError(f"tool call {self.id} ({self.name}) has arguments that are not JSON: {exc}") from None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a streamed tool call. ``index`` groups the pieces of one call;
    ``id`` and ``name`` usually come first, ``arguments`` arrive in fragments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class Delta:
    """A live-only streaming piece. Never stored (invariant: deltas go to the hub)."""

    text: str = ""
    reasoning: str = ""
    tool_call_delta: ToolCallDelta | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """The settled assistant turn: what becomes durable history."""

    content: str
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str = ""
    #: The provider's full response structure (a chat.completion object for
    #: OpenAI-compatible servers). Kept in the record, never stripped.
    raw: dict[str, Any] | None = None

    def to_records(self, *, raw: bool = True) -> list[RecordTuple]:
        """``(kind, record, role)`` drafts per docs/records.md: one assistant
        ``message`` then one ``tool_call`` per call, in order. Ready for
        ``Session.append_many`` (which keeps the turn all-or-nothing)."""
        # storable: a reply stored as the model sent it where it can be, never
        # lost to a stream that cut an emoji's surrogate pair in two
        message: MessageRecord = {"content": storable(self.content)}
        if self.reasoning is not None:
            message["reasoning"] = storable(self.reasoning)
        message["usage"] = self.usage.to_dict()
        message["model"] = self.model
        message["finish_reason"] = self.finish_reason
        if raw and self.raw is not None:
            message["provider"] = storable_json(self.raw)
        out: list[RecordTuple] = [("message", message, "assistant")]
        out.extend(("tool_call", call.to_record(), "assistant") for call in self.tool_calls)
        return out

    def to_message(self) -> dict[str, Any]:
        """This turn as an OpenAI chat message, to send back on the next call."""
        message: dict[str, Any] = {
            "role": "assistant",
            # Providers want null, not "", beside tool calls with no text.
            "content": self.content if (self.content or not self.tool_calls) else None,
        }
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


StreamItem = Delta | Completion


@runtime_checkable
class Model(Protocol):
    """What the agent loop needs from a model backend.

    ``name`` and ``context_window`` are only read: a type checker takes
    them from a plain attribute, a property or a frozen dataclass field."""

    if TYPE_CHECKING:
        # Read-only members for type checkers; at run time the protocol's
        # members (what isinstance checks) stay the two plain attributes.
        @property
        def name(self) -> str: ...

        @property
        def context_window(self) -> int: ...

    else:
        name: str
        context_window: int

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Iterator[StreamItem]:
        """Deltas, then exactly one Completion. Failures raise ModelError."""
        ...


def checked_stream(
    model: Model, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> Iterator[StreamItem]:
    """``model.stream`` with the contract enforced: any exception becomes a
    ModelError, and the stream must end with exactly one Completion."""
    name = getattr(model, "name", type(model).__name__)
    settled = False
    try:
        for item in model.stream(messages, tools):
            if settled:
                raise ModelError(f"model {name!r} streamed an item after its completion")
            if isinstance(item, Completion):
                settled = True
            elif not isinstance(item, Delta):
                raise ModelError(f"model {name!r} streamed a {type(item).__name__}, not a Delta or Completion")
            yield item
    except ModelError:
        raise
    except Exception as exc:
        # Model code is outside agentlog's control; the loop must see one type.
        raise ModelError(f"model {name!r} failed: {type(exc).__name__}: {exc}") from exc
    if not settled:
        raise ModelError(f"model {name!r} ended its stream without a completion")


def complete(
    model: Model,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    on_delta: Callable[[Delta], None] | None = None,
) -> Completion:
    """Drain a stream and return its Completion, passing deltas to ``on_delta``."""
    completion: Completion | None = None
    for item in checked_stream(model, messages, tools):
        if isinstance(item, Completion):
            completion = item
        elif on_delta is not None:
            on_delta(item)
    assert completion is not None  # checked_stream raised otherwise
    return completion


def estimate_request_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """A deterministic, provider-free estimate of a whole request:
    ``tokens.estimate_tokens`` (four characters per token) of its canonical
    JSON. Good for budgets and tests, not for billing."""
    text = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    if tools:
        text += json.dumps(tools, sort_keys=True, ensure_ascii=False)
    return estimate_tokens(text)


_ROLES = ("system", "developer", "user", "assistant", "tool")


def check_messages(messages: Any) -> None:
    """Refuse a message list an OpenAI-compatible provider would reject.

    Catches what breaks agent loops in production: unknown roles, tool
    calls without a result for every id, results for calls never made.
    Raises ModelError naming the message's index."""
    if not isinstance(messages, list) or not messages:
        raise ModelError("invalid request: messages must be a non-empty list")
    pending: dict[str, str] = {}  # unanswered call id -> tool name
    for i, msg in enumerate(messages):
        where = f"invalid request: messages[{i}]"
        if not isinstance(msg, dict):
            raise ModelError(f"{where} is a {type(msg).__name__}, not an object")
        role = msg.get("role")
        if role not in _ROLES:
            raise ModelError(f"{where} has role {role!r}; expected one of {', '.join(_ROLES)}")
        if role != "tool" and pending:
            raise ModelError(f"{where} ({role}) comes before the results of tool calls {', '.join(sorted(pending))}")
        content = msg.get("content")
        calls = msg.get("tool_calls") if role == "assistant" else None
        if content is None and not calls:
            raise ModelError(f"{where} ({role}) has no content")
        if content is not None and not isinstance(content, (str, list)):
            raise ModelError(f"{where} content is a {type(content).__name__}")
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id not in pending:
                raise ModelError(f"{where} answers tool call {call_id!r}, which is not pending")
            del pending[call_id]
        elif calls is not None:
            if not isinstance(calls, list):
                raise ModelError(f"{where} tool_calls is not a list")
            for j, call in enumerate(calls):
                fn = call.get("function") if isinstance(call, dict) else None
                if (
                    not isinstance(fn, dict)
                    or not isinstance(call.get("id"), str)
                    or not isinstance(fn.get("name"), str)
                    or not isinstance(fn.get("arguments"), str)
                ):
                    raise ModelError(
                        f"{where} tool_calls[{j}] needs id, function.name and function.arguments (a string)"
                    )
                if call["id"] in pending:
                    raise ModelError(f"{where} repeats tool call id {call['id']!r}")
                pending[call["id"]] = fn["name"]
    if pending:
        raise ModelError(f"invalid request: tool calls {', '.join(sorted(pending))} have no result")
