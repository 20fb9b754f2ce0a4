"""The workloads every peer is given, as neutral events (kind, role, record).

One generator, seeded, so that every store gets the same items in the
same order; each adapter in ``bench.peers_stores`` turns an event into its
own format (an Agents SDK item, a LangChain message, a pi-style entry, a
chat message in a whole-file JSON). A turn is four events: the user's
message, the assistant's tool call, the tool's output, the assistant's
reply.

- ``ordinary(n)``: the resume and append workload: user 160 characters,
  arguments 60, tool output 600, reply 260 (about 300 bytes an event).
- ``turns_with_tools(200)``: the bytes-on-disk workload: tool outputs of
  0.5-4 KB, one in twenty of 16-64 KB.
- ``big(events, target_bytes)``: the browsing workload: tool outputs of
  20-200 KB (base64, incompressible) often enough to reach the target
  size, and a compaction every 5,000 events that keeps the last 20 (for
  the stores that have compaction: agentlog and the pi-style file).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator
from typing import Any

import orjson

from ._build import _Texts

Ev = tuple[str, str, dict[str, Any]]  # kind, role, record

#: Compaction markers in ``big``: this record kind, keeping this many events.
COMPACTION = "compaction"
KEEP = 20


def _turn_event(i: int, texts: _Texts, tool_output: str) -> Ev:
    phase = i % 4
    turn = i // 4
    if phase == 0:
        return "message", "user", {"content": texts(160)}
    if phase == 1:
        args = orjson.dumps({"cmd": texts(60)}).decode()
        return "tool_call", "assistant", {"id": f"call_{turn}", "name": "bash", "arguments": args}
    if phase == 2:
        return "tool_result", "tool", {"tool_call_id": f"call_{turn}", "name": "bash", "content": tool_output}
    return "message", "assistant", {"content": texts(260)}


def ordinary(n: int, seed: int = 7) -> list[Ev]:
    rng = random.Random(seed)
    texts = _Texts(rng)
    return [_turn_event(i, texts, texts(600) if i % 4 == 2 else "") for i in range(n)]


def turns_with_tools(turns: int, seed: int = 11) -> list[Ev]:
    rng = random.Random(seed)
    texts = _Texts(rng)
    out: list[Ev] = []
    for i in range(turns * 4):
        output = ""
        if i % 4 == 2:
            size = rng.randint(16 * 1024, 64 * 1024) if rng.random() < 0.05 else rng.randint(512, 4096)
            output = texts(min(size, len(texts.pool) - 1))
        out.append(_turn_event(i, texts, output))
    return out


def big(events: int, target_bytes: int, seed: int = 13, every: int = 5000) -> Iterator[Ev]:
    """``events`` events of about ``target_bytes`` in all, streamed (the
    1 GB one is not held in memory); a compaction marker every ``every``
    events, the first at half of it."""
    lo, hi = 20 * 1024, 200 * 1024
    p_big = min(1.0, target_bytes / ((lo + hi) / 2 * (events / 4)))
    rng = random.Random(seed)
    texts = _Texts(rng)
    pool = base64.b64encode(rng.randbytes(hi * 2)).decode()
    for i in range(events):
        if i and i % every == every // 2:
            yield COMPACTION, "system", {"summary": texts(2000), "keep": KEEP}
            continue
        output = ""
        if i % 4 == 2:
            if rng.random() < p_big:
                size = rng.randint(lo, hi)
                start = rng.randrange(0, len(pool) - size)
                output = f"{i}:" + pool[start : start + size]
            else:
                output = texts(600)
        yield _turn_event(i, texts, output)
