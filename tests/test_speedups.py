"""The C build of the whole-path read's inner loop (``agentlog._speedups``).

``_speedups.follow`` must never accept a line that the Python loop
(``pathread._follow``) refuses, must build the very same ``Event`` from
every line it accepts, and must accept every line agentlog's own writer
produces in the layout it optimises (so the speed is real). Checked on
lines the real writer frames (hypothesis generated), on the same lines
damaged in every way a byte can be, and end to end through
``read_ancestors`` with the C loop on and off.
"""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog._codec import encode_line
from agentlog.backends.files import pathread
from agentlog.backends.files.lines import event_object
from agentlog.event import NIL_ID, Event
from reliability.lineforms import as_format_2
from speedups_support import reframe as _reframe
from speedups_support import same_event as _same
from speedups_support import speedups as _speedups

if _speedups is None:
    pytestmark = pytest.mark.skipif(
        not os.environ.get("AGENTLOG_REQUIRE_SPEEDUPS"), reason="agentlog._speedups is not built here"
    )


def test_the_extension_is_built_and_in_use() -> None:
    """``make test`` sets AGENTLOG_REQUIRE_SPEEDUPS: a build that silently
    fell back to Python would pass every other test, only slowly."""
    assert _speedups is not None, "agentlog._speedups did not build (a C compiler and zlib headers are needed)"
    assert pathread.follow is _speedups.follow


def _ids(n: int, rng: random.Random) -> list[str]:
    return sorted(str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(n))


def _line(
    eid: str, parent: str, kind: str, role: str | None, stamp: str, record: Any, v2: bool = False, **more: Any
) -> bytes:
    """A line as the writer frames it: format 3 (null ``branch_from`` and
    ``digest`` left out), or with ``v2`` as format 2 wrote it (both null)."""
    branch, digest = more.pop("branch_from", None), more.pop("digest", None)
    obj = event_object(eid, parent, branch, kind, role, stamp, record, digest)
    if v2:
        obj = as_format_2(obj)
    obj.update(more)
    return encode_line(obj)[:-1]  # the reader's lines carry no newline


_names = st.from_regex(r"[a-z][a-z0-9_.-]{0,31}", fullmatch=True)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_fields = st.tuples(
    _names,
    st.none() | _names,
    st.from_regex(r"[0-9A-Za-z:.+-]{1,40}", fullmatch=True),
    _json,
    st.none() | st.tuples(st.integers(0, 10**9), st.integers(2, 10**9)),
    st.booleans(),  # the line as format 2 wrote it: sessions hold both
)


def _chain(rows: list[tuple[Any, ...]], seed: int) -> tuple[list[bytes], list[str]]:
    """Lines in log order, each the parent of the next, as the writer frames them."""
    ids = _ids(len(rows), random.Random(seed))
    lines = []
    for i, (kind, role, stamp, record, txn, v2) in enumerate(rows):
        more = {} if txn is None else {"txn": list(txn)}
        lines.append(_line(ids[i], ids[i - 1] if i else NIL_ID, kind, role, stamp, record, v2, **more))
    return lines, ids


def _run(follow: Any, lines: list[bytes], want: str, budget: int = 10**6, **until: Any) -> tuple[Any, ...]:
    out: list[Event] = []
    pos, nxt, done = follow(lines, len(lines) - 1, want, out, budget, until.get("kind"), until.get("id"))
    return pos, nxt, done, out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_fields, min_size=1, max_size=8), st.integers(0, 2**32))
def test_the_writers_lines_are_read_alike(rows: list[tuple[Any, ...]], seed: int) -> None:
    lines, ids = _chain(rows, seed)
    py = _run(pathread._follow, lines, ids[-1])
    c = _run(_speedups.follow, lines, ids[-1])
    assert py[:3] == c[:3]
    assert len(py[3]) == len(c[3]) == len(lines)  # the layout it optimises: every line accepted
    assert all(_same(a, b) for a, b in zip(py[3], c[3], strict=True))


