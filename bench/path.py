"""Part "path": open + the whole active path against the Agents SDK's SQLiteSession.

A linear session of ordinary messages (user / assistant / tool output,
160 to 600 characters), stored once in agentlog (file backend) and once in
the OpenAI Agents SDK's ``SQLiteSession`` (its own SQLite file), with the
same items. Timed side by side, samples interleaved:

- agentlog ``Store(home)``, ``open(readonly=True)``, ``transcript()``, ``close()``;
- the same with ``context()`` (no compaction: the whole path);
- agentlog ``walk()`` of the last 20 events;
- ``SQLiteSession(id, db)``, ``get_items()`` (whole history), ``close()``;
- ``get_items(limit=20)``.

Needs the ``bench`` extra (``openai-agents``); without it the part is
skipped with a note, never faked.
"""

from __future__ import annotations

import asyncio
import os
import random
from itertools import islice
from typing import Any

import orjson

from agentlog import FileBackend, Store

from ._build import _cached, _Texts
from ._common import fmt_s, tree_files
from ._measure import interleaved

NAME = "path"


def _items(n: int, seed: int = 7) -> list[tuple[str, dict[str, Any]]]:
    """(role, item) pairs in the Responses input format the SDK stores."""
    rng = random.Random(seed)
    texts = _Texts(rng)
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        phase = i % 3
        if phase == 0:
            out.append(("user", {"role": "user", "content": texts(160)}))
        elif phase == 1:
            out.append(("assistant", {"role": "assistant", "content": texts(260)}))
        else:
            out.append(("tool", {"type": "function_call_output", "call_id": f"call_{i}", "output": texts(600)}))
    return out


def _build(bench_dir: str, n: int) -> tuple[str, dict[str, Any]]:
    from agents import SQLiteSession

    def build(tmp: str) -> dict[str, Any]:
        items = _items(n)
        store = Store(os.path.join(tmp, "home"), durability="off")
        sess = store.create(name=f"bench path {n}")
        for start in range(0, n, 1000):
            sess.append_many([("message", item, role) for role, item in items[start : start + 1000]])
        sid = sess.id
        sess.close()
        db = os.path.join(tmp, "sdk.db")
        peer = SQLiteSession("bench", db)
        loop = asyncio.new_event_loop()
        for start in range(0, n, 1000):
            loop.run_until_complete(peer.add_items([item for _, item in items[start : start + 1000]]))
        peer.close()
        loop.close()
        # The two file layouts of the seeds: a pi-style JSONL session (one
        # entry a line, resume = parse the whole file) and the loop-store's
        # whole-file JSON (rewritten on each save, resume = load it).
        with open(os.path.join(tmp, "session.jsonl"), "wb") as f:
            for i, (_, item) in enumerate(items):
                f.write(orjson.dumps({"type": "message", "id": i, "parentId": i - 1, "message": item}) + b"\n")
        with open(os.path.join(tmp, "history.json"), "wb") as f:
            f.write(orjson.dumps({"items": [item for _, item in items]}))
        return {"session_id": sid, "events": n}

    def check(directory: str, info: dict[str, Any]) -> None:
        store = Store(os.path.join(directory, "home"), durability="off")
        with store.open(info["session_id"], readonly=True) as s:
            if len(s) != info["events"]:
                raise ValueError(f"{len(s)} events, expected {info['events']}")

    return _cached(bench_dir, "path", {"kind": "linear", "events": n, "v": 2}, build, check)


