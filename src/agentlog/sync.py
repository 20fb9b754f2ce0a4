"""sync(): keep a harness's plain message list and the timeline in step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import ContextMismatch
from .event import NIL_ID, Event
from .providers import as_message_dict, chat_messages_to_drafts, events_to_chat_messages
from .timeline import NewEvent
from .view import SessionView

__all__ = ["new_suffix"]


def _as_events(drafts: Sequence[tuple[str, Any, str | None]]) -> list[Event]:
    return [Event(NIL_ID, NIL_ID, kind, role, "", record) for kind, record, role in drafts]


def new_suffix(session: SessionView, messages: Sequence[Any]) -> list[NewEvent]:
    """The drafts to append so the timeline matches ``messages``.

    Both sides are compared as chat messages after one normalizing round
    trip, so representation details (a pydantic object against a dict,
    missing optional fields) do not count as a mismatch; content does."""
    # Each item read as chat_messages_to_drafts reads it: anything that is
    # not a mapping or a pydantic message is InvalidEvent, before any write.
    plain = [as_message_dict(m) for m in messages]
    plain = [m for m in plain if m.get("role") != "system"]
    # One message at a time, so each incoming message maps to its drafts
    # (an assistant message with tool calls becomes several events).
    names: dict[str, str] = {}  # call id -> tool name, carried across messages
    per_message = [chat_messages_to_drafts([m], names)[0] for m in plain]
    incoming = [events_to_chat_messages(_as_events(d)) for d in per_message]
    # Compared with the path the append continues (context()'s): after a
    # select(), the selected one, not HEAD's.
    saved = events_to_chat_messages(session.context(resolve=True))
    if len(incoming) < len(saved):
        raise ContextMismatch(
            f"sync() got {len(incoming)} messages but {len(saved)} are saved; a harness list may only grow"
        )
    for i, (mine, theirs) in enumerate(zip(saved, incoming, strict=False)):  # incoming may be longer
        if [mine] != theirs:
            raise ContextMismatch(
                f"sync() message {i} differs from the saved one "
                f"({mine.get('role')} vs {theirs[0].get('role') if theirs else None}); "
                "nothing was written"
            )
    return [NewEvent(kind, record, role) for drafts in per_message[len(saved) :] for kind, record, role in drafts]
