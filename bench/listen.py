"""How fast a reader elsewhere sees a commit: python -m bench.listen [--events 200] [--store URL]

A writer process appends events one at a time; a reader in this process
waits with ``Session.wait_for_commit`` and stamps when each one becomes
visible. PostgreSQL wakes the reader by LISTEN/NOTIFY; the other backends
by looking every 50 ms. Prints p50/p99 of commit-to-visible latency.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from agentlog import Store

from ._common import pct

WRITER = r"""
import json, sys, time
from agentlog import Store
with Store(sys.argv[1]).open(sys.argv[2]) as s:
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(int(sys.argv[3])):
        s.append("custom", {"i": i, "sent": time.time()})
        time.sleep(0.02)
"""


def measure(url: str, events: int) -> list[float]:
    store = Store(url)
    store.create(session_id="listen").close()
    reader = store.open("listen", readonly=True)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, "listen", str(events)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdin is not None
    assert writer.stdout.readline().strip() == "ready"
    writer.stdin.write("go\n")
    writer.stdin.flush()
    seen, delays = 0, []
    deadline = time.time() + events * 0.02 + 30
    while seen < events and time.time() < deadline:
        if reader.wait_for_commit(1.0):
            now = time.time()
            new = reader.path()[seen:]
            delays += [now - e.record["sent"] for e in new]
            seen += len(new)
    writer.wait(timeout=60)
    reader.close()
    return sorted(delays)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.listen", description=__doc__)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--store", action="append", default=[])
    args = parser.parse_args()
    stores = args.store or [tempfile.mkdtemp(prefix="agentlog-listen-")]
    if not args.store and os.environ.get("AGENTLOG_TEST_PG"):
        sep = "&" if "?" in os.environ["AGENTLOG_TEST_PG"] else "?"
        stores.append(f"{os.environ['AGENTLOG_TEST_PG']}{sep}schema=listen_{int(time.time())}")
    for url in stores:
        d = measure(url, args.events)
        print(
            json.dumps(
                {
                    "store": url.split("?")[0],
                    "events": len(d),
                    "p50_ms": round(pct(d, 0.5) * 1e3, 2),
                    "p99_ms": round(pct(d, 0.99) * 1e3, 2),
                    "max_ms": round(d[-1] * 1e3, 2),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