def _agentlog(home: str, sid: str, what: str) -> Any:
    def op() -> int:
        store = Store(backend=FileBackend(home, durability="full"))
        sess = store.open(sid, readonly=True)
        try:
            if what == "transcript":
                return len(sess.transcript())
            if what == "before":
                # The seam's default walk (one index probe, one positioned
                # read, one decode per event): what the file backend did
                # before its block read, measured in the same run.
                from agentlog.backends.base import SessionStorage

                return len(SessionStorage.ancestors(sess.storage, sess.head))
            if what == "python loop":
                # The same block read with its inner loop in Python (what
                # runs where agentlog._speedups was not built), in the same run.
                from agentlog.backends.files import pathread

                fast = pathread.follow, pathread.follow_block
                pathread.follow, pathread.follow_block = pathread._follow, pathread._follow_block
                try:
                    return len(sess.transcript())
                finally:
                    pathread.follow, pathread.follow_block = fast
            if what == "context":
                return len(sess.context())
            return len(list(islice(sess.walk(), 20)))
        finally:
            sess.close()

    return op


def _sdk(db: str, loop: asyncio.AbstractEventLoop, limit: int | None) -> Any:
    from agents import SQLiteSession

    def op() -> int:
        peer = SQLiteSession("bench", db)
        try:
            return len(loop.run_until_complete(peer.get_items(limit=limit)))
        finally:
            peer.close()

    return op


def _floor(home: str, sid: str, db: str, rounds: int = 5) -> dict[str, float]:
    """Seconds per event of the irreducible steps, on the same data: what
    any Python reader of these bytes pays (agentlog), and what the SDK's
    reader pays per row (one SQLite fetch, one ``json.loads``)."""
    import glob
    import json
    import sqlite3
    import time
    import zlib

    import orjson

    from agentlog import Event

    chunks = sorted(glob.glob(os.path.join(home, "sessions", sid, "chunks", "*.jsonl")))
    lines = b"".join(open(c, "rb").read() for c in chunks).split(b"\n")[:-1]
    recs = [orjson.loads(line) for line in lines]

    def best(fn: Any) -> float:
        out = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return min(out) / len(lines)

    def sdk_rows() -> None:
        con = sqlite3.connect(db)
        try:
            rows = con.execute("SELECT message_data FROM agent_messages ORDER BY id").fetchall()
            [json.loads(r[0]) for r in rows]
        finally:
            con.close()

    return {
        "crc32": best(lambda: [zlib.crc32(line) for line in lines]),
        "orjson.loads": best(lambda: [orjson.loads(line) for line in lines]),
        "Event()": best(
            lambda: [
                Event(r["id"], r["parent_id"], r["kind"], r["role"], r["timestamp"], r["record"], None, None)
                for r in recs
            ]
        ),
        "sdk fetch+json.loads": best(sdk_rows),
    }


def _jsonl(path: str) -> Any:
    """Resume a pi-style JSONL session: read it whole, parse every line."""

    def op() -> int:
        with open(path, "rb") as f:
            return len([orjson.loads(line) for line in f.read().splitlines()])

    return op


