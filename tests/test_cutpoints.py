"""Where compaction cuts: never inside a tool group, never before the last turn."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.cutpoints import choose_cut, valid_cuts
from agentlog.event import NIL_ID, Event, IdGenerator

_ids = IdGenerator()


def ev(kind, role, record):
    return Event(_ids.next(), NIL_ID, kind, role, "2026-01-01T00:00:00.000000000Z", record)


def user(n=10):
    return ev("message", "user", {"content": "u" * n})


def assistant(n=10):
    return ev("message", "assistant", {"content": "a" * n})


def call(cid):
    return ev("tool_call", "assistant", {"id": cid, "name": "f", "arguments": "{}"})


def result(cid, n=10):
    return ev("tool_result", "tool", {"tool_call_id": cid, "name": "f", "content": "r" * n})


def cost(event):
    """One token per content character: exact and independent of tiktoken."""
    rec = event.record or {}
    return len(str(rec.get("content") or rec.get("summary") or ""))


def test_cut_keeps_recent_turns_within_budget():
    events = [user(), assistant(), user(), assistant(), user(), assistant()]
    assert choose_cut(events, 20, cost) == 4
    assert choose_cut(events, 40, cost) == 2
    assert choose_cut(events, 39, cost) == 3  # an assistant message may start the kept part


def test_nothing_to_compact():
    events = [user(), assistant()]
    assert choose_cut(events, 1000, cost) is None  # everything fits
    assert choose_cut(events, 0, cost) is None  # the last turn is the whole context
    assert choose_cut([], 0, cost) is None
    summary = ev("compaction", "system", {"summary": "s" * 50})
    assert choose_cut([summary, user(), assistant()], 5, cost) is None  # only the old summary before


def test_tool_groups_are_never_split():
    events = [
        user(),
        assistant(),
        call("a"),
        call("b"),
        result("a"),
        assistant(),
        result("b", 100),
        assistant(),
        user(),
        assistant(),
    ]
    # the assistant message at 5 sits between call b and its result: not a cut
    assert valid_cuts(events) == [0, 1, 7, 8, 9]
    assert choose_cut(events, 25, cost, keep_last_turn=False) == 8
    assert choose_cut(events, 130, cost, keep_last_turn=False) == 7


def test_prefix_never_ends_with_a_call_even_an_unanswered_one():
    events = [user(), assistant(), call("lost"), user(), assistant(), user(), assistant()]
    assert 3 not in valid_cuts(events)
    assert choose_cut(events, 10, cost) == 5


def test_over_budget_keeps_the_last_turn_whole_unless_told_not_to():
    events = [user(), assistant(), user(5), assistant(), call("a"), result("a", 500), assistant(50)]
    assert choose_cut(events, 10, cost) == 2
    assert choose_cut(events, 10, cost, keep_last_turn=False) == 6


def test_negative_budget_is_refused():
    with pytest.raises(ValueError):
        choose_cut([user()], -1, cost)


# --- property: any well-formed conversation -------------------------------------------------


@st.composite
def conversations(draw):
    events = []
    if draw(st.booleans()):
        events.append(ev("compaction", "system", {"summary": "s" * draw(st.integers(0, 30))}))
    n = 0
    for _ in range(draw(st.integers(0, 5))):  # user turns
        events.append(user(draw(st.integers(0, 30))))
        for _ in range(draw(st.integers(0, 3))):  # assistant steps
            events.append(assistant(draw(st.integers(0, 30))))
            ids = [f"c{n + k}" for k in range(draw(st.integers(0, 3)))]
            n += len(ids)
            events += [call(c) for c in ids]
            for c in draw(st.permutations(ids)):
                if draw(st.booleans()):
                    events.append(ev("state", "system", {"todos": []}))
                events.append(result(c, draw(st.integers(0, 40))))
    return events


def _ok_cut(events, i):
    """Independent oracle: calls in the prefix answered in the prefix."""
    calls = {e.record["id"]: j for j, e in enumerate(events) if e.kind == "tool_call"}
    for j, e in enumerate(events):
        if e.kind == "tool_result" and j >= i and calls[e.record["tool_call_id"]] < i:
            return False
    prefix_sent = [e for e in events[:i] if e.kind != "state"]
    return (
        events[i].kind == "message"
        and events[i].role in ("user", "assistant")
        and not (prefix_sent and prefix_sent[-1].kind == "tool_call")
    )


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(0, 400), st.booleans())
def test_cut_is_always_safe_and_keeps_as_much_as_the_budget_allows(events, budget, keep_last_turn):
    cut = choose_cut(events, budget, cost, keep_last_turn=keep_last_turn)
    assert valid_cuts(events) == [i for i in range(len(events)) if _ok_cut(events, i)]
    if cut is None:
        return
    kept, prefix = events[cut:], events[:cut]
    call_ids = {e.record["id"] for e in kept if e.kind == "tool_call"}
    assert all(e.record["tool_call_id"] in call_ids for e in kept if e.kind == "tool_result")
    answered = {e.record["tool_call_id"] for e in prefix if e.kind == "tool_result"}
    assert all(e.record["id"] in answered for e in prefix if e.kind == "tool_call")
    assert any(e.kind != "compaction" for e in prefix)
    users = [i for i, e in enumerate(events) if e.kind == "message" and e.role == "user"]
    if keep_last_turn and users:
        assert cut <= users[-1]
    # no earlier safe cut would also have fit: the kept part is as long as allowed
    fits = [i for i in valid_cuts(events) if sum(map(cost, events[i:])) <= budget]
    if fits and fits[0] < cut:
        pytest.fail(f"cut {cut} keeps less than the budget allows (could cut at {fits[0]})")
