"""python -m bench.gilfree: would a commit path outside the GIL reach 4x?

An experiment for issue 8's group-commit target (8 threads appending to
one session at ``full`` reach at least 4x one thread), not a part of
``make bench``. It builds ``gilfree_flusher.c`` (a group commit whose
write and ``fdatasync`` run in C threads that never hold the GIL) and
measures, in one run, alternating, on the same disk:

- agentlog at ``full``, 1 and 8 threads, a handle each: the figure today;
- *the model*: each thread does all of agentlog's Python work for an
  append (an append to a session at durability ``off``), then hands the
  line's bytes to the C group commit and waits for its sync. That is the
  best a C flusher built into agentlog could do: the Python part cannot
  shrink, and the sync part has no GIL hand-off at all. It runs with one
  sync at a time, with two in flight, and with a commit delay.

Each model's 8 and 16 threads are compared with agentlog's own single
thread at ``full`` (what the target compares) and with the model's single
thread. docs/performance.md has a run and what it means.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import time
from typing import Any

from agentlog import Store

from ._common import code_version, describe_machine, machine, median

HERE = os.path.dirname(os.path.abspath(__file__))
_TEXT = (
    "Ran the test suite: 214 passed, 3 skipped. The flaky network test "
    "is marked; next I will look at the parser edge case on line 88."
)
_RECORD = {"content": _TEXT, "model": "bench-model", "finish_reason": "stop"}

#: (label, in_flight, delay_ns) of each model.
DESIGNS = (
    ("one sync at a time", 1, 0),
    ("two syncs in flight", 2, 0),
    ("one at a time, 100 us commit delay", 1, 100_000),
)


def _build(out_dir: str) -> Any:
    """Compile the experiment's extension into ``out_dir`` and import it."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = os.path.join(out_dir, "gilfree_flusher" + suffix)
    cc = os.environ.get("CC", "cc")
    include = sysconfig.get_paths()["include"]
    source = os.path.join(HERE, "gilfree_flusher.c")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", source, "-o", target, "-lpthread"], check=True)
    spec = importlib.util.spec_from_file_location("gilfree_flusher", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_threads(threads: int, per_thread: int, step: Any) -> float:
    """Events/s of ``threads`` threads each calling ``step(i)`` ``per_thread`` times."""
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        barrier.wait()
        try:
            for _ in range(per_thread):
                step(k)
        except BaseException as exc:  # reported below: a thread that stopped early would inflate the rate
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"an appending thread failed: {errors[0]!r}") from errors[0]
    return threads * per_thread / elapsed


def _agentlog(home: str, threads: int, per_thread: int) -> float:
    """agentlog at ``full``, a handle each (the figure issue 8 sets)."""
    store = Store(home, durability="full")
    sid = store.create().id
    handles = [store.open(sid) for _ in range(threads)]
    try:
        return _run_threads(threads, per_thread, lambda k: handles[k].append("message", _RECORD, role="assistant"))
    finally:
        for h in handles:
            h.close()
        store.close()


def _model(
    home: str, flusher: Any, line: bytes, threads: int, per_thread: int, *, python: bool = True
) -> tuple[float, float]:
    """agentlog's Python work at ``off``, then the line through the C group
    commit; without ``python``, only the C group commit (the disk's bound)."""
    store = Store(home, durability="off")
    sid = store.create().id
    handles = [store.open(sid) for _ in range(threads)] if python else []
    syncs = flusher.syncs()

    def step(k: int) -> None:
        if python:
            handles[k].append("message", _RECORD, role="assistant")
        flusher.append(line)

    try:
        rate = _run_threads(threads, per_thread, step)
    finally:
        for h in handles:
            h.close()
        store.close()
    return rate, (flusher.syncs() - syncs) / (threads * per_thread)


def _pure(ext: Any, work: str, threads: int, gather: bool) -> tuple[float, float]:
    """Lines/s and syncs a line of ``threads`` C threads for two seconds."""
    path = os.path.join(work, f"pure-{threads}-{gather}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    try:
        lines, syncs = ext.pure(fd, threads, 2.0, gather)
    finally:
        os.close(fd)
        os.unlink(path)
    return lines / 2.0, syncs / lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gilfree", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4000, help="events per measurement (default 4000)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--dir", default=os.path.join(os.path.dirname(HERE), "bench-home"), help="where to write")
    args = parser.parse_args(argv)
    os.makedirs(args.dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gilfree-", dir=args.dir)
    print(f"machine: {describe_machine(machine(args.dir))}")
    print(f"code: {code_version(os.path.dirname(HERE))}")
    try:
        ext = _build(work)
        line = b'{"pad":"' + b"x" * 560 + b'"}\n'  # about one agentlog line of this record
        flushers = []
        for label, in_flight, delay in DESIGNS:
            fd = os.open(
                os.path.join(work, f"lines-{in_flight}-{delay}"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
            )
            flushers.append((label, ext.Flusher(fd, in_flight, delay)))  # lives until the process exits
        results: dict[str, list[float]] = {}

        def note(key: str, value: float) -> None:
            results.setdefault(key, []).append(value)

        n = args.events
        for r in range(args.rounds):
            home = os.path.join(work, f"home-{r}")
            one = _agentlog(home, 1, n)
            eight = _agentlog(home, 8, n // 8)
            note("agentlog 8 threads / 1 thread", eight / one)
            for label, flusher in flushers if r % 2 == 0 else reversed(flushers):
                m1, _ = _model(home, flusher, line, 1, n)
                m8, s8 = _model(home, flusher, line, 8, n // 8)
                m16, _ = _model(home, flusher, line, 16, n // 16)
                note(f"{label}: 8 threads / agentlog 1 thread", m8 / one)
                note(f"{label}: 16 threads / agentlog 1 thread", m16 / one)
                note(f"{label}: 8 threads / its own 1 thread", m8 / m1)
                note(f"{label}: syncs an event at 8 threads", s8)
            c8, _ = _model(home, flushers[0][1], line, 8, n // 8, python=False)
            note("C alone, no Python work, one sync at a time: 8 threads / agentlog 1 thread", c8 / one)
            # The same with the commit delay: the group waits for every
            # appending thread, which the disk rewards once no Python work
            # stands between a thread's acknowledgement and its next line.
            d8, ds8 = _model(home, flushers[-1][1], line, 8, n // 8, python=False)
            note("C alone, no Python work, 100 us commit delay: 8 threads / agentlog 1 thread", d8 / one)
            note("C alone, no Python work, 100 us commit delay: syncs an event at 8 threads", ds8)
            # And with no Python anywhere: C threads that never take the GIL.
            lone, _ = _pure(ext, work, 1, False)
            for gather in (False, True):
                p8, ps8 = _pure(ext, work, 8, gather)
                how = "the leader gathers all 8 lines" if gather else "one sync at a time"
                note(f"C threads, no GIL at all, {how}: 8 threads / 1 C thread", p8 / lone)
                note(f"C threads, no GIL at all, {how}: 8 threads / agentlog 1 thread", p8 / one)
                note(f"C threads, no GIL at all, {how}: syncs an event at 8 threads", ps8)
            note("agentlog 1 thread, events/s", one)
            shutil.rmtree(home)
            print(f"round {r + 1}: agentlog 1 thread {one:,.0f}/s, 8 threads {eight:,.0f}/s", flush=True)
        width = max(len(k) for k in results)
        for key, values in results.items():
            shown = ", ".join(f"{v:,.2f}" for v in values)
            print(f"  {key:<{width}}  median {median(values):,.2f}  ({shown})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
