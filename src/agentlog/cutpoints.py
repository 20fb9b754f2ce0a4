"""Where a compaction cuts a context.

``choose_cut`` splits a context into a prefix to summarize and a suffix
kept verbatim. A cut may only fall on a ``user`` or ``assistant`` message
(the start of a turn or of an assistant step), and never inside a tool
group: no call in the prefix may have its result in the suffix, and the
prefix may not end with a call. So the kept suffix never holds a result
without its call, and the summary never ends on a call awaiting an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .errors import InvalidOption
from .event import Event
from .tokens import event_tokens

__all__ = ["choose_cut", "valid_cuts"]

_SENT = ("message", "tool_call", "tool_result", "compaction", "branch_summary")


def valid_cuts(events: Sequence[Event]) -> list[int]:
    """Indexes ``i`` where ``events[i:]`` may be kept, ascending."""
    n = len(events)
    where: dict[str, int] = {}
    blocked = [0] * (n + 1)  # difference array over cut positions
    last_sent: str | None = None
    ends_with_call = [False] * n
    for i, event in enumerate(events):
        ends_with_call[i] = last_sent == "tool_call"
        if event.kind in _SENT:
            last_sent = event.kind
        rec = event.record if isinstance(event.record, dict) else {}
        if event.kind == "tool_call" and isinstance(rec.get("id"), str):
            where[rec["id"]] = i
        elif event.kind == "tool_result":
            call_id = rec.get("tool_call_id")
            call = where.get(call_id) if isinstance(call_id, str) else None
            if call is not None:  # a cut in (call, result] would split them
                blocked[call + 1] += 1
                blocked[i + 1] -= 1
    cuts, depth = [], 0
    for i, event in enumerate(events):
        depth += blocked[i]
        if depth == 0 and not ends_with_call[i] and event.kind == "message" and event.role in ("user", "assistant"):
            cuts.append(i)
    return cuts


def choose_cut(
    events: Sequence[Event],
    keep_tokens: int,
    count: Callable[[Event], int] = event_tokens,
    *,
    keep_last_turn: bool = True,
) -> int | None:
    """The index of the first kept event, or None if compacting gains nothing.

    Keeps the longest suffix that starts at a valid cut and costs at most
    ``keep_tokens``; if even the shortest costs more, keeps the shortest.
    With ``keep_last_turn`` (the default) the cut is never after the last
    user message, so the current turn stays whole even over budget.
    A leading compaction (the previous summary) does not count as
    something to summarize: None unless the prefix has more than it, or
    when everything fits in ``keep_tokens``."""
    if keep_tokens < 0:
        raise InvalidOption(f"keep_tokens must be >= 0, not {keep_tokens!r}")
    costs = [count(e) for e in events]
    if sum(costs) <= keep_tokens:
        return None
    cuts = valid_cuts(events)
    if not cuts:
        return None
    suffix = [0] * (len(events) + 1)
    for i in range(len(events) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + costs[i]
    chosen = next((i for i in cuts if suffix[i] <= keep_tokens), cuts[-1])
    if keep_last_turn:
        users = [i for i in cuts if events[i].role == "user"]
        if users:
            chosen = min(chosen, users[-1])
    start = 1 if events and events[0].kind == "compaction" else 0
    if not any(e.kind in _SENT for e in events[start:chosen]):
        return None
    return chosen
