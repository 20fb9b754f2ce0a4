"""LangGraph's ``SqliteSaver`` holding a messages state, as a peer.

A graph over ``MessagesState`` (LangChain messages, the ``add_messages``
reducer); each thread id is a session. An append is
``graph.update_state(config, {"messages": [message]})``: one checkpoint
per event, as a ReAct agent writes one per step. Every checkpoint holds
the whole ``messages`` list (the saver serialises the channel values into
the checkpoint row), so an append costs O(session) and a resume loads
everything. The saver runs WAL mode with SQLite's default
``synchronous=FULL``: each checkpoint syncs the WAL.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from typing import Any

import orjson

from .peers_data import COMPACTION, Ev
from .peers_peer import Peer, Writer


def lc_message(ev: Ev) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    kind, role, record = ev
    if kind == "message":
        return HumanMessage(record["content"]) if role == "user" else AIMessage(record["content"])
    if kind == "tool_call":
        call = {"id": record["id"], "name": record["name"], "args": orjson.loads(record["arguments"])}
        return AIMessage("", tool_calls=[call])
    if kind == "tool_result":
        return ToolMessage(record["content"], tool_call_id=record["tool_call_id"])
    if kind == COMPACTION:
        return None  # the state is the list; trimming it would drop history from the newest checkpoint
    raise ValueError(f"no LangChain message for {kind}")


class _LgWriter(Writer):
    def __init__(self, graph: Any, sid: str) -> None:
        self.graph = graph
        self.config = {"configurable": {"thread_id": sid}}

    def prepare(self, ev: Ev) -> Any:
        return lc_message(ev)

    def append(self, native: Any) -> None:
        self.graph.update_state(self.config, {"messages": [native]})

    def close(self) -> None:
        pass  # the saver's connection belongs to the peer (shared by its writers)


class LangGraphPeer(Peer):
    key = "langgraph"
    label = "LangGraph SqliteSaver"
    durability = "SQLite WAL, synchronous=FULL (the defaults): WAL fsync per checkpoint"
    sync = "WAL fsync"
    shares_session = False
    writers_note = "8 threads, a thread id each, one saver (a thread id takes one writer at a time)"
    loads_everything = "a checkpoint holds the whole messages list"

    def __init__(self) -> None:
        self._graphs: dict[str, tuple[Any, sqlite3.Connection]] = {}

    def unavailable(self) -> str | None:
        try:
            import langgraph.checkpoint.sqlite  # noqa: F401
        except ImportError:
            return "langgraph-checkpoint-sqlite is not installed (pip install -e '.[bench]')"
        return None

    def preload(self) -> None:
        import langchain_core.messages  # noqa: F401
        import langgraph.checkpoint.sqlite  # noqa: F401
        import langgraph.graph  # noqa: F401

    def db(self, loc: str) -> str:
        return os.path.join(loc, "langgraph.db")

    def graph(self, loc: str) -> Any:
        """The compiled graph over one saver per location, kept for the process."""
        if loc not in self._graphs:
            from langgraph.checkpoint.sqlite import SqliteSaver
            from langgraph.graph import START, MessagesState, StateGraph

            os.makedirs(loc, exist_ok=True)
            conn = sqlite3.connect(self.db(loc), check_same_thread=False)
            builder = StateGraph(MessagesState)
            builder.add_node("agent", lambda state: {})
            builder.add_edge(START, "agent")
            self._graphs[loc] = (builder.compile(checkpointer=SqliteSaver(conn)), conn)
        return self._graphs[loc][0]

    def release(self) -> None:
        for _graph, conn in self._graphs.values():
            conn.close()
        self._graphs.clear()

    def _messages(self, loc: str, sid: str) -> list[Any]:
        state = self.graph(loc).get_state({"configurable": {"thread_id": sid}})
        return list(state.values.get("messages", []))

    def build(self, loc: str, events: Iterable[Ev], name: str = "bench") -> str:
        messages = [m for m in map(lc_message, events) if m is not None]
        # One checkpoint with the whole list: what a resume reads is the
        # newest checkpoint, whatever came before it.
        self.graph(loc).update_state({"configurable": {"thread_id": name}}, {"messages": messages})
        return name

    def build_many(self, loc: str, sessions: Iterable[tuple[str, list[Ev]]]) -> None:
        for n, (_summary, events) in enumerate(sessions):
            self.build(loc, events, name=f"t{n:05d}")

    def writer(self, loc: str, sid: str) -> Writer:
        return _LgWriter(self.graph(loc), sid)

    def whole(self, loc: str, sid: str) -> int:
        return len(self._messages(loc, sid))

    def last(self, loc: str, sid: str, n: int) -> int:
        return len(self._messages(loc, sid)[-n:])

    def listing(self, loc: str) -> int:
        # No thread listing in the saver's API: the cheapest query on its table.
        conn = sqlite3.connect(self.db(loc))
        try:
            rows = conn.execute(
                "SELECT thread_id, max(checkpoint_id) AS newest FROM checkpoints"
                " WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY newest DESC"
            ).fetchall()
        finally:
            conn.close()
        return len(rows)

    def browse(self, loc: str, sid: str, context_len: int, pages: int, page: int) -> dict[str, int]:
        messages = self._messages(loc, sid)
        return {"context": len(messages), "paged_back": min(pages * page, len(messages)), "shown": page}
