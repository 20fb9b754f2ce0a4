"""Log lines framed in C (``_speedups.frame_line``) against ``encode_line``
(orjson), which stays the reference.

The writer frames every line of an append with the C function; where it
answers, its bytes must be exactly orjson's line, and it must answer for
every line agentlog's own writer makes (or the speed is not real). Where
it does not answer (None), orjson frames the line.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog._codec import decode_line, encode_line
from agentlog.backends.base import Commit, StagedEvent
from agentlog.backends.files import lines as lines_module
from agentlog.event import NIL_ID, format_timestamp
from speedups_support import speedups

needs_c = pytest.mark.skipif(
    speedups is None and not os.environ.get("AGENTLOG_REQUIRE_SPEEDUPS"), reason="agentlog._speedups is not built here"
)

_ids = st.builds(lambda n: str(uuid.UUID(int=n)), st.integers(0, (1 << 128) - 1))
_names = st.from_regex(r"\A[a-z][a-z0-9_.-]{0,31}\Z")
_payloads = st.one_of(
    st.none(),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(), st.floats(allow_nan=False)),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
        max_leaves=12,
    ).map(orjson.dumps),
)


def _staged(eid: str, parent: str, kind: str, role: str | None, stamp: str, payload: bytes | None, **more: Any):
    digest = more.get("digest", None if payload is not None else "sha256:" + "ab" * 32)
    return StagedEvent(eid, parent, kind, role, stamp, payload, digest, more.get("branch_from"))


def _reference(commit: Commit, monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], list[Any]]:
    monkeypatch.setattr(lines_module, "_frame_line", None)
    try:
        return lines_module.frame_commit(commit)
    finally:
        monkeypatch.undo()


@needs_c
def test_the_writer_uses_the_c_framer() -> None:
    assert speedups is not None, "agentlog._speedups did not build"
    if os.environ.get("AGENTLOG_PURE_PYTHON"):
        assert lines_module._frame_line is None
    else:
        assert lines_module._frame_line is speedups.frame_line


@needs_c
@settings(max_examples=300)
@given(
    ids=st.lists(_ids, min_size=1, max_size=4, unique=True),
    parent=st.one_of(st.just(NIL_ID), _ids),
    kind=_names,
    role=st.one_of(st.none(), _names),
    ns=st.integers(0, (1 << 63) - 1),
    payloads=st.lists(_payloads, min_size=4, max_size=4),
    branch=st.booleans(),
    checkout=st.booleans(),
)
def test_every_line_the_writer_makes_is_framed_alike(ids, parent, kind, role, ns, payloads, branch, checkout):
    """Appends, batches (with their markers) and a batch that ends with a
    checkout record: the C framer answers for every line, with orjson's bytes."""
    stamp = format_timestamp(ns)
    events = []
    current = parent
    for i, eid in enumerate(ids):
        events.append(
            _staged(eid, current, kind, role, stamp, payloads[i], branch_from=current if branch and i == 0 else None)
        )
        current = eid
    head = parent if checkout else current
    commit = Commit(tuple(events), head, parent)
    answers: list[bytes | None] = []

    def counting(obj: dict[str, Any], payload: bytes | None) -> bytes | None:
        answers.append(speedups.frame_line(obj, payload))
        return answers[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lines_module, "_frame_line", counting)
        fast, fast_records = lines_module.frame_commit(commit)
    assert len(answers) == len(fast) and None not in answers  # C framed every line
    with pytest.MonkeyPatch.context() as mp:
        slow, slow_records = _reference(commit, mp)
    assert fast == slow

    def plain(records: list[Any]) -> list[Any]:  # a Fragment compares by identity
        return [None if r is None else {k: v for k, v in r.items() if k != "record"} for r in records]

    assert plain(fast_records) == plain(slow_records)
    for line in fast:
        decode_line(line)  # the checksum holds


_anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.one_of(st.integers(), st.booleans(), st.none()), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.tuples(st.integers()),
)


@needs_c
@settings(max_examples=800)
@given(
    obj=st.dictionaries(
        st.one_of(st.text(max_size=10), st.sampled_from(["id", "record", "txn"])), _anything, max_size=6
    ),
    payload=st.one_of(st.none(), _payloads.filter(lambda p: p is not None)),
)
def test_whatever_it_answers_is_orjsons_line(obj, payload):
    """Escapes, control characters, non-ASCII, DEL, bools, large ints,
    floats, tuples, nested objects: C frames exactly orjson's bytes or
    leaves the line to orjson."""
    reference = dict(obj)
    if "record" in reference:
        if reference["record"] is None:
            payload = None
        elif payload is not None:
            reference["record"] = orjson.Fragment(payload)
            obj["record"] = reference["record"]
    got = speedups.frame_line(obj, payload)
    if got is not None:
        assert got == encode_line(reference)


@needs_c
@pytest.mark.parametrize(
    ("obj", "payload"),
    [
        ({"a": 'x"y'}, None),
        ({"a": "x\\y"}, None),
        ({"a": "x\ny"}, None),
        ({"a": "\x7f"}, None),
        ({"a": "é"}, None),
        ({"é": 1}, None),
        ({"a": [True]}, None),
        ({"a": [1 << 64]}, None),
        ({"a": 1}, None),
        ({"a": 1.5}, None),
        ({"a": (1,)}, None),
        ({}, None),
        ({"record": None}, b"{}"),  # a payload for a null record: not the writer's
        ({"record": orjson.Fragment(b"{}")}, None),  # a record without its payload
    ],
)
def test_members_it_does_not_write_as_orjson_are_left_to_orjson(obj, payload):
    assert speedups.frame_line(obj, payload) is None


@needs_c
def test_it_refuses_what_is_not_a_dict_and_bytes() -> None:
    with pytest.raises(TypeError):
        speedups.frame_line([("a", 1)], None)
    with pytest.raises(TypeError):
        speedups.frame_line({"a": "b"}, "not bytes")
    with pytest.raises(TypeError):
        speedups.frame_line({"a": "b"})


def test_a_session_reads_back_what_the_c_framer_wrote(tmp_path) -> None:
    store = Store(str(tmp_path / "home"))
    with store.create(session_id="s") as s:
        made = [s.append("message", {"i": i, "text": 'ünïcode "quoted"\n'}, role="user") for i in range(20)]
        made += s.append_many([("tool_result", {"out": "x" * 40_000}, "tool"), ("message", None, "assistant")])
        s.checkout(made[5].id)
        made.append(s.append("custom.kind", [1, 2.5, None, True]))
    assert store.fsck("s") == []
    with store.open("s", readonly=True) as r:
        for e in made:
            got = r.resolve(r.event(e.id))
            assert (got.parent_id, got.kind, got.role, got.record) == (e.parent_id, e.kind, e.role, e.record)
        assert [e.record for e in r.transcript()][-1] == [1, 2.5, None, True]
