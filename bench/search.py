"""Part 5: full-text search over 10,000 sessions and 1,000,000 events.

Target (issue 10): at most 50 ms a query. The dataset is built once and
cached (10,000 sessions of 100 events: user / assistant / tool call /
tool result cycles of ordinary sizes, with a few rare marker words), then
indexed once (``reindex``, timed). Each query is then timed over an
up-to-date index, both as the pure query (``refresh=False``) and as
``store.search`` does it by default (a catch-up check first: one stat per
session, no event log opened). Queries range from a rare word (a handful
of hits, all ranked by FTS5's bm25) to a word in half the events (the
newest 1,000 matches ranked; see agentlog/search/rank.py).
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from agentlog import Store
from agentlog.search import catch_up, index_location, reindex, search

from ._build import _cached, _log, _small_event, _Texts
from ._common import fmt_s, median

NAME = "search"
EVENTS_PER_SESSION = 100
RARE = ("zebrafish", "quasar", "marmalade", "xylophone")

QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    ("rare word", "zebrafish", {}),
    ("two rare words OR", "quasar OR marmalade", {}),
    ("medium word", "migration", {}),
    ("common word", "test", {}),
    ("phrase", '"failing test"', {}),
    ("prefix", "refact*", {}),
    ("common word, kind filter", "test", {"kind": "tool_call"}),
    ("medium word, since filter", "schema", {"since": "2000-01-01"}),
]


def _dataset(bench_dir: str, sessions: int) -> tuple[str, dict[str, Any]]:
    params = {"kind": "search", "sessions": sessions, "per_session": EVENTS_PER_SESSION, "seed": 11}

    def build(tmp: str) -> dict[str, Any]:
        rng = random.Random(11)
        texts = _Texts(rng)
        store = Store(os.path.join(tmp, "home"), durability="off")
        t0 = time.perf_counter()
        for n in range(sessions):
            with store.create(name=f"task {n}", working_dir=f"/work/p{n % 50}") as sess:
                items = []
                for i in range(EVENTS_PER_SESSION):
                    kind, role, record = _small_event(i, texts)
                    if rng.random() < 0.0005 and kind == "message":
                        record = {**record, "content": record["content"] + " " + rng.choice(RARE)}
                    items.append((kind, record, role))
                for start in range(0, len(items), 50):
                    sess.append_many(items[start : start + 50])
            if n and n % 1000 == 0:
                _log(f"{n} sessions, {time.perf_counter() - t0:.0f} s")
        return {"sessions": sessions, "events": sessions * EVENTS_PER_SESSION}

    def check(directory: str, info: dict[str, Any]) -> None:
        sdir = os.path.join(directory, "home", "sessions")
        if len([n for n in os.listdir(sdir) if not n.startswith(".")]) != info["sessions"]:
            raise ValueError("session count changed")

    return _cached(bench_dir, "search", params, build, check)


def _time(fn: Any, repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return {"median_s": median(samples), "max_s": samples[-1], "min_s": samples[0]}


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    sessions = 1_000 if ctx["quick"] else 10_000
    directory, info = _dataset(ctx["bench_dir"], sessions)
    store = Store(os.path.join(directory, "home"), durability="off")
    path = index_location(store.home)
    if path is None:
        raise RuntimeError("the bench store has no index file")
    built = os.path.exists(path)
    t0 = time.perf_counter()
    stats = catch_up(store) if built else reindex(store)
    index_s = time.perf_counter() - t0
    size = sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
    repeat = 5 if ctx["quick"] else 9
    queries = []
    for label, query, filters in QUERIES:
        hits = len(search(store, query, limit=20, refresh=False, **filters))
        pure = _time(lambda q=query, f=filters: search(store, q, refresh=False, **f), repeat)
        queries.append(
            {
                "label": label,
                "query": query,
                "filters": filters,
                "hits": hits,
                **{f"pure_{k}": v for k, v in pure.items()},
            }
        )
    refreshed = _time(lambda: search(store, "zebrafish"), repeat)
    check = _time(lambda: catch_up(store), repeat)
    return {
        "sessions": info["sessions"],
        "events": info["events"],
        "index_built_now": not built,
        "index_s": index_s,
        "indexed": stats.events_added,
        "index_bytes": size,
        "queries": queries,
        "with_refresh": refreshed,
        "catch_up_check": check,
    }


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    n, e = res["sessions"], res["events"]
    abs_rows: list[tuple] = [
        (
            f"search index over {n:,} sessions / {e:,} events",
            f"{res['index_bytes'] / 2**20:.0f} MiB"
            + (f", built in {fmt_s(res['index_s'])}" if res["index_built_now"] else ""),
        ),
    ]
    for q in res["queries"]:
        abs_rows.append(
            (
                f"query '{q['query']}' ({q['label']}, {q['hits']} hits shown)",
                f"median {fmt_s(q['pure_median_s'])}, max {fmt_s(q['pure_max_s'])}",
            )
        )
    abs_rows.append(
        (
            "query 'zebrafish' with the default catch-up check",
            f"median {fmt_s(res['with_refresh']['median_s'])}",
        )
    )
    abs_rows.append(
        (
            f"catch-up check alone ({n:,} stats, nothing new)",
            f"median {fmt_s(res['catch_up_check']['median_s'])}",
        )
    )
    return [], abs_rows
