"""A session laid out for a document: the active path, then every other
branch from where it leaves what was already shown.

Markdown and HTML exports both render this. The layout comes from the
index alone (ids, parents, kinds); payloads are loaded one event at a time
as the document is written (``ExportView.load``), so exporting a session
of any size holds one payload at a time, not the session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import IndexEntry
from ..errors import CorruptionError, StorageError
from ..event import NIL_ID, Event
from ..metafields import labels_of
from ..session import Session
from ..shortid import short_ids
from .redact import Redactor
from .totals import Totals, totals

__all__ = ["Branch", "ExportView", "load_view"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Branch:
    """Events of one branch not shown before it, root side first; ``parent``
    is the event it leaves from (NIL_ID for a second root)."""

    parent: str
    events: tuple[str, ...]
    tip: str


@dataclass(slots=True)
class ExportView:
    session: Session
    redactor: Redactor | None
    id: str
    meta: dict[str, Any]
    head: str
    entries: dict[str, IndexEntry]
    order: tuple[str, ...]
    children: dict[str, tuple[str, ...]]
    active: tuple[str, ...]
    branches: tuple[Branch, ...]
    labels: dict[str, list[str]]
    totals: Totals
    shorts: dict[str, str]
    #: Event id -> why its payload (a blob) could not be read, for the
    #: events loaded so far. The event is still shown, marked, so one
    #: damaged payload never hides a session.
    unreadable: dict[str, str] = field(default_factory=dict)
    progress: Progress | None = None
    #: Events written so far, of how many the document will show (what
    #: ``progress`` is told; a Markdown export of the active path shows fewer).
    done: int = 0
    showing: int = 0

    @property
    def title(self) -> str:
        value = self.meta.get("title") or self.meta.get("name")
        return str(value) if value else f"session {self.id}"

    def payload(self, eid: str) -> Event:
        """Event ``eid`` with its payload loaded, as stored (not redacted);
        an unreadable payload is None, and noted in ``unreadable``."""
        stored = self.session.event(eid)
        try:
            return self.session.resolve(stored)
        except (CorruptionError, StorageError) as exc:
            # A blob missing or damaged (BlobIntegrityError too), or one the
            # OS would not read (its mode, a directory in its place): that
            # event is marked, named in a warning, and the rest is written.
            self.unreadable[eid] = str(exc)
            return stored.with_record(None)

    def load(self, eid: str) -> Event:
        """Event ``eid`` as the document shows it: loaded and redacted. Each
        shown event is loaded once, so the redactor counts each secret once."""
        event = self.payload(eid)
        if self.redactor is not None:
            event = event.with_record(self.redactor.value(event.record))
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.showing or len(self.order))
        return event


def _counted(entry: IndexEntry) -> bool:
    """Whether ``totals`` reads this event's record (no other is loaded for it)."""
    return entry.kind == "state" or (entry.kind == "message" and entry.role == "assistant")


def load_view(session: Session, *, redactor: Redactor | None = None, progress: Progress | None = None) -> ExportView:
    entries = {entry.id: entry for entry in session.entries()}
    order = tuple(entries)
    kids: dict[str, list[str]] = {}
    for eid in order:
        kids.setdefault(entries[eid].parent_id, []).append(eid)
    head = session.head
    active: list[str] = []
    on_path: set[str] = set()  # a list's `in` made this walk quadratic: 100,000 events took 100 s
    current = head
    while current in entries and current not in on_path:
        active.append(current)
        on_path.add(current)
        current = entries[current].parent_id
    if current != NIL_ID:
        # A parent that is no event of the session, or links that loop: an
        # export must not present what is left as the whole conversation.
        what = "loops back to" if current in entries else "names a missing event,"
        raise CorruptionError(
            session.id, None, f"the active path is broken: it {what} {current}; see 'agentlog fsck {session.id}'"
        )
    active.reverse()
    shown = set(active)
    branches: list[Branch] = []
    leaves = [eid for eid in order if eid not in kids and eid not in shown]
    for leaf in leaves:
        run: list[str] = []
        current = leaf
        while current in entries and current not in shown:
            run.append(current)
            current = entries[current].parent_id
        run.reverse()
        shown.update(run)
        parent = entries[run[0]].parent_id if run else NIL_ID
        branches.append(Branch(parent, tuple(run), leaf))
    meta = session.meta if redactor is None else redactor.meta(session.meta)
    # From the metadata as the document shows it: a label named like a
    # secret was printed whole in a redacted export's headers.
    labels: dict[str, list[str]] = {}
    for name, target in sorted(labels_of(meta).items()):
        labels.setdefault(target, []).append(name)
    view = ExportView(
        session=session,
        redactor=redactor,
        id=session.id,
        meta=meta,
        head=head,
        entries=entries,
        order=order,
        children={k: tuple(v) for k, v in kids.items()},
        active=tuple(active),
        branches=tuple(branches),
        labels=labels,
        totals=totals(()),
        shorts=short_ids(order),
        progress=progress,
    )
    # The totals head the document, so they are counted first, from the
    # few records they read (usage numbers: nothing a redactor would hide).
    view.totals = totals(view.payload(eid) for eid in active if _counted(entries[eid]))
    return view
