"""Token and cost totals of a list of events (see docs/records.md).

Assistant ``message`` records carry the provider's ``usage`` per call;
``state`` checkpoints carry the agent loop's running ``usage``. The totals
add up the first; where no message says anything (a session written by a
loop that only checkpoints), the latest checkpoint's figures stand in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..event import Event
from ..recordtext import usage_of
from ..tokens import usage_tokens

__all__ = ["Totals", "totals"]


@dataclass(frozen=True, slots=True)
class Totals:
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost_usd: float | None
    calls: int
    #: "messages", "state" or "none": where the figures come from.
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd,
            "calls": self.calls,
            "source": self.source,
        }


def _int(value: float | None) -> int:
    return int(value) if value is not None else 0


def totals(events: Iterable[Event]) -> Totals:
    """Totals over ``events`` (records must be loaded to count)."""
    inp = out = total = calls = 0
    cost: float | None = None
    state: dict[str, float] = {}
    for event in events:
        if event.kind == "message" and event.role == "assistant":
            usage = usage_of(event.record)
            if not usage:
                continue
            calls += 1
            # The tokens as the context counter reads them (one reader of the
            # providers' shapes: Chat Completions names, Anthropic's cache).
            tokens = usage_tokens(event)
            if tokens is not None:
                inp += tokens.input_tokens
                out += tokens.output_tokens
                total += tokens.total_tokens
            if "cost_usd" in usage:
                cost = (cost or 0.0) + float(usage["cost_usd"])
        elif event.kind == "state":
            state = usage_of(event.record) or state
    if calls:
        if cost is None and "cost_usd" in state:
            cost = float(state["cost_usd"])
        return Totals(inp, out, total, cost, calls, "messages")
    if state:
        s_in, s_out = _int(state.get("input_tokens")), _int(state.get("output_tokens"))
        s_cost = float(state["cost_usd"]) if "cost_usd" in state else None
        return Totals(s_in, s_out, s_in + s_out, s_cost, _int(state.get("calls")), "state")
    return Totals(0, 0, 0, None, 0, "none")
