"""AgentlogSaver: LangGraph's official conformance suite, a real graph run
side by side with LangGraph's InMemorySaver, and what the timeline adds."""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest

from agentlog import NIL_ID, CorruptionError, Store

pytest.importorskip(
    "langgraph.checkpoint.conformance",
    reason="LOUD SKIP: langgraph is not installed (pip install agentlog[langgraph])",
)
from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from agentlog.integrations.langgraph import AgentlogSaver  # noqa: E402


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Store:
    return Store(tmp_path / "home") if request.param == "files" else Store.memory()


def test_official_conformance_suite(store: Store) -> None:
    @checkpointer_test(name="AgentlogSaver")
    async def factory() -> AsyncIterator[AgentlogSaver]:
        saver = AgentlogSaver(store)
        yield saver
        saver.close()

    report = asyncio.run(validate(factory))
    failures = {name: [str(f)[:300] for f in (result.failures or [])] for name, result in report.results.items()}
    for capability in BASE_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected and result.passed, (capability.value, failures[capability.value])
    # the extended capabilities too: copy_thread, prune, delete_for_runs
    for name, result in report.results.items():
        assert result.detected and result.passed, (name, failures[name])


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    big: str
    count: int


def build_graph(checkpointer: Any) -> Any:
    def step(state: State) -> dict[str, Any]:
        n = state["count"] + 1
        return {"log": [f"step {n}"], "count": n}

    def route(state: State) -> str:
        return END if state["count"] >= 5 else "step"

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", route)
    return graph.compile(checkpointer=checkpointer)


def history(graph: Any, thread: str) -> list[tuple[Any, ...]]:
    config = {"configurable": {"thread_id": thread}}
    return [
        (s.values, s.next, s.metadata.get("step"), s.metadata.get("source")) for s in graph.get_state_history(config)
    ]


def test_a_real_graph_behaves_as_with_inmemory_saver(store: Store) -> None:
    big = "B" * 50_000  # never changes after the input: must be stored once
    results = []
    for saver in (InMemorySaver(), AgentlogSaver(store)):
        graph = build_graph(saver)
        config = {"configurable": {"thread_id": "t-1"}}
        final = graph.invoke({"log": [], "big": big, "count": 0}, config)
        # time travel: fork from the checkpoint after the second step
        states = list(graph.get_state_history(config))
        fork_from = next(s for s in states if s.values.get("count") == 2)
        forked = graph.update_state(fork_from.config, {"count": 3, "log": ["edited"]})
        resumed = graph.invoke(None, forked)
        results.append((final, resumed, history(graph, "t-1")))
    assert results[1] == results[0]

    session = store.open(AgentlogSaver.session_id("t-1"), readonly=True)
    entries = session.entries()
    checkpoints = [e for e in entries if e.kind == "lg.checkpoint"]
    refs = {
        tuple(session.event(e.id).record["values"]["big"])
        for e in checkpoints
        if "big" in session.event(e.id).record["values"]
    }
    assert len(checkpoints) > 8 and len(refs) == 1  # the unchanged 50 kB channel was written once
    # a checkpoint's parent is its parent checkpoint; the fork is a branch
    by_id = {e.id: e for e in checkpoints}
    assert sum(1 for e in checkpoints if e.parent_id == NIL_ID) == 1
    assert all(e.parent_id in by_id for e in checkpoints if e.parent_id != NIL_ID)
    assert any(e.branch_from for e in checkpoints)
    session.close()


def test_reopen_reads_the_same_thread(tmp_path: Any) -> None:
    home = tmp_path / "home"
    first = AgentlogSaver(Store(home))
    graph = build_graph(first)
    config = {"configurable": {"thread_id": "thread with spaces"}}
    graph.invoke({"log": [], "big": "", "count": 0}, config)
    before = history(graph, "thread with spaces")
    first.close()
    second = AgentlogSaver(Store(home))
    assert history(build_graph(second), "thread with spaces") == before
    assert second.session_id("thread with spaces").startswith("lg--h--")
    assert [t.config["configurable"]["thread_id"] for t in second.list(None, limit=1)] == ["thread with spaces"]
    second.close()


