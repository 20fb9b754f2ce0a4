"""Resume: open + the whole history, and open + the newest 20 items, at 1k, 10k and 100k events.

The same ordinary items in every store (user 160 characters, tool output
600, reply 260), one linear session. Each operation opens the session on
the store object a process keeps (agentlog's ``Store``, LangGraph's
compiled graph over its saver; the SDK's session object is the open, so it
is made and closed each time), reads, and closes; a file peer reads its
file. Samples interleaved, the order rotating.
"""

from __future__ import annotations

from typing import Any

from ._measure import interleaved
from .peers_datasets import resume_set
from .peers_peer import Peer

LAST = 20


def _whole(peer: Peer, loc: str, sid: str) -> Any:
    return lambda: peer.whole(loc, sid)


def _last(peer: Peer, loc: str, sid: str) -> Any:
    return lambda: peer.last(loc, sid, LAST)


def run(ctx: dict[str, Any], peers: list[Peer]) -> dict[str, Any]:
    sizes = [1_000, 10_000] if ctx["quick"] else [1_000, 10_000, 100_000]
    out: dict[str, Any] = {"sizes": {}, "last": LAST}
    for n in sizes:
        ops: dict[str, Any] = {}
        for peer in peers:
            loc, info = resume_set(ctx["bench_dir"], peer, n)
            ops[f"{peer.key}|whole"] = _whole(peer, loc, info["sid"])
            ops[f"{peer.key}|last"] = _last(peer, loc, info["sid"])
        rounds = 3 if n >= 100_000 else (5 if ctx["quick"] else 9)
        t = interleaved(ops, rounds)
        for name, row in t.items():
            want = n if name.endswith("|whole") else LAST
            if row["result_len"] != want:
                raise RuntimeError(f"{name} at {n}: {row['result_len']} items, expected {want}")
        table: dict[str, Any] = {}
        for peer in peers:
            table[peer.key] = {
                "whole_s": t[f"{peer.key}|whole"]["median_s"],
                "last_s": t[f"{peer.key}|last"]["median_s"],
                "runs": rounds,
            }
            peer.release()
        out["sizes"][str(n)] = table
    return out
