"""Bytes on disk after a 200-turn session with tool outputs, each store at its own durability.

200 turns of four events (user message, tool call, tool output of 0.5-4 KB
with one in twenty of 16-64 KB, reply), appended one item a call through
each store's ordinary API, then the store closed and its files summed
(SQLite: the database with its WAL, checkpointed at close). PostgreSQL:
the relations of the store's schema (tables, indexes, TOAST) less what
the empty schema takes. Also the wall time of the 800 appends.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

from .peers_agentlog import AgentlogPeer, pg_drop
from .peers_data import turns_with_tools
from .peers_peer import Peer

TURNS = 200


def _one(bench_dir: str, peer: Peer) -> dict[str, Any]:
    pg = isinstance(peer, AgentlogPeer) and peer.backend == "postgresql"
    loc = "agentlog_bench_disk" if pg else os.path.join(bench_dir, "tmp-peers", f"disk-{peer.key}")
    if pg:
        pg_drop(loc)
    else:
        shutil.rmtree(loc, ignore_errors=True)
        os.makedirs(loc)
    try:
        events = turns_with_tools(TURNS)
        empty = 0
        if pg:
            peer.store(loc)  # type: ignore[attr-defined]  # creates the schema's empty tables
            empty = peer.disk_bytes(loc) or 0
        sid = peer.build(loc, [], name="disk")
        peer.release()
        writer = peer.writer(loc, sid)
        natives = [writer.prepare(ev) for ev in events]
        t0 = time.perf_counter()
        for native in natives:
            writer.append(native)
        elapsed = time.perf_counter() - t0
        writer.close()
        peer.release()
        total = peer.disk_bytes(loc)
        count = peer.whole(loc, sid)
        peer.release()
        if count != len(events):
            raise RuntimeError(f"{peer.key} holds {count} items after 200 turns, expected {len(events)}")
        payload = sum(len(str(ev[2].get("content", ""))) for ev in events)
        return {"bytes": None if total is None else total - empty, "append_wall_s": elapsed, "payload_chars": payload}
    finally:
        peer.release()
        if pg:
            pg_drop(loc)
        else:
            shutil.rmtree(loc, ignore_errors=True)


def run(ctx: dict[str, Any], peers: list[Peer]) -> dict[str, Any]:
    return {"turns": TURNS, "stores": {peer.key: _one(ctx["bench_dir"], peer) for peer in peers}}
