"""Part 2: open + context() of a short branch, as the session grows.

The session has thousands of small events on hundreds of branches; HEAD
sits on a 40-event branch near the root. agentlog reads the index tail,
then one index probe and one record per event of the path; the baseline
parses every line of every chunk. The ratio should fall as history grows.
"""

from __future__ import annotations

import os
from typing import Any

from ._build import tree_session
from ._common import fmt_bytes, fmt_s
from ._measure import (
    agentlog_op,
    counted_agentlog,
    counted_naive,
    interleaved,
    naive_op,
    traced_peak,
)

NAME = "open"


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    sizes = [1_000, 10_000, 30_000] if ctx["quick"] else [1_000, 10_000, 100_000]
    rounds = 5 if ctx["quick"] else 9
    out: dict[str, Any] = {"sizes": {}, "build_durability": "off"}
    for n in sizes:
        directory, info = tree_session(ctx["bench_dir"], n)
        home = os.path.join(directory, "home")
        sid = info["session_id"]
        sdir = os.path.join(home, "sessions", sid)
        ops = {
            "agentlog reader": agentlog_op(home, sid, readonly=True),
            "agentlog writer": agentlog_op(home, sid, readonly=False),
            "naive": naive_op(sdir),
        }
        t = interleaved(ops, rounds)
        lens = {k: v["result_len"] for k, v in t.items()}
        if len(set(lens.values())) != 1:
            raise RuntimeError(f"context lengths disagree: {lens}")
        row = {
            "events": n,
            "branches": info["branches"],
            "context_len": lens["naive"],
            "chunk_bytes": info["chunk_bytes"],
            "times": t,
            "ratio_reader": t["agentlog reader"]["median_s"] / t["naive"]["median_s"],
            "ratio_writer": t["agentlog writer"]["median_s"] / t["naive"]["median_s"],
            "io": {
                "agentlog reader": counted_agentlog(home, sid, readonly=True),
                "agentlog writer": counted_agentlog(home, sid, readonly=False),
                "naive": counted_naive(lambda c, sdir=sdir: naive_op(sdir, c)),
            },
            "tracemalloc_peak": {
                "agentlog reader": traced_peak(ops["agentlog reader"]),
                "naive": traced_peak(ops["naive"]),
            },
        }
        out["sizes"][str(n)] = row
    return out


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    ratios, absolute = [], []
    for n, row in res["sizes"].items():
        target = "< 0.2" if int(n) == 10_000 else None  # the figure is for 10k events
        ratios.append((f"open+context, {int(n):,} events: reader / naive", row["ratio_reader"], target))
        ratios.append((f"open+context, {int(n):,} events: writer / naive", row["ratio_writer"], target))
    for n, row in res["sizes"].items():
        t, io, mem = row["times"], row["io"], row["tracemalloc_peak"]
        absolute.append(
            (
                f"{int(n):,} events ({row['branches']} branches, context {row['context_len']})",
                f"reader {fmt_s(t['agentlog reader']['median_s'])}, "
                f"writer {fmt_s(t['agentlog writer']['median_s'])}, "
                f"naive {fmt_s(t['naive']['median_s'])}; read {fmt_bytes(io['agentlog reader']['bytes_read'])} "
                f"vs {fmt_bytes(io['naive']['bytes_read'])}; heap {fmt_bytes(mem['agentlog reader'])} "
                f"vs {fmt_bytes(mem['naive'])}",
            )
        )
    return ratios, absolute
