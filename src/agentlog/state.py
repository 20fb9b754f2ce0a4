"""Checkpointed harness state: what a resumed agent needs besides messages.

The seed this comes from saved messages and state in two separate atomic
writes, so a crash between them could pair new messages with an old
checkpoint. Here a ``state`` event rides in the same all-or-nothing batch
as the turn's messages (``Session.save_turn``): they cannot disagree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Checkpoint", "Todo", "Usage"]


@dataclass
class Usage:
    """Cumulative model usage for the whole session (not one turn)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, input_tokens: int = 0, output_tokens: int = 0,
            cost_usd: float | None = None) -> None:
        self.input_tokens += int(input_tokens or 0)
        self.output_tokens += int(output_tokens or 0)
        self.cost_usd += float(cost_usd or 0.0)
        self.calls += 1


@dataclass
class Todo:
    text: str
    status: str = "pending"  # pending | in_progress | done | blocked
    retries: int = 0


@dataclass
class Checkpoint:
    """Scratchpad, todos, the session's tool-call count and cumulative usage.

    Limits (max tool calls, budget) are deliberately not here: on resume
    they come from the current options, while the counts they bound are
    restored, so restarting never resets recorded spend."""

    scratchpad: str = ""
    todos: list[Todo] = field(default_factory=list)
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> "Checkpoint":
        if not record:
            return cls()
        usage = record.get("usage") or {}
        return cls(
            scratchpad=str(record.get("scratchpad") or ""),
            todos=[Todo(str(t.get("text", "")), str(t.get("status", "pending")),
                        int(t.get("retries", 0))) for t in record.get("todos") or []],
            tool_calls=int(record.get("tool_calls") or 0),
            usage=Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                        float(usage.get("cost_usd") or 0.0), int(usage.get("calls") or 0)),
        )
