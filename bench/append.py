"""Part 1: the write path, as ratios to raw write(+fdatasync) of the same bytes.

Every agentlog sample is paired with a raw sample taken right before or
after it (the order alternates), on a file in the same chunks directory,
so the disk, the journal and the neighbours' load are the same for both.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from typing import Any

from agentlog import FileBackend, Store
from agentlog._codec import encode_line

from ._common import CountingFs, median, pct

NAME = "append"

_SMALL_TEXT = (
    "Ran the test suite: 214 passed, 3 skipped. The flaky network test "
    "is marked; next I will look at the parser edge case on line 88."
)
_SMALL = {"content": _SMALL_TEXT, "model": "bench-model", "finish_reason": "stop"}


def _line_like(record: Any) -> bytes:
    """Bytes the size of the chunk line agentlog writes for ``record``."""
    return encode_line(
        {
            "id": "0" * 36,
            "parent_id": "0" * 36,
            "branch_from": None,
            "kind": "message",
            "role": "assistant",
            "timestamp": "2026-01-01T00:00:00.000000000Z",
            "record": record,
            "digest": None,
        }
    )


class _Raw:
    """A plain append-only file beside the chunks: the physical floor."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, "raw-baseline.bin")
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write_sync(self, data: bytes) -> None:
        os.write(self.fd, data)
        os.fdatasync(self.fd)

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> None:
        os.close(self.fd)
        os.unlink(self.path)


def _paired(
    n: int, warmup: int, ours: Callable[[int], None], raw: Callable[[int], None]
) -> tuple[list[float], list[float]]:
    a: list[float] = []
    b: list[float] = []
    clock = time.perf_counter
    for i in range(warmup + n):
        if i % 2:
            t0 = clock()
            ours(i)
            t1 = clock()
            raw(i)
            t2 = clock()
            ta, tb = t1 - t0, t2 - t1
        else:
            t0 = clock()
            raw(i)
            t1 = clock()
            ours(i)
            t2 = clock()
            tb, ta = t1 - t0, t2 - t1
        if i >= warmup:
            a.append(ta)
            b.append(tb)
    return a, b


def _summary(ours: list[float], raw: list[float]) -> dict[str, float]:
    pair = [x / y for x, y in zip(ours, raw, strict=True) if y > 0]
    return {
        "n": len(ours),
        "ours_p10_s": pct(ours, 0.1),  # under load, the closest figure to the quiet machine's median
        "ours_median_s": median(ours),
        "ours_p90_s": pct(ours, 0.9),
        "raw_median_s": median(raw),
        "raw_p90_s": pct(raw, 0.9),
        "ratio_median": median(ours) / median(raw),
        "ratio_p90": pct(ours, 0.9) / pct(raw, 0.9),
        "pairwise_ratio_median": median(pair),
    }


def _chunks_dir(store: Store, sid: str) -> str:
    return os.path.join(store.home, "sessions", sid, "chunks")


def _bench_full(home: str, n: int) -> dict[str, float]:
    store = Store(home, durability="full")
    sess = store.create(name="bench-append-full")
    raw = _Raw(_chunks_dir(store, sess.id))
    data = _line_like(_SMALL)
    try:
        ours, base = _paired(
            n, 50, lambda i: sess.append("message", _SMALL, role="assistant"), lambda i: raw.write_sync(data)
        )
    finally:
        raw.close()
        sess.close()
    out = _summary(ours, base)
    out["line_bytes"] = len(data)
    return out


def _bench_off(home: str, n: int) -> dict[str, float]:
    store = Store(home, durability="off")
    sess = store.create(name="bench-append-off")
    raw = _Raw(_chunks_dir(store, sess.id))
    data = _line_like(_SMALL)
    try:
        ours, base = _paired(
            n, 200, lambda i: sess.append("message", _SMALL, role="assistant"), lambda i: raw.write(data)
        )
    finally:
        raw.close()
        sess.close()
    return _summary(ours, base)


