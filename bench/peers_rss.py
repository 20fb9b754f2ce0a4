"""Peak RSS while browsing a big session: 100 MB, and 1 GB in the full run.

A linear session of large tool outputs (20-200 KB, base64) among ordinary
events, with a compaction every 5,000 events that keeps the last 20
(agentlog and the pi-style file have compaction records; the others store
the items only). Browsing: open the session, load what resuming loads
(agentlog: ``context()``; the SDK: ``get_items()``, what its Runner
calls, or ``get_items(limit=N)`` with N the length of agentlog's context;
LangGraph: the state; the file peers: the file), show the newest 20
events with their payloads, then page back 3 x 50 events. Each browse
runs once, in a fresh interpreter (``bench.peers_probe``), so the peak is
its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from .peers_agentlog import AgentlogPeer
from .peers_langgraph import LangGraphPeer
from .peers_peer import Peer

PAGES, PAGE = 3, 50
MB = 1024 * 1024
#: SQLite's default largest row (SQLITE_MAX_LENGTH) is 1,000,000,000 bytes;
#: a LangGraph checkpoint holds the whole messages list in one row.
SQLITE_MAX_LENGTH = 1_000_000_000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(args: list[str]) -> dict[str, Any]:
    """Run bench.peers_probe through a shell that forks it (``; exit``
    keeps the shell from exec-ing it in place): Linux carries the peak RSS
    of the address space a process was exec'd from into its ``ru_maxrss``,
    so a probe exec'd from this (large) process would report this
    process's peak; exec'd from the shell's small fork, it reports its own."""
    command = [sys.executable, "-m", "bench.peers_probe", *args]
    proc = subprocess.run(["sh", "-c", '"$@"; exit $?', "sh", *command], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"bench.peers_probe {' '.join(args[:2])} failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def probe(peer: Peer, loc: str, sid: str, context_len: int) -> dict[str, Any]:
    return _child(["browse", peer.key, loc, sid, str(context_len), str(PAGES), str(PAGE)])


def run(ctx: dict[str, Any], peers: list[Peer]) -> dict[str, Any]:
    sizes = [(10_000, 100 * MB)] if ctx["quick"] else [(10_000, 100 * MB), (100_000, 1024 * MB)]
    out: dict[str, Any] = {"sizes": {}, "pages": PAGES, "page": PAGE, "skipped": {}}
    first = next((p for p in peers if isinstance(p, AgentlogPeer)), None)
    for events, target in sizes:
        label = str(target // MB)
        rows: dict[str, Any] = {}
        context_len = 0
        ordered = ([first] if first else []) + [p for p in peers if p is not first]
        for peer in ordered:
            if isinstance(peer, AgentlogPeer) and peer.backend == "memory":
                out["skipped"][peer.key] = "the session lives in the process: its RSS is the session"
                continue
            if isinstance(peer, LangGraphPeer) and target >= SQLITE_MAX_LENGTH:
                out["skipped"].setdefault(peer.key, {})[label] = (
                    "one checkpoint row would hold the whole list, over SQLite's 1,000,000,000-byte row limit"
                )
                continue
            built = _child(["build", peer.key, ctx["bench_dir"], str(events), str(target)])
            row = probe(peer, built["loc"], built["sid"], context_len or 1)
            if peer is first:
                context_len = row["context"]
            row["dataset_bytes"] = built["bytes"]
            rows[peer.key] = row
        out["sizes"][label] = {"events": events, "target_bytes": target, "stores": rows}
    return out
