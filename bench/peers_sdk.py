"""The OpenAI Agents SDK's sessions as peers: ``SQLiteSession`` and ``AdvancedSQLiteSession``.

Both keep every session of a store in one SQLite file (WAL mode, the
library's defaults, so ``synchronous=FULL``: each commit syncs the WAL).
Items are the Responses input items the SDK stores (a user or assistant
message, a ``function_call``, a ``function_call_output``). The SDK's
methods are coroutines that run the SQLite work in a worker thread
(``asyncio.to_thread``); every thread here drives them with an event loop
of its own, created once.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Iterable
from typing import Any

from .peers_data import COMPACTION, Ev
from .peers_peer import Peer, Writer, batched

_LOOPS = threading.local()


def run(coro: Any) -> Any:
    """Run a coroutine on this thread's own event loop (made once)."""
    loop = getattr(_LOOPS, "loop", None)
    if loop is None:
        loop = _LOOPS.loop = asyncio.new_event_loop()
    return loop.run_until_complete(coro)


def sdk_item(ev: Ev) -> dict[str, Any] | None:
    kind, role, record = ev
    if kind == "message":
        return {"role": role, "content": record["content"]}
    if kind == "tool_call":
        return {
            "type": "function_call",
            "call_id": record["id"],
            "name": record["name"],
            "arguments": record["arguments"],
        }
    if kind == "tool_result":
        return {"type": "function_call_output", "call_id": record["tool_call_id"], "output": record["content"]}
    if kind == COMPACTION:
        return None  # the SDK's SQLite sessions have no compaction record
    raise ValueError(f"no SDK item for {kind}")


class _SdkWriter(Writer):
    def __init__(self, session: Any) -> None:
        self.session = session

    def prepare(self, ev: Ev) -> Any:
        return sdk_item(ev)

    def append(self, native: Any) -> None:
        run(self.session.add_items([native]))

    def close(self) -> None:
        self.session.close()


class SdkPeer(Peer):
    shares_session = True
    writers_note = "one session, 8 threads sharing one session object (its lock serialises them)"
    durability = "SQLite WAL, synchronous=FULL (the defaults): WAL fsync per commit"
    sync = "WAL fsync"

    def __init__(self, advanced: bool = False, browse_limit: bool = False) -> None:
        self.advanced = advanced
        self.browse_limit = browse_limit
        name = "AdvancedSQLiteSession" if advanced else "SQLiteSession"
        self.key = ("sdk-advanced" if advanced else "sdk") + ("-limit" if browse_limit else "")
        self.label = f"Agents SDK {name}" + (" (get_items(limit=N))" if browse_limit else "")
        if advanced:
            self.durability += "; message structure in a second transaction"
        if not browse_limit:
            self.loads_everything = "get_items() (what the Runner calls each turn by default) loads every item"

    def unavailable(self) -> str | None:
        try:
            import agents  # noqa: F401
        except ImportError:
            return "openai-agents is not installed (pip install -e '.[bench]')"
        return None

    def preload(self) -> None:
        import agents  # noqa: F401
        import agents.extensions.memory  # noqa: F401

    def db(self, loc: str) -> str:
        return os.path.join(loc, "sdk.db")

    def session(self, loc: str, sid: str) -> Any:
        if self.advanced:
            from agents.extensions.memory import AdvancedSQLiteSession

            return AdvancedSQLiteSession(session_id=sid, db_path=self.db(loc), create_tables=True)
        from agents import SQLiteSession

        return SQLiteSession(sid, self.db(loc))

    def build(self, loc: str, events: Iterable[Ev], name: str = "bench") -> str:
        os.makedirs(loc, exist_ok=True)
        session = self.session(loc, name)
        try:
            for batch in batched(events, 1000):
                items = [i for i in map(sdk_item, batch) if i is not None]
                run(session.add_items(items))
        finally:
            session.close()
        return name

    def build_many(self, loc: str, sessions: Iterable[tuple[str, list[Ev]]]) -> None:
        os.makedirs(loc, exist_ok=True)
        for n, (_summary, events) in enumerate(sessions):
            self.build(loc, events, name=f"s{n:05d}")

    def writer(self, loc: str, sid: str) -> Writer:
        return _SdkWriter(self.session(loc, sid))

    def whole(self, loc: str, sid: str) -> int:
        session = self.session(loc, sid)
        try:
            return len(run(session.get_items()))
        finally:
            session.close()

    def last(self, loc: str, sid: str, n: int) -> int:
        session = self.session(loc, sid)
        try:
            return len(run(session.get_items(limit=n)))
        finally:
            session.close()

    def listing(self, loc: str) -> int:
        # No listing API: the cheapest query on its sessions table.
        conn = sqlite3.connect(self.db(loc))
        try:
            rows = conn.execute(
                "SELECT session_id, created_at, updated_at FROM agent_sessions ORDER BY updated_at DESC"
            ).fetchall()
        finally:
            conn.close()
        return len(rows)

    def browse(self, loc: str, sid: str, context_len: int, pages: int, page: int) -> dict[str, int]:
        session = self.session(loc, sid)
        try:
            if not self.browse_limit:
                items = run(session.get_items())
                return {"context": len(items), "paged_back": min(pages * page, len(items)), "shown": page}
            # Bounded: the newest items only; a page back asks for a longer tail.
            items = run(session.get_items(limit=context_len))
            back = 0
            for k in range(1, pages + 1):
                items = run(session.get_items(limit=context_len + k * page))
                back = len(items) - context_len
            return {"context": context_len, "paged_back": back, "shown": page}
        finally:
            session.close()
