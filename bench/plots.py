"""python -m bench.plots [--dir DIR]: PNG plots of the last `path` run.

Reads ``<dir>/results.json`` (written by ``python -m bench path``) and
writes ``docs/img/path-whole.png`` (open + whole path against the
session size: agentlog now, agentlog's per-event walk before, the Agents
SDK) and ``docs/img/path-ratio.png`` (the same as ratios to the SDK).
``make bench-peers`` runs both steps. Needs matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SERIES = {
    "agentlog transcript": "agentlog: open + transcript()",
    "agentlog per-event walk (before)": "agentlog before: per-event walk",
    "sdk get_items": "Agents SDK SQLiteSession.get_items()",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plots", description=__doc__)
    parser.add_argument("--dir", default=os.path.join(ROOT, "bench-home"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "img"))
    args = parser.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    with open(os.path.join(args.dir, "results.json")) as f:
        doc: dict[str, Any] = json.load(f)
    part = doc.get("parts", {}).get("path")
    if part is None or "sizes" not in part["result"]:
        print(f"no 'path' results in {args.dir}/results.json: run python -m bench path", file=sys.stderr)
        return 2
    sizes = sorted(part["result"]["sizes"].items(), key=lambda kv: int(kv[0]))
    xs = [int(n) for n, _ in sizes]
    machine = doc.get("machine", {})
    note = f"code {part.get('code', '?')}, load {part.get('machine_load_avg', '?')}, {machine.get('cpu', '')}"
    os.makedirs(args.out, exist_ok=True)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label in SERIES.items():
        ys = [row["times"][key]["median_s"] * 1e3 for _, row in sizes if key in row["times"]]
        if len(ys) == len(xs):
            ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("events in the session (linear)")
    ax.set_ylabel("open + whole history, median ms")
    ax.set_title("Whole history on resume, same run", fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, note, fontsize=6)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "path-whole.png"), dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label in (
        ("ratio_transcript", "transcript()"),
        ("ratio_context", "context()"),
        ("ratio_before", "before: per-event walk"),
        ("ratio_last20", "last 20 events"),
    ):
        ys = [row[key] for _, row in sizes if key in row]
        if len(ys) == len(xs):
            ax.plot(xs, ys, marker="o", label=label)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axhline(0.5, color="red", linewidth=0.8, linestyle="--", label="issue's target (0.5)")
    ax.set_xscale("log")
    ax.set_xlabel("events in the session (linear)")
    ax.set_ylabel("agentlog / Agents SDK (lower is better)")
    ax.set_title("Ratio to SQLiteSession, same run", fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, note, fontsize=6)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "path-ratio.png"), dpi=120)
    plt.close(fig)
    print(f"wrote {args.out}/path-whole.png and path-ratio.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