#: Damage no checksum can see (the line is re-framed after it) and damage it
#: can: each must stop the C loop no later than the Python loop.
_EDITS = [
    lambda b, r: b[: r.randrange(len(b))] + bytes([r.randrange(256)]) + b[r.randrange(len(b)) :],
    lambda b, r: b.replace(b'"branch_from":null', b'"branch_from":"' + _ids(1, r)[0].encode() + b'"'),
    lambda b, r: b.replace(b'"digest":null', b'"digest":"sha256:' + b"0" * 64 + b'"'),
    # format 3 leaves both out when null: the same marks, added
    lambda b, r: b.replace(b'","kind":"', b'","branch_from":"' + _ids(1, r)[0].encode() + b'","kind":"', 1),
    lambda b, r: b.replace(b',"crc":"', b',"digest":"sha256:' + b"0" * 64 + b'","crc":"'),
    lambda b, r: b.replace(b',"crc":"', b',"digest":null,"digest":null,"crc":"'),
    lambda b, r: b.replace(b'","kind":"', b'","branch_from":null,"branch_from":null,"kind":"', 1),
    lambda b, r: b.replace(b'"kind":"', b'"kind":"\\u0061'),
    lambda b, r: b.replace(b'"kind":"', b'"kind":"A'),
    lambda b, r: b.replace(b'"role":', b'"role": '),
    lambda b, r: b.replace(b'"txn":[', b'"txn":[0'),
    lambda b, r: b.replace(b'"txn":[', b'"txn":[-'),
    lambda b, r: b.replace(b'"record":', b'"record":' + b"[" * 1100),
    lambda b, r: b.replace(b'"record":', b'"record":1,"record":'),
    lambda b, r: b.replace(b',"digest":null', b',"digest":null,"op":"checkout"'),
    lambda b, r: b.replace(b'"timestamp":"', b'"timestamp":"\\n'),
    lambda b, r: b.replace(b'"parent_id":"', b'"parent_id":"A'),
    lambda b, r: b.replace(b'{"id"', b'{ "id"'),
    lambda b, r: b[:-1] + b" }",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_fields, min_size=2, max_size=6), st.integers(0, 2**32), st.integers(0, len(_EDITS) - 1), st.booleans())
def test_damage_never_lets_the_c_loop_accept_more(
    rows: list[tuple[Any, ...]], seed: int, edit: int, reframe: bool
) -> None:
    lines, ids = _chain(rows, seed)
    r = random.Random(seed)
    at = r.randrange(len(lines))
    damaged = _EDITS[edit](lines[at], r)
    lines[at] = _reframe(damaged) if reframe and b',"crc":"' in damaged else damaged
    py = _run(pathread._follow, lines, ids[-1])
    c = _run(_speedups.follow, lines, ids[-1])
    assert len(c[3]) <= len(py[3])
    assert all(_same(a, b) for a, b in zip(c[3], py[3], strict=False))
    if len(c[3]) == len(py[3]):
        assert c[:3] == py[:3]
    else:  # it stopped earlier: where the Python loop went on from
        assert c[0] == len(lines) - 1 - len(c[3]) and c[1] == ids[len(lines) - 1 - len(c[3])]


def test_budget_and_until_stop_where_the_python_loop_stops() -> None:
    rows = [("message", "user", "2026-12-01T01:00:00.000000001Z", {"i": i}, None, i % 2 == 0) for i in range(6)]
    rows[2] = ("compaction", None, "2026-12-01T01:00:00.000000001Z", {"summary": "s"}, None, False)
    lines, ids = _chain(rows, 5)
    for kw in ({"budget": 3}, {"kind": "compaction"}, {"id": ids[3]}, {"budget": 0}, {"kind": "nothing"}):
        budget = kw.pop("budget", 10**6)
        py, c = (
            _run(pathread._follow, lines, ids[-1], budget, **kw),
            _run(_speedups.follow, lines, ids[-1], budget, **kw),
        )
        assert py[:3] == c[:3] and len(py[3]) == len(c[3])
        assert all(_same(a, b) for a, b in zip(py[3], c[3], strict=True))


def test_a_want_that_is_not_an_id_stops_at_once() -> None:
    lines, ids = _chain([("message", "user", "t", {}, None, False)], 1)
    for want in ("", "x" * 36, ids[0].upper(), ids[0] + "0"):
        assert _run(_speedups.follow, lines, want)[:3] == (0, want, False)


