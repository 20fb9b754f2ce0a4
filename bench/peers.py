"""python -m bench.peers [--quick] [--dir DIR] [FIGURE ...]: agentlog beside the stores users would otherwise pick.

Figures (default: all, in this order): rss, append, resume, listing, disk.
Results go to ``<dir>/peers.json`` (``peers-quick.json`` with ``--quick``),
with the machine and the commit measured; ``python -m bench.peers_report``
turns them into the tables of docs/performance.md and ``python -m
bench.plots`` into docs/img/peers-*.png. ``make bench-peers`` runs all three.

Peers that cannot run here (a package missing, PostgreSQL unreachable) are
skipped with the reason, never faked. The RSS figure runs first, while
this process is still small: its probes are children of this process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from . import peers_append, peers_disk, peers_listing, peers_resume, peers_rss
from ._common import code_version, describe_machine, machine
from .peers_peer import Peer
from .peers_stores import all_peers, append_only, rss_only

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = {
    "rss": peers_rss,
    "append": peers_append,
    "resume": peers_resume,
    "listing": peers_listing,
    "disk": peers_disk,
}
#: Peers a figure leaves out because another row already measures the same bytes.
SAME_AS = {
    "resume": {"jsonl-fsync": "jsonl"},
    "listing": {"jsonl-fsync": "jsonl", "sdk-advanced": "sdk"},
    "disk": {"jsonl-fsync": "jsonl"},
    "rss": {"jsonl-fsync": "jsonl"},
}


def describe(peers: list[Peer]) -> dict[str, Any]:
    return {
        p.key: {
            "label": p.label,
            "durability": p.durability,
            "sync": p.sync,
            "writers": p.writers_note,
            "loads_everything": p.loads_everything,
        }
        for p in peers
    }


def results_path(bench_dir: str, quick: bool) -> str:
    return os.path.join(bench_dir, "peers-quick.json" if quick else "peers.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("figures", nargs="*", metavar="FIGURE", help=f"default: all ({', '.join(FIGURES)})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: up to 10k events, 100 MB, 2,000 sessions")
    parser.add_argument("--dir", default=os.path.join(ROOT, "bench-home"), help="datasets and results")
    parser.add_argument("--peers", default="", help="comma-separated peer keys (default: all)")
    args = parser.parse_args(argv)
    unknown = [f for f in args.figures if f not in FIGURES]
    if unknown:
        parser.error(f"unknown figure(s) {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    figures = [f for f in FIGURES if f in args.figures] or list(FIGURES)
    bench_dir = os.path.abspath(args.dir)
    os.makedirs(bench_dir, exist_ok=True)
    ctx = {"quick": args.quick, "bench_dir": bench_dir}
    chosen = set(filter(None, args.peers.split(",")))
    peers = [p for p in all_peers() if not chosen or p.key in chosen]
    skipped = {p.key: why for p in peers if (why := p.unavailable())}
    peers = [p for p in peers if p.key not in skipped]
    extra = {
        "rss": [p for p in rss_only() if p.unavailable() is None and (not chosen or p.key in chosen)],
        "append": [p for p in append_only() if p.unavailable() is None and (not chosen or p.key in chosen)],
    }

    info = machine(bench_dir)
    code = code_version(ROOT)
    print(f"agentlog bench-peers ({'quick' if args.quick else 'full'}): {', '.join(figures)}", flush=True)
    print(f"machine: {describe_machine(info)}\ncode: {code}", flush=True)
    for key, why in skipped.items():
        print(f"skipped {key}: {why}", flush=True)

    path = results_path(bench_dir, args.quick)
    doc: dict[str, Any] = {}
    if os.path.exists(path):
        with open(path) as f:
            doc = json.load(f)
    doc.setdefault("figures", {})
    for name in figures:
        same = SAME_AS.get(name, {})
        mine = [p for p in peers if p.key not in same] + extra.get(name, [])
        t0 = time.perf_counter()
        print(f"... {name}: {', '.join(p.key for p in mine)}", file=sys.stderr, flush=True)
        result = FIGURES[name].run(ctx, mine)
        wall = round(time.perf_counter() - t0, 1)
        print(f"    {name} took {wall} s", file=sys.stderr, flush=True)
        doc["figures"][name] = {
            "result": result,
            "wall_s": wall,
            "code": code,
            "load_avg": [round(x, 2) for x in os.getloadavg()],
            "same_as": same,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        doc.update(
            mode="quick" if args.quick else "full",
            machine=info,
            code=code,
            peers=describe(all_peers() + rss_only() + append_only()),
            skipped=skipped,
        )
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, path)
    print(f"results: {path}")
    from .peers_report import text_summary

    print(text_summary(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
