"""The peers harness (bench/peers_*.py) does what its tables claim, on tiny sessions.

Every store the comparison runs gets the same round trip: build a session,
read it whole and its newest items, append through a writer, list many
sessions, browse a session with a compaction. The stores from PyPI (the
Agents SDK, LangGraph) are skipped when their packages are missing. No
timing is asserted: the figures live in docs/performance.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench import peers_report
from bench.peers_data import COMPACTION, big, ordinary, turns_with_tools
from bench.peers_peer import Peer
from bench.peers_stores import all_peers, by_key, rss_only

LOCAL = [p.key for p in all_peers() if p.key.startswith("agentlog-") and p.key != "agentlog-postgresql"]
LOCAL += ["jsonl", "jsonl-fsync", "json", "sdk", "sdk-advanced", "sdk-limit", "langgraph"]


def _peer(key: str) -> Peer:
    peer = by_key(key)
    if (why := peer.unavailable()) is not None:
        pytest.skip(why)
    return peer


def _loc(peer: Peer, tmp_path: Path, name: str) -> str:
    return f"{tmp_path.name}-{name}" if peer.key == "agentlog-memory" else str(tmp_path / name)


@pytest.mark.parametrize("key", LOCAL)
def test_each_store_round_trips_the_workload(key: str, tmp_path: Path) -> None:
    peer = _peer(key)
    try:
        loc = _loc(peer, tmp_path, "one")
        sid = peer.build(loc, ordinary(8))
        peer.release()
        assert peer.whole(loc, sid) == 8
        assert peer.last(loc, sid, 3) == 3
        writer = peer.writer(loc, sid)
        for ev in ordinary(12)[8:]:
            writer.append(writer.prepare(ev))
        writer.close()
        peer.release()
        assert peer.whole(loc, sid) == 12

        many = _loc(peer, tmp_path, "many")
        peer.build_many(many, [(f"task {i}", ordinary(4 * (i + 1), seed=i)) for i in range(3)])
        assert peer.listing(many) == 3
    finally:
        peer.release()


@pytest.mark.parametrize("key", LOCAL)
def test_browse_keeps_what_compaction_keeps(key: str, tmp_path: Path) -> None:
    """A session with one compaction: the stores that have compaction
    resume from it (KEEP events and what follows), the others load all."""
    peer = _peer(key)
    events = list(big(80, 200_000, every=100))
    assert [e[0] for e in events].count(COMPACTION) == 1  # at 50 (of every 100)
    try:
        loc = _loc(peer, tmp_path, "big")
        sid = peer.build(loc, events)
        peer.release()
        seen = peer.browse(loc, sid, context_len=40, pages=2, page=10)
        items = len(events) - 1
        if key.startswith("agentlog-") or key.startswith("jsonl") or key == "json":
            assert seen["context"] == 1 + 20 + (len(events) - 51)  # summary, kept, after
        elif key == "sdk-limit":
            assert seen["context"] == 40 and seen["paged_back"] == 20
        else:
            assert seen["context"] == items
    finally:
        peer.release()


def test_workloads_are_the_same_for_every_store() -> None:
    assert ordinary(40) == ordinary(40)
    turns = turns_with_tools(5)
    assert len(turns) == 20
    assert [e[0] for e in turns[:4]] == ["message", "tool_call", "tool_result", "message"]
    assert turns[2][2]["tool_call_id"] == turns[1][2]["id"]


def _results() -> dict[str, Any]:
    """A peers run's results, as bench.peers writes them, for two stores."""
    return {
        "mode": "quick",
        "code": "abc1234",
        "machine": {},
        "peers": {
            p.key: {
                "label": p.label,
                "durability": p.durability,
                "sync": p.sync,
                "writers": p.writers_note,
                "loads_everything": p.loads_everything,
            }
            for p in all_peers() + rss_only()
        },
        "skipped": {"agentlog-postgresql": "not reachable"},
        "figures": {
            "listing": {
                "result": {"sessions": 10, "runs": 1, "times": {"agentlog-file": 0.01, "jsonl": 0.04}},
                "code": "abc1234",
                "load_avg": [1.0],
                "wall_s": 1,
            }
        },
    }


def test_report_writes_only_between_its_markers(tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    page.write_text(f"# Perf\n\nbefore\n\n{peers_report.BEGIN}\nold\n{peers_report.END}\n\nafter\n")
    peers_report.write_doc(str(page), peers_report.markdown(json.loads(json.dumps(_results()))))
    text = page.read_text()
    assert text.startswith("# Perf\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "old" not in text
    assert "| pi-style JSONL (no sync) | 40.00 ms | 0.25 |" in text
    assert "skipped: not reachable" in text


def test_a_quick_report_leaves_the_docs_alone(tmp_path: Path) -> None:
    """A scaled-down run is a try: its tables go beside its results, never
    over the committed ones of a full run."""
    (tmp_path / "peers-quick.json").write_text(json.dumps(_results()))
    docs = Path(peers_report.ROOT) / "docs" / "performance.md"
    before = docs.read_bytes()
    assert peers_report.main(["--dir", str(tmp_path), "--quick"]) == 0
    assert docs.read_bytes() == before
    text = (tmp_path / "peers-quick.md").read_text()
    assert peers_report.BEGIN in text and "| pi-style JSONL (no sync) | 40.00 ms | 0.25 |" in text


def test_the_scale_probe_streams_the_whole_path_and_lists_it(tmp_path: Path) -> None:
    """`python -m bench scale`'s memory probe (a fresh interpreter) reads
    every event both ways; the streamed read's peak is reported beside the list's."""
    from bench import scale

    from agentlog import Store

    store = Store(str(tmp_path), durability="off")
    with store.create(session_id="s") as s:
        s.append_many([("message", {"content": "x" * 200, "i": i}, "user") for i in range(3000)])
    walk = scale._probe(str(tmp_path), "s", "walk")
    whole = scale._probe(str(tmp_path), "s", "transcript")
    assert (walk["what"], walk["events"]) == ("walk", 3000)
    assert (whole["what"], whole["events"]) == ("transcript", 3000)
    for result in (walk, whole):
        assert result["peak_growth_bytes"] is None or result["peak_growth_bytes"] >= 0