def _bench_many(home: str, n: int) -> dict[str, float]:
    store = Store(home, durability="full")
    sess = store.create(name="bench-append-many")
    raw = _Raw(_chunks_dir(store, sess.id))
    data = _line_like(_SMALL)
    batch = [("message", _SMALL, "assistant")] * 10
    ten = data * 10

    def raw_ten_syncs(i: int) -> None:
        for _ in range(10):
            raw.write_sync(data)

    try:
        ours, base10 = _paired(n, 10, lambda i: sess.append_many(batch), raw_ten_syncs)
        ours1, base1 = _paired(n, 10, lambda i: sess.append_many(batch), lambda i: raw.write_sync(ten))
    finally:
        raw.close()
        sess.close()
    return {"vs_10_syncs": _summary(ours, base10), "vs_1_sync_same_bytes": _summary(ours1, base1)}


def _blob_record(i: int, size: int, pool: bytes) -> dict[str, Any]:
    start = (i * 7919) % (len(pool) - size)
    text = f"{i}:" + pool[start : start + size].decode()
    return {"tool_call_id": f"call_{i}", "name": "bash", "content": text, "is_error": False}


def _bench_blob(home: str, n: int, size: int) -> dict[str, Any]:
    import base64

    pool = base64.b64encode(os.urandom(size * 2))
    fs = CountingFs()
    store = Store(backend=FileBackend(home, durability="full", fs=fs))
    sess = store.create(name="bench-append-blob")
    sdir = os.path.join(store.home, "sessions", sess.id)
    raw = _Raw(os.path.join(sdir, "chunks"))

    def ours(i: int) -> None:
        rec = _blob_record(i, size, pool)
        sess.append("tool_result", rec, role="tool")

    # The same durability protocol by hand: a new file synced, renamed in,
    # its directory synced, then the referring line appended and synced.
    rawdir = os.path.join(sdir, "raw-blobs")
    os.mkdir(rawdir)

    def raw_protocol(i: int) -> None:
        data = _blob_record(i, size, pool)["content"].encode()
        tmp = os.path.join(rawdir, f".tmp-{i}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, os.path.join(rawdir, str(i)))
        dfd = os.open(rawdir, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
        raw.write_sync(_line_like(None))

    try:
        before = fs.snapshot()
        ours_t, raw_t = _paired(n, 5, ours, lambda i: raw.write_sync(_blob_record(i, size, pool)["content"].encode()))
        after = fs.snapshot()
        ours_p, proto_t = _paired(n, 5, lambda i: ours(i + 10 * n), raw_protocol)
    finally:
        raw.close()
        sess.close()
        shutil.rmtree(rawdir, ignore_errors=True)
    out: dict[str, Any] = {
        "vs_one_write_sync": _summary(ours_t, raw_t),
        "vs_same_protocol_by_hand": _summary(ours_p, proto_t),
    }
    appended = n + 5
    out["syncs_per_append"] = (
        (after["fsyncs"] + after["fdatasyncs"] + after["dir_fsyncs"])
        - (before["fsyncs"] + before["fdatasyncs"] + before["dir_fsyncs"])
    ) / appended
    out["payload_bytes"] = size
    return out


def _throughput(
    store: Store, sid: str, fs: CountingFs, threads: int, per_thread: int, shared: bool
) -> dict[str, float]:
    """``threads`` appenders on one session; ``shared``: one Session object for all."""
    common = store.open(sid) if shared else None
    handles = [common] * threads if shared else [store.open(sid) for _ in range(threads)]
    barrier = threading.Barrier(threads + 1)

    def run(sess) -> None:
        barrier.wait()
        for _ in range(per_thread):
            sess.append("message", _SMALL, role="assistant")

    workers = [threading.Thread(target=run, args=(h,)) for h in handles]
    for w in workers:
        w.start()
    before = fs.snapshot()
    barrier.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    after = fs.snapshot()
    for h in {id(h): h for h in handles}.values():
        h.close()
    events = threads * per_thread
    syncs = (after["fdatasyncs"] - before["fdatasyncs"]) + (after["fsyncs"] - before["fsyncs"])
    return {"events": events, "seconds": elapsed, "events_per_s": events / elapsed, "syncs_per_event": syncs / events}


#: The group-commit figures: (label, threads, one shared Session?).
_GROUPS = (
    ("1 thread", 1, False),
    ("4 threads, a handle each", 4, False),
    ("4 threads, one shared Session", 4, True),
    ("8 threads, a handle each", 8, False),
    ("8 threads, one shared Session", 8, True),
    ("16 threads, a handle each", 16, False),
    ("16 threads, one shared Session", 16, True),
)


#: 8 threads with durability "off": the most 8 threads get through the Python
#: side of an append, with no disk in the way.
_CEILING = "8 threads, a handle each, durability off (no sync)"


def _bench_group(home: str, events: int, rounds: int) -> dict[str, Any]:
    """Events/s of N threads appending ``events`` in all to one session at
    ``full``. A shared disk's sync time drifts by several times within a
    minute, so each round is measured against its own single thread, run
    half before and half after the others (whose order alternates between
    rounds); the ratios reported are medians of those per-round ratios."""
    fs = CountingFs()
    store = Store(backend=FileBackend(home, durability="full", fs=fs))
    creator = store.create(name="bench-group-commit")
    sid = creator.id
    # The ceiling: the same 8 threads with no sync at all (durability "off").
    # What they reach is what the GIL and the thread hand-offs allow, whatever
    # the disk; a ratio to one thread at "full" above it cannot be reached.
    off_fs = CountingFs()
    off_store = Store(backend=FileBackend(home + "-off", durability="off", fs=off_fs))
    with off_store.create(name="bench-group-commit-off") as off_creator:
        off_sid = off_creator.id
    raw = _Raw(_chunks_dir(store, sid))
    data = _line_like(_SMALL)
    results: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in _GROUPS}
    results["raw"] = []
    results[_CEILING] = []
    several = _GROUPS[1:]
    try:
        for r in range(rounds):
            first = _throughput(store, sid, fs, 1, max(events // 2, 1), False)
            for label, threads, shared in several if r % 2 == 0 else tuple(reversed(several)):
                results[label].append(_throughput(store, sid, fs, threads, max(events // threads, 1), shared))
            results[_CEILING].append(_throughput(off_store, off_sid, off_fs, 8, max(events * 4 // 8, 1), False))
            t0 = time.perf_counter()
            for _ in range(events // 4):
                raw.write_sync(data)
            el = time.perf_counter() - t0
            results["raw"].append(
                {"events": events // 4, "seconds": el, "events_per_s": events / 4 / el, "syncs_per_event": 1.0}
            )
            last = _throughput(store, sid, fs, 1, max(events // 2, 1), False)
            both = first["seconds"] + last["seconds"]
            single = {
                "events": first["events"] + last["events"],
                "seconds": both,
                "events_per_s": (first["events"] + last["events"]) / both,
                "syncs_per_event": (first["syncs_per_event"] + last["syncs_per_event"]) / 2,
            }
            results["1 thread"].append(single)
            for key in results:
                results[key][-1]["vs_1_thread"] = results[key][-1]["events_per_s"] / single["events_per_s"]
            for how in ("a handle each", "one shared Session"):
                sixteen, eight = results[f"16 threads, {how}"][-1], results[f"8 threads, {how}"][-1]
                sixteen["vs_8_threads"] = sixteen["events_per_s"] / eight["events_per_s"]
    finally:
        raw.close()
        creator.close()
        shutil.rmtree(home + "-off", ignore_errors=True)
    out: dict[str, Any] = {}
    for key, runs in results.items():
        out[key] = {
            "events_per_s": median(r["events_per_s"] for r in runs),
            "syncs_per_event": median(r["syncs_per_event"] for r in runs),
            "vs_1_thread": median(r["vs_1_thread"] for r in runs),
            "runs": len(runs),
        }
        if "vs_8_threads" in runs[0]:
            out[key]["vs_8_threads"] = median(r["vs_8_threads"] for r in runs)
    return out


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    quick = ctx["quick"]
    home = os.path.join(ctx["bench_dir"], "append-home")
    shutil.rmtree(home, ignore_errors=True)
    n = 300 if quick else 2000
    try:
        res = {
            "full": _bench_full(home, n),
            "off": _bench_off(home, n * 3),
            "append_many_10": _bench_many(home, n // 10 if quick else n // 5),
            "blob_100k": _bench_blob(home, 30 if quick else 150, 100 * 1024),
            "group_commit": _bench_group(home, 800 if quick else 2400, 5 if quick else 7),
        }
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return res


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    """(ratio rows, absolute rows) for the summary table."""
    f, off, many, blob, gc = (res["full"], res["off"], res["append_many_10"], res["blob_100k"], res["group_commit"])
    ratios = [
        ("append full, median / raw write+fdatasync", f["ratio_median"], "<= 1.3"),
        ("append full, p90 / raw p90", f["ratio_p90"], None),
        ("append off, median / raw write", off["ratio_median"], None),
        ("append_many(10) / 10 raw write+fdatasync", many["vs_10_syncs"]["ratio_median"], None),
        ("append_many(10) / 1 raw write+fdatasync, same bytes", many["vs_1_sync_same_bytes"]["ratio_median"], None),
        ("blob append 100 KB / raw write+fdatasync 100 KB", blob["vs_one_write_sync"]["ratio_median"], None),
        ("blob append 100 KB / same 3-sync protocol by hand", blob["vs_same_protocol_by_hand"]["ratio_median"], None),
        ("4 threads (handle each) / 1 thread, events/s", gc["4 threads, a handle each"]["vs_1_thread"], None),
        ("4 threads (shared Session) / 1 thread, events/s", gc["4 threads, one shared Session"]["vs_1_thread"], None),
    ]
    if "8 threads, a handle each" in gc:  # results written before these figures existed lack them
        g8, g16 = gc["8 threads, a handle each"], gc["16 threads, a handle each"]
        s8, s16 = gc["8 threads, one shared Session"], gc["16 threads, one shared Session"]
        ratios += [
            ("8 threads (handle each) / 1 thread, events/s", g8["vs_1_thread"], ">= 4"),
            ("8 threads (shared Session) / 1 thread, events/s", s8["vs_1_thread"], ">= 4"),
            ("16 threads / 8 threads (handle each), events/s", g16["vs_8_threads"], ">= 1"),
            ("16 threads / 8 threads (shared Session), events/s", s16["vs_8_threads"], ">= 1"),
        ]
    if _CEILING in gc:
        ratios.append(("ceiling: 8 threads, no sync at all / 1 thread full", gc[_CEILING]["vs_1_thread"], None))
    absolute = [
        ("append full median / p90", f"{f['ours_median_s'] * 1e6:.0f} / {f['ours_p90_s'] * 1e6:.0f} us"),
        ("raw write+fdatasync median / p90", f"{f['raw_median_s'] * 1e6:.0f} / {f['raw_p90_s'] * 1e6:.0f} us"),
        (
            "append off median (target <= 12 us), p10; raw write median",
            f"{off['ours_median_s'] * 1e6:.1f} us, {off.get('ours_p10_s', float('nan')) * 1e6:.1f} us;"
            f" {off['raw_median_s'] * 1e6:.1f} us",
        ),
        ("append_many(10) median", f"{many['vs_10_syncs']['ours_median_s'] * 1e6:.0f} us"),
        (
            "blob append 100 KB median; syncs per append",
            f"{blob['vs_one_write_sync']['ours_median_s'] * 1e3:.2f} ms; {blob['syncs_per_append']:.2f}",
        ),
    ]
    for key in [label for label, _, _ in _GROUPS] + ["raw", _CEILING]:
        row = gc.get(key)
        if row is None:
            continue
        absolute.append(
            (f"group commit: {key}", f"{row['events_per_s']:.0f} events/s, {row['syncs_per_event']:.2f} syncs/event")
        )
    return ratios, absolute
