"""Each peer's copy of a workload, built once and cached (``bench._build._cached``).

The cache key holds the workload's parameters and the peer's own version:
the installed package's version for a peer, and for agentlog the git tree
of its backend's sources, so that a change to a storage format rebuilds
that backend's datasets and nothing else. PostgreSQL data lives in a
schema named after the cache entry; the entry's check finds it gone
(another user dropped it) and rebuilds. The memory backend cannot be
cached: its datasets are built in the process, once per run.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

from ._build import _cached
from .peers_agentlog import AgentlogPeer, pg_drop
from .peers_data import Ev, big, ordinary
from .peers_peer import Peer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SOURCES = {
    "agentlog-file": "src/agentlog/backends/files",
    "agentlog-sqlite": "src/agentlog/backends/sqlite.py",
    "agentlog-postgresql": "src/agentlog/backends/postgres",
}
_PACKAGES = {
    "sdk": "openai-agents",
    "sdk-advanced": "openai-agents",
    "sdk-limit": "openai-agents",
    "langgraph": "langgraph-checkpoint-sqlite",
}
_MEMORY: dict[str, tuple[str, dict[str, Any]]] = {}


def peer_version(key: str) -> str:
    if key in _SOURCES:
        try:
            out = subprocess.run(
                ["git", "rev-parse", f"HEAD:{_SOURCES[key]}"], cwd=ROOT, capture_output=True, text=True, check=True
            )
            return out.stdout.strip()[:12]
        except (OSError, subprocess.CalledProcessError):
            return "unknown"
    if key in _PACKAGES:
        try:
            return metadata.version(_PACKAGES[key])
        except metadata.PackageNotFoundError:
            return "missing"
    return "3"  # the file layouts' own version: bump it when their layout changes


def data_key(peer: Peer) -> str:
    """Peers that store the same bytes share datasets (JSONL with or without sync; the SDK browse variant)."""
    return {"jsonl-fsync": "jsonl", "sdk-limit": "sdk"}.get(peer.key, peer.key)


def dataset(
    bench_dir: str,
    peer: Peer,
    workload: str,
    params: dict[str, Any],
    fill: Callable[[Peer, str], dict[str, Any]],
) -> tuple[str, dict[str, Any]]:
    """(location, info) of ``peer``'s copy of a workload; ``fill(peer, loc)`` builds it."""
    key = data_key(peer)
    full = {"peer": key, "workload": workload, "version": peer_version(key), **params}
    if isinstance(peer, AgentlogPeer) and peer.backend == "memory":
        memo = json.dumps(full, sort_keys=True)
        if memo not in _MEMORY:
            loc = "bench-" + hashlib.sha256(memo.encode()).hexdigest()[:10]
            _MEMORY[memo] = (loc, fill(peer, loc))
        return _MEMORY[memo]
    pg = isinstance(peer, AgentlogPeer) and peer.backend == "postgresql"
    schema = "agentlog_bench_" + hashlib.sha256(json.dumps(full, sort_keys=True).encode()).hexdigest()[:10]

    def build(tmp: str) -> dict[str, Any]:
        if pg:
            pg_drop(schema)
        try:
            info = fill(peer, schema if pg else tmp)
        finally:
            peer.release()  # nothing stays open on the temporary path
        return info

    def check(directory: str, info: dict[str, Any]) -> None:
        if pg:
            store = peer.store(schema)  # type: ignore[attr-defined]
            for sid in info.get("sids", [info.get("sid")]):
                if sid is not None and not store.exists(sid):
                    raise ValueError(f"session {sid} is gone from schema {schema}")
        elif not os.listdir(directory):
            raise ValueError("empty dataset")

    directory, info = _cached(bench_dir, f"peer-{key}-{workload}", full, build, check)
    return (schema if pg else directory), info


# --- the workloads, as fills ----------------------------------------------------------
def linear(events: list[Ev]) -> Callable[[Peer, str], dict[str, Any]]:
    def fill(peer: Peer, loc: str) -> dict[str, Any]:
        return {"sid": peer.build(loc, events), "events": len(events)}

    return fill


def streamed(make: Callable[[], Iterable[Ev]], events: int) -> Callable[[Peer, str], dict[str, Any]]:
    def fill(peer: Peer, loc: str) -> dict[str, Any]:
        return {"sid": peer.build(loc, make()), "events": events}

    return fill


def many(sessions: int, seed: int = 5) -> Callable[[Peer, str], dict[str, Any]]:
    """``sessions`` sessions of 4 to 60 ordinary events (32 on average)."""

    def fill(peer: Peer, loc: str) -> dict[str, Any]:
        rng = random.Random(seed)
        pool = ordinary(4000, seed=seed)
        plan = []
        for n in range(sessions):
            count = rng.randint(1, 15) * 4
            start = rng.randrange(0, len(pool) - count) // 4 * 4
            plan.append((f"task {n}: fix the failing check in module {n % 97}", pool[start : start + count]))
        peer.build_many(loc, plan)
        return {"sessions": sessions, "events": sum(len(p[1]) for p in plan)}

    return fill


def resume_set(bench_dir: str, peer: Peer, n: int) -> tuple[str, dict[str, Any]]:
    return dataset(bench_dir, peer, "resume", {"events": n}, linear(ordinary(n)))


def listing_set(bench_dir: str, peer: Peer, sessions: int) -> tuple[str, dict[str, Any]]:
    return dataset(bench_dir, peer, "listing", {"sessions": sessions}, many(sessions))


def big_set(bench_dir: str, peer: Peer, events: int, target_bytes: int) -> tuple[str, dict[str, Any]]:
    params = {"events": events, "target_bytes": target_bytes}
    return dataset(bench_dir, peer, "big", params, streamed(lambda: big(events, target_bytes), events))
