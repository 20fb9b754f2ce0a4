"""A session laid out for a document: the active path, then every other
branch from where it leaves what was already shown.

Markdown and HTML exports both render this; it loads every payload (with
the redactor applied, if any) once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CorruptionError
from ..event import NIL_ID, Event
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


@dataclass(frozen=True, slots=True)
class ExportView:
    id: str
    meta: dict[str, Any]
    head: str
    events: dict[str, Event]
    order: tuple[str, ...]
    children: dict[str, tuple[str, ...]]
    active: tuple[str, ...]
    branches: tuple[Branch, ...]
    labels: dict[str, list[str]]
    totals: Totals
    shorts: dict[str, str]
    #: Event id -> why its payload (a blob) could not be read. The event is
    #: still shown, marked, so one damaged payload never hides a session.
    unreadable: dict[str, str]

    @property
    def title(self) -> str:
        value = self.meta.get("title") or self.meta.get("name")
        return str(value) if value else f"session {self.id}"


def load_view(session: Session, *, redactor: Redactor | None = None, progress: Progress | None = None) -> ExportView:
    entries = session.entries()
    events: dict[str, Event] = {}
    unreadable: dict[str, str] = {}
    for n, entry in enumerate(entries):
        stored = session.event(entry.id)
        try:
            event = session.resolve(stored)
        except CorruptionError as exc:  # a blob missing or damaged (BlobIntegrityError too)
            unreadable[stored.id] = str(exc)
            event = stored.with_record(None)
        if redactor is not None:
            event = event.with_record(redactor.value(event.record))
        events[event.id] = event
        if progress is not None:
            progress(n + 1, len(entries))
    order = tuple(e.id for e in entries)
    kids: dict[str, list[str]] = {}
    for eid in order:
        kids.setdefault(events[eid].parent_id, []).append(eid)
    head = session.head
    active: list[str] = []
    current = head
    while current in events and current not in active:
        active.append(current)
        current = events[current].parent_id
    active.reverse()
    shown = set(active)
    branches: list[Branch] = []
    leaves = [eid for eid in order if eid not in kids and eid not in shown]
    for leaf in leaves:
        run: list[str] = []
        current = leaf
        while current in events and current not in shown:
            run.append(current)
            current = events[current].parent_id
        run.reverse()
        shown.update(run)
        parent = events[run[0]].parent_id if run else NIL_ID
        branches.append(Branch(parent, tuple(run), leaf))
    labels: dict[str, list[str]] = {}
    raw_labels = session.meta.get("labels")
    if isinstance(raw_labels, dict):
        for name, target in sorted(raw_labels.items()):
            if isinstance(target, str):
                labels.setdefault(target, []).append(str(name))
    meta = session.meta if redactor is None else redactor.value(session.meta)
    path_totals = totals(events[eid] for eid in active)
    return ExportView(
        id=session.id,
        meta=meta,
        head=head,
        events=events,
        order=order,
        children={k: tuple(v) for k, v in kids.items()},
        active=tuple(active),
        branches=tuple(branches),
        labels=labels,
        totals=path_totals,
        shorts=short_ids(order),
        unreadable=unreadable,
    )
