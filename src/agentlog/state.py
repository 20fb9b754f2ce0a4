"""Checkpointed harness state: what a resumed agent needs besides messages.

The seed this comes from saved messages and state in two separate atomic
writes, so a crash between them could pair new messages with an old
checkpoint. Here a ``state`` event rides in the same all-or-nothing batch
as the turn's messages (``Session.save_turn``): they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidEvent
from .records import StateRecord, TodoRecord, UsageTotalsRecord
from .tokens import Usage

__all__ = ["Checkpoint", "Todo", "UsageTotals", "state_record"]


@dataclass
class UsageTotals:
    """Cumulative model usage for the whole session: the sum of every call's
    :class:`~agentlog.tokens.Usage`, and how many calls there were."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, usage: Usage) -> None:
        """Count one model call. Lenient, as ``Checkpoint.from_record`` is: a
        model outside agentlog may report anything, and the agent loop counts
        a call before storing its reply, so a bad number must not lose the
        reply. A cost that is not a finite number (a server's NaN) is
        unknown: added, a NaN would make every later total NaN, and a
        ``max_cost_usd`` compared with it would never stop a run."""
        self.input_tokens += _int(usage.input_tokens)
        self.output_tokens += _int(usage.output_tokens)
        cost = _float(usage.cost_usd)
        if math.isfinite(cost):
            self.cost_usd += cost
        self.calls += 1

    def to_record(self) -> UsageTotalsRecord:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "calls": self.calls,
        }


@dataclass
class Todo:
    text: str
    status: str = "pending"  # pending | in_progress | done | blocked
    retries: int = 0

    def to_record(self) -> TodoRecord:
        return {"text": self.text, "status": self.status, "retries": self.retries}


@dataclass
class Checkpoint:
    """Scratchpad, todos, the session's tool-call count and cumulative usage.

    Limits (max tool calls, budget) are deliberately not here: on resume
    they come from the current options, while the counts they bound are
    restored, so restarting never resets recorded spend."""

    scratchpad: str = ""
    todos: list[Todo] = field(default_factory=list)
    tool_calls: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)

    def to_record(self) -> StateRecord:
        return {
            "scratchpad": self.scratchpad,
            "todos": [todo.to_record() for todo in self.todos],
            "tool_calls": self.tool_calls,
            "usage": self.usage.to_record(),
        }

    @classmethod
    def from_record(cls, record: Any) -> Checkpoint:
        """The checkpoint a ``state`` record holds; lenient about types, since
        the record may come from JSON another writer produced: a number that
        is not one counts as 0 (so does a count beyond 64 bits, which could
        not be stored again, and a cost that is NaN or infinite), a todo that is not an object is its text,
        and a record that is not an object is an empty checkpoint
        (``Session.state()`` warns of such a record and looks further back)."""
        if not isinstance(record, Mapping) or not record:
            return cls()
        usage = record.get("usage")
        if not isinstance(usage, Mapping):
            usage = {}
        todos = record.get("todos")
        return cls(
            scratchpad=_text(record.get("scratchpad")),
            todos=[_todo(t) for t in todos] if isinstance(todos, list) else [],
            tool_calls=_int(record.get("tool_calls")),
            usage=UsageTotals(
                _int(usage.get("input_tokens")),
                _int(usage.get("output_tokens")),
                _float(usage.get("cost_usd")),
                _int(usage.get("calls")),
            ),
        )


def _text(value: Any, default: str = "") -> str:
    return default if value is None else str(value)


#: The largest count a checkpoint holds: what a record can store again (JSON
#: integers are 64-bit here); a larger one read back would make the next
#: checkpoint unwritable, and with it the turn that saves it.
_MAX_COUNT = 2**63 - 1


def _int(value: Any) -> int:
    try:
        count = int(value or 0)
    except (TypeError, ValueError, OverflowError):  # "two", [1], inf, NaN: not a count
        return 0
    return count if -_MAX_COUNT <= count <= _MAX_COUNT else 0


def _float(value: Any) -> float:
    try:
        number = float(value or 0.0)
    except (TypeError, ValueError, OverflowError):  # an int beyond a float's range too
        return 0.0
    # "NaN" or "inf" (how docs/records.md says to keep a number JSON cannot
    # hold) is no amount: NaN would also hide every later cost (NaN + x).
    return number if math.isfinite(number) else 0.0


def _todo(t: Any) -> Todo:
    if not isinstance(t, Mapping):
        return Todo(_text(t))
    return Todo(_text(t.get("text")), _text(t.get("status"), "pending"), _int(t.get("retries")))


def state_record(state: Checkpoint | Mapping[str, Any]) -> Any:
    """What ``save_turn`` stores for ``state``: a Checkpoint's record, or a
    mapping as given; anything else is InvalidEvent before anything is
    written (``state()`` could not read it back)."""
    if isinstance(state, Checkpoint):
        return state.to_record()
    if isinstance(state, Mapping):
        return dict(state)
    raise InvalidEvent(f"state must be a Checkpoint or a mapping, not {type(state).__name__}")
