"""Before and after in one run: python -m bench.versions REV [--rounds N] [PART...]

Runs ``python -m bench --quick PART...`` alternately against git revision
REV (its ``src`` and ``bench``, exported to a temporary directory) and this
working tree, ``--rounds`` times each, and prints each ratio's median per
side. Alternating rounds share the machine's noise between both sides;
each side's own harness measures its own code, so only ratios both
harnesses print are compared.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROW = re.compile(r"^  (.+?)\s+([0-9.]+)x")


def _export(rev: str, into: str) -> str:
    """REV's ``src`` and ``bench`` under ``into`` (its harness measures its code)."""
    archive = subprocess.run(
        ["git", "-C", ROOT, "archive", rev, "src", "bench"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


def _ratios(root: str, parts: list[str], bench_dir: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(root, "src"), root])}
    out = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--dir", bench_dir, *parts],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    ).stdout
    section = out.split("RATIOS", 1)[1].split("ABSOLUTE", 1)[0]
    return {m.group(1).strip(): float(m.group(2)) for line in section.splitlines() if (m := _ROW.match(line))}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.versions", description=__doc__)
    parser.add_argument("rev")
    parser.add_argument("parts", nargs="*", default=["append", "open", "listing"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentlog-versions-") as tmp:
        sides = {"before": _export(args.rev, tmp), "after": ROOT}
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for r in range(args.rounds):
            for side in ("before", "after") if r % 2 == 0 else ("after", "before"):
                print(f"... round {r + 1}: {side}", file=sys.stderr, flush=True)
                runs[side].append(_ratios(sides[side], args.parts, os.path.join(tmp, f"data-{side}")))
    names = list(runs["after"][0])
    width = max(map(len, names))
    title = f"ratio (median of {args.rounds} alternating rounds)"
    print(f"{title:<{width}}  {args.rev[:10]:>10}  {'now':>10}")
    for name in names:
        before = statistics.median(r[name] for r in runs["before"] if name in r)
        if not all(name in r for r in runs["before"]):
            continue  # a ratio REV's harness does not print
        after = statistics.median(r[name] for r in runs["after"])
        print(f"{name:<{width}}  {before:9.3f}x  {after:9.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
