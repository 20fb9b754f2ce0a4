"""sync(): keep a harness's plain message list and the timeline in step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import ContextMismatch
from .event import NIL_ID, Event
from .providers import (
    INTERRUPTED,
    as_message_dict,
    chat_messages_to_drafts,
    events_to_chat_messages,
    to_chat_messages,
)
from .timeline import NewEvent
from .view import SessionView

__all__ = ["new_suffix"]


Draft = tuple[str, Any, str | None]


def _as_events(drafts: Sequence[Draft]) -> list[Event]:
    return [Event(NIL_ID, NIL_ID, kind, role, "", record) for kind, record, role in drafts]


def new_suffix(session: SessionView, messages: Sequence[Any]) -> list[NewEvent]:
    """The drafts to append so the timeline matches ``messages``.

    Both sides are compared as chat messages after one normalizing round
    trip, so representation details (a pydantic object against a dict,
    missing optional fields) do not count as a mismatch; content does.
    The saved side is the faithful view of the context, or the repaired
    one ``to_chat_messages()`` renders (a synthetic result for a tool call
    left unanswered, thinking left out): a harness that built its list
    from either matches, and what the repair made up is never stored."""
    # Each item read as chat_messages_to_drafts reads it: anything that is
    # not a mapping or a pydantic message is InvalidEvent, before any write.
    per_message, incoming = _round_trip(messages)
    # Compared with the path the append continues (context()'s): after a
    # select(), the selected one, not HEAD's.
    context = session.context(resolve=True)
    faithful = events_to_chat_messages(context)
    if _is_prefix(faithful, incoming) and not any(
        m.get("role") == "tool" and m.get("content") == INTERRUPTED for one in incoming[len(faithful) :] for m in one
    ):
        # The common case, answered without rendering the repaired view: a
        # list that continues what is stored, holding no result a repair
        # made up among its new messages.
        return _drafts_after(per_message, len(faithful))
    repaired = [m for one in _round_trip(to_chat_messages(context))[1] for m in one]
    for saved in (repaired, faithful) if repaired != faithful else (faithful,):
        if _is_prefix(saved, incoming):
            return _drafts_after(per_message, len(saved))
    if len(incoming) < len(faithful):
        raise ContextMismatch(
            f"sync() got {len(incoming)} messages but {len(faithful)} are saved; a harness list may only grow"
        )
    i, mine, theirs = next(
        (i, [m], t) for i, (m, t) in enumerate(zip(faithful, incoming, strict=False)) if not _same(m, t)
    )
    raise ContextMismatch(
        f"sync() message {i} differs from the saved one "
        f"({mine[0].get('role')} vs {theirs[0].get('role') if theirs else None}); "
        "nothing was written"
    )


def _drafts_after(per_message: list[list[Draft]], saved: int) -> list[NewEvent]:
    """The new messages' drafts, past the ``saved`` ones, as events to append."""
    return [NewEvent(kind, record, role) for drafts in per_message[saved:] for kind, record, role in drafts]


def _round_trip(messages: Sequence[Any]) -> tuple[list[list[Draft]], list[list[dict[str, Any]]]]:
    """Each message (system ones left out) as drafts, and those drafts as
    the chat messages the faithful view gives back: one at a time, so each
    maps to its drafts (an assistant message with tool calls becomes
    several events)."""
    plain = [as_message_dict(m) for m in messages]
    plain = [m for m in plain if m.get("role") != "system"]
    names: dict[str, str] = {}  # call id -> tool name, carried across messages
    per_message = [chat_messages_to_drafts([m], names)[0] for m in plain]
    return per_message, [events_to_chat_messages(_as_events(d)) for d in per_message]


def _is_prefix(saved: list[dict[str, Any]], incoming: list[list[dict[str, Any]]]) -> bool:
    return len(incoming) >= len(saved) and all(_same(m, t) for m, t in zip(saved, incoming, strict=False))


def _same(saved: dict[str, Any], incoming: list[dict[str, Any]]) -> bool:
    """Whether a message matches its saved counterpart: the same message,
    where "" and null beside tool calls are the same empty text (the loop
    stores "", the provider view sends null)."""
    return [_comparable(saved)] == [_comparable(m) for m in incoming]


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("tool_calls") and message.get("content") == "":
        return {**message, "content": None}
    return message
