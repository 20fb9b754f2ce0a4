"""Part 5: importing a Claude Code transcript, against storing the same events.

The dataset is a synthetic Claude Code session shaped like the real ones
(replies split over three lines, hook progress, tool results with
``toolUseResult``, stop-hook notices, file-history snapshots). The baseline
is the storage floor: ``store.create(events=...)`` with the very events the
import produced, prepared in advance, so the ratio is what reading,
parsing, mapping and merging add. Re-importing the unchanged file, and
importing after the file grew by 1%, are measured against the full import.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import orjson

from agentlog import Store
from agentlog.importers import FORMATS, run_import

from ._common import fmt_s
from ._measure import interleaved

NAME = "import"
SID = "b0000000-0000-4000-8000-00000000beef"


def _turn(i: int, parent: str | None) -> tuple[list[dict[str, Any]], str]:
    ts = f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
    base = {
        "sessionId": SID,
        "cwd": "/w",
        "version": "2.1.42",
        "isSidechain": False,
        "userType": "external",
        "timestamp": ts,
    }
    u, a1, a2, a3, p, r, a4, s = (f"{i:08d}-0000-4000-8000-{k:012d}" for k in range(8))
    mid = f"msg_{i:08d}"
    usage = {"input_tokens": 3, "output_tokens": 120, "cache_read_input_tokens": 20000}

    def reply(uuid: str, par: str, block: dict[str, Any]) -> dict[str, Any]:
        return {
            **base,
            "type": "assistant",
            "uuid": uuid,
            "parentUuid": par,
            "requestId": f"r{i}",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [block],
                "stop_reason": None,
                "usage": usage,
            },
        }

    lines = [
        {
            "type": "file-history-snapshot",
            "messageId": u,
            "snapshot": {"messageId": u, "trackedFileBackups": {}, "timestamp": ts},
        },
        {
            **base,
            "type": "user",
            "uuid": u,
            "parentUuid": parent,
            "todos": [],
            "message": {"role": "user", "content": f"step {i}: " + "please do the thing " * 10},
        },
        reply(a1, u, {"type": "thinking", "thinking": "thinking " * 40, "signature": "x" * 200}),
        reply(a2, a1, {"type": "text", "text": "I will look. " * 8}),
        reply(
            a3,
            a2,
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": f"ls -la /w/{i}"}},
        ),
        {
            **base,
            "type": "progress",
            "uuid": p,
            "parentUuid": a3,
            "data": {"type": "hook_progress", "hookEvent": "PostToolUse"},
        },
        {
            **base,
            "type": "user",
            "uuid": r,
            "parentUuid": a3,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "file\n" * 400}],
            },
            "toolUseResult": {"stdout": "file\n" * 400, "stderr": "", "interrupted": False},
        },
        reply(a4, r, {"type": "text", "text": "Done. " * 30}),
        {
            **base,
            "type": "system",
            "subtype": "stop_hook_summary",
            "uuid": s,
            "parentUuid": a4,
            "hookCount": 1,
            "level": "suggestion",
        },
    ]
    lines[-2]["message"]["id"] = mid + "b"
    return lines, s


def _write(path: str, first: int, turns: int, parent: str | None) -> str | None:
    with open(path, "a") as f:
        for i in range(first, first + turns):
            lines, parent = _turn(i, parent)
            f.write("".join(json.dumps(o) + "\n" for o in lines))
    return parent


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    turns = 400 if ctx["quick"] else 2_000
    rounds = 3 if ctx["quick"] else 5
    root = os.path.join(ctx["bench_dir"], "import")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    src = os.path.join(root, f"{SID}.jsonl")
    last = _write(src, 0, turns, None)
    size = os.path.getsize(src)
    with open(src, "rb") as f:
        line_count = sum(1 for _ in f)
    importer = FORMATS["claude"]
    reference = Store(os.path.join(root, "reference"))
    run_import(reference, importer, [src])
    with reference.open(f"claude-{SID}", readonly=True) as s:
        events = [e if e.loaded else s.resolve(e) for e in (s.event(x.id) for x in s.entries())]
    homes = iter(range(10_000))

    def fresh() -> Store:
        return Store(os.path.join(root, f"h{next(homes)}"))

    def do_import() -> int:
        return run_import(fresh(), importer, [src]).events

    def store_only() -> int:
        with fresh().create(session_id=f"claude-{SID}", events=events) as s:
            return len(s)

    def parse_only() -> int:
        with open(src, "rb") as f:
            return sum(1 for line in f if orjson.loads(line))

    t = interleaved({"import": do_import, "store": store_only, "parse": parse_only}, rounds)
    again = interleaved({"reimport": lambda: run_import(reference, importer, [src]).events}, rounds)
    grow_turns = max(1, turns // 100)
    grown: list[float] = []
    for r in range(rounds):
        _write(src, turns + r * grow_turns, grow_turns, last)
        grown.append(
            interleaved({"grow": lambda: run_import(reference, importer, [src]).events}, 1)["grow"]["median_s"]
        )
    grown.sort()
    # --follow keeps each session open with its maps, and each file's lines
    # and running hash, between polls
    keep: dict[str, Any] = {}
    tails: dict[str, Any] = {}
    run_import(reference, importer, [src], keep=keep, tails=tails)
    followed: list[float] = []
    base = turns + rounds * grow_turns
    for r in range(rounds):
        _write(src, base + r * grow_turns, grow_turns, last)
        followed.append(
            interleaved({"grow": lambda: run_import(reference, importer, [src], keep=keep, tails=tails).events}, 1)[
                "grow"
            ]["median_s"]
        )
    for b in keep.values():
        b.close()
    followed.sort()
    shutil.rmtree(root, ignore_errors=True)
    return {
        "turns": turns,
        "lines": line_count,
        "bytes": size,
        "events": len(events),
        "times": t,
        "reimport_s": again["reimport"]["median_s"],
        "grow_s": grown[len(grown) // 2],
        "grow_lines": grow_turns * 9,
        "ratio_store": t["import"]["median_s"] / t["store"]["median_s"],
        "ratio_reimport": again["reimport"]["median_s"] / t["import"]["median_s"],
        "ratio_grow": grown[len(grown) // 2] / t["import"]["median_s"],
        "follow_s": followed[len(followed) // 2],
        "ratio_follow": followed[len(followed) // 2] / t["import"]["median_s"],
    }


def report(res: dict[str, Any]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    n = f"{res['lines']:,} lines"
    ratios = [
        (f"import Claude transcript ({n}) / store its events", res["ratio_store"], None),
        (f"re-import unchanged ({n}) / first import", res["ratio_reimport"], None),
        (f"import after +1% ({res['grow_lines']} lines) / first import", res["ratio_grow"], None),
        (f"--follow poll after +1% ({res['grow_lines']} lines) / first import", res["ratio_follow"], None),
    ]
    imp = res["times"]["import"]["median_s"]
    absolute = [
        (
            f"import {n}, {res['bytes'] / 1e6:.1f} MB, {res['events']:,} events",
            f"{fmt_s(imp)} ({res['lines'] / imp:,.0f} lines/s); store only "
            f"{fmt_s(res['times']['store']['median_s'])}; parse only "
            f"{fmt_s(res['times']['parse']['median_s'])}; re-import {fmt_s(res['reimport_s'])}; "
            f"+1% {fmt_s(res['grow_s'])}; +1% under --follow {fmt_s(res['follow_s'])}",
        )
    ]
    return ratios, absolute
