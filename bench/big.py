"""Part 3: a ~1 GB session (100k events, hundreds of branches, big tool outputs).

Compared side by side, warm (pages cached) and cold (this dataset's pages
dropped with POSIX_FADV_DONTNEED before each run):

- agentlog reader / writer: open, then context() (stops at the latest
  compaction), then close. Blob payloads stay unloaded.
- agentlog transcript: open, then the whole active path root -> HEAD.
- naive chunks: every line of every chunk parsed (no blobs read).
- naive inline: the anchors' layout, one JSONL holding every payload
  inline (1 GB), parsed line by line. What "resume hangs on a 100 MB
  session" looks like.
"""

from __future__ import annotations

import os
from typing import Any

from ._build import big_session
from ._common import evict, fmt_bytes, fmt_s, tree_files
from ._measure import (
    agentlog_op,
    counted_agentlog,
    counted_naive,
    inline_op,
    interleaved,
    naive_op,
    rss_probe,
    traced_peak,
)

NAME = "big"


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    quick = ctx["quick"]
    events, target = (10_000, 100 * 10**6) if quick else (100_000, 10**9)
    directory, info = big_session(ctx["bench_dir"], events, target)
    home = os.path.join(directory, "home")
    sid = info["session_id"]
    sdir = os.path.join(home, "sessions", sid)
    inline = os.path.join(directory, "inline.jsonl")
    # Fresh interpreters first, while this process is still small (Linux
    # hands a parent's ru_maxrss down to its children).
    rss = {
        "agentlog reader": rss_probe(["agentlog", home, sid, "reader"]),
        "agentlog writer": rss_probe(["agentlog", home, sid, "writer"]),
        "agentlog transcript": rss_probe(["agentlog", home, sid, "reader", "transcript"]),
        "naive chunks": rss_probe(["naive", sdir]),
        "naive inline": rss_probe(["inline", inline]),
    }
    ops = {
        "agentlog reader": agentlog_op(home, sid, readonly=True),
        "agentlog writer": agentlog_op(home, sid, readonly=False),
        "agentlog transcript": agentlog_op(home, sid, readonly=True, what="transcript"),
        "naive chunks": naive_op(sdir),
        "naive inline": inline_op(inline),
    }
    warm = interleaved(ops, 3 if quick else 5)
    lens = {k: v["result_len"] for k, v in warm.items()}
    if len({lens["agentlog reader"], lens["agentlog writer"], lens["naive chunks"], lens["naive inline"]}) != 1:
        raise RuntimeError(f"context lengths disagree: {lens}")

    # Cold: drop this dataset's pages (not the blobs: no reader here needs
    # them) before every run. Directory entries and inodes stay cached.
    small_files = [p for p in tree_files(sdir) if os.sep + "blobs" + os.sep not in p]

    def drop(name: str) -> None:
        evict([inline] if name == "naive inline" else small_files)

    cold_ops = {k: ops[k] for k in ("agentlog reader", "agentlog writer", "naive chunks", "naive inline")}
    cold = interleaved(cold_ops, 2 if quick else 3, before=drop)

    io = {
        "agentlog reader": counted_agentlog(home, sid, readonly=True),
        "agentlog writer": counted_agentlog(home, sid, readonly=False),
        "agentlog transcript": counted_agentlog(home, sid, readonly=True, what="transcript"),
        "naive chunks": counted_naive(lambda c: naive_op(sdir, c)),
        "naive inline": counted_naive(lambda c: inline_op(inline, c)),
    }
    heap = {k: traced_peak(op) for k, op in ops.items()}
    base = warm["naive chunks"]["median_s"]
    base_inline = warm["naive inline"]["median_s"]
    return {
        "dataset": {
            k: info[k]
            for k in (
                "events",
                "branches",
                "compactions",
                "blobs",
                "session_bytes",
                "chunk_bytes",
                "inline_bytes",
                "active_path_len",
                "build_seconds",
            )
        },
        "build_durability": "off",
        "context_len": lens["agentlog reader"],
        "transcript_len": lens["agentlog transcript"],
        "warm": warm,
        "cold": cold,
        "ratios": {
            "reader / naive chunks (warm)": warm["agentlog reader"]["median_s"] / base,
            "writer / naive chunks (warm)": warm["agentlog writer"]["median_s"] / base,
            "transcript / naive chunks (warm)": warm["agentlog transcript"]["median_s"] / base,
            "reader / naive inline (warm)": warm["agentlog reader"]["median_s"] / base_inline,
            "reader / naive chunks (cold)": cold["agentlog reader"]["median_s"] / cold["naive chunks"]["median_s"],
            "writer / naive chunks (cold)": cold["agentlog writer"]["median_s"] / cold["naive chunks"]["median_s"],
            "reader / naive inline (cold)": cold["agentlog reader"]["median_s"] / cold["naive inline"]["median_s"],
            "reader heap / naive chunks heap": heap["agentlog reader"] / heap["naive chunks"],
            "reader peak RSS / naive chunks peak RSS": _ratio(rss["agentlog reader"], rss["naive chunks"]),
            "reader bytes read / naive chunks bytes read": io["agentlog reader"]["bytes_read"]
            / io["naive chunks"]["bytes_read"],
        },
        "io": io,
        "tracemalloc_peak": heap,
        "maxrss": rss,
    }


def _ratio(a: dict[str, Any], b: dict[str, Any]) -> float:
    x, y = a.get("peak_rss_delta_bytes"), b.get("peak_rss_delta_bytes")
    return x / y if x is not None and y else float("nan")


def _rss(probe: dict[str, Any]) -> str:
    peak = probe.get("peak_rss_delta_bytes")
    text = fmt_bytes(peak) if peak is not None else "n/a"
    return f"{text} (ru_maxrss +{fmt_bytes(probe['maxrss_delta_bytes'])})"


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    d = res["dataset"]
    label = f"{fmt_bytes(d['session_bytes'])} session"
    ratios = [(f"{label}: {k}", v, None) for k, v in res["ratios"].items()]
    absolute = [
        (
            f"{label}",
            f"{d['events']:,} events, {d['branches']} branches, {d['compactions']} compactions, "
            f"{d['blobs']:,} blobs, chunks {fmt_bytes(d['chunk_bytes'])}, inline file "
            f"{fmt_bytes(d['inline_bytes'])}; context {res['context_len']}, "
            f"active path {res['transcript_len']}",
        )
    ]
    for k in res["warm"]:
        cold = res["cold"].get(k)
        io, rss = res["io"][k], res["maxrss"][k]
        absolute.append(
            (
                f"  {k}",
                f"warm {fmt_s(res['warm'][k]['median_s'])}"
                + (f", cold {fmt_s(cold['median_s'])}" if cold else "")
                + f"; read {fmt_bytes(io['bytes_read'])} from {io['files_opened']} files"
                + f"; heap peak {fmt_bytes(res['tracemalloc_peak'][k])}"
                + f", peak RSS +{_rss(rss)}",
            )
        )
    return ratios, absolute