def _whole_json(path: str) -> Any:
    def op() -> int:
        with open(path, "rb") as f:
            return len(orjson.loads(f.read())["items"])

    return op


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    try:
        import agents  # noqa: F401
    except ImportError:
        return {"skipped": "openai-agents is not installed (pip install -e '.[bench]')"}
    sizes = [1_000, 10_000] if ctx["quick"] else [1_000, 10_000, 100_000]
    rounds = 7 if ctx["quick"] else 11
    out: dict[str, Any] = {"sizes": {}}
    loop = asyncio.new_event_loop()
    try:
        for n in sizes:
            directory, info = _build(ctx["bench_dir"], n)
            home, sid = os.path.join(directory, "home"), info["session_id"]
            db = os.path.join(directory, "sdk.db")
            ops = {
                "agentlog transcript": _agentlog(home, sid, "transcript"),
                "agentlog context": _agentlog(home, sid, "context"),
                "agentlog per-event walk (before)": _agentlog(home, sid, "before"),
                "agentlog transcript, Python loop": _agentlog(home, sid, "python loop"),
                "sdk get_items": _sdk(db, loop, None),
                "agentlog last 20": _agentlog(home, sid, "last20"),
                "sdk last 20": _sdk(db, loop, 20),
                "jsonl parse (pi-style)": _jsonl(os.path.join(directory, "session.jsonl")),
                "whole-file JSON": _whole_json(os.path.join(directory, "history.json")),
            }
            t = interleaved(ops, max(3, rounds if n <= 10_000 else rounds // 2))
            if t["agentlog transcript"]["result_len"] != n or t["sdk get_items"]["result_len"] != n:
                raise RuntimeError(f"lengths disagree: { {k: v['result_len'] for k, v in t.items()} }")
            session_bytes = sum(os.path.getsize(p) for p in tree_files(os.path.join(home, "sessions", sid)))
            sdk_bytes = sum(
                os.path.getsize(p) for p in tree_files(directory) if os.path.basename(p).startswith("sdk.db")
            )
            sdk_med = t["sdk get_items"]["median_s"]
            out["sizes"][str(n)] = {
                "times": t,
                "ratio_transcript": t["agentlog transcript"]["median_s"] / sdk_med,
                "ratio_context": t["agentlog context"]["median_s"] / sdk_med,
                "ratio_before": t["agentlog per-event walk (before)"]["median_s"] / sdk_med,
                "ratio_python_loop": t["agentlog transcript, Python loop"]["median_s"] / sdk_med,
                "ratio_last20": t["agentlog last 20"]["median_s"] / t["sdk last 20"]["median_s"],
                "ratio_jsonl": t["agentlog transcript"]["median_s"] / t["jsonl parse (pi-style)"]["median_s"],
                "ratio_whole_json": t["agentlog transcript"]["median_s"] / t["whole-file JSON"]["median_s"],
                "us_per_event": 1e6 * t["agentlog transcript"]["median_s"] / n,
                "bytes": {"agentlog": session_bytes, "sdk": sdk_bytes},
                "ratio_bytes": session_bytes / sdk_bytes,
                "floor_s_per_event": _floor(home, sid, db),
            }
    finally:
        loop.close()
    return out


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    if "skipped" in res:
        return [], [("path", f"skipped: {res['skipped']}")]
    ratios, absolute = [], []
    for n, row in res["sizes"].items():
        big = int(n) == 10_000
        ratios.append(
            (
                f"open+transcript, {int(n):,} linear / SDK get_items",
                row["ratio_transcript"],
                "<= 0.5" if big else None,
            )
        )
        ratios.append(
            (
                f"open+context, {int(n):,} linear / SDK get_items",
                row["ratio_context"],
                "<= 0.5" if big else None,
            )
        )
        ratios.append((f"before: open+per-event walk, {int(n):,} / SDK get_items", row["ratio_before"], None))
        if "ratio_python_loop" in row:
            ratios.append(
                (f"open+transcript, Python inner loop, {int(n):,} / SDK get_items", row["ratio_python_loop"], None)
            )
        ratios.append((f"last 20, {int(n):,} linear / SDK get_items(limit=20)", row["ratio_last20"], None))
        if "ratio_jsonl" in row:
            ratios.append((f"open+transcript, {int(n):,} / pi-style JSONL parse", row["ratio_jsonl"], None))
            ratios.append((f"open+transcript, {int(n):,} / whole-file JSON load", row["ratio_whole_json"], None))
        ratios.append(
            (
                f"bytes on disk, {int(n):,} messages / SDK database",
                row["ratio_bytes"],
                "<= 1.3" if big else None,
            )
        )
    for n, row in res["sizes"].items():
        t = row["times"]
        absolute.append(
            (
                f"path, {int(n):,} events",
                f"transcript {fmt_s(t['agentlog transcript']['median_s'])} "
                f"({row['us_per_event']:.1f} us/event), SDK {fmt_s(t['sdk get_items']['median_s'])}; "
                f"bytes {row['bytes']['agentlog']:,} vs {row['bytes']['sdk']:,}",
            )
        )
        floor = row.get("floor_s_per_event", {})
        absolute.append(
            (
                f"path, {int(n):,} events, per event",
                ", ".join(f"{k} {v * 1e6:.2f} us" for k, v in floor.items()),
            )
        )
    return ratios, absolute
