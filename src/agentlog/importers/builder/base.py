"""What a ``SessionBuilder`` holds, which every part of it shares: the maps
from source ids to events, the chain's cursor, the events not yet written,
the files' states and the session's bookkeeping.

``SessionBuilder`` is made of one class per concern (one line all or
nothing, loading what an earlier import wrote, building events, writing
them), each deriving from ``BuilderBase`` and from the parts it calls, so
that a type checker sees every field and method a part uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...event import NIL_ID
from ..journal import Journal
from ..model import SessionReport
from .pending import IdAllocator, Pending

if TYPE_CHECKING:
    from ...session import Session
    from ...store import Store
    from . import SessionBuilder  # the package combines the parts

__all__ = ["BuilderBase", "META_KEY"]

#: The session.json field holding an import's bookkeeping.
META_KEY = "import"


@dataclass
class BuilderBase:
    """One agentlog session being imported into (new or existing)."""

    store: Store
    session_id: str
    source_id: str
    format: str
    session: Session | None = None
    existing: bool = False
    # The session is stored and its maps are loaded, but it is not open
    # (``release``): a run holds one session open at a time, not all of them.
    released: bool = False
    released_at: str = ""  # its newest event then: whether another writer came between
    keys: dict[str, str] = field(default_factory=dict)
    # The first event made from each source key's line, where ``keys`` has
    # the last (the one the line's keys are written on): a child goes after
    # the last event of a line (a message's tool calls), but a pointer into
    # the source (pi's firstKeptEntryId, a label's target) means the line's
    # start, its message.
    first_keys: dict[str, str] = field(default_factory=dict)
    first_of_line: dict[tuple[str, int], str] = field(default_factory=dict)
    alias: dict[str, str] = field(default_factory=dict)
    kind_of: dict[str, str] = field(default_factory=dict)
    tool_names: dict[str, Any] = field(default_factory=dict)
    turn_starts: list[str] = field(default_factory=list)
    parent_of: dict[str, str] = field(default_factory=dict)
    seen_lines: set[tuple[str, int]] = field(default_factory=set)
    parents_with_children: set[str] = field(default_factory=set)
    cursor: str = NIL_ID
    has_chain: bool = False
    pending: list[Pending] = field(default_factory=list)
    by_id: dict[str, Pending] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    create_meta: dict[str, Any] = field(default_factory=dict)
    meta_changes: dict[str, Any] = field(default_factory=dict)
    # Label changes the source made, in order: (event id, name or None to
    # clear), applied to the metadata's labels when the metadata is written.
    label_changes: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    ids: IdAllocator = field(default_factory=IdAllocator)
    last_ts: int = 0
    report: SessionReport | None = None
    locator: Callable[[SessionBuilder, str], str | None] | None = None
    rows: list[list[Any]] = field(default_factory=list)  # the index cache's rows
    # Source keys that lookup found nowhere while converting the current line.
    missed: list[str] = field(default_factory=list)
    # (file, line) of the last malformed line whose own source id could not
    # be read: a later line naming an unknown parent may have meant it.
    lost_key_at: tuple[str, int] | None = None
    _per_line: dict[tuple[str, int], int] = field(default_factory=dict)
    _journal: Journal = field(default_factory=Journal)
    _mark: tuple[Any, ...] = ()
    # The session's date (what listing shows as updated) before this
    # builder's writes, which date it anew: the source's newest line, or a
    # later change made in agentlog (0: not read yet).
    dated_ns: int = 0
