"""Part 4: Store.list() over thousands of sessions vs a parse-everything listing.

agentlog reads session.json and stats index.bin per session (its size
is the event count, its mtime the last append). The baseline reads
session.json too, then opens every chunk and parses every line for the
count and the last event time, as the anchors' listings do.
"""

from __future__ import annotations

import os
from typing import Any

from agentlog import FileBackend, Store

from ._build import many_sessions
from ._common import CountingFs, OsCalls, fmt_s
from ._measure import interleaved
from ._naive import Counter, naive_list

NAME = "listing"


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    n = 2_000 if ctx["quick"] else 10_000
    directory, info = many_sessions(ctx["bench_dir"], n)
    home = os.path.join(directory, "home")

    def ours() -> int:
        return len(Store(home, durability="full").list())

    def naive() -> int:
        return len(naive_list(home))

    t = interleaved({"agentlog": ours, "naive": naive}, 3 if ctx["quick"] else 5)
    if t["agentlog"]["result_len"] != t["naive"]["result_len"]:
        raise RuntimeError(f"listings disagree: {t}")
    fs = CountingFs()
    with OsCalls() as ours_os:
        Store(backend=FileBackend(home, fs=fs)).list()
    snap = fs.snapshot()
    counter = Counter()
    with OsCalls() as naive_os:
        naive_list(home, counter)
    return {
        "sessions": n,
        "events": info["events"],
        "listed": t["agentlog"]["result_len"],
        "times": t,
        "ratio": t["agentlog"]["median_s"] / t["naive"]["median_s"],
        "agentlog_io": {
            "files_opened": ours_os.opens,
            "stat_calls": ours_os.stats,
            "fs_layer_opens": snap["opens"],
            "bytes_read": snap["bytes_read"],
        },
        "naive_io": {"files_opened": naive_os.opens, "stat_calls": naive_os.stats, "bytes_read": counter.bytes_read},
    }


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    n = res["sessions"]
    ratios = [(f"list {n:,} sessions: agentlog / parse-everything", res["ratio"], None)]
    a, b = res["agentlog_io"], res["naive_io"]
    absolute = [
        (
            f"list {n:,} sessions ({res['events']:,} events)",
            f"agentlog {fmt_s(res['times']['agentlog']['median_s'])} "
            f"(per session: {a['files_opened'] / n:.2f} files opened, {a['stat_calls'] / n:.2f} stats, "
            f"{a['bytes_read'] / n:.0f} B read); "
            f"naive {fmt_s(res['times']['naive']['median_s'])} "
            f"({b['files_opened'] / n:.2f} files, {b['stat_calls'] / n:.2f} stats, "
            f"{b['bytes_read'] / n:.0f} B)",
        )
    ]
    return ratios, absolute
