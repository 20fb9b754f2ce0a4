"""ScriptedModel: a deterministic, offline model for tests and the demo.

A script is a list of turns, consumed one per call to ``stream``:

- ``"text"``: a plain reply;
- ``ToolUse("name", {"arg": 1})``: one tool call;
- ``Turn(text=..., tool_calls=[...], reasoning=..., fail_after=...)``: anything;
- a callable ``(messages) -> turn`` for replies that depend on the prompt
  (e.g. echo the last tool result).

Text and reasoning stream word by word and tool arguments in fragments, so
the streaming path is exercised. Usage is deterministic: input tokens are
:func:`estimate_request_tokens` of the prompt, output tokens count words and
argument tokens.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelError
from ..tokens import Usage
from .models import (
    Completion,
    Delta,
    StreamItem,
    ToolCall,
    ToolCallDelta,
    check_messages,
    estimate_request_tokens,
)

__all__ = ["ScriptStep", "ScriptedModel", "ToolUse", "Turn"]


@dataclass(frozen=True)
class ToolUse:
    """A scripted tool call; ``arguments`` may be a dict or raw JSON text
    (raw text lets a test script a model that emits broken JSON)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Turn:
    """One scripted assistant turn.

    ``fail_after``: raise ModelError after streaming that many deltas, with
    no Completion, as a dropped connection would (0 fails before any)."""

    text: str = ""
    tool_calls: Sequence[ToolUse] = ()
    reasoning: str | None = None
    fail_after: int | None = None
    finish_reason: str | None = None


#: One entry of a script: reply text, a ToolUse, a Turn, or a callable
#: ``(messages) -> step``. Annotate a script built up in code with it
#: (``script: list[ScriptStep] = []``): a list mixing text and tool uses
#: is otherwise inferred as ``list[object]``, which ``ScriptedModel`` refuses.
ScriptStep = str | ToolUse | Turn | Callable[[list[dict[str, Any]]], Any]

_WORDS = re.compile(r"\S+\s*|\s+")
_ARG_PIECE = 8  # characters of JSON per streamed argument fragment


class ScriptedModel:
    """Plays a script of turns; raises ModelError once it runs out.

    ``strict`` (default on) validates each request as a provider would
    (:func:`check_messages`), so a loop that builds a bad message list fails
    offline the way it would fail against a real API. ``requests`` keeps a
    copy of every ``(messages, tools)`` received."""

    def __init__(
        self,
        script: Sequence[ScriptStep],
        *,
        name: str = "scripted",
        context_window: int = 32_000,
        strict: bool = True,
        price_per_token: tuple[float, float] | None = None,
    ) -> None:
        self.name = name
        self.context_window = context_window
        self.strict = strict
        self.price_per_token = price_per_token
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []
        self._script = list(script)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Turns not yet played."""
        with self._lock:
            return len(self._script) - self._next

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Iterator[StreamItem]:
        # Validate and take the turn eagerly: the error (or the consumed turn)
        # belongs to the call, not to whenever the caller starts iterating.
        if self.strict:
            check_messages(messages)
        with self._lock:
            if self._next >= len(self._script):
                raise ModelError(
                    f"scripted model {self.name!r} has no turn left: its script of "
                    f"{len(self._script)} turns was used up (call {self._next + 1})"
                )
            number = self._next
            step = self._script[number]
            self._next += 1
            self.requests.append((copy.deepcopy(messages), copy.deepcopy(tools)))
        turn = self._resolve(step, messages, number)
        return self._play(turn, number, estimate_request_tokens(messages, tools))

    def _resolve(self, step: Any, messages: list[dict[str, Any]], number: int) -> Turn:
        if callable(step) and not isinstance(step, (ToolUse, Turn)):
            try:
                step = step(copy.deepcopy(messages))
            except ModelError:
                raise
            except Exception as exc:
                raise ModelError(
                    f"scripted model {self.name!r}: turn {number + 1} raised {type(exc).__name__}: {exc}"
                ) from exc
        if isinstance(step, str):
            return Turn(text=step)
        if isinstance(step, ToolUse):
            return Turn(tool_calls=(step,))
        if isinstance(step, Turn):
            return step
        raise ModelError(
            f"scripted model {self.name!r}: turn {number + 1} is a {type(step).__name__}; "
            "expected str, ToolUse, Turn or a callable returning one"
        )

    def _play(self, turn: Turn, number: int, input_tokens: int) -> Iterator[StreamItem]:
        calls = [
            ToolCall(
                id=use.id or f"call_{number + 1}_{k}",
                name=use.name,
                arguments=use.arguments
                if isinstance(use.arguments, str)
                else json.dumps(use.arguments, sort_keys=True),
            )
            for k, use in enumerate(turn.tool_calls)
        ]
        deltas: list[Delta] = []
        if turn.reasoning:
            deltas += [Delta(reasoning=w) for w in _WORDS.findall(turn.reasoning)]
        deltas += [Delta(text=w) for w in _WORDS.findall(turn.text)]
        for k, call in enumerate(calls):
            deltas.append(Delta(tool_call_delta=ToolCallDelta(k, id=call.id, name=call.name)))
            for at in range(0, len(call.arguments), _ARG_PIECE):
                piece = call.arguments[at : at + _ARG_PIECE]
                deltas.append(Delta(tool_call_delta=ToolCallDelta(k, arguments=piece)))

        for sent, delta in enumerate(deltas):
            if turn.fail_after is not None and sent >= turn.fail_after:
                break
            yield delta
        if turn.fail_after is not None:
            raise ModelError(
                f"scripted model {self.name!r}: injected failure in turn {number + 1} "
                f"after {min(turn.fail_after, len(deltas))} deltas"
            )

        output_tokens = (
            len(turn.text.split())
            + len((turn.reasoning or "").split())
            + sum((len(c.name) + len(c.arguments) + 3) // 4 for c in calls)
        )
        cost = None
        if self.price_per_token is not None:
            cost = round(
                input_tokens * self.price_per_token[0] + output_tokens * self.price_per_token[1],
                10,
            )
        usage = Usage(input_tokens, output_tokens, input_tokens + output_tokens, cost)
        finish = turn.finish_reason or ("tool_calls" if calls else "stop")
        yield Completion(
            content=turn.text,
            reasoning=turn.reasoning,
            tool_calls=calls,
            usage=usage,
            finish_reason=finish,
            model=self.name,
            raw=_raw_response(self.name, number, turn, calls, usage, finish),
        )


def _raw_response(
    name: str, number: int, turn: Turn, calls: list[ToolCall], usage: Usage, finish: str
) -> dict[str, Any]:
    """What an OpenAI-compatible server would have returned for this turn."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning is not None:
        message["reasoning_content"] = turn.reasoning
    if calls:
        message["tool_calls"] = [c.to_openai() for c in calls]
    raw_usage: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cost_usd is not None:
        raw_usage["cost"] = usage.cost_usd
    return {
        "id": f"scripted-{number + 1}",
        "object": "chat.completion",
        "model": name,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": raw_usage,
    }