def test_pending_writes_survive_an_interrupted_step(store: Store) -> None:
    calls: list[str] = []
    saver = AgentlogSaver(store)
    config = {"configurable": {"thread_id": "t-2"}}

    def ok(state: State) -> dict[str, Any]:
        calls.append("ok")
        return {"log": ["ok"]}

    def boom(state: State) -> dict[str, Any]:
        calls.append("boom")
        if calls.count("boom") == 1:
            # Fail only once "ok" has finished and its writes are saved, so the
            # test does not depend on how the two parallel tasks interleave.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                tup = saver.get_tuple(config)
                if tup is not None and any(w[1] == "log" for w in tup.pending_writes or []):
                    break
                time.sleep(0.01)
            raise RuntimeError("first try fails")
        return {"log": ["boom"]}

    graph = StateGraph(State)
    graph.add_node("ok", ok)
    graph.add_node("boom", boom)
    graph.add_edge(START, "ok")
    graph.add_edge(START, "boom")
    app = graph.compile(checkpointer=saver)
    with pytest.raises(RuntimeError):
        app.invoke({"log": [], "big": "", "count": 0}, config)
    tup = saver.get_tuple(config)
    assert tup is not None and any(w[1] == "log" for w in tup.pending_writes or [])
    result = app.invoke(None, config)
    assert sorted(calls) == ["boom", "boom", "ok"]  # the successful task was not rerun
    assert sorted(result["log"]) == ["boom", "ok"]
    saver.close()


def test_async_twins_and_delete_thread(store: Store) -> None:
    async def go() -> None:
        saver = AgentlogSaver(store)
        graph = build_graph(saver)
        config = {"configurable": {"thread_id": "t-3"}}
        await graph.ainvoke({"log": [], "big": "", "count": 0}, config)
        listed = [t async for t in saver.alist(config)]
        assert len(listed) == len(list(saver.list(config))) > 3
        assert (await saver.aget_tuple(config)) == saver.get_tuple(config)
        await saver.adelete_thread("t-3")
        assert await saver.aget_tuple(config) is None
        assert not store.exists(saver.session_id("t-3"))
        saver.close()

    asyncio.run(go())


def test_prune_keeps_the_latest_and_the_graph_goes_on(tmp_path: Any) -> None:
    home = tmp_path / "home"
    saver = AgentlogSaver(Store(home))
    graph = build_graph(saver)
    config = {"configurable": {"thread_id": "t-4"}}
    graph.invoke({"log": [], "big": "B" * 50_000, "count": 0}, config)
    before = graph.get_state(config)
    size = sum(f.stat().st_size for f in home.rglob("*") if f.is_file())
    saver.prune(["t-4"], strategy="keep_latest")
    assert len(list(saver.list(config))) == 1
    after = graph.get_state(config)
    assert after.values == before.values and after.config == before.config
    assert sum(f.stat().st_size for f in home.rglob("*") if f.is_file()) < size
    graph.invoke({"log": ["more"], "big": "B" * 50_000, "count": 0}, config)  # goes on from there
    assert graph.get_state(config).values["count"] == 5
    with pytest.raises(ValueError):
        saver.prune(["t-4"], strategy="keep_everything")
    saver.close()


