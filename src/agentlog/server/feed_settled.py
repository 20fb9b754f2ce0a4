"""Settled events read from the durable log, as feed items.

What a feed's catch-up sends after each look at the log, and what a
(re)connecting client is replayed before the live stream (``read_after``).
A damaged record becomes a ``problem`` in its place, never a gap nobody is
told of.
"""

from __future__ import annotations

import dataclasses
import logging

from .. import NIL_ID, CorruptionError, Session, Store
from .encode import event_json
from .feed_item import Item, problem_item

__all__ = ["Replay", "read_after", "settled_items"]

log = logging.getLogger("agentlog.server")


def settled_items(session: Session, ids: list[str]) -> list[Item]:
    """The ``settled`` items for ``ids`` with their records (blobs left for
    the client to fetch when opened) and HEAD as the session has it now,
    when they are read (events read together carry the same HEAD).

    An event whose record is damaged becomes a ``problem`` naming the file
    and offset, in its place (one for a run of events the same damage
    hides): the events around it still go out, and a client does not
    reconnect into the same damage forever."""
    head = session.head
    items: list[Item] = []
    damaged: list[str] = []  # consecutive ids that failed with the same error
    reason = ""

    def flush() -> None:
        if damaged:
            which = (
                f"event {damaged[0]}" if len(damaged) == 1 else f"{len(damaged)} events, {damaged[0]} to {damaged[-1]},"
            )
            log.warning("session %s: %s cannot be read: %s", session.id, which, reason)
            items.append(problem_item(f"{which} cannot be read: {reason}"))
            damaged.clear()

    for event_id in ids:
        try:
            document = event_json(session.event(event_id))
        except CorruptionError as exc:
            message = f"{type(exc).__name__}: {exc}"
            if message != reason:
                flush()
                reason = message
            damaged.append(event_id)
            continue
        flush()
        document["head"] = head
        items.append(Item("settled", event_id, document))
    flush()
    return items


@dataclasses.dataclass
class Replay:
    """What a (re)connecting client gets before the live stream."""

    items: list[Item]  #: the settled events after ``after``, in append order
    head: str
    last: str  #: the id of the last settled event ("" for an empty session)
    after: str  #: the id the live stream goes on from ("" for the start)
    problems: list[Item]  #: what the client must be told: damage found, an unknown id


def read_after(store: Store, session_id: str, after: str | None) -> Replay:
    """The replay a (re)connecting client gets: every settled event after
    ``after`` in append order (none when ``after`` is None).

    An ``after`` that is not an event of this session (a session deleted
    and made again, an id of another session) cannot be placed in the
    log: the client is told so in a ``problem`` and gets the whole session.
    Warnings of the reader (a log rebuilt after damage) are ``problem``s too."""
    with store.open(session_id, readonly=True) as session:
        ids = [e.id for e in session.entries()]
        last = ids[-1] if ids else ""
        problems = [problem_item(f"session {session_id}: {warning}") for warning in session.warnings]
        if after is None:
            return Replay([], session.head, last, last, problems)
        if after != NIL_ID and after not in set(ids):
            problems.append(
                problem_item(
                    f"event {after} (Last-Event-ID or ?after=) is not an event of session {session_id}: "
                    "the whole session is replayed"
                )
            )
            after = NIL_ID
        fresh = [i for i in ids if i > after]  # ids strictly increase in append order
        return Replay(settled_items(session, fresh), session.head, last, max(after, last), problems)
