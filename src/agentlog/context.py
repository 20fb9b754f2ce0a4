"""Context assembly: which events of the active path reach the model."""

from __future__ import annotations

from typing import Callable, Iterable

from .event import Event

__all__ = ["assemble_context"]


def assemble_context(walk: Iterable[Event], resolve: Callable[[Event], Event]) -> list[Event]:
    """From a walk HEAD -> root, the model's context in order.

    The walk stops at the latest compaction on the path, then continues
    only as far back as the compaction's ``first_kept_event_id``, so the
    cost is the context's size, not the history's. Result: the compaction
    (as the summary), the events it kept, then everything after it."""
    after: list[Event] = []
    walker = iter(walk)
    for event in walker:
        if event.kind != "compaction":
            after.append(event)
            continue
        if not event.loaded:
            event = resolve(event)  # a summary big enough for a blob
        record = event.record if isinstance(event.record, dict) else {}
        keep_from = record.get("first_kept_event_id")
        kept: list[Event] = []
        if keep_from:
            for older in walker:
                kept.append(older)
                if older.id == keep_from:
                    break
            else:
                kept = []  # the kept id is not on this path: keep nothing
        kept.reverse()
        after.reverse()
        return [event, *kept, *after]
    after.reverse()
    return after
