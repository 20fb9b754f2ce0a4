"""SSE fan-out: N subscribers on one session while another process appends.

    python -m bench.server_fanout [--subscribers 100] [--events 1000] [--rate R] [--json OUT]

Three processes, all real: ``agentlog serve`` on loopback (port 0), a
writer process appending ``--events`` messages to the file store as fast
as it can (durability full), and this process holding ``--subscribers``
SSE connections. The server learns of the writer's commits by watching
the session directory (inotify), never from the writer directly.

Delivery latency of one event to one subscriber = the wall-clock time the
subscriber parsed it minus the event's own timestamp (taken by the store
just before the append is written and synced), so it includes the
writer's fsync, the watch, the server's read of the log and the send.
Nothing here asserts a time; tests/test_server_load.py runs the same
harness and checks that every subscriber got every event in order.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from agentlog import Store
from agentlog.event import parse_timestamp

_WRITER = """
import sys
import time
from agentlog import Store
store = Store(sys.argv[1])
with store.open(sys.argv[2]) as s:
    print("ready", flush=True)
    sys.stdin.readline()
    n, rate = int(sys.argv[3]), float(sys.argv[4])
    start = time.perf_counter()
    for i in range(n):
        if rate:
            time.sleep(max(0.0, start + i / rate - time.perf_counter()))
        s.append("message", {"content": f"event {i}"}, role="user")
print("done", flush=True)
"""


@dataclass
class Fanout:
    session_id: str
    written: list[str]
    received: list[list[str]]
    latencies_ms: list[float] = field(default_factory=list)
    write_seconds: float = 0.0
    deliver_seconds: float = 0.0


def start_server(home: str) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from agentlog.cli import main; main()",
            "--home",
            home,
            "serve",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENTLOG_TOKEN": ""},
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    if " at http://" not in line:
        server.kill()
        raise RuntimeError(f"agentlog serve did not start: {line!r}")
    return server, line.rsplit(" at ", 1)[1].strip().rstrip("/")


async def _subscribe(
    client: httpx.AsyncClient,
    url: str,
    expect: int,
    ready: asyncio.Event,
    counter: list[int],
    ids: list[str],
    stamps: list[tuple[str, int]],
) -> None:
    async with client.stream("GET", url, timeout=None) as response:
        response.raise_for_status()
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                now = time.time_ns()
                data = orjson.loads(line[5:])
                if name == "ready":
                    counter[0] += 1
                    if counter[0] == counter[1]:
                        ready.set()
                elif name == "settled":
                    ids.append(data["id"])
                    stamps.append((data["timestamp"], now))
                    if len(ids) >= expect:
                        return
                elif name == "dropped":
                    raise RuntimeError(f"a subscriber was dropped: {data}")


async def _run(
    url: str, session_id: str, subscribers: int, expect: int, writer: subprocess.Popen[str]
) -> tuple[list[list[str]], list[float], float, float]:
    limits = httpx.Limits(max_connections=subscribers + 10, max_keepalive_connections=subscribers + 10)
    async with httpx.AsyncClient(limits=limits) as client:
        ready = asyncio.Event()
        counter = [0, subscribers]
        ids: list[list[str]] = [[] for _ in range(subscribers)]
        stamps: list[list[tuple[str, int]]] = [[] for _ in range(subscribers)]
        stream = f"{url}/api/v1/sessions/{session_id}/stream"
        tasks = [
            asyncio.create_task(_subscribe(client, stream, expect, ready, counter, ids[i], stamps[i]))
            for i in range(subscribers)
        ]
        await asyncio.wait_for(ready.wait(), 60)
        assert writer.stdin is not None and writer.stdout is not None
        started = time.perf_counter()
        writer.stdin.write("go\n")
        writer.stdin.flush()
        line = await asyncio.to_thread(writer.stdout.readline)
        write_seconds = time.perf_counter() - started
        if line.strip() != "done":
            raise RuntimeError(f"the writer failed: {line!r}")
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
        deliver_seconds = time.perf_counter() - started
    latencies = [(now - parse_timestamp(ts)) / 1e6 for per in stamps for ts, now in per]
    return ids, latencies, write_seconds, deliver_seconds


def run_fanout(home: str, subscribers: int, events: int, rate: float = 0.0) -> Fanout:
    """Serve ``home``, fan ``events`` appends out to ``subscribers`` clients;
    the writer appends ``rate`` events per second (0: as fast as it can)."""
    store = Store(home)
    with store.create(name="fan-out") as session:
        sid = session.id
    server, url = start_server(home)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, home, sid, str(events), str(rate)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        if writer.stdout.readline().strip() != "ready":
            raise RuntimeError("the writer did not start")
        ids, latencies, write_s, deliver_s = asyncio.run(_run(url, sid, subscribers, events, writer))
    finally:
        writer.kill()
        writer.wait()
        server.terminate()
        server.wait(30)
    with store.open(sid, readonly=True) as s:
        written = [e.id for e in s.entries()]
    return Fanout(sid, written, ids, latencies, write_s, deliver_s)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.server_fanout",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument(
        "--rate", type=float, default=0.0, help="writer's appends per second (default 0: as fast as it can)"
    )
    parser.add_argument("--json", metavar="OUT", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentlog-fanout-") as tmp:
        result = run_fanout(os.path.join(tmp, "home"), args.subscribers, args.events, args.rate)
    in_order = all(r == result.written for r in result.received)
    lat = result.latencies_ms
    figures: dict[str, Any] = {
        "subscribers": args.subscribers,
        "events": args.events,
        "rate": args.rate or "max",
        "every_subscriber_got_every_event_in_order": in_order,
        "writer_events_per_s": round(args.events / result.write_seconds),
        "all_delivered_after_s": round(result.deliver_seconds, 2),
        "deliveries": len(lat),
        "latency_ms": {
            "p50": round(percentile(lat, 0.50), 1),
            "p90": round(percentile(lat, 0.90), 1),
            "p99": round(percentile(lat, 0.99), 1),
            "max": round(max(lat), 1),
        },
        "cpus": os.cpu_count(),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    return 0 if in_order else 1


if __name__ == "__main__":
    sys.exit(main())
