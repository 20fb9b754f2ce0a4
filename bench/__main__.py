"""python -m bench [--quick] [--dir DIR] [append] [open] [big] [listing] [path] [scale] [search] [import] [startup]"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from . import append, big, imports, listing, open_context, path, scale, search, startup
from ._common import code_version, describe_machine, machine

PARTS = {m.NAME: m for m in (append, open_context, big, listing, path, scale, search, imports, startup)}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _table(title: str, rows: list[tuple], ratio: bool) -> list[str]:
    lines = [title]
    width = max((len(r[0]) for r in rows), default=0)
    for row in rows:
        if ratio:
            name, value, target = row
            mark = ""
            if target:
                op, bound = target.split()
                ok = {"<=": value <= float(bound), "<": value < float(bound), ">=": value >= float(bound)}[op]
                mark = f"  target {target}: {'met' if ok else 'NOT met'}"
            lines.append(f"  {name:<{width}}  {value:7.3f}x{mark}")
        else:
            name, text = row
            lines.append(f"  {name:<{width}}  {text}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"parts to run (default: all): {', '.join(PARTS)}")
    parser.add_argument("--quick", action="store_true", help="scaled-down run (~100 MB big session)")
    parser.add_argument(
        "--dir",
        default=os.path.join(ROOT, "bench-home"),
        help="where datasets are cached and results written (default: bench-home/)",
    )
    args = parser.parse_args(argv)
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    parts = list(dict.fromkeys(args.parts)) or list(PARTS)
    bench_dir = os.path.abspath(args.dir)
    os.makedirs(bench_dir, exist_ok=True)
    mode = "quick" if args.quick else "full"
    ctx = {"quick": args.quick, "bench_dir": bench_dir}

    info = machine(bench_dir)
    print(f"agentlog bench ({mode}): {', '.join(parts)}", flush=True)
    code = code_version(ROOT)
    print(f"machine: {describe_machine(info)}", flush=True)
    print(f"code: {code}", flush=True)
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for name in parts:
        t0 = time.perf_counter()
        print(f"... {name}", file=sys.stderr, flush=True)
        results[name] = PARTS[name].run(ctx)
        timings[name] = round(time.perf_counter() - t0, 1)

    ratio_rows: list[tuple] = []
    abs_rows: list[tuple] = []
    for name in parts:
        r, a = PARTS[name].report(results[name])
        ratio_rows += r
        abs_rows += a
    out = [
        "",
        *_table(
            "RATIOS (agentlog / baseline, measured side by side; lower is better unless the target says >=)",
            ratio_rows,
            True,
        ),
        "",
        *_table("ABSOLUTE (this machine, this run)", abs_rows, False),
        "",
        f"part wall times: {timings}",
    ]
    print("\n".join(out), flush=True)

    path = os.path.join(bench_dir, "results.json")
    doc: dict[str, Any] = {}
    if os.path.exists(path):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            doc = {}
    if doc.get("mode") != mode:
        doc = {"mode": mode, "parts": {}}
    doc["machine"] = info
    doc["code"] = code
    doc["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for name in parts:
        doc["parts"][name] = {
            "result": results[name],
            "wall_s": timings[name],
            "machine_load_avg": info["load_avg"],
            "code": code,
        }
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
