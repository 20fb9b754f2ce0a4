"""python -m bench.plots [--dir DIR] [--quick]: PNG plots of the last peers run (and of `bench path`).

From ``<dir>/peers.json`` (``python -m bench.peers``), into docs/img/:

- ``peers-resume.png``: open + the whole history against the session's length;
- ``peers-last20.png``: open + the newest 20 items against the same;
- ``peers-append.png``: append p50 (1 writer) against the session's length;
- ``peers-rss.png``: peak RSS growth while browsing, against the session's bytes;
- ``peers-listing-disk.png``: listing 10,000 sessions, and bytes after 200 turns.

Each line is labelled with the store's durability. From
``<dir>/results.json`` when it holds a ``path`` part (``python -m bench
path``): ``path-whole.png`` and ``path-ratio.png`` as before.
``make bench-peers`` runs this after the peers. Needs matplotlib (the
``bench`` extra).
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
#: One look per store, agentlog's backends in one colour family.
STYLE = {
    "agentlog-file": {"color": "#08519c", "linewidth": 2.6, "marker": "o"},
    "agentlog-sqlite": {"color": "#3182bd", "marker": "o"},
    "agentlog-postgresql": {"color": "#6baed6", "marker": "o"},
    "agentlog-memory": {"color": "#9ecae1", "marker": "o", "linestyle": ":"},
    "sdk": {"color": "#e6550d", "marker": "s"},
    "sdk-advanced": {"color": "#fd8d3c", "marker": "s", "linestyle": "--"},
    "sdk-limit": {"color": "#fdae6b", "marker": "s", "linestyle": ":"},
    "langgraph": {"color": "#31a354", "marker": "^"},
    "jsonl": {"color": "#756bb1", "marker": "D"},
    "jsonl-fsync": {"color": "#9e9ac8", "marker": "D", "linestyle": "--"},
    "json": {"color": "#636363", "marker": "v"},
}


def _label(doc: dict[str, Any], key: str) -> str:
    p = doc.get("peers", {}).get(key, {})
    label, sync = str(p.get("label", key)), str(p.get("sync", "?"))
    return label if sync in label else f"{label} [{sync}]"


def _note(doc: dict[str, Any], fig: dict[str, Any]) -> str:
    m = doc.get("machine", {})
    return (
        f"code {fig.get('code', '?')}, load {fig.get('load_avg', '?')}, {m.get('cpu', '')}, {m.get('filesystem', '')}"
    )


def _lines(
    plt: Any,
    out: str,
    doc: dict[str, Any],
    fig: dict[str, Any],
    series: dict[str, list[tuple[float, float]]],
    xlabel: str,
    ylabel: str,
    title: str,
) -> None:
    f, ax = plt.subplots(figsize=(8, 5))
    for key, points in series.items():
        if points:
            xs, ys = zip(*sorted(points), strict=True)
            ax.plot(xs, ys, label=_label(doc, key), **STYLE.get(key, {}))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best", framealpha=0.8)
    f.text(0.01, 0.01, _note(doc, fig), fontsize=6)
    f.tight_layout()
    f.savefig(out, dpi=110)
    plt.close(f)


def peers_plots(plt: Any, doc: dict[str, Any], out_dir: str) -> list[str]:
    written = []
    figs = doc.get("figures", {})
    if "resume" in figs:
        fig = figs["resume"]
        sizes = fig["result"]["sizes"]
        for what, name, title in (
            ("whole_s", "peers-resume.png", "Resume: open + the whole history (median, same run)"),
            ("last_s", "peers-last20.png", "Open + the newest 20 items (median, same run)"),
        ):
            series: dict[str, list[tuple[float, float]]] = {}
            for n, table in sizes.items():
                for key, row in table.items():
                    series.setdefault(key, []).append((int(n), row[what] * 1e3))
            _lines(plt, os.path.join(out_dir, name), doc, fig, series, "events in the session", "ms", title)
            written.append(name)
    if "append" in figs:
        fig = figs["append"]
        series = {}
        for n, table in fig["result"]["one"].items():
            for key, row in table.items():
                series.setdefault(key, []).append((int(n), row["p50_s"] * 1e6))
        name = "peers-append.png"
        _lines(
            plt,
            os.path.join(out_dir, name),
            doc,
            fig,
            series,
            "events already in the session",
            "append p50, µs",
            "One append, 1 writer, each store at its own durability",
        )
        written.append(name)
    if "rss" in figs:
        fig = figs["rss"]
        series = {}
        for size in fig["result"]["sizes"].values():
            for key, row in size["stores"].items():
                series.setdefault(key, []).append(
                    (size["target_bytes"] / 2**20, (row["peak_growth_bytes"] or 0) / 2**20)
                )
        name = "peers-rss.png"
        _lines(
            plt,
            os.path.join(out_dir, name),
            doc,
            fig,
            series,
            "session size, MB",
            "peak RSS growth, MB",
            "Browsing a big session: open, resume, 3 page-backs",
        )
        written.append(name)
    if "listing" in figs and "disk" in figs:
        f, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5))
        for ax, _fig, values, unit, title in (
            (left, figs["listing"], figs["listing"]["result"]["times"], 1e3, "listing the sessions, ms"),
            (
                right,
                figs["disk"],
                {k: v["bytes"] for k, v in figs["disk"]["result"]["stores"].items()},
                2**-20,
                "bytes after a 200-turn session, MB",
            ),
        ):
            keys = [k for k, v in values.items() if v is not None]
            ax.barh(
                [_label(doc, k) for k in keys],
                [values[k] * unit for k in keys],
                color=[STYLE.get(k, {}).get("color", "grey") for k in keys],
            )
            ax.set_xscale("log")
            ax.set_title(title, fontsize=10)
            ax.tick_params(axis="y", labelsize=7)
            ax.invert_yaxis()
            ax.grid(True, axis="x", which="both", alpha=0.3)
        if "sessions" in figs["listing"]["result"]:
            left.set_title(f"listing {figs['listing']['result']['sessions']:,} sessions, ms", fontsize=10)
        f.text(0.01, 0.01, _note(doc, figs["disk"]), fontsize=6)
        f.tight_layout()
        f.savefig(os.path.join(out_dir, "peers-listing-disk.png"), dpi=110)
        plt.close(f)
        written.append("peers-listing-disk.png")
    return written


def path_plots(plt: Any, doc: dict[str, Any], out_dir: str) -> list[str]:
    part = doc.get("parts", {}).get("path")
    if part is None or "sizes" not in part["result"]:
        return []
    sizes = sorted(part["result"]["sizes"].items(), key=lambda kv: int(kv[0]))
    xs = [int(n) for n, _ in sizes]
    machine = doc.get("machine", {})
    note = f"code {part.get('code', '?')}, load {part.get('machine_load_avg', '?')}, {machine.get('cpu', '')}"

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
    fig.savefig(os.path.join(out_dir, "path-whole.png"), dpi=120)
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
    fig.savefig(os.path.join(out_dir, "path-ratio.png"), dpi=120)
    plt.close(fig)
    return ["path-whole.png", "path-ratio.png"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plots", description=__doc__)
    parser.add_argument("--dir", default=os.path.join(ROOT, "bench-home"))
    parser.add_argument("--out", help="where the PNGs go (default: docs/img; with --quick, DIR/quick-img)")
    parser.add_argument("--quick", action="store_true", help="plot the --quick peers results")
    args = parser.parse_args(argv)
    if args.out is None:
        # A scaled-down run is a try, not a result: it never replaces the
        # committed plots of a full run.
        args.out = os.path.join(args.dir, "quick-img") if args.quick else os.path.join(ROOT, "docs", "img")
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    written: list[str] = []
    peers = os.path.join(args.dir, "peers-quick.json" if args.quick else "peers.json")
    if os.path.exists(peers):
        with open(peers) as f:
            written += peers_plots(plt, json.load(f), args.out)
    results = os.path.join(args.dir, "results.json")
    if os.path.exists(results) and not args.quick:
        with open(results) as f:
            written += path_plots(plt, json.load(f), args.out)
    if not written:
        print(f"nothing to plot in {args.dir}: run python -m bench.peers", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(written)} in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
