"""Session: the policy layer over one session's timeline.

HEAD selection, paths, context, compaction and lifecycle live here; the
core (``Timeline``) assigns ids and parents and frames commits; bytes live
in the backend. Safe to share between threads: appends are ordered by the
core and their syncs shared by the backend; the selection is guarded.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ._writers import WRITERS
from .backends.base import IndexEntry, SessionStorage
from .compaction import CompactionPolicy, check_flag, compact, summarize_branch
from .context import assemble_context
from .errors import (
    AgentlogError,
    CorruptionError,
    EventNotFound,
    InvalidEvent,
    InvalidName,
    ReadOnlySession,
    RecoveryWarning,
    SessionClosed,
    SessionExists,
    SessionLocked,
)
from .event import NIL_ID, Event, check_event_id, check_sidecar_name, format_timestamp, is_event_id
from .lifecycle import LAZY_IDS, check_meta, ensure_summary_text, fork_meta, meta_with_defaults, render_summary
from .providers import to_chat_messages, to_responses_input
from .providers_anthropic import to_anthropic_input
from .state import Checkpoint, state_record
from .summarize import ExtractiveSummarizer, Summarizer
from .sync import new_suffix
from .timeline import NewEvent, NewEventLike, Timeline, as_new_event, check_draft

if TYPE_CHECKING:
    from .store import Store  # the store imports this module

__all__ = ["Session"]

#: How many events a walk reads at first, and at most, per bulk read.
_FIRST_PAGE, _LAST_PAGE = 16, 4096


class Session:
    """One session's timeline, open for writing or read-only.

    Get one from ``Store.create`` or ``Store.open``; close it (or use it as
    a context manager) to release the writer's lease."""

    def __init__(self, store: Store, timeline: Timeline, *, lazy: bool = False) -> None:
        self._store = store
        self._timeline = timeline
        self._lock = threading.RLock()
        self._pending: str | None = None
        self._closed = False
        self._lazy = lazy
        #: Compaction policy and summarizer; set them to change the defaults.
        self.compaction = CompactionPolicy()
        self._summarizer: Summarizer | None = None

    # --- identity ---------------------------------------------------------------
    @property
    def id(self) -> str:
        return self._timeline.session_id

    @property
    def readonly(self) -> bool:
        return self.storage.readonly

    @property
    def head(self) -> str:
        """The id HEAD names durably (NIL_ID while the session is empty)."""
        self._check_open()
        return self.storage.head()

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran; every call that reads or writes the
        session then raises SessionClosed (docs/sessions.md)."""
        return self._closed

    @property
    def pending(self) -> str | None:
        """The event selected to be the next append's parent, if any."""
        return self._pending

    @property
    def next_parent(self) -> str:
        """The event the next append continues: the selected one, else HEAD.
        What a model is sent (``context()``, the provider views, ``state()``)
        ends here, so a reply is stored on the path it answers."""
        pending = self._pending
        return self.head if pending is None else pending

    @property
    def store(self) -> Store:
        """The store this session was opened from."""
        return self._store

    @property
    def storage(self) -> SessionStorage:
        """The backend's storage under this session (for tools that inspect it)."""
        return self._timeline.storage

    @property
    def warnings(self) -> list[str]:
        """What opening this session repaired on its own (torn tail, index)."""
        return list(self.storage.warnings)

    def __len__(self) -> int:
        self._check_open()
        # A SQL store keeps the count in a column: a hand-edited negative one
        # must not make len() itself fail (fsck reports the count).
        return max(self.storage.event_count(), 0)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed(self.id)

    def _check_writable(self) -> None:
        self._check_open()
        if self.readonly:
            raise ReadOnlySession(self.id)

    # --- writing ----------------------------------------------------------------
    def append(self, kind: str, record: Any = None, role: str | None = None) -> Event:
        """Append one event as a child of HEAD (or of the selected event).

        Returns once the event is durable (invariant 1)."""
        if self._closed:
            raise SessionClosed(self.id)
        check_draft(kind, record, role)
        with self._lock:
            if self._lazy and kind == "message" and role == "assistant":
                self.persist()
            selected, timeline = self._pending, self._timeline
            submitted = timeline.submit_one(kind, record, role, parent=selected)
            self._pending = None
        try:
            return timeline.run(submitted)[0]
        except BaseException:
            with self._lock:
                if self._pending is None:
                    self._pending = selected
            raise

    def append_many(self, items: Iterable[NewEventLike]) -> list[Event]:
        """Append a chain of events atomically: after a crash, all or none."""
        self._check_open()
        drafts = [as_new_event(item) for item in items]
        if not drafts:
            return []
        with self._lock:
            if self._lazy and any(d.kind == "message" and d.role == "assistant" for d in drafts):
                self.persist()
            # Submitted under the lock that the lazy gate switches under, so
            # no append can land in a buffer that was already copied.
            selected, timeline = self._pending, self._timeline
            submitted = timeline.submit(drafts, parent=selected)
            self._pending = None  # a selection is used up by exactly this append
        try:
            # Outside the lock: threads sharing this Session share one sync.
            return timeline.run(submitted)
        except BaseException:
            with self._lock:
                if self._pending is None:
                    self._pending = selected  # the selection still stands for a retry
            raise

    def import_events(self, events: Sequence[Event], source: Session | SessionStorage | None = None) -> list[Event]:
        """Append events that already have ids, parents and times (importers,
        bundles, copies between stores), as one all-or-nothing batch.

        Ids must sort after every id already in the session; a parent must
        be stored already or come earlier in ``events``. HEAD moves to the
        last one. Blob payloads (``record`` None with a digest) are read
        from ``source``, another session."""
        self._check_open()
        storage = source.storage if isinstance(source, Session) else source
        with self._lock:
            return self._timeline.import_events(list(events), storage)

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
                if not self.storage.contains(event_id):
                    raise EventNotFound(event_id, self.id)
            self._pending = event_id

    def checkout(self, event_id: str) -> None:
        """Move HEAD to ``event_id`` durably, appending no event."""
        self._check_open()
        with self._lock:
            self._timeline.checkout(event_id)
            self._pending = None

    # --- reading ----------------------------------------------------------------
    def event(self, event_id: str) -> Event:
        self._check_open()
        return self.storage.get(check_event_id(event_id))

    def __contains__(self, event_id: object) -> bool:
        self._check_open()
        return is_event_id(event_id) and self.storage.contains(str(event_id))

    def resolve(self, event: Event) -> Event:
        """The event with its blob payload loaded (and its digest verified)."""
        self._check_open()
        if event.loaded or event.digest is None:
            return event
        data = self.storage.get_blob(event.digest)
        try:
            return event.with_record(orjson.loads(data))
        except orjson.JSONDecodeError as exc:
            raise CorruptionError(f"blob {event.digest}", None, f"does not parse: {exc}") from None

    def walk(self, event_id: str | None = None) -> Iterator[Event]:
        """Events from ``event_id`` (default HEAD) back to the root, read in
        growing bulk pages so a short walk reads little and a long one few times."""
        self._check_open()
        current = self.head if event_id is None else check_event_id(event_id)
        page, seen, bound = _FIRST_PAGE, 0, len(self) + 1
        while current != NIL_ID:
            events = self.storage.ancestors(current, limit=page)
            if not events:
                raise EventNotFound(current, self.id)
            yield from events
            seen += len(events)
            if seen > bound:
                raise CorruptionError(
                    self.id, None, f"parent links loop at {current}, or the event count is wrong; see agentlog fsck"
                )
            current = events[-1].parent_id
            page = min(page * 2, _LAST_PAGE)

    def path(self, event_id: str | None = None) -> list[Event]:
        """Root to ``event_id`` (default HEAD), reading only that path."""
        self._check_open()
        current = self.head if event_id is None else check_event_id(event_id)
        if current == NIL_ID:
            return []
        events = self.storage.ancestors(current)
        events.reverse()
        return events

    def transcript(self) -> list[Event]:
        """The whole active path, root to HEAD: nothing dropped."""
        return self.path()

    def context(self, *, at: str | None = None, resolve: bool = False) -> list[Event]:
        """What the model gets: the latest compaction on the path (its summary),
        the events it kept, then everything after it. Without a compaction,
        the whole path. ``at`` is the path's last event (default: where the
        next append goes, ``next_parent``: HEAD, or the selected event).
        Blob payloads stay unloaded unless ``resolve``."""
        self._check_open()
        events = assemble_context(self.storage, self.next_parent if at is None else check_event_id(at), self.resolve)
        if resolve:
            events = [self.resolve(e) for e in events]
        return events

    def entries(self) -> list[IndexEntry]:
        """Every event's index entry (no payloads), in append order."""
        self._check_open()
        return list(self.storage.entries())

    def events(self) -> Iterator[Event]:
        """Every event of every branch, in append order, read as it goes
        (a payload kept in a blob stays unloaded: ``resolve`` loads one).
        What reads a whole session, as ``agentlog tree`` and the exports
        do, reads it in bulk this way rather than an ``event()`` at a time.
        Once the session is closed, the next step raises ``SessionClosed``,
        as every read does: the log is read no more."""
        self._check_open()
        return self._while_open(self.storage.events())

    def _while_open(self, events: Iterator[Event]) -> Iterator[Event]:
        while True:
            self._check_open()  # before the next read, which would open the log again
            event = next(events, None)
            if event is None:
                return
            yield event

    def children(self) -> dict[str, list[str]]:
        """Parent id -> child ids, for drawing the tree (reads the index only)."""
        tree: dict[str, list[str]] = {}
        for entry in self.entries():
            tree.setdefault(entry.parent_id, []).append(entry.id)
        return tree

    def refresh(self) -> None:
        """A read-only session catches up with its writer."""
        self._check_open()
        self.storage.refresh()

    def wait_for_commit(self, timeout: float) -> bool:
        """Block until a writer (in any process, on any machine the backend
        reaches) commits to this session, or ``timeout`` seconds pass; True
        if it did, and then this session has caught up. PostgreSQL is told
        (LISTEN); the other backends look every 50 ms."""
        self._check_open()
        changed = self.storage.wait_for_commit(timeout)
        if changed:
            self.storage.refresh()
        return changed

    # --- metadata ----------------------------------------------------------------
    @property
    def meta(self) -> dict[str, Any]:
        self._check_open()
        return self.storage.read_meta()

    def update_meta(self, **changes: Any) -> dict[str, Any]:
        """Change metadata fields atomically (unknown fields are kept);
        ``InvalidMeta`` before anything is written if one cannot be stored."""
        self._check_writable()
        check_meta(changes)
        with self._lock:
            meta = self.storage.read_meta()
            meta.update(changes)
            meta["updated_at"] = format_timestamp(time.time_ns())
            self.storage.write_meta(meta)
        return meta

    @property
    def meta_with_defaults(self) -> dict[str, Any]:
        return meta_with_defaults(self.meta)

    # --- lifecycle ---------------------------------------------------------------
    @property
    def persisted(self) -> bool:
        """False while a lazily created session lives only in memory."""
        return not self._lazy

    def persist(self) -> None:
        """Write a lazily created session to its store now (idempotent).

        Everything buffered moves in one all-or-nothing commit with ids,
        parents, times and HEAD unchanged, then the sidecars follow; the
        switch happens under the lock every append is submitted under."""
        self._check_open()
        with self._lock:
            if not self._lazy:
                return
            buffer = self._timeline.storage
            events = [buffer.get(entry.id) for entry in buffer.entries()]
            try:
                real = self._store.create_timeline(self.id, buffer.read_meta(), events, buffer, buffer.head())
            except (SessionExists, SessionLocked) as exc:
                # Another process took the id meanwhile (this one's creates
                # are refused while the id is reserved): say where the events are.
                held = "1 event is" if len(events) == 1 else f"{len(events):,} events are"
                exc.add_note(
                    f"this lazy session's {held} still in memory, in this Session: "
                    "session.fork() stores them under a new id"
                )
                raise
            try:
                for name in buffer.sidecar_names():
                    real.storage.write_sidecar(name, buffer.read_sidecar(name))
            except BaseException:
                WRITERS.release(self._store.url, self.id, real)
                try:
                    # Half a session would make the retry fail with SessionExists.
                    self._store.delete(self.id)
                except AgentlogError:
                    pass  # the first failure is the one to report
                raise
            self._timeline = real
            self._lazy = False
            buffer.close()
            LAZY_IDS.release(self._store.url, self.id, self)

    @property
    def title(self) -> str | None:
        meta = self.meta
        title = meta.get("title") or meta.get("name")
        return title if isinstance(title, str) else None

    def set_title(self, title: str | None) -> None:
        self.update_meta(title=title)

    def archive(self) -> None:
        self.update_meta(archived=True)

    def unarchive(self) -> None:
        self.update_meta(archived=False)

    def set_status(self, status: str) -> None:
        self.update_meta(status=status)

    def set_summary(
        self,
        summary: str | None = None,
        *,
        goal: str | None = None,
        completed: list[str] | str | None = None,
        decisions: list[str] | str | None = None,
        remaining: list[str] | str | None = None,
    ) -> str:
        """Replace the session summary (goal, completed work, decisions,
        remaining work); an agent tool can call this."""
        text, structured = render_summary(goal, completed, decisions, remaining)
        if summary is not None:
            text = summary
        self.update_meta(summary=text, summary_structured=structured if summary is None else None)
        return text

    def ensure_summary(self) -> str:
        """Set the fallback summary when none is set; return the summary."""
        current = self.meta.get("summary")
        if isinstance(current, str) and current:
            return current
        text = ensure_summary_text(self)
        if text:
            self.update_meta(summary=text)
        return text

    def fork(self, at: str | None = None, *, name: str | None = None, session_id: str | None = None) -> Session:
        """A new session holding the path to ``at`` (default HEAD).

        Records ``forked_from`` in its metadata; blobs are shared (hard
        links on files) or copied once, never decoded."""
        self._check_open()  # a closed handle's storage is closed: its blobs cannot be copied
        at = self.head if at is None else check_event_id(at)
        events = self.path(at) if at != NIL_ID else []
        fork: Session = self._store.create(
            session_id=session_id, events=events, source=self.storage, **fork_meta(self, at, name)
        )
        return fork

    # --- drafts and sidecars -------------------------------------------------------
    def read_sidecar(self, name: str) -> bytes | None:
        """A small named file kept with the session, or None."""
        self._check_open()
        return self.storage.read_sidecar(check_sidecar_name(name))

    def write_sidecar(self, name: str, data: bytes | None) -> None:
        """Replace (atomically) or with None remove a small named file."""
        self._check_writable()
        name = check_sidecar_name(name)
        if data is not None and not isinstance(data, bytes | bytearray | memoryview):
            # Checked here, once for every backend (one took a str, one made
            # bytes(5) of an int).
            raise InvalidName(f"sidecar {name!r}: its data must be bytes or None, not {type(data).__name__}")
        self.storage.write_sidecar(name, None if data is None else bytes(data))

    def draft(self) -> str | None:
        """Unsent user text saved with ``set_draft``, if any."""
        data = self.read_sidecar("draft.txt")
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptionError(f"session {self.id} draft.txt", exc.start, f"not UTF-8: {exc.reason}") from None

    def set_draft(self, text: str | None) -> None:
        """Save (atomically) or with None clear the unsent user text."""
        if text is None:
            self.write_sidecar("draft.txt", None)
            return
        if not isinstance(text, str):
            raise InvalidEvent(f"a draft is text, not {type(text).__name__}")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: not text any reader could show
            raise InvalidEvent(f"draft is not valid Unicode text at character {exc.start}: {exc.reason}") from None
        self.write_sidecar("draft.txt", data)

    @property
    def artifacts_dir(self) -> str | None:
        """The directory for this session's own files (file backend)."""
        self._check_open()
        return self.storage.artifacts_dir()

    # --- working context --------------------------------------------------------------
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
        if self.compaction.due(used_tokens, context_window):
            return self.compact(keep_tokens=self.compaction.keep_for(context_window), split_turn=split_turn)
        return None

    def summarize_branch(self, summarizer: Summarizer | None = None) -> Event | None:
        """After ``select()``, append a ``branch_summary`` of the abandoned branch."""
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
        the counts and spend the session recorded are not reset unseen."""
        for event in self.walk(self.next_parent):
            if event.kind != "state":
                continue
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
        with self._lock:
            return self.append_many(new_suffix(self, messages))

    # --- lifetime ----------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._lazy:
                LAZY_IDS.release(self._store.url, self.id, self)
            if self.readonly or self._lazy:
                self._timeline.close()
            else:
                WRITERS.release(self._store.url, self.id, self._timeline)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "r" if self.readonly else "w"
        if self._closed:
            return f"<Session {self.id} {mode} closed>"
        return f"<Session {self.id} {mode} head={self.head[:13]}>"
