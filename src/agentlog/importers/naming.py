"""Which agentlog session each source session of an import run goes to.

Two different source sessions never share one agentlog session. A source
id that sanitizing changed gets a hash of itself in its session id
(``Importer.session_id``), except that a session an earlier version
imported under the plain id keeps it. A plain id that another source
already holds (in this run, in ``--follow``'s open sessions, or in the
store: its ``import.source_id``) makes way for the hashed id too. If that
is taken as well (not by chance: by hand), the source is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..errors import AgentlogError
from .base import Importer, with_source_hash
from .builder import META_KEY, SessionBuilder

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["SessionNames"]

Claim = Literal["ours", "free", "taken"]


class SessionNames:
    """Source session id -> agentlog session id, for one run."""

    def __init__(self, store: Store, importer: Importer, keep: dict[str, SessionBuilder] | None) -> None:
        self.store = store
        self.importer = importer
        self.keep = keep
        self.chosen: dict[str, str | None] = {}  # source id -> session id (None: refused)
        self.holders: dict[str, str] = {}  # session id -> the source id it was given to

    def session_for(self, source_id: str) -> str | None:
        """The session ``source_id`` goes to; None when every id it could
        have belongs to another source (the caller reports it)."""
        if source_id in self.chosen:
            return self.chosen[source_id]
        chosen = None
        for sid, only_if_ours in self.candidates(source_id):
            claim = self.claim(sid, source_id)
            if claim == "ours" or (claim == "free" and not only_if_ours):
                chosen = sid
                self.holders[sid] = source_id
                break
        self.chosen[source_id] = chosen
        return chosen

    def candidates(self, source_id: str) -> list[tuple[str, bool]]:
        """(session id, only if this source holds it already), in order."""
        plain = self.importer.plain_session_id(source_id)
        preferred = self.importer.session_id(source_id)
        if preferred == plain:
            return [(plain, False), (with_source_hash(plain, source_id), False)]
        return [(plain, True), (preferred, False)]  # the plain id: as imported before ids got a hash

    def tried(self, source_id: str) -> list[str]:
        return [sid for sid, _ in self.candidates(source_id)]

    def _imported_from_here(self, sid: str, look: int = 8) -> bool:
        """Whether the first events of ``sid`` were made by this importer
        (their ``source.format``). Its id is one this source's alone would
        be given, so together the two say it is this source's session; the
        lines it holds are then found by their place, and not imported twice."""
        try:
            with self.store.open(sid, readonly=True) as session:
                for n, entry in enumerate(session.entries()):
                    if n >= look:
                        break
                    event = session.event(entry.id)
                    record = (event if event.loaded else session.resolve(event)).record
                    source = record.get("source") if isinstance(record, dict) else None
                    if isinstance(source, dict) and source.get("format") == self.importer.name:
                        return True
        except AgentlogError:
            return True  # damaged: preparing the session reports it, as claim() does
        return False

    def claim(self, sid: str, source_id: str) -> Claim:
        holder = self.holders.get(sid)
        if holder is None and self.keep is not None and sid in self.keep:
            holder = self.keep[sid].source_id
        if holder is not None:
            return "ours" if holder == source_id else "taken"
        try:
            if not self.store.exists(sid):
                return "free"
            imported = self.store.meta(sid).get(META_KEY)
        except AgentlogError:
            return "ours"  # damaged: preparing the session reports it, for this session only
        if imported is None:
            # A session of its own, not an import; or an import whose
            # metadata lost its bookkeeping (fsck --repair writes a damaged
            # session.json again with defaults): its events still say so.
            return "ours" if self._imported_from_here(sid) else "taken"
        held = imported.get("source_id") if isinstance(imported, dict) else None
        if not isinstance(held, str):
            return "ours"  # damaged bookkeeping: reported when the session is prepared
        return "ours" if held == source_id else "taken"