def test_read_ancestors_is_the_same_with_and_without_the_c_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: branches, batches, blobs, checkouts and chunk and block
    boundaries, read with either loop, give the same events."""
    monkeypatch.setattr(pathread, "BLOCK", 8192)
    store = Store(str(tmp_path), durability="off", chunk_size=64 * 1024, blob_threshold=2048)
    rng = random.Random(3)
    s = store.create(session_id="t")
    ids: list[str] = []
    for i in range(400):
        if ids and rng.random() < 0.1:
            s.select(rng.choice(ids))
        if rng.random() < 0.2:
            s.append_many(
                [("tool_call", {"n": i}, None), ("tool_result", {"out": "z" * rng.choice([5, 3000])}, "tool")]
            )
            ids += [e.id for e in s.path()[-2:]]
        else:
            ids.append(s.append("message", {"content": "y" * rng.choice([1, 300, 3000])}, role="user").id)
    s.close()
    with store.open("t", readonly=True) as r:
        fast = {i: r.storage.ancestors(i) for i in ids[::5] + [ids[-1]]}
        monkeypatch.setattr(pathread, "follow", pathread._follow)
        monkeypatch.setattr(pathread, "follow_block", pathread._follow_block)
        for i, events in fast.items():
            slow = r.storage.ancestors(i)
            assert len(slow) == len(events) and all(_same(a, b) for a, b in zip(slow, events, strict=True))


def test_configure_refuses_a_type_it_cannot_fill() -> None:
    class NotSlotted:
        id = parent_id = kind = role = timestamp = record = digest = branch_from = extra = None

    names = ("id", "parent_id", "kind", "role", "timestamp", "record", "digest", "branch_from", "extra")
    with pytest.raises(TypeError):
        _speedups.configure(NotSlotted, names, orjson.loads)
    with pytest.raises(ValueError):
        _speedups.configure(Event, names[:3], orjson.loads)
    _speedups.configure(Event, names, orjson.loads)  # as pathread left it


@pytest.mark.parametrize("depth", [1021, 1022, 1023, 1024, 1025])
def test_nesting_limit_falls_where_it_falls_for_the_whole_line(depth: int) -> None:
    """The payload is parsed apart from its envelope, but at the depth it
    has in the line: a payload one level short of orjson's limit on its own
    is still refused when the line as a whole exceeds it."""
    lines, ids = _chain([("message", "user", "t", 0, None, False)], 2)
    body = lines[0].replace(b'"record":0', b'"record":' + b"[" * depth + b"]" * depth)
    lines[0] = _reframe(body)
    py, c = _run(pathread._follow, lines, ids[0]), _run(_speedups.follow, lines, ids[0])
    assert len(py[3]) == len(c[3]) and py[:3] == c[:3]
    assert (len(c[3]) == 1) == (depth < 1024)


def _run_block(follow_block: Any, data: bytes, floor: int, end: int, want: str, budget: int = 10**6) -> tuple[Any, ...]:
    out: list[Event] = []
    stop, nxt, done = follow_block(data, floor, end, want, out, budget, None, None)
    return stop, nxt, done, out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_fields, min_size=1, max_size=6),
    st.integers(0, 2**32),
    st.integers(-1, len(_EDITS) - 1),
    st.booleans(),
    st.integers(0, 6),
)
def test_the_block_loop_takes_lines_in_place_as_the_list_loop_does(
    rows: list[tuple[Any, ...]], seed: int, edit: int, reframe: bool, budget: int
) -> None:
    """``follow_block`` over a block's bytes is ``_follow_block`` (the
    Python loop over the same bytes split into lines), damaged or not,
    whatever the first complete line and the budget."""
    lines, ids = _chain(rows, seed)
    r = random.Random(seed)
    if edit >= 0:
        at = r.randrange(len(lines))
        damaged = _EDITS[edit](lines[at], r)
        lines[at] = _reframe(damaged) if reframe and b',"crc":"' in damaged else damaged
    data = b"".join(line + b"\n" for line in lines)
    floor = 0 if r.random() < 0.5 else data.find(b"\n") + 1  # as if the block began inside the first line
    py = _run_block(pathread._follow_block, data, floor, len(data), ids[-1], budget)
    c = _run_block(_speedups.follow_block, data, floor, len(data), ids[-1], budget)
    assert len(c[3]) <= len(py[3])
    assert all(_same(a, b) for a, b in zip(c[3], py[3], strict=False))
    if edit < 0 or len(c[3]) == len(py[3]):
        assert c[:3] == py[:3] and len(c[3]) == len(py[3])


def test_the_block_loop_refuses_a_region_that_is_not_whole_lines() -> None:
    with pytest.raises(ValueError):
        _speedups.follow_block(b"abc", 0, 2, NIL_ID, [], 1, None, None)
    with pytest.raises(ValueError):
        _speedups.follow_block(b"abc\n", 0, 9, NIL_ID, [], 1, None, None)
    assert _speedups.follow_block(b"", 0, 0, NIL_ID, [], 1, None, None) == (0, NIL_ID, False)


def test_crc32_is_zlibs_on_every_length() -> None:
    """The carry-less-multiplication CRC (where the CPU has it) folds 64 and
    16 bytes at a time and hands the rest to zlib: every length from 0 to
    300 crosses each of its boundaries, with several starting values."""
    import zlib

    rng = random.Random(11)
    for n in [*range(301), 634, 4096, 65_537]:
        data = rng.randbytes(n)
        for start in (0, 1, 0xFFFFFFFF, rng.getrandbits(32)):
            assert _speedups.crc32(data, start) == zlib.crc32(data, start), (n, start)
