"""Context assembly: which events of the active path reach the model."""

from __future__ import annotations

from collections.abc import Callable

from .event import NIL_ID, Event
from .view import PathReader

__all__ = ["assemble_context"]


def assemble_context(reader: PathReader, from_id: str, resolve: Callable[[Event], Event]) -> list[Event]:
    """The model's context for the path ending at ``from_id``, in order.

    One bulk read back to the latest compaction on the path, then one more
    only as far back as the compaction's ``first_kept_event_id``, so the
    cost is the context's size, not the history's. Result: the compaction
    (as the summary), the events it kept (but an earlier compaction among
    them), then everything after it."""
    if from_id == NIL_ID:
        return []
    newest = reader.ancestors(from_id, until_kind="compaction")
    if not newest or newest[-1].kind != "compaction":
        newest.reverse()
        return newest
    compaction = newest.pop()
    if not compaction.loaded:
        compaction = resolve(compaction)  # a summary big enough for a blob
    record = compaction.record if isinstance(compaction.record, dict) else {}
    keep_from = record.get("first_kept_event_id")
    kept: list[Event] = []
    # A kept id that cannot be on the path (none such, or not below the
    # compaction's parent: ids grow from parent to child) keeps nothing
    # without walking: the walk went to the root to find it absent (a
    # compaction appended by hand with a stale id made every context() of
    # an 800,000-event session a second long).
    if (
        isinstance(keep_from, str)
        and compaction.parent_id != NIL_ID
        and keep_from <= compaction.parent_id
        and reader.contains(keep_from)
    ):
        kept = reader.ancestors(compaction.parent_id, until_id=keep_from)
        if not kept or kept[-1].id != keep_from:
            kept = []  # the kept id is not on this path: keep nothing
        # An earlier compaction among the kept events is not sent again: this
        # one's summary updates it (previous_compaction_id), and the events
        # it stood for are this summary's or kept verbatim.
        kept = [e for e in kept if e.kind != "compaction"]
    kept.reverse()
    newest.reverse()
    return [compaction, *kept, *newest]
