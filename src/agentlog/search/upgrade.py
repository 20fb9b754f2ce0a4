"""Bringing an index of an earlier schema to this one in place.

The index is derived, so any version could be dropped and rebuilt; but a
rebuild reads and indexes every event of every session (minutes for a
million events), where each change so far touched few texts. Each step
below finds those texts, rewrites them, and can be cut short and run
again (or by two processes at once): a text it already rewrote comes out
the same.
"""

from __future__ import annotations

import functools
import sqlite3
import warnings
from collections import defaultdict
from typing import TYPE_CHECKING

from ..errors import AgentlogError, CorruptionError, EventNotFound, SessionNotFound
from ..recordtext import record_text, strip_terminal_codes
from .composed import uncomposed_ranges
from .query import SearchWarning
from .scripts import split
from .symbols import MARK
from .transaction import write

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["UPGRADED_IN_PLACE", "upgrade"]

#: The versions brought to the current one in place (index.SCHEMA_VERSION).
UPGRADED_IN_PLACE = ("2", "3", "4", "5", "6", "7")
#: Rows rewritten per transaction.
_BATCH = 2000


def upgrade(conn: sqlite3.Connection, store: Store, version: str, current: str) -> None:
    """Bring the index from ``version`` (one of UPGRADED_IN_PLACE) to ``current``."""
    _rewrite_texts(conn)
    if version in ("2", "3", "4"):
        _index_thinking(conn, store)
    with write(conn):
        conn.execute("UPDATE info SET value = ? WHERE key = 'schema'", (current,))


def _rewrite_texts(conn: sqlite3.Connection) -> None:
    """Version 2 indexed a run of Chinese or Japanese as one word,
    versions 2 to 5 one of Thai, Lao, Myanmar or Khmer (and a word glued
    to a newer emoji), versions 2 to 6 a word ending in a decomposed accent
    glued to such a character or emoji, versions 2 to 7 a text not
    composed (a Korean file name as macOS writes it), and versions 2 and
    3 a terminal's escape codes glued to the words they colour. Only the
    texts holding such characters change, and the stored text says which:
    it is read from the index alone, a batch at a time (seconds for a
    million events), and a store without such text rewrites nothing
    (``split`` leaves a text it split already as it is)."""
    last = 0
    while True:
        with write(conn):
            rows = conn.execute(
                "SELECT rowid, text FROM fts WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, _BATCH)
            ).fetchall()
            for rowid, text in rows:
                marked = split(strip_terminal_codes(_joined(text)))
                if marked != text:
                    conn.execute("UPDATE fts SET text = ? WHERE rowid = ?", (marked, rowid))
        if not rows:
            return
        last = rows[-1][0]


def _joined(text: str) -> str:
    """``text`` without each MARK an earlier version put beside a character
    that composes with the one before it. Version 7 put one between every
    two Korean letters and before a kana voicing mark, so a syllable that
    macOS wrote as its letters (``한`` as three) stayed apart, which
    composing across a MARK cannot mend; ``split`` then composes the
    letters and marks the text as it marks a new one (a MARK it needs
    there, it puts back)."""
    if MARK not in text:
        return text
    composing = _composing()
    joined: list[str] = []
    for n, piece in enumerate(text.split(MARK)):
        # beside such a character on either side: composing may also
        # reorder marks, which moves what the MARK stood between
        if (
            n
            and not (piece and ord(piece[0]) in composing)
            and not (joined and joined[-1] and ord(joined[-1][-1]) in composing)
        ):
            joined.append(MARK)
        joined.append(piece)
    return "".join(joined)


@functools.cache
def _composing() -> frozenset[int]:
    return frozenset(code for lo, hi in uncomposed_ranges() for code in range(lo, hi + 1))


def _index_thinking(conn: sqlite3.Connection, store: Store) -> None:
    """Versions 2 to 4 indexed a thinking part (Claude Code and pi replies)
    as the word "[thinking]" alone, not its text (recordtext.reasoning_text).
    Every event holding one therefore holds that word: the index finds them
    itself, and only their sessions are read, each once, to make their text
    again as a new catch-up makes it. A session (or a blob) that cannot be
    read keeps its old texts, and a warning says so."""
    rows = conn.execute(
        "SELECT events.rowid, events.session_id, events.event_id FROM fts JOIN events ON events.rowid = fts.rowid "
        "WHERE fts MATCH 'text : thinking' AND instr(fts.text, '[thinking]') > 0"
    ).fetchall()
    by_session: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for rowid, sid, eid in rows:
        by_session[sid].append((rowid, eid))
    for sid, events in sorted(by_session.items()):
        lost: list[tuple[str, str]] = []
        try:
            texts = _texts(store, sid, events, lost)
        except SessionNotFound:
            continue  # deleted since: the next catch-up forgets its rows
        except AgentlogError as exc:  # a damaged line fails the session, as in a catch-up
            _warn(f"search could not read session {sid} to index the text of its thinking: {exc}", sid)
            continue
        for eid, reason in lost:
            _warn(
                f"search could not read event {eid} of session {sid} to index the text of its thinking: {reason}", sid
            )
        for lo in range(0, len(texts), _BATCH):
            with write(conn):
                # The row must still be this event's: another process may have
                # forgotten the session and indexed it again since (new rowids).
                conn.executemany(
                    "UPDATE fts SET text = ? WHERE rowid = ? AND text != ?"
                    " AND rowid IN (SELECT rowid FROM events WHERE session_id = ? AND event_id = ?)",
                    texts[lo : lo + _BATCH],
                )


def _texts(
    store: Store, sid: str, events: list[tuple[int, str]], lost: list[tuple[str, str]]
) -> list[tuple[str, int, str, str, str]]:
    """(text, rowid, text, session id, event id) of each event, as a
    catch-up indexes it now; (event id, reason) in ``lost`` for each whose
    payload (a blob) is lost."""
    texts = []
    with store.open(sid, readonly=True) as session:
        for rowid, eid in events:
            try:
                stored = session.event(eid)
            except EventNotFound:
                continue  # gone since (a repair): the next catch-up indexes the session again
            try:
                event = session.resolve(stored)
            except CorruptionError as exc:  # one lost blob: the others still get their text
                lost.append((eid, str(exc)))
                continue
            text = split(strip_terminal_codes(record_text(event.kind, event.record)))
            texts.append((text, rowid, text, sid, eid))
    return texts


def _warn(message: str, sid: str) -> None:
    """The old text stays for what could not be read: say so, and how to mend it."""
    warnings.warn(
        SearchWarning(f"{message}; see 'agentlog fsck {sid}', then 'agentlog search --reindex'"), stacklevel=6
    )
