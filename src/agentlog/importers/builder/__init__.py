"""Building one agentlog session from source lines: ids, parents, the flush.

A ``SessionBuilder`` holds what an importer needs while it converts lines:
the map from source ids (a Claude uuid, a pi entry id) to event ids, the
chain's cursor, and the events not yet written. ``flush`` writes them as
one all-or-nothing batch (``store.create(events=...)`` for a new session,
``session.import_events`` for an existing one); the last flush of a run
then records, in the session's metadata, how far each source file was
consumed, and refreshes the session's import cache (index_cache.py).

The parts, one concern a module, which ``SessionBuilder`` combines:
``base`` (the fields every part shares), ``pending`` (an event not yet
written and its id), ``lines`` (one line, all or nothing: the journal),
``loading`` (what an earlier import wrote), ``building`` (events made
from lines, or copied; side events threaded into the chain) and
``writing`` (the flush); ``SessionBuilder`` itself adds the lookup of
source keys, which may reach into other sessions (``locator``)."""

from __future__ import annotations

from .base import META_KEY
from .building import BuilderBuilding
from .pending import IdAllocator, Pending
from .writing import BuilderWriting

__all__ = ["IdAllocator", "Pending", "SessionBuilder", "META_KEY"]


class SessionBuilder(BuilderBuilding, BuilderWriting):
    """One agentlog session being imported into (new or existing)."""

    def lookup(self, key: str | None) -> str | None:
        """The event a source key names here, else a copy of its path from
        the session that holds it (a resume or fork across files), else None."""
        if not key:
            return None
        found = self.keys.get(key)
        if found is None and self.locator is not None:
            found = self.locator(self, key)
        if found is None:
            self.missed.append(key)
        return found

    def lookup_first(self, key: str | None) -> str | None:
        """The first event a source key's line made here, else as ``lookup``."""
        found = self.first_keys.get(key) if key else None
        return found if found is not None else self.lookup(key)
