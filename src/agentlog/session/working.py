"""The working context a harness drives: compaction and branch summaries
with their summarizer, turns saved with their checkpoint, the latest
checkpoint, the context in each provider's shape, and syncing a plain
message list."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..compaction import check_flag, compact, summarize_branch
from ..errors import InvalidEvent, RecoveryWarning
from ..event import Event
from ..providers import to_chat_messages, to_responses_input
from ..providers_anthropic import to_anthropic_input
from ..state import Checkpoint, state_record
from ..summarize import ExtractiveSummarizer, Summarizer
from ..sync import new_suffix
from ..timeline import NewEvent, NewEventLike, as_new_event
from .metadata import SessionMetadata

__all__ = ["SessionWorkingContext"]


class SessionWorkingContext(SessionMetadata):
    """What a harness asks of the session between model calls. The
    metadata part is its base because compaction reads the session through
    ``SessionView`` (metadata included)."""

    @property
    def summarizer(self) -> Summarizer:
        if self._summarizer is None:
            self._summarizer = ExtractiveSummarizer()
        return self._summarizer

    @summarizer.setter
    def summarizer(self, value: Summarizer | None) -> None:
        self._summarizer = value

    def compact(
        self, summarizer: Summarizer | None = None, *, keep_tokens: int | None = None, split_turn: bool = False
    ) -> Event | None:
        """Summarize older context into a ``compaction`` event (nothing deleted).

        The current turn is kept whole unless ``split_turn``: then a turn
        that alone costs more than ``keep_tokens`` (one request, many tool
        steps) is cut too, at an assistant step (``compaction.compact``)."""
        self._check_writable()  # before the summarizer, which may be a paid model call
        return compact(
            self,
            summarizer=summarizer or self.summarizer,
            keep_tokens=self.compaction.keep_tokens if keep_tokens is None else keep_tokens,
            split_turn=split_turn,
        )

    def maybe_compact(self, used_tokens: int, context_window: int, *, split_turn: bool = False) -> Event | None:
        """Compact when the policy says usage is high enough, keeping at most
        what fits the window (``CompactionPolicy.keep_for``)."""
        check_flag("split_turn", split_turn)
        self._check_open()  # whether or not it is due: a closed session says so every time
        if self.compaction.due(used_tokens, context_window):
            return self.compact(keep_tokens=self.compaction.keep_for(context_window), split_turn=split_turn)
        return None

    def summarize_branch(self, summarizer: Summarizer | None = None) -> Event | None:
        """After ``select()``, append a ``branch_summary`` of the abandoned branch."""
        self._check_writable()  # before the summarizer, which may be a paid model call
        return summarize_branch(self, summarizer=summarizer or self.summarizer)

    def save_turn(self, items: Iterable[NewEventLike], state: Checkpoint | dict[str, Any] | None = None) -> list[Event]:
        """Append a turn's events and its checkpoint state in one atomic batch."""
        drafts = [as_new_event(item) for item in items]
        if state is not None:
            drafts.append(NewEvent("state", state_record(state), "system"))
        return self.append_many(drafts)

    def state(self) -> Checkpoint:
        """The latest checkpoint on the path the next append continues
        (``next_parent``: HEAD, or the selected event; a fresh one if none).

        A ``state`` record that is not an object (another writer's, written
        by a plain append) is no checkpoint: it is passed over with a
        RecoveryWarning naming it, and the checkpoint before it counts, so
        the counts and spend the session recorded are not reset unseen.

        A turn's checkpoint is saved after its events, in the same batch
        (``save_turn``: a reply, its tool calls, then its state). When the
        path leaves such a batch before its state (``select(reply)``, the
        natural place to branch), the newest reply or tool event on the
        path has its checkpoint off the path: it is that event's own, and
        counts. Without it the reply's spend and counts would drop out of
        the branch that still holds the reply."""
        looked = False  # for the checkpoint saved with the newest turn event
        for event in self.walk(self.next_parent):
            if event.kind != "state":
                if looked or not _turn_event(event):
                    continue
                looked = True
                own = self._checkpoint_saved_with(event.id)
                if own is None:
                    continue
                event = own
            record = self.resolve(event).record
            if isinstance(record, Mapping):
                return Checkpoint.from_record(record)
            warnings.warn(
                RecoveryWarning(
                    f"session {self.id}: state event {event.id} holds {type(record).__name__}, not an object;"
                    " passed over for the checkpoint before it"
                ),
                stacklevel=2,
            )
        return Checkpoint()

    def _checkpoint_saved_with(self, event_id: str) -> Event | None:
        """The ``state`` event saved in one batch with ``event_id``, after
        it and its tool calls: the events of a batch are consecutive in
        append order, each the parent of the next."""
        if not self.storage.has_children(event_id):
            return None  # the common case, the path's end: no read
        if event_id not in self._saved_with:
            # Once an event has children, the events after it in append
            # order never change: the answer is kept, and the read of the
            # index (every entry up to it) made once per event and handle.
            self._saved_with[event_id] = self._find_saved_with(event_id)
        found = self._saved_with[event_id]
        return None if found is None else self.event(found)

    def _find_saved_with(self, event_id: str) -> str | None:
        at: str | None = None
        for entry in self.storage.entries():
            if at is None:
                at = entry.id if entry.id == event_id else None
                continue
            if entry.parent_id != at or entry.kind not in ("state", "tool_call"):
                return None
            if entry.kind == "state":
                return entry.id
            at = entry.id
        return None

    def to_chat_messages(self, system: str | None = None) -> list[dict[str, Any]]:
        """The context as OpenAI chat-completions messages (tool pairs kept whole)."""
        return to_chat_messages(self.context(resolve=True), system=system)

    def to_responses_input(self, system: str | None = None) -> list[dict[str, Any]]:
        """The context as OpenAI Responses API input items."""
        return to_responses_input(self.context(resolve=True), system=system)

    def to_anthropic_input(self, system: str | None = None) -> dict[str, Any]:
        """The context as Anthropic Messages API keyword arguments:
        ``messages``, and ``system`` when there is system text (``system``,
        then the context's system messages). ``**`` them into
        ``messages.create(model=..., max_tokens=..., ...)``."""
        return to_anthropic_input(self.context(resolve=True), system=system)

    def sync(self, messages: Sequence[Any]) -> list[Event]:
        """Append only the new suffix of a harness's plain message list.

        The list must start with what is saved (the context as chat
        messages; system messages are ignored, the system prompt is not
        durable). Otherwise ContextMismatch is raised and nothing written."""
        if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
            raise InvalidEvent(f"sync takes a list of chat messages, not a {type(messages).__name__}")
        with self._lock:
            return self.append_many(new_suffix(self, messages))


def _turn_event(event: Event) -> bool:
    """An event the agent loop saves with a checkpoint after it."""
    return event.kind in ("tool_call", "tool_result") or (event.kind == "message" and event.role == "assistant")
