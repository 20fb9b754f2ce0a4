"""The SQL backends' whole-path read: one descending range scan of the
session's events (``path_by_scan``), continued by the recursive query
wherever the scan stops short (``read_path``). It must give exactly what
the recursive query alone gives, on every path, bound and stop."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

import orjson
import pytest

from agentlog import NIL_ID, Store
from agentlog.backends.base import (
    SessionStorage,
)
from agentlog.backends.sqlrows import (
    SCAN_PAGE_FIRST,
    SCAN_SKIP_BOUND,
    WALK_FIRST,
    paged_scan,
    path_by_scan,
    read_path,
)


def _id(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def _row(n: int, parent: int | None, kind: str = "message") -> tuple[Any, ...]:
    record = orjson.dumps({"role": "user", "content": f"e{n}"}).decode()
    parent_id = NIL_ID if parent is None else _id(parent)
    return (_id(n), parent_id, kind, "user", "2026-12-01T00:00:00.000000000Z", record, None, None)


def _desc(rows: Sequence[tuple[Any, ...]], upto: str) -> list[tuple[Any, ...]]:
    return sorted((r for r in rows if r[0] <= upto), key=lambda r: r[0], reverse=True)


def _walk_rows(rows: Sequence[tuple[Any, ...]], start: str, bound: int, kind: Any, stop: Any) -> list[tuple[Any, ...]]:
    """What the recursive query returns, computed by following the links."""
    by_id = {r[0]: r for r in rows}
    out: list[tuple[Any, ...]] = []
    row = by_id.get(start)
    while row is not None and len(out) < bound:
        out.append(row)
        if row[2] == kind or row[0] == stop:
            break
        row = by_id.get(row[1])
    return out


class _Rows:
    """Just enough of a storage for ``read_path``: its id and event count."""

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.session_id = "t"
        self._rows = rows

    def event_count(self) -> int:
        return len(self._rows)


def _read(rows: Sequence[tuple[Any, ...]], start: str, **opts: Any) -> tuple[list[str], int, int]:
    """(ids read, rows the scan fetched, recursive queries run)."""
    calls = {"scan": 0, "walk": 0}

    def scan(upto: str) -> Any:
        for row in _desc(rows, upto):
            calls["scan"] += 1  # the rows the follower takes (a lazy cursor reads no more)
            yield row

    def walk(begin: str, bound: int) -> list[tuple[Any, ...]]:
        calls["walk"] += 1
        return _walk_rows(rows, begin, bound, opts.get("until_kind"), opts.get("until_id"))

    events = read_path(
        cast(SessionStorage, _Rows(rows)),
        start,
        opts.get("limit"),
        opts.get("until_kind"),
        opts.get("until_id"),
        scan=scan,
        walk=walk,
        where="t",
    )
    return [e.id for e in events], calls["scan"], calls["walk"]


def _expected(rows: Sequence[tuple[Any, ...]], start: str, **opts: Any) -> list[str]:
    limit = opts.get("limit")
    bound = len(rows) + 1 if limit is None else limit
    return [r[0] for r in _walk_rows(rows, start, bound, opts.get("until_kind"), opts.get("until_id"))]


def test_a_linear_path_is_one_scan() -> None:
    rows = [_row(i, i - 1 if i else None) for i in range(2000)]
    ids, fetched, walks = _read(rows, _id(1999))
    assert ids == [_id(i) for i in range(1999, -1, -1)]
    # the first WALK_FIRST by the recursive query, the rest by one scan
    assert (fetched, walks) == (2000 - WALK_FIRST, 1)
    event = path_by_scan(_desc(rows, _id(5)), _id(5), None, None, None)[0][0]
    assert event.record == {"role": "user", "content": "e5"} and event.parent_id == _id(4) and event.extra == {}


def test_a_path_that_stops_early_reads_no_scan() -> None:
    """``context()`` stops at the latest compaction: no scan reads the
    session down to its root to find it."""
    rows = [_row(i, i - 1 if i else None, "compaction" if i == 9950 else "message") for i in range(10_000)]
    ids, fetched, walks = _read(rows, _id(9999), until_kind="compaction")
    assert ids == [_id(i) for i in range(9999, 9949, -1)]
    assert (fetched, walks) == (0, 1)


def test_a_path_among_many_other_branches_goes_on_by_the_recursive_query() -> None:
    """Rows of other branches are passed over only up to a bound: a short
    active path in a session branched mostly elsewhere is not read whole."""
    rows = [_row(0, None)] + [_row(i, 0) for i in range(1, 5000)]  # 4,999 siblings, each a branch
    rows += [_row(5000 + i, 4999 + i) for i in range(1, 400)] + [_row(5000, 2500)]
    ids, fetched, walks = _read(rows, _id(5399))
    assert ids == _expected(rows, _id(5399)) and len(ids) == 402
    assert walks == 2 and fetched <= 400 + SCAN_SKIP_BOUND + 1


def test_other_branches_are_passed_over() -> None:
    # 0..999 a trunk; 1000..1499 a branch from 600; 1500..1999 the active branch from 999.
    rows = [_row(i, i - 1 if i else None) for i in range(1000)]
    rows += [_row(1000, 600)] + [_row(i, i - 1) for i in range(1001, 1500)]
    rows += [_row(1500, 999)] + [_row(i, i - 1) for i in range(1501, 2000)]
    for start in (1999, 1499, 1200, 1000, 999, 0):
        ids, _, walks = _read(rows, _id(start))
        assert ids == _expected(rows, _id(start))
        assert walks == 1  # the first part; the scan passes over the other branch


def test_a_parent_out_of_id_order_is_left_to_the_recursive_query() -> None:
    # Event 50's parent has a higher id (an imported or hand-made session).
    rows = [_row(i, i - 1 if i else None) for i in range(50)]
    rows += [_row(500, 49), _row(50, 500)] + [_row(i, i - 1) for i in range(51, 120)]
    ids, _, walks = _read(rows, _id(119))
    assert ids == _expected(rows, _id(119)) and len(ids) == 121
    assert walks == 1


def test_a_missing_parent_ends_the_path_as_the_recursive_query_does() -> None:
    rows = [_row(i, i - 1 if i else None) for i in range(100) if i != 40]
    ids, _, walks = _read(rows, _id(99))
    assert ids == [_id(i) for i in range(99, 40, -1)] == _expected(rows, _id(99))
    assert walks == 1


def test_an_unknown_start_is_event_not_found() -> None:
    from agentlog import EventNotFound

    rows = [_row(i, i - 1 if i else None) for i in range(10)]
    with pytest.raises(EventNotFound):
        _read(rows, _id(5000))


@pytest.mark.parametrize(
    "opts",
    [
        {"limit": WALK_FIRST + 1},
        {"limit": 150},
        {"limit": 10_000},
        {"limit": 3},
        {"until_kind": "compaction"},
        {"until_kind": "compaction", "limit": 100},
        {"until_id": _id(30)},
        {"until_id": _id(500)},
    ],
)
def test_bounds_and_stops_match_the_recursive_query(opts: dict[str, Any]) -> None:
    rows = [_row(i, i - 1 if i else None, "compaction" if i == 70 else "message") for i in range(50)]
    rows += [_row(500, 49), _row(50, 500)]
    rows += [_row(i, i - 1, "compaction" if i == 70 else "message") for i in range(51, 200)]
    for start in (199, 120, 60, 10):
        ids, _, _ = _read(rows, _id(start), **opts)
        assert ids == _expected(rows, _id(start), **opts), (start, opts)


def _pages(rows: Sequence[tuple[Any, ...]]) -> tuple[Any, list[tuple[str, bool, int]]]:
    """A ``fetch`` over ``rows`` as the SQL page queries answer, and its calls."""
    calls: list[tuple[str, bool, int]] = []

    def fetch(upto: str, inclusive: bool, size: int) -> list[tuple[Any, ...]]:
        calls.append((upto, inclusive, size))
        return [r for r in _desc(rows, upto) if inclusive or r[0] != upto][:size]

    return fetch, calls


def test_the_scan_reads_every_row_once_in_pages_that_double() -> None:
    rows = [_row(i, i - 1 if i else None) for i in range(5000)]
    fetch, calls = _pages(rows)
    got = [r[0] for r in paged_scan(fetch, _id(4321))]
    assert got == [_id(i) for i in range(4321, -1, -1)]
    sizes = [size for _, _, size in calls]
    assert sizes == [SCAN_PAGE_FIRST * 2**n for n in range(len(sizes))]
    assert calls[0] == (_id(4321), True, SCAN_PAGE_FIRST)
    # each later page goes on below the last row of the page before
    assert all(upto == got[sum(sizes[:n]) - 1] and not inclusive for n, (upto, inclusive, _) in enumerate(calls) if n)


def test_a_path_that_ends_early_fetches_little_more_than_itself() -> None:
    """``context()`` of a long session whose compaction is a few thousand
    events back: the scan stops fetching where the path stops, instead of
    reading every row down to the root (80 MB of a 1 GB session's records)."""
    rows = [_row(i, i - 1 if i else None, "compaction" if i == 97_000 else "message") for i in range(100_000)]
    fetch, calls = _pages(rows)
    events, rest = path_by_scan(paged_scan(fetch, _id(99_999)), _id(99_999), None, "compaction", None)
    assert rest is None and len(events) == 3000 and events[-1].kind == "compaction"
    fetched = sum(min(size, 100_000) for _, _, size in calls)
    assert fetched < 2 * 3000 + SCAN_PAGE_FIRST


SQL_BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture
def sql_store(backend: Any, tmp_path: Any, request: pytest.FixtureRequest) -> Store:
    name = request.node.callspec.params["backend"]
    if name not in SQL_BACKENDS:
        pytest.skip("a SQL backend's path read")
    store: Store = backend.make(tmp_path)
    return store


def test_a_branched_session_reads_the_same_as_a_walk_of_get(sql_store: Store) -> None:
    """End to end on a real database: every event's path, whole and bounded,
    equals the walk of ``get`` that the base class does."""
    sess = sql_store.create()
    trunk = [sess.append("message", {"role": "user", "content": f"t{i}"}, role="user").id for i in range(150)]
    sess.checkout(trunk[90])
    side = [sess.append("message", {"role": "user", "content": f"s{i}"}, role="user").id for i in range(80)]
    sess.checkout(trunk[-1])
    sess.append("compaction", {"summary": "so far", "first_kept": trunk[100]})
    tail = [sess.append("message", {"role": "user", "content": f"x{i}"}, role="user").id for i in range(100)]
    storage = sess.storage
    for start in (tail[-1], tail[0], side[-1], side[3], trunk[149], trunk[90], trunk[0]):
        for opts in ({}, {"limit": 100}, {"limit": 5}, {"until_kind": "compaction"}, {"until_id": trunk[95]}):
            got = storage.ancestors(start, **opts)
            want = SessionStorage.ancestors(storage, start, **opts)
            assert got == want, (start, opts)
            assert [e.record for e in got] == [e.record for e in want]
    sess.close()


def test_context_of_a_long_sql_session_reads_only_back_to_its_compaction(
    sql_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a real database: the rows the path scan fetches for ``context()``
    are about what the context holds, not the session below it."""
    import agentlog.backends.postgres.storage as pg_storage
    import agentlog.backends.sqlite as sqlite_backend

    fetched: list[int] = []

    def counting(fetch: Any, start: str) -> Any:
        def page(upto: str, inclusive: bool, size: int) -> Any:
            rows = fetch(upto, inclusive, size)
            fetched.append(len(rows))
            return rows

        return paged_scan(page, start)

    monkeypatch.setattr(sqlite_backend, "paged_scan", counting)
    monkeypatch.setattr(pg_storage, "paged_scan", counting)
    sess = sql_store.create()
    sess.append_many([("message", {"role": "user", "content": f"old {i}"}, "user") for i in range(3000)])
    kept = sess.append("message", {"role": "user", "content": "kept"}, role="user").id
    sess.append_many([("message", {"role": "user", "content": f"k {i}"}, "user") for i in range(400)])
    sess.append("compaction", {"summary": "so far", "first_kept_event_id": kept})
    sess.append_many([("message", {"role": "user", "content": f"new {i}"}, "user") for i in range(600)])
    context = sess.context()
    assert [e.kind for e in context[:2]] == ["compaction", "message"] and context[1].id == kept
    assert len(context) == 1 + 401 + 600
    # 600 + 1 + 401 events on the path past the first recursive part, out of 4,000
    assert sum(fetched) < 2 * (len(context) - WALK_FIRST) + SCAN_PAGE_FIRST, fetched
    sess.close()
