"""Synthetic sessions, built once and cached under bench-home/cache/.

Building uses durability="off": the bytes on disk are identical to a
"full" build, only the syncs are skipped, and a 1 GB session would
otherwise take most of the run. A cache entry is keyed by its parameters
and a build version, is written beside its final name and renamed in, and
is rebuilt if it no longer opens (the format changed under it).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from agentlog import Store

from ._common import tree_files

BUILD_VERSION = 3

_WORDS = (
    "the test suite parser config module function returns value error warning "
    "file line branch commit fixed failing passed build import request response "
    "cache index chunk record session model tool result output check update "
    "refactor handle edge case retry timeout database query schema migration"
).split()


def _text_pool(rng: random.Random, size: int = 1 << 20) -> str:
    words = rng.choices(_WORDS, k=size // 6)
    return " ".join(words)[:size]


class _Texts:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pool = _text_pool(rng)

    def __call__(self, size: int) -> str:
        start = self.rng.randrange(0, len(self.pool) - size)
        return self.pool[start : start + size]


def _small_event(i: int, texts: _Texts) -> tuple[str, str, dict[str, Any]]:
    """A user / assistant / tool_call / tool_result cycle of ordinary sizes."""
    phase = i % 4
    if phase == 0:
        return "message", "user", {"content": texts(160)}
    if phase == 1:
        return (
            "message",
            "assistant",
            {"content": texts(260), "model": "bench-model", "usage": {"input_tokens": 1200 + i, "output_tokens": 80}},
        )
    if phase == 2:
        return (
            "tool_call",
            "assistant",
            {"id": f"call_{i}", "name": "bash", "arguments": orjson.dumps({"cmd": texts(60)}).decode()},
        )
    return (
        "tool_result",
        "tool",
        {"tool_call_id": f"call_{i - 1}", "name": "bash", "content": texts(600), "is_error": False},
    )


def _log(msg: str) -> None:
    print(f"  [build] {msg}", file=sys.stderr, flush=True)


def _cached(
    bench_dir: str,
    name: str,
    params: dict[str, Any],
    build: Callable[[str], dict[str, Any]],
    check: Callable[[str, dict[str, Any]], None],
) -> tuple[str, dict[str, Any]]:
    """(directory, info) of a built dataset, building it if needed."""
    key = hashlib.sha256(json.dumps({"v": BUILD_VERSION, **params}, sort_keys=True).encode()).hexdigest()[:12]
    final = os.path.join(bench_dir, "cache", f"{name}-{key}")
    ready = os.path.join(final, "ready.json")
    if os.path.exists(ready):
        with open(ready) as f:
            info = json.load(f)
        try:
            check(final, info)
            return final, info
        except Exception as exc:  # the library changed under the cache: rebuild
            _log(f"cached {name} no longer opens ({exc}); rebuilding")
        shutil.rmtree(final, ignore_errors=True)
    elif os.path.exists(final):
        shutil.rmtree(final, ignore_errors=True)
    tmp = final + f".building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    t0 = time.perf_counter()
    _log(f"building {name} {params} (cached afterwards)")
    info = build(tmp)
    info["params"] = params
    info["build_seconds"] = round(time.perf_counter() - t0, 1)
    # Let the dirty pages reach the disk now, not during the measurements.
    for path in tree_files(tmp):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
    with open(os.path.join(tmp, "ready.json"), "w") as f:
        json.dump(info, f)
    os.rename(tmp, final)
    _log(f"built {name} in {info['build_seconds']} s")
    return final, info


def _check_open(directory: str, info: dict[str, Any]) -> None:
    store = Store(os.path.join(directory, "home"), durability="off")
    with store.open(info["session_id"], readonly=True) as s:
        if len(s) != info["events"]:
            raise ValueError(f"{len(s)} events, expected {info['events']}")


# --- part 2: a branched session of small events ----------------------------------
def tree_session(bench_dir: str, events: int, seed: int = 1) -> tuple[str, dict[str, Any]]:
    """``events`` small events; every 200 an earlier event is selected (a new
    branch); at the end HEAD moves onto a short branch near the root."""
    params = {"kind": "tree", "events": events, "seed": seed, "branch_every": 200}

    def build(tmp: str) -> dict[str, Any]:
        rng = random.Random(seed)
        texts = _Texts(rng)
        store = Store(os.path.join(tmp, "home"), durability="off")
        sess = store.create(name=f"bench tree {events}")
        line: list[str] = []
        branches = 0
        tail = 20
        for i in range(events - tail):
            if i and i % 200 == 0:
                back = rng.randint(50, 150)
                line = line[:-back]
                sess.select(line[-1])
                branches += 1
            kind, role, rec = _small_event(i, texts)
            line.append(sess.append(kind, rec, role=role).id)
        short = line[:tail]
        sess.select(short[-1])
        for i in range(tail):
            kind, role, rec = _small_event(i, texts)
            short.append(sess.append(kind, rec, role=role).id)
        sid = sess.id
        sess.close()
        return {
            "session_id": sid,
            "events": events,
            "branches": branches + 1,
            "context_len": len(short),
            "chunk_bytes": _chunk_bytes(store, sid),
        }

    return _cached(bench_dir, "tree", params, build, _check_open)


def _chunk_bytes(store: Store, sid: str) -> int:
    chunks = os.path.join(store.home, "sessions", sid, "chunks")
    return sum(os.path.getsize(os.path.join(chunks, n)) for n in os.listdir(chunks))


# --- part 3: a big session: large tool outputs, branches, compactions -----------
def big_session(bench_dir: str, events: int, target_bytes: int, seed: int = 7) -> tuple[str, dict[str, Any]]:
    """~``target_bytes`` on disk, mostly tool outputs of 20-200 KB in blobs.

    Every 200 events an event 50-150 back on the active path is selected
    (hundreds of branches); every 5,000 events a compaction keeps the last
    20 events. Beside the session, ``inline.jsonl`` holds the same events
    with every payload inline: the one-file layout of the anchors."""
    lo, hi = 20 * 1024, 200 * 1024
    p_big = min(1.0, target_bytes / ((lo + hi) / 2 * (events / 4)))
    params = {
        "kind": "big",
        "events": events,
        "target_bytes": target_bytes,
        "seed": seed,
        "blob_range": [lo, hi],
        "branch_every": 200,
        "compact_every": 5000,
    }

    def build(tmp: str) -> dict[str, Any]:
        rng = random.Random(seed)
        texts = _Texts(rng)
        pool = base64.b64encode(rng.randbytes(hi * 2)).decode()
        store = Store(os.path.join(tmp, "home"), durability="off")
        sess = store.create(name=f"bench big {events}")
        inline = open(os.path.join(tmp, "inline.jsonl"), "wb")
        line: list[str] = []
        branches = compactions = blobs = 0
        previous_compaction = None
        t0 = time.perf_counter()
        for i in range(events):
            if i and i % 200 == 0:
                line = line[: -rng.randint(50, 150)]
                sess.select(line[-1])
                branches += 1
            if i % 5000 == 2500 and len(line) > 20:
                kind, role = "compaction", "system"
                rec = {
                    "summary": texts(2000),
                    "structured": {"goals": [texts(80)], "files": [texts(40)]},
                    "first_kept_event_id": line[-20],
                    "tokens_before": 180000,
                    "tokens_after": 30000,
                    "previous_compaction_id": previous_compaction,
                }
                compactions += 1
            else:
                kind, role, rec = _small_event(i, texts)
                if kind == "tool_result" and rng.random() < p_big:
                    size = rng.randint(lo, hi)
                    start = rng.randrange(0, len(pool) - size)
                    rec["content"] = f"{i}:" + pool[start : start + size]
                    blobs += 1
            event = sess.append(kind, rec, role=role)
            if kind == "compaction":
                previous_compaction = event.id
            line.append(event.id)
            inline.write(
                orjson.dumps(
                    {
                        "id": event.id,
                        "parent_id": event.parent_id,
                        "branch_from": event.branch_from,
                        "kind": kind,
                        "role": role,
                        "timestamp": event.timestamp,
                        "record": rec,
                    }
                )
                + b"\n"
            )
            if i and i % 20000 == 0:
                _log(f"{i} events, {time.perf_counter() - t0:.0f} s")
        inline.close()
        sid = sess.id
        sess.close()
        sdir = os.path.join(store.home, "sessions", sid)
        return {
            "session_id": sid,
            "events": events,
            "branches": branches + 1,
            "compactions": compactions,
            "blobs": blobs,
            "session_bytes": sum(os.path.getsize(p) for p in tree_files(sdir)),
            "chunk_bytes": _chunk_bytes(store, sid),
            "inline_bytes": os.path.getsize(os.path.join(tmp, "inline.jsonl")),
            "active_path_len": len(line),
        }

    return _cached(bench_dir, "big", params, build, _check_open)


# --- part 4: many sessions -----------------------------------------------------
def many_sessions(bench_dir: str, sessions: int, seed: int = 3) -> tuple[str, dict[str, Any]]:
    """``sessions`` sessions of 4-120 events (about 60 on average, 35 KB
    of chunks); one in twenty archived. Turns are appended with
    append_many (an assistant message, its tool call and result) to keep
    the build short; the bytes a listing touches are the same."""
    params = {"kind": "many", "sessions": sessions, "seed": seed, "events": [4, 120]}

    def build(tmp: str) -> dict[str, Any]:
        rng = random.Random(seed)
        texts = _Texts(rng)
        store = Store(os.path.join(tmp, "home"), durability="off")
        total = 0
        t0 = time.perf_counter()
        for n in range(sessions):
            extra = {"summary": texts(120)}
            if n % 20 == 0:
                extra["archived"] = True
            sess = store.create(
                name=f"task {n}: {texts(30)}", working_dir="/work/project", model="bench-model", **extra
            )
            count = rng.randint(4, 120)
            for start in range(0, count, 4):
                turn = [_small_event(i, texts) for i in range(start, min(start + 4, count))]
                sess.append_many([(kind, rec, role) for kind, role, rec in turn])
            total += count
            sess.close()
            if n and n % 2000 == 0:
                _log(f"{n} sessions, {time.perf_counter() - t0:.0f} s")
        return {"sessions": sessions, "events": total}

    def check(directory: str, info: dict[str, Any]) -> None:
        sdir = os.path.join(directory, "home", "sessions")
        if len([n for n in os.listdir(sdir) if not n.startswith(".")]) != info["sessions"]:
            raise ValueError("session count changed")

    return _cached(bench_dir, "many", params, build, check)
