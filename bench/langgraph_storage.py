"""Bytes on disk for a 200-step LangGraph graph: AgentlogSaver vs SqliteSaver.

    .venv/bin/python -m bench.langgraph_storage [--steps 200] [--dir DIR]

The same graph runs against both savers in the same run. Each step is one
invocation (a turn): the node appends a ~600-byte message to a growing
``messages`` list (an ``operator.add`` channel), bumps a counter, and the
state also holds a 20 kB ``context`` channel that never changes after the
first turn. Reported: bytes on disk of each store (the SQLite file with its
WAL, and the agentlog home), and the wall time of the run, as a ratio.
"""

from __future__ import annotations

import argparse
import operator
import os
import shutil
import sqlite3
import tempfile
import time
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from agentlog import Store
from agentlog.integrations.langgraph import AgentlogSaver


class State(TypedDict):
    messages: Annotated[list[str], operator.add]
    context: str
    turns: int


def build(checkpointer: Any) -> Any:
    def reply(state: State) -> dict[str, Any]:
        n = state.get("turns", 0) + 1
        return {"messages": [f"reply {n}: " + "r" * 300], "turns": n}

    graph = StateGraph(State)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    return graph.compile(checkpointer=checkpointer)


def drive(checkpointer: Any, steps: int) -> float:
    graph = build(checkpointer)
    config = {"configurable": {"thread_id": "bench"}}
    context = "c" * 20_000
    start = time.perf_counter()
    for i in range(steps):
        update: dict[str, Any] = {"messages": [f"user {i}: " + "u" * 300]}
        if i == 0:
            update.update(context=context, turns=0)
        graph.invoke(update, config)
    elapsed = time.perf_counter() - start
    final = graph.get_state(config).values
    assert len(final["messages"]) == 2 * steps and final["context"] == context
    return elapsed


def disk_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="lg-bench-", dir=args.dir)
    try:
        db = os.path.join(base, "sqlite.db")
        conn = sqlite3.connect(db, check_same_thread=False)
        sqlite_time = drive(SqliteSaver(conn), args.steps)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        sqlite_bytes = sum(disk_bytes(db + s) for s in ("", "-wal", "-shm") if os.path.exists(db + s))

        home = os.path.join(base, "home")
        saver = AgentlogSaver(Store(home))
        ours_time = drive(saver, args.steps)
        saver.close()
        ours_bytes = disk_bytes(home)

        print(f"{args.steps} turns, same graph, same run")
        print(f"  SqliteSaver    {sqlite_bytes:>12,} bytes  {sqlite_time:7.2f} s")
        print(f"  AgentlogSaver  {ours_bytes:>12,} bytes  {ours_time:7.2f} s")
        print(f"  bytes ratio (agentlog / sqlite): {ours_bytes / sqlite_bytes:.3f}")
        print(f"  time ratio  (agentlog / sqlite): {ours_time / sqlite_time:.3f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