def test_an_interrupted_rewrite_is_finished_on_open(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentlog.integrations._lg_retention as retention

    home = tmp_path / "home"
    saver = AgentlogSaver(Store(home))
    graph = build_graph(saver)
    config = {"configurable": {"thread_id": "t-5"}}
    graph.invoke({"log": [], "big": "", "count": 0}, config)
    latest = graph.get_state(config)

    def crash(*args: Any) -> None:
        raise KeyboardInterrupt("crash between deleting the thread and recreating it")

    monkeypatch.setattr(retention, "_finish", crash)
    with pytest.raises(KeyboardInterrupt):
        saver.prune(["t-5"], strategy="keep_latest")
    monkeypatch.undo()
    store = Store(home)
    assert not store.exists(AgentlogSaver.session_id("t-5"))  # the thread is gone for now...
    fresh = AgentlogSaver(store)
    assert [t.config["configurable"]["thread_id"] for t in fresh.list(None)] == ["t-5"]
    tup = fresh.get_tuple(config)  # ...and opening it finishes the rewrite
    assert tup is not None and tup.checkpoint["id"] == latest.config["configurable"]["checkpoint_id"]
    assert tup.checkpoint["channel_values"]["log"] == latest.values["log"]
    assert not store.exists(retention.staging_id("t-5"))
    assert len(list(fresh.list(config))) == 1
    fresh.close()
    saver.close()


def test_threads_beyond_max_open_are_closed_and_reopened(store: Store) -> None:
    results = []
    for saver in (InMemorySaver(), AgentlogSaver(store, max_open=1)):
        graph = build_graph(saver)
        for thread in ("a", "b", "a", "c", "b"):
            graph.invoke({"log": [thread], "big": "", "count": 0}, {"configurable": {"thread_id": thread}})
        results.append([history(graph, t) for t in ("a", "b", "c")])
    assert results[1] == results[0]


def test_damaged_records_are_reported_not_skipped(store: Store) -> None:
    saver = AgentlogSaver(store)
    graph = build_graph(saver)
    config = {"configurable": {"thread_id": "t-6"}}
    graph.invoke({"log": [], "big": "", "count": 0}, config)
    saver.close()
    sid = AgentlogSaver.session_id("t-6")
    with store.open(sid) as session:  # another program appends a checkpoint of the wrong shape
        bad = session.append("lg.checkpoint", {"ns": "", "id": "x", "values": []})
    with pytest.raises(CorruptionError, match=bad.id):
        AgentlogSaver(store).get_tuple(config)

    other = AgentlogSaver(store)
    graph = build_graph(other)
    config = {"configurable": {"thread_id": "t-7"}}
    graph.invoke({"log": [], "big": "", "count": 0}, config)
    other.close()
    with store.open(AgentlogSaver.session_id("t-7")) as session:
        value = next(e for e in session.entries() if e.kind == "lg.value")
        latest = [e for e in session.entries() if e.kind == "lg.checkpoint"][-1]
        record = session.event(latest.id).record
        record = {
            **record,
            "id": "~later",
            "values": {"count": [value.id, "x"], "log": {"items": [value.id]}},
        }
        session.append("lg.checkpoint", record)
        broken = session.append("lg.value", ["msgpack", "not base64!"])
        record = {**record, "id": "~latest", "values": {"count": [broken.id, "y"]}}
        session.append("lg.checkpoint", record)
    with pytest.raises(CorruptionError, match=broken.id):
        AgentlogSaver(store).get_tuple(config)


def test_a_growing_list_costs_what_it_grows(store: Store) -> None:
    """Over many turns the history is the same as with InMemorySaver, and each
    checkpoint record names only the new list elements (a delta on its parent),
    with a full list again every MAX_DEPTH records so reads stay short."""
    from agentlog.integrations._lg_refs import MAX_DEPTH

    results = []
    turns = MAX_DEPTH + 8
    for saver in (InMemorySaver(), AgentlogSaver(store)):
        graph = build_graph(saver)
        config = {"configurable": {"thread_id": "long"}}
        for i in range(turns):
            graph.invoke({"log": [f"turn {i}"], "big": "", "count": 0}, config)
        results.append(history(graph, "long"))
    assert results[1] == results[0]
    with store.open(AgentlogSaver.session_id("long"), readonly=True) as session:
        refs = [
            session.resolve(session.event(e.id)).record["values"].get("log")
            for e in session.entries()
            if e.kind == "lg.checkpoint"
        ]
    lists = [r for r in refs if isinstance(r, dict)]
    deltas = [r for r in lists if "base" in r]
    assert len(deltas) > len(lists) // 2 and all(len(r["items"]) <= 2 for r in deltas)
    assert max(r["depth"] for r in deltas) == MAX_DEPTH
    full = [r for r in lists if "base" not in r]
    assert len(full[-1]["items"]) > MAX_DEPTH  # the chain was cut by a full list


def test_the_value_cache_keeps_to_its_budget() -> None:
    from agentlog.integrations._lg_thread import ValueCache

    cache = ValueCache(100)
    cache.put("a", ["msgpack", "x" * 20])
    cache.put("b", ["msgpack", "y" * 20])
    assert cache.get("a") == ["msgpack", "x" * 20]  # a is now the most recent
    cache.put("huge", ["msgpack", "z" * 30])  # over a quarter of the budget: not kept
    assert cache.get("huge") is None
    for name in "cdef":
        cache.put(name, ["msgpack", name * 20])
    assert cache.get("b") is None and cache.get("f") is not None  # least recent went first
