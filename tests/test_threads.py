"""One Session shared by many threads appending at once (group commit).

Whatever the interleaving: no line is torn or interleaved, no append is
lost, every event's parent is another event of the session, the events
form one chain, and each batch stays contiguous in it (invariants 1, 6).
"""

from __future__ import annotations

import threading

import pytest

from agentlog import NIL_ID, Store
from helpers import BLOB_THRESHOLD, chunk_paths, line_spans

THREADS = 8
PER_THREAD = 30

pytestmark = pytest.mark.timeout(120)


def _hammer(session) -> tuple[list[list], list[BaseException]]:
    """THREADS threads each appending PER_THREAD times; returns what each got."""
    results: list[list] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(t: int) -> None:
        try:
            start.wait()
            for i in range(PER_THREAD):
                if i % 7 == 3:
                    results[t].append(
                        session.append_many(("message", {"t": t, "i": i, "j": j}, "assistant") for j in range(3))
                    )
                elif i % 11 == 5:
                    results[t].append(
                        [
                            session.append(
                                "tool_result", {"t": t, "i": i, "out": "o" * (BLOB_THRESHOLD * 2)}, role="tool"
                            )
                        ]
                    )
                else:
                    results[t].append([session.append("message", {"t": t, "i": i}, role="user")])
        except BaseException as exc:  # surfaced by the test, not lost in a thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return results, errors


def _check_one_chain(session, results) -> None:
    groups = [g for per_thread in results for g in per_thread]
    returned = [e for g in groups for e in g]
    assert len(returned) == len({e.id for e in returned})
    assert len(session) == len(returned)
    path = session.path()
    assert len(path) == len(returned)  # one chain through every event
    assert path[0].parent_id == NIL_ID
    position = {e.id: i for i, e in enumerate(path)}
    for e in returned:
        stored = session.event(e.id)
        assert stored.parent_id == e.parent_id
        assert stored.parent_id == NIL_ID or stored.parent_id in session
        if stored.record is not None:
            assert stored.record == e.record
    for g in groups:  # a batch is contiguous: no other thread's event inside it
        assert [position[e.id] for e in g] == list(range(position[g[0].id], position[g[0].id] + len(g)))
    for per_thread in results:  # each thread's appends in its order
        order = [position[g[0].id] for g in per_thread]
        assert order == sorted(order)
    ids = [e.id for e in path]
    assert ids == sorted(ids)  # invariant 11: ids increase in log order


@pytest.mark.parametrize("backend", ["files", "memory"])
def test_concurrent_appends_form_one_chain(home, backend):
    store = (
        Store(home, blob_threshold=BLOB_THRESHOLD)
        if backend == "files"
        else Store.memory(blob_threshold=BLOB_THRESHOLD)
    )
    with store.create(session_id="t") as session:
        results, errors = _hammer(session)
        assert errors == []
        _check_one_chain(session, results)
    assert [p for p in store.fsck("t") if p.severity == "error"] == []
    if backend == "files":
        with store.open("t", readonly=True) as r:
            _check_one_chain(r, results)


def test_concurrent_appends_leave_whole_lines(file_store):
    with file_store.create(session_id="t") as session:
        results, errors = _hammer(session)
    assert errors == []
    total = sum(len(g) for per_thread in results for g in per_thread)
    lines = 0
    for chunk in chunk_paths(file_store, "t"):
        data = chunk.read_bytes()
        assert data.endswith(b"\n")
        for offset, length in line_spans(chunk):
            line = data[offset : offset + length]
            assert line.startswith(b'{"id":"') and line.count(b"\n") == 1
            lines += 1
    assert lines == total
    assert file_store.fsck("t") == []


def test_two_handles_of_one_writer_from_two_threads(file_store):
    """Invariant 7: a second open in the process shares the writer, so two
    handles appending at once still make one chain."""
    with file_store.create(session_id="t") as first, file_store.open("t") as second:
        got: dict[int, list] = {0: [], 1: []}

        def work(n: int, session) -> None:
            for i in range(40):
                got[n].append(session.append("message", {"h": n, "i": i}))

        workers = [threading.Thread(target=work, args=(n, s)) for n, s in enumerate((first, second))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert len(first.path()) == 80
        assert first.head == second.head
    assert file_store.fsck("t") == []


def test_reader_thread_alongside_writer_threads(file_store):
    """Invariant 7: a reader refreshing while threads append sees only whole prefixes."""
    with file_store.create(session_id="t") as session:
        done = threading.Event()
        problems: list[str] = []

        def read() -> None:
            try:
                with file_store.open("t", readonly=True) as reader:
                    while not done.is_set():
                        reader.refresh()
                        path = reader.path()
                        if len(path) != len(reader):
                            problems.append(f"path {len(path)} vs {len(reader)} events")
            except Exception as exc:  # noqa: BLE001 - reported by the test
                problems.append(repr(exc))

        reader_thread = threading.Thread(target=read)
        reader_thread.start()
        try:
            results, errors = _hammer(session)
        finally:
            done.set()
            reader_thread.join()
        assert errors == [] and problems == []
        _check_one_chain(session, results)
