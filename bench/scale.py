"""Part "scale": the whole active path from 10,000 to 1,000,000 events.

Issue 8 asks that open + ``transcript()`` grow linearly up to a million
events and that a streaming read keep memory bounded whatever the length.
This part measures both on linear sessions of the ``path`` part's items
(user / assistant / tool output, 160 to 600 characters), at 10,000,
100,000 and 1,000,000 events (10,000 and 100,000 with ``--quick``):

- per size, interleaved: agentlog open + ``transcript()`` and the Agents
  SDK's ``SQLiteSession.get_items()`` on the same items (when the
  ``bench`` extra is installed), as microseconds per event;
- per size, in a fresh interpreter each (``python -m bench.scale probe``):
  the peak RSS growth of open + ``walk()`` over the whole path, each event
  dropped once seen (the streaming iterator), against open +
  ``transcript()`` (the list).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

from agentlog import FileBackend, Store

from ._build import _cached
from ._common import fmt_s
from ._measure import interleaved

NAME = "scale"


def _build(bench_dir: str, n: int) -> tuple[str, dict[str, Any]]:
    from .path import _items

    def build(tmp: str) -> dict[str, Any]:
        store = Store(os.path.join(tmp, "home"), durability="off")
        sess = store.create(name=f"bench scale {n}")
        sdk = _sdk_session(os.path.join(tmp, "sdk.db"))
        loop = asyncio.new_event_loop()
        try:
            # Items are made a block at a time: a million of them held at once
            # would be the build's own memory problem, not the store's.
            for start in range(0, n, 10_000):
                block = _items(min(10_000, n - start), seed=7 + start)
                for i in range(0, len(block), 1000):
                    part = block[i : i + 1000]
                    sess.append_many([("message", item, role) for role, item in part])
                    if sdk is not None:
                        loop.run_until_complete(sdk.add_items([item for _, item in part]))
        finally:
            loop.close()
            sess.close()
            if sdk is not None:
                sdk.close()
        return {"session_id": sess.id, "events": n, "sdk": sdk is not None}

    def check(directory: str, info: dict[str, Any]) -> None:
        store = Store(os.path.join(directory, "home"), durability="off")
        with store.open(info["session_id"], readonly=True) as s:
            if len(s) != info["events"]:
                raise ValueError(f"{len(s)} events, expected {info['events']}")

    # whether the SDK was there is part of the key: a dataset built without
    # it has no SDK database, and is built again once the extra is installed
    params = {"kind": "linear", "events": n, "v": 1, "sdk": _sdk_installed()}
    return _cached(bench_dir, "scale", params, build, check)


def _sdk_installed() -> bool:
    try:
        import agents  # noqa: F401
    except ImportError:  # the `bench` extra is optional: agentlog is then measured alone, and the report says so
        return False
    return True


def _sdk_session(db: str) -> Any:
    if not _sdk_installed():
        return None
    from agents import SQLiteSession

    return SQLiteSession("bench", db)


def _transcript(home: str, sid: str) -> Any:
    def op() -> int:
        store = Store(backend=FileBackend(home, durability="full"))
        sess = store.open(sid, readonly=True)
        try:
            return len(sess.transcript())
        finally:
            sess.close()

    return op


def _get_items(db: str, loop: asyncio.AbstractEventLoop) -> Any:
    def op() -> int:
        peer = _sdk_session(db)
        try:
            return len(loop.run_until_complete(peer.get_items()))
        finally:
            peer.close()

    return op


def _probe(home: str, sid: str, what: str) -> dict[str, Any]:
    """Peak RSS growth of one op, in a fresh interpreter."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-m", "bench.scale", "probe", home, sid, what],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def probe(home: str, sid: str, what: str) -> dict[str, Any]:
    """The child's side of ``_probe``: open, then the whole path as a list
    (``transcript``) or streamed (``walk``), and the address space's peak
    growth over the RSS just before (VmHWM, reset through clear_refs)."""
    from ._probe import _reset_peak, _status

    store = Store(backend=FileBackend(home, durability="full"))
    rss_before = _status("VmRSS")
    reset = _reset_peak()
    t0 = time.perf_counter()
    sess = store.open(sid, readonly=True)
    try:
        if what == "transcript":
            n = len(sess.transcript())
        else:
            n = 0
            for _ in sess.walk():  # each event dropped once seen
                n += 1
    finally:
        sess.close()
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM") if reset else -1
    return {"what": what, "events": n, "seconds": seconds, "peak_growth_bytes": peak - rss_before if reset else None}


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    sizes = [10_000, 100_000] if ctx["quick"] else [10_000, 100_000, 1_000_000]
    out: dict[str, Any] = {"sizes": {}, "sdk": _sdk_installed()}
    loop = asyncio.new_event_loop()
    try:
        for n in sizes:
            directory, info = _build(ctx["bench_dir"], n)
            home, sid = os.path.join(directory, "home"), info["session_id"]
            ops = {"agentlog transcript": _transcript(home, sid)}
            if info["sdk"]:
                ops["sdk get_items"] = _get_items(os.path.join(directory, "sdk.db"), loop)
            t = interleaved(ops, 5 if n < 1_000_000 else 3, warmup=1)
            if any(v["result_len"] != n for v in t.values()):
                raise RuntimeError(f"lengths disagree at {n}: { {k: v['result_len'] for k, v in t.items()} }")
            row: dict[str, Any] = {"times": t}
            row["us_per_event"] = {k: 1e6 * v["median_s"] / n for k, v in t.items()}
            row["memory"] = {what: _probe(home, sid, what) for what in ("walk", "transcript")}
            out["sizes"][str(n)] = row
    finally:
        loop.close()
    return out


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    ratios: list[tuple] = []
    absolute: list[tuple] = []
    sizes = res["sizes"]
    if not res.get("sdk", True):
        absolute.append(
            ("scale: the SDK beside it", "not measured: openai-agents is not installed (pip install -e '.[bench]')")
        )
    first = min(sizes, key=int)
    for n, row in sizes.items():
        us = row["us_per_event"]
        mine = us["agentlog transcript"]
        if n != first:
            growth = mine / sizes[first]["us_per_event"]["agentlog transcript"]
            ratios.append((f"open+transcript per event, {int(n):,} / {int(first):,} events", growth, None))
        if "sdk get_items" in us:
            ratios.append((f"open+transcript, {int(n):,} linear / SDK get_items", mine / us["sdk get_items"], None))
        mem = row["memory"]
        walk, whole = mem["walk"]["peak_growth_bytes"], mem["transcript"]["peak_growth_bytes"]
        sdk = f"; SDK {us['sdk get_items']:.2f} us" if "sdk get_items" in us else ""
        absolute.append(
            (
                f"{int(n):,} events: open+transcript per event{'; SDK get_items' if sdk else ''}",
                f"{mine:.2f} us ({fmt_s(row['times']['agentlog transcript']['median_s'])}){sdk}",
            )
        )
        if walk is not None and whole is not None:
            absolute.append(
                (
                    f"{int(n):,} events: peak RSS growth, walk() streamed / transcript() list",
                    f"{walk / 1e6:.1f} MB / {whole / 1e6:.1f} MB",
                )
            )
    return ratios, absolute


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "probe":
        print(json.dumps(probe(sys.argv[2], sys.argv[3], sys.argv[4])))
    else:
        raise SystemExit("usage: python -m bench.scale probe HOME SESSION_ID walk|transcript")
