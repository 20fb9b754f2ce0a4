"""Appending to a LangGraph thread's session, its index kept in step.

Channel values and pending writes go on the side chain (its own root), a
checkpoint on its parent checkpoint's event. A value is serialized and
stored only if the thread does not hold its bytes already (by digest); a
list is stored element by element and referred to as a delta on the
parent's list where that is shorter (``_lg_refs``).
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import ChannelVersions
from langgraph.checkpoint.serde.base import SerializerProtocol

from .. import NIL_ID
from ._lg_refs import delta_or_full
from ._lg_thread import CHECKPOINT, VALUE, Stored, Thread, Typed, index_checkpoint, lookup_in, pack, value_digest

__all__ = ["append_checkpoint", "append_side", "store_values"]


def append_side(thread: Thread, drafts: list[tuple[str, Any, None]]) -> list[str]:
    """Append events to the values/writes chain; their ids."""
    session = thread.session
    session.select(thread.side_tail)
    events = session.append_many(drafts)
    thread.side_tail = events[-1].id
    thread.indexed += len(events)
    return [e.id for e in events]


def store_values(
    serde: SerializerProtocol,
    thread: Thread,
    values: dict[str, Any],
    channel_versions: ChannelVersions,
    new_versions: ChannelVersions,
    *,
    ns: str,
    parent_id: str | None,
    inherited: dict[str, Any],
) -> tuple[dict[str, Any], list[str]]:
    """Store a checkpoint's changed channel ``values`` the thread lacks. The
    checkpoint record's reference for each channel, and the digests of the
    values first stored here."""
    refs: dict[str, Any] = {}
    new: dict[str, Typed] = {}  # digest -> serialized value, not yet stored
    staged: list[str] = []  # channels whose refs still name digests
    for channel in channel_versions:
        if channel not in new_versions:
            if channel in inherited:
                refs[channel] = inherited[channel]  # unchanged: the parent's value
            continue
        if channel not in values:
            refs[channel] = None
            continue
        value = values[channel]
        if type(value) is list and value:
            # A list (messages...) is stored element by element, so a
            # list that grows by one stores one new element, not itself again.
            refs[channel] = {"items": [_stage(serde, thread, new, item) for item in value]}
        else:
            refs[channel] = [_stage(serde, thread, new, value)]
        staged.append(channel)
    if new:
        ids = append_side(thread, [(VALUE, pack(t), None) for t in new.values()])
        for event_id, digest in zip(ids, new, strict=True):
            thread.digests[digest] = event_id
    lookup = lookup_in(thread)
    for channel in staged:
        ref = refs[channel]
        if isinstance(ref, dict):
            # Against the parent's list: only what changed goes in this record.
            item_ids = [thread.digests[d] for d in ref["items"]]
            base = (ns, str(parent_id), channel)
            refs[channel] = delta_or_full(item_ids, base, inherited.get(channel), lookup)
        else:
            refs[channel] = [thread.digests[ref[0]], ref[0]]
    return refs, list(new)


def _stage(serde: SerializerProtocol, thread: Thread, new: dict[str, Typed], value: Any) -> str:
    """Serialize ``value``; queue it for storage unless the thread has it. Its digest."""
    typed = serde.dumps_typed(value)
    digest = value_digest(typed)
    if digest not in thread.digests:
        new.setdefault(digest, typed)
    return digest


def append_checkpoint(thread: Thread, parent: Stored | None, record: dict[str, Any]) -> None:
    """Append a checkpoint record on its parent's event (a root without one)."""
    session = thread.session
    session.select(parent.event_id if parent is not None else NIL_ID)
    event = session.append(CHECKPOINT, record)
    thread.indexed += 1
    index_checkpoint(thread, event.id, record)
