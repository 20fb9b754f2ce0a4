"""Writing what a builder built: the pending events as one all-or-nothing
batch (``store.create(events=...)`` for a new session,
``session.import_events`` for an existing one); the last flush of a run
then records, in the session's metadata, how far each source file was
consumed, dates the session by its source, and refreshes the session's
import cache (index_cache.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from ...event import format_timestamp
from ...lifecycle import check_meta
from ...metafields import labels_of
from ...session import Session
from ..index_cache import save_rows, slim_record
from .base import META_KEY
from .loading import BuilderLoading

__all__ = ["BuilderWriting"]


class BuilderWriting(BuilderLoading):
    """The flush of pending events and bookkeeping, and the session's release."""

    def flush(self, final: bool = True) -> None:
        """Write the pending events (all or nothing), then, if ``final``,
        the files' states and metadata changes. A crash in between leaves
        the states behind the events; the next import then finds those
        lines already held (``seen_lines``, keys) and skips them."""
        self.ensure_loaded()
        events = [p.to_event() for p in self.pending]
        meta: dict[str, Any] = {"format": self.format, "source_id": self.source_id, "files": self.files}
        # An imported session is dated by its source, as a copy keeps its
        # source's dates: created when its first line was written, updated
        # when its newest was (or when agentlog last changed it, if later).
        newest = max((p.ts_ns for p in self.pending), default=0)
        if self.session is None:
            first = min((p.ts_ns for p in self.pending), default=0)
            extra: dict[str, Any] = {**self.create_meta, **self.meta_changes, META_KEY: meta}
            if self.label_changes:
                extra["labels"] = apply_labels({}, self.label_changes.values())
            if first:
                extra.setdefault("created_at", format_timestamp(first))
                extra["updated_at"] = format_timestamp(newest)
            # No working_dir: creating with one leaves a --continue breadcrumb,
            # and an imported session should not become what `continue` opens.
            self.session = self.store.create(
                name=extra.pop("name", None),
                model=extra.pop("model", None),
                session_id=self.session_id,
                events=events,
                **extra,
            )
            self.meta_changes.clear()
            self.label_changes.clear()
            self.dated_ns = newest
        else:
            if events:
                self.session.import_events(events)
            self.dated_ns = max(self.dated_ns, newest)
            if final:
                # What the source says of the session (model, directory,
                # version) fills only what is still unset: a live file's
                # first pass may not have had it, and a value set since,
                # by an earlier pass or by hand, stays. One write, dated by
                # the source as a copy is (update_meta would date it now).
                # Under the session's metadata lock, as update_meta takes it:
                # another handle of this process may change it meanwhile.
                with self.session._timeline.meta_lock:
                    stored = self.session.storage.read_meta()
                    unset = {k: v for k, v in self.create_meta.items() if v is not None and stored.get(k) is None}
                    changes = {META_KEY: meta, **unset, **self.meta_changes}
                    if self.label_changes:
                        changes["labels"] = apply_labels(labels_of(stored), self.label_changes.values())
                    check_meta(changes)
                    stored.update(changes)
                    if self.dated_ns:
                        stored["updated_at"] = format_timestamp(self.dated_ns)
                    self.session.storage.write_meta(stored)
                self.meta_changes.clear()
                self.label_changes.clear()
        if final and self.session is not None and self.dated_ns:
            # Last: the event and metadata writes above dated the index now.
            self.session.storage.set_updated_ns(self.dated_ns)
        self.rows.extend([p.id, p.parent_id, p.kind, slim_record(p.kind, p.record)] for p in self.pending)
        if final and self.session is not None:
            save_rows(self.session, self.rows)
        self.pending.clear()
        self.by_id.clear()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def release(self) -> None:
        """Close the session (its lease, its files, its connection), keeping
        the maps: an import of a thousand sessions must not hold a thousand
        open. ``ensure_loaded`` opens it again for writing, ``stored`` for
        reading a path to copy."""
        if self.session is not None:
            self.released_at = self.session.storage.last_id()
            self.session.close()
            self.session = None
            self.existing = self.released = True

    @contextlib.contextmanager
    def stored(self) -> Iterator[Session]:
        """The session to read from: the open one, else opened read-only for the while."""
        if self.session is not None:
            yield self.session
            return
        with self.store.open(self.session_id, readonly=True) as session:
            yield session


def apply_labels(labels: dict[str, str], changes: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """``labels`` (name -> event id) after the source's label changes. A
    change takes the event's old names away first: pi keeps one label an
    entry, and a label entry with no label clears it. A name set by hand
    (``agentlog label``) on another event stays unless the source reuses it."""
    labels = dict(labels)
    for target, name in changes:
        labels = {k: v for k, v in labels.items() if v != target}
        if name is not None:
            labels[name] = target
    return labels
