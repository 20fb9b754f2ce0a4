"""Checkpointed harness state: what a resumed agent needs besides messages.

The seed this comes from saved messages and state in two separate atomic
writes, so a crash between them could pair new messages with an old
checkpoint. Here a ``state`` event rides in the same all-or-nothing batch
as the turn's messages (``Session.save_turn``): they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .records import StateRecord, TodoRecord, UsageTotalsRecord
from .tokens import Usage

__all__ = ["Checkpoint", "Todo", "UsageTotals"]


@dataclass
class UsageTotals:
    """Cumulative model usage for the whole session: the sum of every call's
    :class:`~agentlog.tokens.Usage`, and how many calls there were."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, usage: Usage) -> None:
        """Count one model call."""
        self.input_tokens += int(usage.input_tokens or 0)
        self.output_tokens += int(usage.output_tokens or 0)
        self.cost_usd += float(usage.cost_usd or 0.0)
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
    def from_record(cls, record: Mapping[str, Any] | None) -> Checkpoint:
        """The checkpoint a ``state`` record holds; lenient about types, since
        the record may come from JSON another writer produced."""
        if not record:
            return cls()
        usage = record.get("usage") or {}
        return cls(
            scratchpad=str(record.get("scratchpad") or ""),
            todos=[
                Todo(str(t.get("text", "")), str(t.get("status", "pending")), int(t.get("retries", 0)))
                for t in record.get("todos") or []
            ],
            tool_calls=int(record.get("tool_calls") or 0),
            usage=UsageTotals(
                int(usage.get("input_tokens") or 0),
                int(usage.get("output_tokens") or 0),
                float(usage.get("cost_usd") or 0.0),
                int(usage.get("calls") or 0),
            ),
        )
