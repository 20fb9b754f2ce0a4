"""Append latency, p50 and p99, with 1 writer and with 8, each peer at its own durability.

Every peer gets a fresh session already holding ``size`` ordinary events
(so the stores whose append rewrites the session pay for its size), then
timed appends of the next events, one item a call, items converted to
the store's format beforehand.

- **1 writer**: rounds; in each round every peer appends once, the order
  rotating, so all peers see the same moments of the machine.
- **8 writers**: 8 threads; on one session where the store takes
  concurrent appenders on a session (agentlog, the SDK), else a session
  each in the same store (the peer's ``writers_note`` says which). Each
  round runs every peer's burst in turn (8 threads x ``burst`` appends,
  started together); latency per append and events per second per burst.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from typing import Any

from ._common import pct
from .peers_agentlog import AgentlogPeer, pg_drop
from .peers_data import ordinary
from .peers_peer import Peer, Writer

THREADS = 8
_PG_SCHEMA = "agentlog_bench_append"


def _fresh(bench_dir: str, peer: Peer, tag: str) -> str:
    if isinstance(peer, AgentlogPeer) and peer.backend == "postgresql":
        pg_drop(f"{_PG_SCHEMA}_{tag}")
        return f"{_PG_SCHEMA}_{tag}"
    if isinstance(peer, AgentlogPeer) and peer.backend == "memory":
        return f"append-{tag}-{time.monotonic_ns()}"
    loc = os.path.join(bench_dir, "tmp-peers", f"{peer.key}-{tag}")
    shutil.rmtree(loc, ignore_errors=True)
    os.makedirs(loc)
    return loc


def _cleanup(peer: Peer, loc: str) -> None:
    peer.release()
    if isinstance(peer, AgentlogPeer) and peer.backend == "postgresql":
        pg_drop(loc)
    elif os.path.isabs(loc):
        shutil.rmtree(loc, ignore_errors=True)


def _writers(bench_dir: str, peer: Peer, size: int, count: int, tag: str) -> tuple[str, list[Writer]]:
    """``count`` writers over sessions of ``size`` events (one shared session when the peer allows)."""
    loc = _fresh(bench_dir, peer, tag)
    prefill = ordinary(size, seed=3)
    if peer.shares_session:
        sid = peer.build(loc, prefill, name="w0")
        peer.release()
        one = peer.writer(loc, sid)
        return loc, [one] * count
    sids = [peer.build(loc, prefill, name=f"w{i}") for i in range(count)]
    peer.release()
    return loc, [peer.writer(loc, sid) for sid in sids]


def _stats(samples: list[float]) -> dict[str, Any]:
    return {"p50_s": pct(samples, 0.5), "p99_s": pct(samples, 0.99), "n": len(samples)}


def one_writer(bench_dir: str, peers: list[Peer], size: int, appends: int) -> dict[str, Any]:
    peers = [p for p in peers if not p.eight_only]
    setups = {p.key: _writers(bench_dir, p, size, 1, f"1w_{size}") for p in peers}
    items = ordinary(size + appends, seed=3)[size:]
    natives = {p.key: [setups[p.key][1][0].prepare(ev) for ev in items] for p in peers}
    times: dict[str, list[float]] = {p.key: [] for p in peers}
    try:
        for r in range(appends):
            order = peers[r % len(peers) :] + peers[: r % len(peers)]
            for peer in order:
                writer = setups[peer.key][1][0]
                t0 = time.perf_counter()
                writer.append(natives[peer.key][r])
                times[peer.key].append(time.perf_counter() - t0)
    finally:
        for peer in peers:
            setups[peer.key][1][0].close()
            _cleanup(peer, setups[peer.key][0])
    return {key: _stats(samples) for key, samples in times.items()}


def _burst(writers: list[Writer], natives: list[list[Any]], out: list[float]) -> float:
    barrier = threading.Barrier(len(writers) + 1)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(writer: Writer, mine: list[Any]) -> None:
        local = []
        barrier.wait()
        try:
            for native in mine:
                t0 = time.perf_counter()
                writer.append(native)
                local.append(time.perf_counter() - t0)
        except BaseException as exc:  # reported below: a failed writer fails the figure
            errors.append(exc)
        with lock:
            out.extend(local)

    threads = [threading.Thread(target=work, args=(w, n)) for w, n in zip(writers, natives, strict=True)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"a writer failed: {errors[0]!r}") from errors[0]
    return elapsed


def eight_writers(bench_dir: str, peers: list[Peer], size: int, rounds: int, burst: int) -> dict[str, Any]:
    setups = {p.key: _writers(bench_dir, p, size, THREADS, f"8w_{size}") for p in peers}
    items = ordinary(size + rounds * THREADS * burst, seed=3)[size:]
    times: dict[str, list[float]] = {p.key: [] for p in peers}
    rates: dict[str, list[float]] = {p.key: [] for p in peers}
    try:
        for r in range(rounds):
            order = peers[r % len(peers) :] + peers[: r % len(peers)]
            for peer in order:
                writers = setups[peer.key][1]
                base = r * THREADS * burst
                natives = [
                    [writers[t].prepare(ev) for ev in items[base + t * burst : base + (t + 1) * burst]]
                    for t in range(THREADS)
                ]
                elapsed = _burst(writers, natives, times[peer.key])
                rates[peer.key].append(THREADS * burst / elapsed)
    finally:
        for peer in peers:
            for writer in dict.fromkeys(setups[peer.key][1]):
                writer.close()
            _cleanup(peer, setups[peer.key][0])
    return {key: {**_stats(times[key]), "events_per_s": pct(rates[key], 0.5)} for key in times}


def run(ctx: dict[str, Any], peers: list[Peer]) -> dict[str, Any]:
    quick = ctx["quick"]
    out: dict[str, Any] = {"one": {}, "eight": {}}
    sizes = [100, 1000] if quick else [100, 1000, 10000]
    for size in sizes:
        appends = {100: 200, 1000: 400 if not quick else 200, 10000: 60}[size]
        out["one"][str(size)] = one_writer(ctx["bench_dir"], peers, size, appends)
    size8 = 1000
    rounds, burst = (4, 5) if quick else (8, 10)
    out["eight"][str(size8)] = eight_writers(ctx["bench_dir"], peers, size8, rounds, burst)
    out["eight_size"] = size8
    out["threads"] = THREADS
    return out
