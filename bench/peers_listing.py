"""Listing 10,000 sessions (2,000 with ``--quick``), newest first.

Sessions of 4 to 60 ordinary events (32 on average). agentlog:
``Store.list()``. The SQL peers have no listing API: the cheapest query on
their tables (the SDK's ``agent_sessions``; LangGraph's newest checkpoint
per thread), in their favour. The file peers list the way their seeds
do: pi parses every session file (first message, count, time); the
loop-store loads every document (id, time, summary). Samples interleaved.
"""

from __future__ import annotations

from typing import Any

from ._measure import interleaved
from .peers_agentlog import AgentlogPeer
from .peers_datasets import listing_set
from .peers_peer import Peer

ROWS = "|backend rows"


def _op(peer: Peer, loc: str) -> Any:
    return lambda: peer.listing(loc)


def _rows(peer: AgentlogPeer, loc: str) -> Any:
    return lambda: peer.listing_rows(loc)


def run(ctx: dict[str, Any], peers: list[Peer]) -> dict[str, Any]:
    sessions = 2_000 if ctx["quick"] else 10_000
    ops = {}
    for peer in peers:
        loc, _info = listing_set(ctx["bench_dir"], peer, sessions)
        ops[peer.key] = _op(peer, loc)
        if isinstance(peer, AgentlogPeer):
            # Where agentlog's time goes: the backend's rows alone, beside the whole list().
            ops[peer.key + ROWS] = _rows(peer, loc)
    rounds = 5
    t = interleaved(ops, rounds)
    for key, row in t.items():
        if row["result_len"] != sessions:
            raise RuntimeError(f"{key} listed {row['result_len']} sessions, expected {sessions}")
    for peer in peers:
        peer.release()
    times = {k: v["median_s"] for k, v in t.items() if not k.endswith(ROWS)}
    rows = {k.removesuffix(ROWS): v["median_s"] for k, v in t.items() if k.endswith(ROWS)}
    return {"sessions": sessions, "runs": rounds, "times": times, "backend_rows": rows}
