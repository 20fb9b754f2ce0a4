"""Review of the C whole-path loop (``agentlog._speedups``) against its
Python reference (``pathread._follow`` / ``_follow_block``) and the
per-event walk.

The first tests pin four things the review found and that are fixed:

- a checksum-intact event line without a ``"record"`` member stops the
  Python loop (it raised ``KeyError``), for ``_decode``/``get`` to read;
- the C loop checks the id it is asked for (it compared the bytes only,
  so an id holding a quote framed a line JSON refuses);
- an extension built from another version of ``_speedups.c`` is ignored
  (it made ``import agentlog`` fail);
- the whole path reads a recordless line as the per-event walk does.

The rest pin what was checked and found correct.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog._codec import encode_line
from agentlog.backends.base import SessionStorage
from agentlog.backends.files import pathread
from agentlog.backends.files.lines import event_object
from agentlog.event import NIL_ID, Event
from reliability.lineforms import as_format_2
from speedups_support import frame as _frame
from speedups_support import reframe as _reframe
from speedups_support import same_event as _same
from speedups_support import speedups as _speedups

needs_c = pytest.mark.skipif(_speedups is None, reason="agentlog._speedups is not built here")

A = "0190a000-0000-7000-8000-000000000001"
B = "0190a000-0000-7000-8000-000000000002"


def _writer_line(eid: str, parent: str, record: Any, v2: bool = True, **more: Any) -> bytes:
    """A line as format 2 wrote it (``branch_from`` and ``digest`` null), or
    as format 3 writes it (both left out)."""
    kind, role = more.pop("kind", "message"), more.pop("role", "user")
    stamp = "2026-12-01T01:00:00.000000001Z"
    obj = event_object(eid, parent, None, kind, role, stamp, record, None)
    if v2:
        obj = as_format_2(obj)
    obj.update(more)
    return encode_line(obj)[:-1]


def _follow(loop: Any, lines: list[bytes], want: str, budget: int = 100) -> tuple[Any, list[Event]]:
    out: list[Event] = []
    return loop(lines, len(lines) - 1, want, out, budget, None, None), out


# --- found by the review, fixed ----------------------------------------------


def test_the_python_loop_refuses_a_line_without_a_record_member() -> None:
    """A checksum-intact event line with no ``"record"`` member stops
    ``_follow`` (it used to raise KeyError out of the loop, and out of
    ``read_ancestors`` wherever the C loop is not built), as it stops the C
    loop, for ``_decode``/``get`` to read it (record None)."""
    body = (
        b'{"id":"%s","parent_id":"%s","branch_from":null,"kind":"message","role":null,'
        b'"timestamp":"t","digest":null' % (B.encode(), A.encode())
    )
    line = _frame(body)
    assert _follow(pathread._follow, [line], B) == ((0, B, False), [])
    if _speedups is not None:
        assert _follow(_speedups.follow, [line], B) == ((0, B, False), [])


def _session_with_a_recordless_line(tmp_path: Path) -> tuple[Store, str]:
    """Three events; the middle line's ``"record"`` renamed (same length,
    checksum made again: a writer that lies), so the index still frames it."""
    store = Store(str(tmp_path), durability="off")
    with store.create(session_id="t") as s:
        s.append("message", {"content": "a"}, role="user")
        middle = s.append("message", {"content": "b"}, role="assistant").id
        s.append("message", {"content": "c"}, role="user")
        head = s.head
    chunk = tmp_path / "sessions" / "t" / "chunks" / "000000.jsonl"
    lines = chunk.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if middle.encode() in line[:50])
    lines[at] = _reframe(lines[at].replace(b'"record":', b'"recorx":'))
    chunk.write_bytes(b"\n".join(lines))
    return store, head


@pytest.mark.parametrize("loops", ["c", "python"])
def test_the_python_loops_read_a_path_with_a_recordless_line_like_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loops: str
) -> None:
    """With either loop the whole-path read returns what the per-event walk
    returns: the recordless event with record None (the Python loops used
    to raise KeyError)."""
    if loops == "c" and _speedups is None:
        pytest.skip("agentlog._speedups is not built here")
    if loops == "python":
        monkeypatch.setattr(pathread, "follow", pathread._follow)
        monkeypatch.setattr(pathread, "follow_block", pathread._follow_block)
    store, head = _session_with_a_recordless_line(tmp_path)
    with store.open("t", readonly=True) as r:
        walk = SessionStorage.ancestors(r.storage, head)
        assert [e.record for e in walk] == [{"content": "c"}, None, {"content": "a"}]
        assert r.storage.ancestors(head) == walk


@needs_c
@pytest.mark.parametrize(
    "want",
    [
        A[:-1] + '"',  # the id's string closes early: the line is not the JSON it seems
        A[:-1] + "\\",  # the quote after the id is escaped
        "x" * 35 + '"',
    ],
)
def test_the_c_loop_never_accepts_a_line_whose_id_is_not_a_uuid(want: str) -> None:
    """The C loop checks the id it is asked for (``read_ancestors`` only
    ever passes validated ids, but the contract is the Python loop's): for
    a ``want`` holding a quote or a backslash it used to accept a line that
    is not valid JSON at all, which ``_follow`` refuses."""
    body = (
        b'{"id":"%s","parent_id":"%s","branch_from":null,"kind":"message","role":null,'
        b'"timestamp":"t","record":{"a":1},"digest":null' % (want.encode(), B.encode())
    )
    line = _frame(body)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(line)
    assert _follow(pathread._follow, [line], want)[1] == []
    assert _follow(_speedups.follow, [line], want)[1] == []
    data = line + b"\n"
    assert _speedups.follow_block(data, 0, len(data), want, [], 10, None, None)[0] == len(data)


@needs_c
def test_a_stale_extension_does_not_break_import() -> None:
    """The editable install builds the extension in place, and a ``git
    pull`` does not rebuild it; one built from 2c51c3c's _speedups.c had
    ``follow`` and ``configure`` but no ``follow_block``, and made
    ``import agentlog`` fail. An extension of another interface (its
    ``ABI``) is ignored, with a warning, and the Python loops run."""
    script = (
        "import sys, types\n"
        "m = types.ModuleType('agentlog._speedups')\n"
        "m.configure = lambda *a: None\n"
        "m.follow = lambda *a: None\n"
        "sys.modules['agentlog._speedups'] = m\n"
        "import agentlog\n"
        "from agentlog.backends.files import pathread\n"
        "assert pathread.follow_block is pathread._follow_block, pathread.follow_block\n"
        "assert pathread.follow is pathread._follow, pathread.follow\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_PURE_PYTHON"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


# --- checked and found correct ------------------------------------------------

#: (line, accepted by the C loop) for lines in odd JSON: the C loop must take
#: exactly what ``_follow`` takes, or less, and build the same event.
_TRICKY = [
    (b'"record":{"a":1}', True),
    (b'"record":"x,\\"digest\\":null,\\"txn\\":[0,2]"', True),  # the payload quotes the tail
    (b'"record":0,"record":{"b":2}', True),  # duplicate: both parsers keep the last
    (b'"record":0,"rec\\u006frd":[1]', True),  # the same key, escaped
    (b'"record": 1 ', True),  # whitespace around the payload
    (b'"record":\r1\t', True),
    (b'"record":18446744073709551616', None),  # past 64 bits: whatever orjson says, alike
    (b'"record":-0', True),
    (b'"record":1e999', None),
    (b'"record":NaN', False),
    (b'"record":Infinity', False),
    (b'"record":', False),  # empty payload
    (b'"record":"\xff"', False),  # not UTF-8
    (b'"record":"\\ud800"', None),  # a lone surrogate escape
    (b'"record":1,"op":"checkout"', False),
    (b'"record":1,"digest":"sha256:' + b"0" * 64 + b'"', False),
    (b'"record":{"a":1}}', False),
    (b'"record":{"a":1', False),
    (b'"record":' + b"[" * 200 + b"]" * 200, True),
    (b'"record":' + b"[" * 1024 + b"]" * 1024, False),  # one more: past it in either form
]
_TAILS = [
    (b',"digest":null', True),
    (b',"digest":null,"txn":[0,2]', True),
    (b',"digest":null,"txn":[1234567890,2]', True),
    (b',"digest":null,"txn":[12345678901,2]', False),  # the C loop's bound: refused, not misread
    (b',"digest":null,"txn":[01,2]', False),
    (b',"digest":null,"txn":[-1,2]', False),
    (b',"digest":null,"txn":[0, 2]', False),
    (b',"digest":null ', False),
    (b',"digest": null', False),
    (b',"digest":null,"digest":null', False),
    (b',"txn":[0,2],"digest":null', False),
    # format 3: a null digest left out
    (b"", True),
    (b',"txn":[0,2]', True),
    (b',"txn":[01,2]', False),
    (b',"txn":[0,2],"txn":[0,2]', False),
    (b',"digest":"sha256:' + b"0" * 64 + b'"', False),
]


@needs_c
@pytest.mark.parametrize("payload,payload_ok", _TRICKY)
@pytest.mark.parametrize("tail,tail_ok", _TAILS)
@pytest.mark.parametrize("branch", [b'"branch_from":null,', b""], ids=["format-2", "format-3"])
def test_odd_json_is_read_alike(
    payload: bytes, payload_ok: bool | None, tail: bytes, tail_ok: bool, branch: bytes
) -> None:
    body = (
        b'{"id":"%s","parent_id":"%s",%s"kind":"message","role":"user",'
        b'"timestamp":"2026-12-01T01:00:00.000000001Z",' % (B.encode(), A.encode(), branch)
    )
    line = _frame(body + payload + tail)
    for trailing in (b"", b" ", b"\r"):
        lines = [line + trailing]
        py, c = _follow(pathread._follow, lines, B), _follow(_speedups.follow, lines, B)
        assert len(c[1]) <= len(py[1])
        assert all(_same(a, b) for a, b in zip(c[1], py[1], strict=False))
        if c[1] == [] and py[1] == []:
            assert c[0] == py[0] == (0, B, False)
        if trailing:
            assert c[1] == []
        elif payload_ok is not None:
            assert (len(c[1]) == 1) == (payload_ok and tail_ok), line
        data = b"\n".join(lines) + b"\n"
        cb = _speedups.follow_block(data, 0, len(data), B, out := [], 10, None, None)
        pb = pathread._follow_block(data, 0, len(data), B, pout := [], 10, None, None)
        assert len(out) <= len(pout) and all(_same(a, b) for a, b in zip(out, pout, strict=False))
        if len(out) == len(pout):
            assert cb == pb


_EDITS: list[tuple[bytes, bytes]] = [
    (b'"record":', b'"record": '),
    (b'"record":', b'"record":0,"record":'),
    (b'"record":', b'"recorx":'),
    (b'"record":', b'"record":"\\ud800",'),
    (b',"digest":null', b""),
    (b',"digest":null', b',"digest":null,"txn":[0,2]'),
    (b'"kind":"', b'"kind":"\\u0061'),
    (b'"role":"user"', b'"role":null'),
    (b'"timestamp":"', b'"timestamp":"\\n'),
    (b'"id":"', b'"id":"0'),
    (b'","kind":"', b'","branch_from":null,"kind":"'),
    (b',"crc":"', b',"digest":null,"crc":"'),
]
_TOKENS = [b" ", b"\r", b"\\", b'"', b",", b"[", b"]", b"{", b"}", b"0", b"\xff", b',"record":1', b"null"]


@needs_c
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["message", "a", "x" * 32]), st.sampled_from([None, "user", "b" * 32])),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 2**32),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 10**6), st.integers(0, 10**6)), max_size=3),
    st.booleans(),
)
def test_damaged_lines_in_both_forms(
    rows: list[tuple[str, str | None]], seed: int, edits: list[tuple[int, int, int]], reframe: bool
) -> None:
    """Byte-level and member-level damage, checksum made again or not: the
    C loops take a prefix of what the Python loops take, the same events,
    and agree on where they stop when they take as many."""
    rng = random.Random(seed)
    ids = sorted(str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in rows)
    lines = [
        _writer_line(
            ids[i], ids[i - 1] if i else NIL_ID, {"i": i, "s": "é" * (i % 3)}, rng.random() < 0.5, kind=k, role=r
        )
        for i, (k, r) in enumerate(rows)
    ]
    for how, where, what in edits:
        at = where % len(lines)
        line = lines[at]
        if how == 0:
            a, b = _EDITS[what % len(_EDITS)]
            line = line.replace(a, b, 1)
        elif how == 1:
            p = what % (len(line) + 1)
            line = line[:p] + _TOKENS[what % len(_TOKENS)] + line[p:]
        else:
            p = what % len(line)
            line = line[:p] + line[p + 1 + what % 7 :]
        lines[at] = _reframe(line) if reframe and b',"crc":"' in line else line
    want = ids[-1]
    py = _follow(pathread._follow, lines, want)  # never raises: what it cannot take, it leaves
    c = _follow(_speedups.follow, lines, want)
    assert len(c[1]) <= len(py[1])
    assert all(_same(a, b) for a, b in zip(c[1], py[1], strict=False))
    if len(c[1]) == len(py[1]):
        assert c[0] == py[0]
    data = b"".join(line + b"\n" for line in lines)
    cb = _speedups.follow_block(data, 0, len(data), want, out := [], 100, None, None)
    pb = pathread._follow_block(data, 0, len(data), want, pout := [], 100, None, None)
    assert len(out) == len(c[1]) and all(_same(a, b) for a, b in zip(out, c[1], strict=True))
    if len(out) == len(pout):
        assert cb == pb


@needs_c
def test_c_loops_hold_no_references() -> None:
    """Accepted, refused and failing lines leave every reference count as it
    was (``want``, None, the booleans), over many calls."""
    rng = random.Random(4)
    ids = sorted(str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(4))
    lines = [_writer_line(ids[i], ids[i - 1] if i else NIL_ID, {"i": i}) for i in range(4)]
    lines[1] = lines[1].replace(b'"record":', b'"record": ')  # refused by the C loop: a stop mid-way
    data = b"".join(line + b"\n" for line in lines)
    want = ids[-1]

    def rounds() -> None:
        for _ in range(2000):
            _speedups.follow(lines, 3, want, [], 10, "message", ids[0])
            _speedups.follow_block(data, 0, len(data), want, [], 10, None, None)

    rounds()
    before = [sys.getrefcount(x) for x in (want, None, True, False)]
    rounds()
    assert [sys.getrefcount(x) for x in (want, None, True, False)] == before


@needs_c
def test_crc32_on_unaligned_buffers_and_long_runs() -> None:
    """The folding CRC reads 16 bytes at a time with unaligned loads: any
    start address and length, and runs of equal bytes, give zlib's value."""
    rng = random.Random(8)
    big = rng.randbytes(1 << 16)
    for _ in range(3000):
        off, n = rng.randrange(64), rng.choice([rng.randrange(400), rng.randrange(20_000)])
        view = memoryview(big)[off : off + n]
        start = rng.choice([0, 0xFFFFFFFF, rng.getrandbits(32)])
        assert _speedups.crc32(view, start) == zlib.crc32(view, start), (off, n, start)
    for byte in (b"\x00", b"\xff"):
        for n in range(60, 600, 7):
            assert _speedups.crc32(byte * n) == zlib.crc32(byte * n)


@needs_c
def test_both_python_loops_against_both_c_loops_and_the_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end with *both* loops swapped (tests/test_speedups.py swaps
    only ``follow``, so its "Python" side still runs the C ``follow_block``
    on the first line of every block): branches, batches, checkouts, blobs,
    records larger than the first block, chunk and block boundaries."""
    monkeypatch.setattr(pathread, "BLOCK", 8192)
    store = Store(str(tmp_path), durability="off", chunk_size=64 * 1024, blob_threshold=24 * 1024)
    rng = random.Random(9)
    ids: list[str] = []
    with store.create(session_id="t") as s:
        for i in range(250):
            if ids and rng.random() < 0.1:
                s.select(rng.choice(ids))
            if rng.random() < 0.2:
                s.append_many([("tool_call", {"n": i}, None), ("tool_result", {"out": "z" * 40}, "tool")])
                ids += [e.id for e in s.path()[-2:]]
            else:
                size = rng.choice([1, 300, 20_000, 30_000])  # > FIRST_BLOCK inline, and blobs
                ids.append(s.append("message", {"content": "y" * size}, role="user").id)
    with store.open("t", readonly=True) as r:
        picks = ids[::9] + [ids[-1]]
        fast = {i: r.storage.ancestors(i) for i in picks}
        limited = {i: r.storage.ancestors(i, limit=7, until_kind="tool_call") for i in picks}
        monkeypatch.setattr(pathread, "follow", pathread._follow)
        monkeypatch.setattr(pathread, "follow_block", pathread._follow_block)
        for i in picks:
            slow = r.storage.ancestors(i)
            walk = SessionStorage.ancestors(r.storage, i)
            assert slow == walk == fast[i]
            assert all(_same(a, b) for a, b in zip(slow, fast[i], strict=True))
            assert r.storage.ancestors(i, limit=7, until_kind="tool_call") == limited[i]
