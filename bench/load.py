"""Many agents at once: python -m bench.load [--agents 50] [--seconds 60] [--store URL]...

Each agent is its own process appending to its own session at full
durability (a user message, then an assistant message, as fast as it can);
every fifth agent also follows another agent's session live. Bounded in
time; every store named is measured in the same run, one after the other.
Prints throughput and append latency percentiles per store; the figures go
in docs/performance.md with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from ._common import describe_machine, machine, pct

AGENT = r"""
import json, sys, time
from agentlog import Store
url, sid, follow, seconds, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
store = Store(url)
session = store.create(session_id=sid)
reader = None
time.sleep(max(0.0, start - time.time()))
latencies, seen, deadline = [], 0, time.time() + seconds
while time.time() < deadline:
    t0 = time.perf_counter()
    session.append("message", {"content": "x" * 200}, role="user" if len(latencies) % 2 == 0 else "assistant")
    latencies.append(time.perf_counter() - t0)
    if follow != "-":
        if reader is None and store.exists(follow):
            reader = store.open(follow, readonly=True)
        if reader is not None and reader.wait_for_commit(0.001):
            seen = len(reader)
session.close()
print(json.dumps({"latencies": latencies, "seen": seen}))
"""


def run(url: str, agents: int, seconds: float) -> dict[str, float]:
    start = time.time() + 3 + agents * 0.05  # every process is up before anyone appends
    procs = []
    for i in range(agents):
        follow = f"agent-{(i + 1) % agents}" if i % 5 == 0 else "-"
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", AGENT, url, f"agent-{i}", follow, str(seconds), str(start)],
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    latencies: list[float] = []
    followed = 0
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 120)
        doc = json.loads(out)
        latencies += doc["latencies"]
        followed += doc["seen"] > 0
    latencies.sort()
    return {
        "appends": len(latencies),
        "per_s": len(latencies) / seconds,
        "p50_ms": pct(latencies, 0.50) * 1e3,
        "p99_ms": pct(latencies, 0.99) * 1e3,
        "followers_that_saw_events": followed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--store",
        action="append",
        default=[],
        help="a store URL (repeatable); default: a fresh file store, and PostgreSQL from "
        "$AGENTLOG_TEST_PG in a fresh schema",
    )
    args = parser.parse_args()
    stores = list(args.store)
    if not stores:
        stores.append(tempfile.mkdtemp(prefix="agentlog-load-"))
        if os.environ.get("AGENTLOG_TEST_PG"):
            sep = "&" if "?" in os.environ["AGENTLOG_TEST_PG"] else "?"
            stores.append(f"{os.environ['AGENTLOG_TEST_PG']}{sep}schema=load_{int(time.time())}")
    print(f"machine: {describe_machine(machine(tempfile.gettempdir()))}")
    print(f"{args.agents} agent processes x {args.seconds:.0f} s, full durability")
    for url in stores:
        result = run(url, args.agents, args.seconds)
        print(
            f"{url.split('?')[0]:<50} {result['per_s']:8.0f} appends/s  p50 {result['p50_ms']:7.2f} ms  "
            f"p99 {result['p99_ms']:7.2f} ms  ({result['appends']} appends; "
            f"{result['followers_that_saw_events']} followers saw live events)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
