"""Session: the policy layer over one session's storage.

Branching, HEAD selection, paths and context live here; bytes live in
the backend. Safe to share between threads: appends are serialized (and
their syncs shared) by the storage, and the pending selection is guarded.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Iterator, Mapping, Sequence

import orjson

from .backends.base import Draft, IndexEntry, SessionStorage
from .errors import CorruptionError, EventNotFound, SessionClosed
from .event import (
    NIL_ID,
    Event,
    check_event_id,
    check_kind,
    check_record,
    check_role,
)

__all__ = ["Session"]

DraftLike = Draft | tuple | Mapping[str, Any]


def make_draft(item: DraftLike) -> Draft:
    """A Draft from a Draft, a (kind, record[, role]) tuple or a mapping."""
    if isinstance(item, Draft):
        kind, record, role = item.kind, item.record, item.role
    elif isinstance(item, tuple) and len(item) in (2, 3):
        kind, record, role = item if len(item) == 3 else (*item, None)
    elif isinstance(item, Mapping):
        kind, record, role = item.get("kind"), item.get("record"), item.get("role")
    else:
        raise TypeError(f"cannot make an event of {type(item).__name__}")
    check_kind(kind)
    check_role(role)
    check_record(record)
    return Draft(kind, record, role)


class Session:
    """One session's timeline, open for writing or read-only.

    Get one from ``Store.create`` or ``Store.open``; close it (or use it as
    a context manager) to release the writer's lease."""

    def __init__(self, store: Any, storage: SessionStorage, *, lazy: bool = False) -> None:
        from .compaction import CompactionPolicy

        self._store = store
        self._storage = storage
        self._lock = threading.RLock()
        self._pending: str | None = None
        self._closed = False
        self._lazy = lazy
        #: Compaction policy and summarizer; set them to change the defaults.
        self.compaction = CompactionPolicy()
        self._summarizer: Any = None

    # --- identity ---------------------------------------------------------------
    @property
    def id(self) -> str:
        return self._storage.session_id

    @property
    def readonly(self) -> bool:
        return self._storage.readonly

    @property
    def head(self) -> str:
        """The id HEAD names durably (NIL_ID while the session is empty)."""
        return self._storage.head()

    @property
    def pending(self) -> str | None:
        """The event selected to be the next append's parent, if any."""
        return self._pending

    @property
    def store(self) -> Any:
        return self._store

    @property
    def storage(self) -> SessionStorage:
        return self._storage

    @property
    def warnings(self) -> list[str]:
        """What opening this session repaired on its own (torn tail, index)."""
        return list(getattr(self._storage, "warnings", []))

    def __len__(self) -> int:
        return self._storage.event_count()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed(self.id)

    # --- writing ----------------------------------------------------------------
    def append(self, kind: str, record: Any = None, role: str | None = None) -> Event:
        """Append one event as a child of HEAD (or of the selected event).

        Returns once the event is durable (invariant 1)."""
        return self.append_many([Draft(kind, record, role)])[0]

    def append_many(self, items: Iterable[DraftLike]) -> list[Event]:
        """Append a chain of events atomically: after a crash, all or none."""
        self._check_open()
        drafts = [make_draft(item) for item in items]
        if not drafts:
            return []
        with self._lock:
            if self._lazy and any(d.kind == "message" and d.role == "assistant" for d in drafts):
                self.persist()
            parent, branch_from = self._parent_for_append()
            if parent is not None:
                # A pinned parent is used up by exactly this append.
                events = self._storage.append(drafts, parent=parent, branch_from=branch_from)
                self._pending = None
                return events
            self._pending = None  # a selection of HEAD itself is used up too
        # Outside the lock, so threads sharing this Session share one fsync
        # (group commit); the storage gives HEAD at commit as the parent.
        return self._storage.append(drafts)

    def import_events(self, events: Sequence[Event], source: Any = None) -> list[Event]:
        """Append events that already have ids, parents and times (importers,
        bundles, copies between stores), as one all-or-nothing batch.

        Ids must sort after every id already in the session; a parent must
        be stored already or come earlier in ``events``. HEAD moves to the
        last one. Blob payloads (``record`` None with a digest) are read
        from ``source``, another session."""
        self._check_open()
        src = source.storage if isinstance(source, Session) else source
        with self._lock:
            return self._storage.append_existing(list(events), source=src)

    def _parent_for_append(self) -> tuple[str | None, str | None]:
        """(parent, branch_from) for the next append; parent None = HEAD at commit.

        A selected event that already has children is pinned as the parent
        and named by branch_from. Following HEAD, the storage marks the
        branch at commit (HEAD moved by a checkout to an event with children),
        since only then is it known which event HEAD is."""
        selected = self._pending
        if selected is None or selected == self.head:
            return None, None
        if selected != NIL_ID and self._storage.has_children(selected):
            return selected, selected
        if selected == NIL_ID and len(self) > 0:
            return selected, selected
        return selected, None

    def select(self, event_id: str | None) -> None:
        """Make ``event_id`` the parent of the next append, without moving HEAD.

        Two-phase branching: HEAD moves only when that append happens.
        ``select(None)`` drops the selection."""
        self._check_open()
        with self._lock:
            if event_id is None:
                self._pending = None
                return
            if event_id != NIL_ID:
                check_event_id(event_id)
                if not self._storage.contains(event_id):
                    raise EventNotFound(event_id, self.id)
            self._pending = event_id

    def checkout(self, event_id: str) -> None:
        """Move HEAD to ``event_id`` durably, appending no event."""
        self._check_open()
        if event_id != NIL_ID:
            check_event_id(event_id)
        with self._lock:
            self._storage.set_head(event_id)
            self._pending = None

    # --- reading ----------------------------------------------------------------
    def event(self, event_id: str) -> Event:
        self._check_open()
        check_event_id(event_id)
        return self._storage.get(event_id)

    def __contains__(self, event_id: object) -> bool:
        return isinstance(event_id, str) and self._storage.contains(event_id)

    def resolve(self, event: Event) -> Event:
        """The event with its blob payload loaded (and its digest verified)."""
        self._check_open()
        if event.loaded:
            return event
        data = self._storage.load_blob(event.digest)
        try:
            return event.with_record(orjson.loads(data))
        except orjson.JSONDecodeError as exc:
            raise CorruptionError(f"blob {event.digest}", None, f"does not parse: {exc}") from None

    def walk(self, event_id: str | None = None) -> Iterator[Event]:
        """Events from ``event_id`` (default HEAD) back to the root."""
        self._check_open()
        current = self.head if event_id is None else check_event_id(event_id)
        seen = 0
        limit = len(self) + 1
        while current != NIL_ID:
            event = self._storage.get(current)
            yield event
            current = event.parent_id
            seen += 1
            if seen > limit:
                raise CorruptionError(self.id, None, f"parent links loop at {current}")

    def path(self, event_id: str | None = None) -> list[Event]:
        """Root to ``event_id`` (default HEAD), reading only that path."""
        events = list(self.walk(event_id))
        events.reverse()
        return events

    def transcript(self) -> list[Event]:
        """The whole active path, root to HEAD: nothing dropped."""
        return self.path()

    def context(self, *, resolve: bool = False) -> list[Event]:
        """What the model gets: the latest compaction on the path (its summary),
        the events it kept, then everything after it. Without a compaction,
        the whole path. Blob payloads stay unloaded unless ``resolve``."""
        from .context import assemble_context

        events = assemble_context(self.walk(), self.resolve)
        if resolve:
            events = [self.resolve(e) for e in events]
        return events

    def entries(self) -> list[IndexEntry]:
        """Every event's index entry (no payloads), in append order."""
        self._check_open()
        return list(self._storage.entries())

    def children(self) -> dict[str, list[str]]:
        """Parent id -> child ids, for drawing the tree (reads the index only)."""
        tree: dict[str, list[str]] = {}
        for entry in self.entries():
            tree.setdefault(entry.parent_id, []).append(entry.id)
        return tree

    def refresh(self) -> None:
        """A read-only session catches up with its writer."""
        self._check_open()
        self._storage.refresh()

    # --- metadata ----------------------------------------------------------------
    @property
    def meta(self) -> dict[str, Any]:
        return self._storage.read_meta()

    def update_meta(self, **changes: Any) -> dict[str, Any]:
        """Change session.json fields atomically (unknown fields are kept)."""
        self._check_open()
        from .event import format_timestamp
        import time

        with self._lock:
            meta = self._storage.read_meta()
            meta.update(changes)
            meta["updated_at"] = format_timestamp(time.time_ns())
            self._storage.write_meta(meta)
        return meta

    @property
    def meta_with_defaults(self) -> dict[str, Any]:
        from .lifecycle import meta_with_defaults

        return meta_with_defaults(self.meta)

    # --- lifecycle ---------------------------------------------------------------
    @property
    def persisted(self) -> bool:
        """False while a lazily created session lives only in memory."""
        return not self._lazy

    def persist(self) -> None:
        """Write a lazily created session to disk now (idempotent)."""
        self._check_open()
        with self._lock:
            if self._lazy:
                from .lifecycle import persist

                persist(self)
                self._lazy = False

    @property
    def title(self) -> str | None:
        meta = self.meta
        return meta.get("title") or meta.get("name")

    def set_title(self, title: str | None) -> None:
        self.update_meta(title=title)

    def archive(self) -> None:
        self.update_meta(archived=True)

    def unarchive(self) -> None:
        self.update_meta(archived=False)

    def set_status(self, status: str) -> None:
        self.update_meta(status=status)

    def set_summary(self, summary: str | None = None, *, goal: str | None = None,
                    completed: Any = None, decisions: Any = None, remaining: Any = None) -> str:
        """Replace the session summary (goal, completed work, decisions,
        remaining work); an agent tool can call this."""
        from .lifecycle import render_summary

        text, structured = render_summary(goal, completed, decisions, remaining)
        if summary is not None:
            text = summary
        self.update_meta(summary=text, summary_structured=structured if summary is None else None)
        return text

    def ensure_summary(self) -> str:
        """Set the fallback summary when none is set; return the summary."""
        from .lifecycle import ensure_summary_text

        current = self.meta.get("summary")
        if current:
            return current
        text = ensure_summary_text(self)
        if text:
            self.update_meta(summary=text)
        return text

    def fork(self, at: str | None = None, *, name: str | None = None,
             session_id: str | None = None) -> "Session":
        """A new session holding the path to ``at`` (default HEAD).

        Records ``forked_from`` in its metadata; blobs are hard-linked
        (or copied once across file systems), not read."""
        from .lifecycle import fork_meta

        at = self.head if at is None else check_event_id(at)
        events = self.path(at) if at != NIL_ID else []
        return self._store.create(session_id=session_id, events=events, source=self._storage,
                                  **fork_meta(self, at, name))

    # --- drafts and artifacts ------------------------------------------------------
    def draft(self) -> str | None:
        """Unsent user text saved with ``set_draft``, if any."""
        data = self._storage.read_sidecar("draft.txt")
        return None if data is None else data.decode("utf-8")

    def set_draft(self, text: str | None) -> None:
        """Save (atomically) or with None clear the unsent user text."""
        self._check_open()
        self._storage.write_sidecar("draft.txt", None if text is None else text.encode("utf-8"))

    @property
    def artifacts_dir(self) -> str | None:
        """The directory for this session's sidecar files (file backend)."""
        return self._storage.artifacts_dir()

    # --- working context --------------------------------------------------------------
    @property
    def summarizer(self) -> Any:
        if self._summarizer is None:
            from .summarize import ExtractiveSummarizer

            self._summarizer = ExtractiveSummarizer()
        return self._summarizer

    @summarizer.setter
    def summarizer(self, value: Any) -> None:
        self._summarizer = value

    def compact(self, summarizer: Any = None, *, keep_tokens: int | None = None) -> Event | None:
        """Summarize older context into a ``compaction`` event (nothing deleted)."""
        from .compaction import compact

        return compact(self, summarizer=summarizer, keep_tokens=keep_tokens)

    def maybe_compact(self, used_tokens: int, context_window: int) -> Event | None:
        """Compact when the policy says usage is high enough."""
        if self.compaction.due(used_tokens, context_window):
            return self.compact()
        return None

    def summarize_branch(self, summarizer: Any = None) -> Event | None:
        """After ``select()``, append a ``branch_summary`` of the abandoned branch."""
        from .compaction import summarize_branch

        return summarize_branch(self, summarizer=summarizer)

    def save_turn(self, items: Iterable[DraftLike], state: Any = None) -> list[Event]:
        """Append a turn's events and its checkpoint state in one atomic batch."""
        drafts = [make_draft(item) for item in items]
        if state is not None:
            record = state.to_record() if hasattr(state, "to_record") else state
            drafts.append(Draft("state", record, "system"))
        return self.append_many(drafts)

    def state(self) -> Any:
        """The latest checkpoint on the active path (a fresh one if none)."""
        from .state import Checkpoint

        for event in self.walk():
            if event.kind == "state":
                return Checkpoint.from_record(self.resolve(event).record)
        return Checkpoint()

    def to_chat_messages(self, system: str | None = None) -> list[dict[str, Any]]:
        """The context as OpenAI chat-completions messages (tool pairs kept whole)."""
        from .providers import to_chat_messages

        return to_chat_messages(self.context(resolve=True), system=system)

    def to_responses_input(self, system: str | None = None) -> list[dict[str, Any]]:
        """The context as OpenAI Responses API input items."""
        from .providers import to_responses_input

        return to_responses_input(self.context(resolve=True), system=system)

    def sync(self, messages: Sequence[Any]) -> list[Event]:
        """Append only the new suffix of a harness's plain message list.

        The list must start with what is saved (the context as chat
        messages; system messages are ignored, the system prompt is not
        durable). Otherwise ContextMismatch is raised and nothing written."""
        from .sync import new_suffix

        with self._lock:
            return self.append_many(new_suffix(self, messages))

    # --- lifetime ----------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._storage.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "r" if self.readonly else "w"
        return f"<Session {self.id} {mode} head={self.head[:13]}>"
