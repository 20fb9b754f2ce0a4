"""Timed operations shared by the open/context parts, and their memory probes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from agentlog import FileBackend, Store

from ._common import CountingFs, median
from ._naive import Counter, naive_context, naive_inline_context

Op = Callable[[], int]


def agentlog_op(home: str, sid: str, *, readonly: bool, what: str = "context", fs: CountingFs | None = None) -> Op:
    """Open the session (as a reader, or as the writer resuming it), build
    ``context()`` (or the whole ``transcript()``), close. Returns the length."""

    def op() -> int:
        store = Store(backend=FileBackend(home, durability="full", fs=fs))
        sess = store.open(sid, readonly=readonly)
        try:
            events = sess.context() if what == "context" else sess.transcript()
        finally:
            sess.close()
        return len(events)

    return op


def naive_op(session_dir: str, counter: Counter | None = None) -> Op:
    return lambda: len(naive_context(session_dir, counter))


def inline_op(path: str, counter: Counter | None = None) -> Op:
    return lambda: len(naive_inline_context(path, counter))


def interleaved(
    ops: dict[str, Op], rounds: int, before: Callable[[str], None] | None = None, warmup: int = 0
) -> dict[str, dict[str, Any]]:
    """Run every op once per round, the order rotating, and keep each one's
    times. ``warmup`` rounds run first, untimed, for every op alike: a part
    with few rounds would otherwise time the first uses of a fresh process
    (its allocator growing, its first full collection) in one side or the
    other."""
    names = list(ops)
    for _ in range(warmup):
        for name in names:
            ops[name]()
    times: dict[str, list[float]] = {n: [] for n in names}
    lengths: dict[str, int] = {}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            if before is not None:
                before(name)
            t0 = time.perf_counter()
            lengths[name] = ops[name]()
            times[name].append(time.perf_counter() - t0)
    return {
        n: {"median_s": median(times[n]), "min_s": min(times[n]), "runs": rounds, "result_len": lengths[n]}
        for n in names
    }


def traced_peak(op: Op) -> int:
    """Peak Python heap allocated during ``op`` (tracemalloc), in bytes."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        op()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def rss_probe(args: list[str]) -> dict[str, Any]:
    """ru_maxrss growth of one op in a fresh interpreter (see bench._probe)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-m", "bench._probe", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def counted_agentlog(home: str, sid: str, *, readonly: bool, what: str = "context") -> dict[str, int]:
    fs = CountingFs()
    agentlog_op(home, sid, readonly=readonly, what=what, fs=fs)()
    snap = fs.snapshot()
    return {
        "bytes_read": snap["bytes_read"],
        "files_opened": snap["opens"],
        "preads": snap["preads"],
        "writes": snap["writes"],
        "stats": snap["stats"],
        "listdirs": snap["listdirs"],
    }


def counted_naive(op_factory: Callable[[Counter], Op]) -> dict[str, int]:
    counter = Counter()
    op_factory(counter)()
    return {"bytes_read": counter.bytes_read, "files_opened": counter.files_opened}
